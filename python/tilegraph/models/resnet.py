"""ResNet-50 (He et al. 2016) from torchvision, 224x224, 1000 classes.

The small config keeps torchvision's bottleneck ResNet module (7x7 stride-2
stem, max pool, bottleneck blocks with 1x1 / 3x3 / 1x1 convs, strided and
projection shortcuts, residual Add + ReLU, global pool, linear) with one block
per stage, bottleneck width 16 per group (a quarter of ResNet-50's), 32x32
input, 10 classes.
"""

from __future__ import annotations

import torch

from . import Export


def build(bs=1, small=False, impl="auto") -> Export:
    # torchvision's definition is used whatever ``impl`` says: torchvision ships with torch.
    from torchvision.models.resnet import Bottleneck, ResNet, resnet50

    if small:
        module = ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10, width_per_group=16)
        size, desc = 32, "ResNet (torchvision) bottleneck, 1 block per stage, width 16 per group, 32x32, 10 classes"
    else:
        module = resnet50()
        size, desc = 224, "ResNet-50 (torchvision), 224x224, 1000 classes"
    x = torch.randn(bs, 3, size, size)
    return Export(module, (x,), ["input"], ["output"], {}, desc, "torchvision")
