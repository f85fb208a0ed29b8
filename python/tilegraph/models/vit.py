"""Vision Transformer (Dosovitskiy et al. 2021), timm's vit_small_patch32_224 layout.

Full: 224x224, patch 32, embed 384, depth 12, 6 heads, MLP ratio 4, 1000 classes,
class token, learned position embedding, pre-norm blocks, LayerNorm eps 1e-6.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export, timm_plain_attention, use_lib


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act=nn.GELU):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=4.0, eps=1e-6):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, img_size=224, patch_size=32, in_chans=3, num_classes=1000, embed_dim=384,
                 depth=12, num_heads=6, mlp_ratio=4.0):
        super().__init__()
        self.patch_embed = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)
        n = (img_size // patch_size) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, embed_dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(embed_dim, num_heads, mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def build(bs=1, small=False, impl="auto") -> Export:
    """Welder's ViT: ViT-S/32 (224x224, patch 32, embed 384, 12 blocks, 6 heads)."""
    if small:
        cfg = dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10)
    else:
        cfg = dict(img_size=224, patch_size=32, embed_dim=384, depth=12, num_heads=6,
                   num_classes=1000)
    return _export(cfg, bs, impl)


def build_b16(bs=1, small=False, impl="auto") -> Export:
    """ViT-B/16 (224x224, patch 16, embed 768, 12 blocks, 12 heads): the INT8 case study's model."""
    if small:
        cfg = dict(img_size=32, patch_size=16, embed_dim=64, depth=2, num_heads=4, num_classes=10)
    else:
        cfg = dict(img_size=224, patch_size=16, embed_dim=768, depth=12, num_heads=12,
                   num_classes=1000)
    return _export(cfg, bs, impl)


def _export(cfg, bs, impl) -> Export:
    if use_lib(impl, "timm"):
        timm_plain_attention()
        from timm.models.vision_transformer import VisionTransformer as TimmViT
        module, library = TimmViT(**cfg), "timm"
    else:
        module, library = VisionTransformer(**cfg), "own"
    x = torch.randn(bs, 3, cfg["img_size"], cfg["img_size"])
    return Export(module, (x,), ["input"], ["output"], {},
                  f"ViT {cfg['img_size']}x{cfg['img_size']}, patch {cfg['patch_size']}, embed "
                  f"{cfg['embed_dim']}, depth {cfg['depth']}, {cfg['num_heads']} heads, "
                  f"{cfg['num_classes']} classes", library)
