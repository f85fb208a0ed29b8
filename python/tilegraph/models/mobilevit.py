"""MobileViT (Mehta & Rastegari 2022), the mobilevit_s layout (256x256).

MobileNetV2 blocks (expansion 4, SiLU) and three MobileViT blocks: local 3x3 conv +
1x1 projection, unfold into 2x2 patches, L transformer layers (pre-norm MHSA,
FFN ratio 2 with SiLU), fold, 1x1 projection, concat with the input, 3x3 fusion.
mobilevit_s: channels 16-32-64-96-128-160-640, transformer dims 144/192/240,
depths 2/4/3, 4 heads.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export, timm_plain_attention, use_lib


def conv_bn(cin, cout, k=3, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class MV2Block(nn.Module):
    def __init__(self, cin, cout, stride=1, expansion=4):
        super().__init__()
        hidden = cin * expansion
        self.use_res = stride == 1 and cin == cout
        self.conv = nn.Sequential(conv_bn(cin, hidden, 1), conv_bn(hidden, hidden, 3, stride, hidden),
                                  conv_bn(hidden, cout, 1, act=False))

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class TransformerLayer(nn.Module):
    def __init__(self, dim, heads, mlp_dim):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, mlp_dim), nn.SiLU(), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))
        return x + self.ffn(self.norm2(x))


class MobileViTBlock(nn.Module):
    def __init__(self, channels, dim, depth, heads, patch=2, mlp_ratio=2):
        super().__init__()
        self.patch = patch
        self.conv_kxk = conv_bn(channels, channels, 3)
        self.conv_1x1 = nn.Conv2d(channels, dim, 1, bias=False)
        self.transformer = nn.Sequential(*[TransformerLayer(dim, heads, dim * mlp_ratio)
                                           for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.conv_proj = conv_bn(dim, channels, 1)
        self.conv_fusion = conv_bn(2 * channels, channels, 3)

    def forward(self, x):
        shortcut = x
        y = self.conv_1x1(self.conv_kxk(x))
        b, d, h, w = y.shape
        p = self.patch
        # unfold: [B, d, H, W] -> [B*p*p, (H/p)*(W/p), d]
        y = y.reshape(b, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1)
        y = y.reshape(b * p * p, (h // p) * (w // p), d)
        y = self.norm(self.transformer(y))
        # fold back
        y = y.reshape(b, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2).reshape(b, d, h, w)
        y = self.conv_proj(y)
        return self.conv_fusion(torch.cat([shortcut, y], dim=1))


class MobileViT(nn.Module):
    def __init__(self, channels=(16, 32, 64, 96, 128, 160, 640), dims=(144, 192, 240),
                 depths=(2, 4, 3), heads=4, num_classes=1000, expansion=4):
        super().__init__()
        c = channels
        self.stem = conv_bn(3, c[0], 3, 2)
        self.stages = nn.Sequential(
            MV2Block(c[0], c[1], 1, expansion),
            nn.Sequential(MV2Block(c[1], c[2], 2, expansion), MV2Block(c[2], c[2], 1, expansion),
                          MV2Block(c[2], c[2], 1, expansion)),
            nn.Sequential(MV2Block(c[2], c[3], 2, expansion),
                          MobileViTBlock(c[3], dims[0], depths[0], heads)),
            nn.Sequential(MV2Block(c[3], c[4], 2, expansion),
                          MobileViTBlock(c[4], dims[1], depths[1], heads)),
            nn.Sequential(MV2Block(c[4], c[5], 2, expansion),
                          MobileViTBlock(c[5], dims[2], depths[2], heads)),
        )
        self.final_conv = conv_bn(c[5], c[6], 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c[6], num_classes)

    def forward(self, x):
        x = self.final_conv(self.stages(self.stem(x)))
        return self.fc(self.pool(x).flatten(1))


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        cfg = dict(channels=(8, 16, 16, 24, 24, 32, 64), dims=(16, 24, 32), depths=(1, 1, 1),
                   heads=2, num_classes=10, expansion=2)
        size = 64
    else:
        cfg = dict(channels=(16, 32, 64, 96, 128, 160, 640), dims=(144, 192, 240),
                   depths=(2, 4, 3), heads=4, num_classes=1000)
        size = 256
    if not small and use_lib(impl, "timm"):
        timm_plain_attention()
        import timm
        module, library = timm.create_model("mobilevit_s", pretrained=False), "timm"
    else:
        if impl == "lib" and small:
            raise RuntimeError("mobilevit --small has no timm config; use --impl own")
        module, library = MobileViT(**cfg), "own"
    x = torch.randn(bs, 3, size, size)
    return Export(module, (x,), ["input"], ["output"], {},
                  f"MobileViT {size}x{size}, channels {list(cfg['channels'])}, dims "
                  f"{list(cfg['dims'])}, depths {list(cfg['depths'])}, {cfg['heads']} heads, "
                  f"{cfg['num_classes']} classes", library)
