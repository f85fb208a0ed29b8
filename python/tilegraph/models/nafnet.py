"""NAFNet (Chen et al., "Simple Baselines for Image Restoration", ECCV 2022).

U-Net of NAFBlocks: LayerNorm2d, 1x1 conv to 2c, 3x3 depthwise conv, SimpleGate
(split channels, multiply halves), simplified channel attention (global average
pool + 1x1 conv, multiply), 1x1 conv, learned residual scale beta; then
LayerNorm2d, 1x1 conv to 2c, SimpleGate, 1x1 conv, residual scale gamma.
Down: 2x2 stride-2 conv; up: 1x1 conv + PixelShuffle(2); skip additions; global
residual. The input is padded to a multiple of 2^levels (shape arithmetic in the
graph) and cropped back, as the reference implementation does.

Welder's configuration: width 16, middle blocks 1, encoder [1, 1, 1], decoder [1, 1, 1], 256x256.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import Export


class LayerNorm2d(nn.Module):
    """Normalizes over channels of an NCHW tensor (written out, as NAFNet's own)."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(1, keepdim=True)
        var = (x - mu).pow(2).mean(1, keepdim=True)
        y = (x - mu) / (var + self.eps).sqrt()
        return self.weight.view(1, -1, 1, 1) * y + self.bias.view(1, -1, 1, 1)


class SimpleGate(nn.Module):
    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        return x1 * x2


class NAFBlock(nn.Module):
    def __init__(self, c, dw_expand=2, ffn_expand=2):
        super().__init__()
        dw = c * dw_expand
        self.conv1 = nn.Conv2d(c, dw, 1)
        self.conv2 = nn.Conv2d(dw, dw, 3, padding=1, groups=dw)
        self.conv3 = nn.Conv2d(dw // 2, c, 1)
        self.sca = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dw // 2, dw // 2, 1))
        self.sg = SimpleGate()
        ffn = ffn_expand * c
        self.conv4 = nn.Conv2d(c, ffn, 1)
        self.conv5 = nn.Conv2d(ffn // 2, c, 1)
        self.norm1 = LayerNorm2d(c)
        self.norm2 = LayerNorm2d(c)
        # zero-initialised in the paper (identity blocks); random here like trained weights
        self.beta = nn.Parameter(torch.randn(1, c, 1, 1) * 0.5)
        self.gamma = nn.Parameter(torch.randn(1, c, 1, 1) * 0.5)

    def forward(self, inp):
        x = self.sg(self.conv2(self.conv1(self.norm1(inp))))
        x = self.conv3(x * self.sca(x))
        y = inp + x * self.beta
        x = self.conv5(self.sg(self.conv4(self.norm2(y))))
        return y + x * self.gamma


class NAFNet(nn.Module):
    def __init__(self, img_channel=3, width=16, middle_blk_num=1, enc_blk_nums=(1, 1, 1),
                 dec_blk_nums=(1, 1, 1)):
        super().__init__()
        self.intro = nn.Conv2d(img_channel, width, 3, padding=1)
        self.ending = nn.Conv2d(width, img_channel, 3, padding=1)
        self.encoders, self.decoders = nn.ModuleList(), nn.ModuleList()
        self.downs, self.ups = nn.ModuleList(), nn.ModuleList()
        chan = width
        for n in enc_blk_nums:
            self.encoders.append(nn.Sequential(*[NAFBlock(chan) for _ in range(n)]))
            self.downs.append(nn.Conv2d(chan, 2 * chan, 2, 2))
            chan *= 2
        self.middle_blks = nn.Sequential(*[NAFBlock(chan) for _ in range(middle_blk_num)])
        for n in dec_blk_nums:
            self.ups.append(nn.Sequential(nn.Conv2d(chan, chan * 2, 1, bias=False),
                                          nn.PixelShuffle(2)))
            chan //= 2
            self.decoders.append(nn.Sequential(*[NAFBlock(chan) for _ in range(n)]))
        self.padder_size = 2 ** len(self.encoders)

    def check_image_size(self, x):
        _, _, h, w = x.size()
        mod_pad_h = (self.padder_size - h % self.padder_size) % self.padder_size
        mod_pad_w = (self.padder_size - w % self.padder_size) % self.padder_size
        return F.pad(x, (0, mod_pad_w, 0, mod_pad_h))

    def forward(self, inp):
        b, c, h, w = inp.shape
        inp = self.check_image_size(inp)
        x = self.intro(inp)
        skips = []
        for enc, down in zip(self.encoders, self.downs):
            x = enc(x)
            skips.append(x)
            x = down(x)
        x = self.middle_blks(x)
        for dec, up, skip in zip(self.decoders, self.ups, skips[::-1]):
            x = dec(up(x) + skip)
        x = self.ending(x) + inp
        return x[:, :, :h, :w]


def build(bs=1, small=False, impl="auto") -> Export:
    if impl == "lib":
        raise RuntimeError("NAFNet has no library implementation; use --impl own")
    if small:
        cfg, size = dict(width=8, middle_blk_num=1, enc_blk_nums=(1, 1), dec_blk_nums=(1, 1)), 32
    else:
        cfg, size = dict(width=16, middle_blk_num=1, enc_blk_nums=(1, 1, 1),
                         dec_blk_nums=(1, 1, 1)), 256
    x = torch.randn(bs, 3, size, size)
    return Export(NAFNet(**cfg), (x,), ["input"], ["output"], {},
                  f"NAFNet width {cfg['width']}, middle {cfg['middle_blk_num']}, enc "
                  f"{list(cfg['enc_blk_nums'])}, dec {list(cfg['dec_blk_nums'])}, {size}x{size}",
                  "own")
