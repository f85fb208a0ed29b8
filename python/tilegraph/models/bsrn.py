"""BSRN (Li et al., "Blueprint Separable Residual Network for Efficient Image
Super-Resolution", CVPRW 2022).

Blueprint separable convolutions (BSConvU: 1x1 pointwise then kxk depthwise),
ESDB blocks (three distillation steps: 1x1 distilled branch + BSConv residual
branch with GELU, a last BSConv, concat, 1x1), enhanced spatial attention (ESA:
1x1 reduce, stride-2 conv, 7x7/3 max-pool, convs, bilinear upsample, sigmoid
gate) and contrast-aware channel attention (CCA: channel std + mean, 1x1
squeeze/excite, sigmoid), trunk concat + 1x1 + GELU + BSConv, and a
PixelShuffle upsampler. The input is repeated 4x along channels as in the reference.

Full (reference defaults): 64 features, 8 blocks, x4 upscale, 256x256 input.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import Export


class BSConvU(nn.Module):
    def __init__(self, cin, cout, kernel_size=3, stride=1, padding=1):
        super().__init__()
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.dw = nn.Conv2d(cout, cout, kernel_size, stride, padding, groups=cout)

    def forward(self, x):
        return self.dw(self.pw(x))


def stdv_channels(x):
    mean = x.sum(3, keepdim=True).sum(2, keepdim=True) / (x.size(2) * x.size(3))
    var = (x - mean).pow(2).sum(3, keepdim=True).sum(2, keepdim=True) / (x.size(2) * x.size(3))
    return var.pow(0.5)


class CCALayer(nn.Module):
    def __init__(self, channel, reduction=16):
        super().__init__()
        mid = max(1, channel // reduction)
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv_du = nn.Sequential(nn.Conv2d(channel, mid, 1), nn.ReLU(inplace=True),
                                     nn.Conv2d(mid, channel, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.conv_du(stdv_channels(x) + self.avg_pool(x))


class ESA(nn.Module):
    def __init__(self, num_feat):
        super().__init__()
        f = num_feat // 4
        self.conv1 = nn.Conv2d(num_feat, f, 1)
        self.conv_f = nn.Conv2d(f, f, 1)
        self.max_pool = nn.MaxPool2d(kernel_size=7, stride=3)
        self.conv_max = BSConvU(f, f, 3)
        self.conv2 = BSConvU(f, f, 3, 2, 0)
        self.conv3 = BSConvU(f, f, 3)
        self.conv3_ = BSConvU(f, f, 3)
        self.conv4 = nn.Conv2d(f, num_feat, 1)
        self.gelu = nn.GELU()

    def forward(self, x):
        c1_ = self.conv1(x)
        c1 = self.conv2(c1_)
        v_range = self.gelu(self.conv_max(self.max_pool(c1)))
        c3 = self.conv3_(self.gelu(self.conv3(v_range)))
        c3 = F.interpolate(c3, (x.size(2), x.size(3)), mode="bilinear", align_corners=False)
        return x * torch.sigmoid(self.conv4(c3 + self.conv_f(c1_)))


class ESDB(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dc = c // 2
        self.c1_d, self.c1_r = nn.Conv2d(c, self.dc, 1), BSConvU(c, c, 3)
        self.c2_d, self.c2_r = nn.Conv2d(c, self.dc, 1), BSConvU(c, c, 3)
        self.c3_d, self.c3_r = nn.Conv2d(c, self.dc, 1), BSConvU(c, c, 3)
        self.c4 = BSConvU(c, self.dc, 3)
        self.act = nn.GELU()
        self.c5 = nn.Conv2d(self.dc * 4, c, 1)
        self.esa = ESA(c)
        self.cca = CCALayer(c)

    def forward(self, x):
        d1 = self.act(self.c1_d(x))
        r1 = self.act(self.c1_r(x) + x)
        d2 = self.act(self.c2_d(r1))
        r2 = self.act(self.c2_r(r1) + r1)
        d3 = self.act(self.c3_d(r2))
        r3 = self.act(self.c3_r(r2) + r2)
        r4 = self.act(self.c4(r3))
        out = self.c5(torch.cat([d1, d2, d3, r4], dim=1))
        return self.cca(self.esa(out)) + x


class BSRN(nn.Module):
    def __init__(self, num_in_ch=3, num_feat=64, num_block=8, num_out_ch=3, upscale=4):
        super().__init__()
        self.fea_conv = BSConvU(num_in_ch * 4, num_feat, 3)
        self.blocks = nn.ModuleList(ESDB(num_feat) for _ in range(num_block))
        self.c1 = nn.Conv2d(num_feat * num_block, num_feat, 1)
        self.gelu = nn.GELU()
        self.c2 = BSConvU(num_feat, num_feat, 3)
        self.upsampler = nn.Sequential(nn.Conv2d(num_feat, num_out_ch * upscale * upscale, 3, 1, 1),
                                       nn.PixelShuffle(upscale))

    def forward(self, x):
        x = torch.cat([x, x, x, x], dim=1)
        fea = self.fea_conv(x)
        outs, h = [], fea
        for blk in self.blocks:
            h = blk(h)
            outs.append(h)
        trunk = self.gelu(self.c1(torch.cat(outs, dim=1)))
        return self.upsampler(self.c2(trunk) + fea)


def build(bs=1, small=False, impl="auto") -> Export:
    if impl == "lib":
        raise RuntimeError("BSRN has no library implementation; use --impl own")
    if small:
        cfg, size = dict(num_feat=16, num_block=2, upscale=2), 32
    else:
        cfg, size = dict(num_feat=64, num_block=8, upscale=4), 256
    x = torch.randn(bs, 3, size, size)
    return Export(BSRN(**cfg), (x,), ["input"], ["output"], {},
                  f"BSRN {cfg['num_feat']} features, {cfg['num_block']} ESDB blocks, "
                  f"x{cfg['upscale']}, {size}x{size}", "own")
