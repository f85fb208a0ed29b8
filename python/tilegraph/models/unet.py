"""UNet (Ronneberger et al. 2015), own definition: an encoder of double 3x3
conv (BatchNorm, ReLU) stages joined by 2x2 max pools, a decoder of 2x2
stride-2 transposed convs whose output is concatenated with the encoder stage
of the same size, then a double conv; a 1x1 conv to the classes.

Full: widths 64/128/256/512/1024 (the paper's), 3x256x256 input, 2 classes.
Small: widths 4/8/16/32/64, 3x32x32 input, 2 classes.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, widths=(64, 128, 256, 512, 1024), cin=3, classes=2):
        super().__init__()
        self.down = nn.ModuleList()
        for w in widths:
            self.down.append(_double_conv(cin, w))
            cin = w
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(cin, w, 2, stride=2))
            self.merge.append(_double_conv(2 * w, w))
            cin = w
        self.head = nn.Conv2d(cin, classes, 1)

    def forward(self, x):
        skips = []
        for i, stage in enumerate(self.down):
            x = stage(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = self.pool(x)
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([skips.pop(), up(x)], dim=1))
        return self.head(x)


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        module, size = UNet(widths=(4, 8, 16, 32, 64)), 32
        desc = "UNet widths 4/8/16/32/64, transposed-conv decoder, 32x32, 2 classes"
    else:
        module, size = UNet(), 256
        desc = "UNet widths 64-1024, transposed-conv decoder, 256x256, 2 classes"
    return Export(module, (torch.randn(bs, 3, size, size),), ["input"], ["output"], {}, desc, "own")
