"""VGG-16 (Simonyan & Zisserman 2015): torchvision's at 224x224 with 1000
classes; the small config is an own definition with the same layer layout
(torchvision's classifier is fixed at 512*7*7 -> 4096).

Small: the 13 3x3 convs + ReLU in five stages (2, 2, 3, 3, 3) each closed by a
2x2 max pool, widths 4/8/16/32/32, then three linear layers (32, 32, 10) with
ReLU between; 32x32 input.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export

VGG16_STAGES = (2, 2, 3, 3, 3)


class SmallVGG(nn.Module):
    def __init__(self, widths=(4, 8, 16, 32, 32), hidden=32, classes=10):
        super().__init__()
        layers, cin = [], 3
        for n, w in zip(VGG16_STAGES, widths):
            for _ in range(n):
                layers += [nn.Conv2d(cin, w, 3, padding=1), nn.ReLU()]
                cin = w
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(cin, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                        nn.Linear(hidden, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        module = SmallVGG()
        size, desc, lib = 32, "VGG-16 layout (13 convs, 3 linear), widths 4-32, hidden 32, 32x32, 10 classes", "own"
    else:
        from torchvision.models import vgg16  # torchvision ships with torch

        module = vgg16()
        size, desc, lib = 224, "VGG-16 (torchvision), 224x224, 1000 classes", "torchvision"
    return Export(module, (torch.randn(bs, 3, size, size),), ["input"], ["output"], {}, desc, lib)
