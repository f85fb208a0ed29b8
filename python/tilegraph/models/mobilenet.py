"""MobileNetV2 (Sandler et al. 2018) from torchvision, 224x224, 1000 classes.

The small config keeps torchvision's module (Conv-BN-ReLU6, inverted residuals
with and without the skip, depthwise convs, global pool, dropout + linear) with
three inverted-residual stages, width 0.5, 32x32 input, 10 classes.
"""

from __future__ import annotations

import torch

from . import Export


def build(bs=1, small=False, impl="auto") -> Export:
    # torchvision's definition is used whatever ``impl`` says: torchvision ships with torch.
    from torchvision.models import mobilenet_v2

    if small:
        setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2]]  # t, c, n, s
        module = mobilenet_v2(width_mult=0.5, inverted_residual_setting=setting, num_classes=10)
        size, desc = 32, "MobileNetV2 (torchvision) width 0.5, 3 IR stages, 32x32, 10 classes"
    else:
        module = mobilenet_v2()
        size, desc = 224, "MobileNetV2 (torchvision) width 1.0, 224x224, 1000 classes"
    x = torch.randn(bs, 3, size, size)
    return Export(module, (x,), ["input"], ["output"], {}, desc, "torchvision")
