"""Swin Transformer (Liu et al. 2021), the layout of timm's swin_tiny_patch4_window7_224.

Full (Swin-T): 224x224, patch 4, window 7, embed 96, depths (2, 2, 6, 2),
heads (3, 6, 12, 24), MLP ratio 4, 1000 classes. Shifted windows via torch.roll
with a precomputed attention mask, relative position bias table indexed by a
constant index, patch merging by strided slices, global average pool head.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export, timm_plain_attention, use_lib
from .vit import Mlp


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)


def window_reverse(windows, ws, h, w):
    c = windows.shape[-1]
    x = windows.view(-1, h // ws, w // ws, ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, h, w, c)


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.randn((2 * ws - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij"))
        coords = coords.flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        index = rel[:, :, 0] * (2 * ws - 1) + rel[:, :, 1]
        self.register_buffer("relative_position_index", index.reshape(-1), persistent=False)
        self.ws = ws
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        bw, n, c = x.shape
        qkv = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index]
        attn = attn + bias.view(n, n, -1).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(-1, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, n, n)
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))


class SwinBlock(nn.Module):
    def __init__(self, dim, res, heads, ws, shift, mlp_ratio=4.0):
        super().__init__()
        self.res = res
        if res <= ws:  # as timm: no shift/partition when one window covers the map
            ws, shift = res, 0
        self.ws, self.shift = ws, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        if shift:
            img = torch.zeros(1, res, res, 1)
            cnt = 0
            for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                    img[:, hs, wsl, :] = cnt
                    cnt += 1
            mw = window_partition(img, ws).squeeze(-1)
            mask = mw.unsqueeze(1) - mw.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        else:
            mask = None
        self.register_buffer("attn_mask", mask, persistent=False)

    def forward(self, x):
        b, l, c = x.shape
        h = w = self.res
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        if self.shift:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = self.attn(window_partition(x, self.ws), self.attn_mask)
        x = window_reverse(win, self.ws, h, w)
        if self.shift:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x.reshape(b, h * w, c)
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim, res):
        super().__init__()
        self.res = res
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        b, l, c = x.shape
        x = x.view(b, self.res, self.res, c)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x.view(b, -1, 4 * c)))


class SwinTransformer(nn.Module):
    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, embed_dim=96,
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_size=7, mlp_ratio=4.0):
        super().__init__()
        self.patch_embed = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)
        self.embed_norm = nn.LayerNorm(embed_dim)
        res = img_size // patch_size
        dim = embed_dim
        stages = []
        for i, (depth, heads) in enumerate(zip(depths, num_heads)):
            blocks = [SwinBlock(dim, res, heads, window_size, 0 if j % 2 == 0 else window_size // 2,
                                mlp_ratio) for j in range(depth)]
            if i < len(depths) - 1:
                blocks.append(PatchMerging(dim, res))
                dim, res = dim * 2, res // 2
            stages.append(nn.Sequential(*blocks))
        self.layers = nn.Sequential(*stages)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.embed_norm(self.patch_embed(x).flatten(2).transpose(1, 2))
        x = self.norm(self.layers(x))
        return self.head(x.mean(dim=1))


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        cfg = dict(img_size=32, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(1, 2),
                   window_size=4, num_classes=10)
    else:
        cfg = dict(img_size=224, patch_size=4, embed_dim=96, depths=(2, 2, 6, 2),
                   num_heads=(3, 6, 12, 24), window_size=7, num_classes=1000)
    if use_lib(impl, "timm"):
        timm_plain_attention()
        from timm.models.swin_transformer import SwinTransformer as TimmSwin
        module, library = TimmSwin(**cfg), "timm"
    else:
        module, library = SwinTransformer(**cfg), "own"
    x = torch.randn(bs, 3, cfg["img_size"], cfg["img_size"])
    return Export(module, (x,), ["input"], ["output"], {},
                  f"Swin {cfg['img_size']}x{cfg['img_size']}, patch {cfg['patch_size']}, window "
                  f"{cfg['window_size']}, embed {cfg['embed_dim']}, depths {list(cfg['depths'])}, "
                  f"heads {list(cfg['num_heads'])}, {cfg['num_classes']} classes", library)
