"""ResNet-18 (He et al. 2016): torchvision's at 224x224 with 1000 classes; the
small config is an own definition of the same basic-block network (torchvision's
BasicBlock only takes 64-wide groups).

Small: 7x7 stride-2 stem + max pool, one basic block (two 3x3 convs, BatchNorm,
residual Add + ReLU) per stage, widths 8/16/32/64 with strided 1x1 projection
shortcuts, global pool, linear; 32x32 input, 10 classes.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, widths=(8, 16, 32, 64), blocks=(1, 1, 1, 1), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks)):
            for b in range(n):
                layers.append(_BasicBlock(cin, w, 2 if b == 0 and i > 0 else 1))
                cin = w
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        module = SmallResNet()
        size, desc, lib = 32, "ResNet basic blocks, 1 per stage, widths 8/16/32/64, 32x32, 10 classes", "own"
    else:
        from torchvision.models import resnet18  # torchvision ships with torch

        module = resnet18()
        size, desc, lib = 224, "ResNet-18 (torchvision), 224x224, 1000 classes", "torchvision"
    return Export(module, (torch.randn(bs, 3, size, size),), ["input"], ["output"], {}, desc, lib)
