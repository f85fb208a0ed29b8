"""Restormer (Zamir et al., "Restormer: Efficient Transformer for High-Resolution
Image Restoration", CVPR 2022).

Four-level U-Net of transformer blocks: channel LayerNorm (with bias, written out:
mean and biased variance over the last axis of a [B, HW, C] view), MDTA
(multi-Dconv head transposed attention: 1x1 qkv conv, 3x3 depthwise conv,
L2-normalised q and k, attention over channels scaled by a learned per-head
temperature, 1x1 projection) and GDFN (1x1 conv, 3x3 depthwise conv, GELU gate,
1x1 conv). Down: 3x3 conv + PixelUnshuffle(2); up: 3x3 conv + PixelShuffle(2);
skip concatenation with 1x1 channel reduction; refinement blocks; global residual.

Full (reference defaults): dim 48, blocks [4, 6, 6, 8], refinement 4, heads
[1, 2, 4, 8], FFN expansion 2.66, no bias in convs, 256x256.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import Export


class WithBiasLayerNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):  # x: [B, C, H, W], normalised over C
        b, c, h, w = x.shape
        y = x.flatten(2).transpose(1, 2)  # to_3d: b (h w) c
        mu = y.mean(-1, keepdim=True)
        var = y.var(-1, keepdim=True, unbiased=False)
        y = (y - mu) / torch.sqrt(var + 1e-5) * self.weight + self.bias
        return y.transpose(1, 2).reshape(b, c, h, w)


class FeedForward(nn.Module):
    def __init__(self, dim, expansion, bias):
        super().__init__()
        hidden = int(dim * expansion)
        self.project_in = nn.Conv2d(dim, hidden * 2, 1, bias=bias)
        self.dwconv = nn.Conv2d(hidden * 2, hidden * 2, 3, 1, 1, groups=hidden * 2, bias=bias)
        self.project_out = nn.Conv2d(hidden, dim, 1, bias=bias)

    def forward(self, x):
        x1, x2 = self.dwconv(self.project_in(x)).chunk(2, dim=1)
        return self.project_out(F.gelu(x1) * x2)


class Attention(nn.Module):
    def __init__(self, dim, heads, bias):
        super().__init__()
        self.heads = heads
        # ones in the paper's init; spread here like trained weights
        self.temperature = nn.Parameter(1.0 + 0.5 * torch.rand(heads, 1, 1))
        self.qkv = nn.Conv2d(dim, dim * 3, 1, bias=bias)
        self.qkv_dwconv = nn.Conv2d(dim * 3, dim * 3, 3, 1, 1, groups=dim * 3, bias=bias)
        self.project_out = nn.Conv2d(dim, dim, 1, bias=bias)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv_dwconv(self.qkv(x)).chunk(3, dim=1)
        q = q.reshape(b, self.heads, c // self.heads, h * w)  # b (head c) h w -> b head c (h w)
        k = k.reshape(b, self.heads, c // self.heads, h * w)
        v = v.reshape(b, self.heads, c // self.heads, h * w)
        q = F.normalize(q, dim=-1)
        k = F.normalize(k, dim=-1)
        attn = ((q @ k.transpose(-2, -1)) * self.temperature).softmax(dim=-1)
        return self.project_out((attn @ v).reshape(b, c, h, w))


class TransformerBlock(nn.Module):
    def __init__(self, dim, heads, expansion, bias):
        super().__init__()
        self.norm1 = WithBiasLayerNorm(dim)
        self.attn = Attention(dim, heads, bias)
        self.norm2 = WithBiasLayerNorm(dim)
        self.ffn = FeedForward(dim, expansion, bias)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ffn(self.norm2(x))


def _blocks(n, dim, heads, expansion, bias):
    return nn.Sequential(*[TransformerBlock(dim, heads, expansion, bias) for _ in range(n)])


class Restormer(nn.Module):
    def __init__(self, inp_channels=3, out_channels=3, dim=48, num_blocks=(4, 6, 6, 8),
                 num_refinement_blocks=4, heads=(1, 2, 4, 8), ffn_expansion_factor=2.66,
                 bias=False):
        super().__init__()
        e, bb = ffn_expansion_factor, bias
        self.patch_embed = nn.Conv2d(inp_channels, dim, 3, 1, 1, bias=bias)
        self.encoder_level1 = _blocks(num_blocks[0], dim, heads[0], e, bb)
        self.down1_2 = nn.Sequential(nn.Conv2d(dim, dim // 2, 3, 1, 1, bias=False),
                                     nn.PixelUnshuffle(2))
        self.encoder_level2 = _blocks(num_blocks[1], dim * 2, heads[1], e, bb)
        self.down2_3 = nn.Sequential(nn.Conv2d(dim * 2, dim, 3, 1, 1, bias=False),
                                     nn.PixelUnshuffle(2))
        self.encoder_level3 = _blocks(num_blocks[2], dim * 4, heads[2], e, bb)
        self.down3_4 = nn.Sequential(nn.Conv2d(dim * 4, dim * 2, 3, 1, 1, bias=False),
                                     nn.PixelUnshuffle(2))
        self.latent = _blocks(num_blocks[3], dim * 8, heads[3], e, bb)
        self.up4_3 = nn.Sequential(nn.Conv2d(dim * 8, dim * 16, 3, 1, 1, bias=False),
                                   nn.PixelShuffle(2))
        self.reduce_chan_level3 = nn.Conv2d(dim * 8, dim * 4, 1, bias=bias)
        self.decoder_level3 = _blocks(num_blocks[2], dim * 4, heads[2], e, bb)
        self.up3_2 = nn.Sequential(nn.Conv2d(dim * 4, dim * 8, 3, 1, 1, bias=False),
                                   nn.PixelShuffle(2))
        self.reduce_chan_level2 = nn.Conv2d(dim * 4, dim * 2, 1, bias=bias)
        self.decoder_level2 = _blocks(num_blocks[1], dim * 2, heads[1], e, bb)
        self.up2_1 = nn.Sequential(nn.Conv2d(dim * 2, dim * 4, 3, 1, 1, bias=False),
                                   nn.PixelShuffle(2))
        self.decoder_level1 = _blocks(num_blocks[0], dim * 2, heads[0], e, bb)
        self.refinement = _blocks(num_refinement_blocks, dim * 2, heads[0], e, bb)
        self.output = nn.Conv2d(dim * 2, out_channels, 3, 1, 1, bias=bias)

    def forward(self, inp):
        e1 = self.encoder_level1(self.patch_embed(inp))
        e2 = self.encoder_level2(self.down1_2(e1))
        e3 = self.encoder_level3(self.down2_3(e2))
        lat = self.latent(self.down3_4(e3))
        d3 = self.decoder_level3(self.reduce_chan_level3(torch.cat([self.up4_3(lat), e3], 1)))
        d2 = self.decoder_level2(self.reduce_chan_level2(torch.cat([self.up3_2(d3), e2], 1)))
        d1 = self.decoder_level1(torch.cat([self.up2_1(d2), e1], 1))
        return self.output(self.refinement(d1)) + inp


def build(bs=1, small=False, impl="auto") -> Export:
    if impl == "lib":
        raise RuntimeError("Restormer has no library implementation; use --impl own")
    if small:
        cfg, size = dict(dim=4, num_blocks=(1, 1, 1, 1), num_refinement_blocks=1,
                         heads=(1, 2, 2, 4)), 32
    else:
        cfg, size = dict(dim=48, num_blocks=(4, 6, 6, 8), num_refinement_blocks=4,
                         heads=(1, 2, 4, 8)), 256
    x = torch.randn(bs, 3, size, size)
    return Export(Restormer(**cfg), (x,), ["input"], ["output"], {},
                  f"Restormer dim {cfg['dim']}, blocks {list(cfg['num_blocks'])}, refinement "
                  f"{cfg['num_refinement_blocks']}, heads {list(cfg['heads'])}, FFN 2.66, "
                  f"{size}x{size}", "own")
