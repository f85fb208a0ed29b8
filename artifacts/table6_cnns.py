#!/usr/bin/env python3
"""Table 6: ResNet-18, ResNet-50, UNet and VGG-16 against the peers present.

    python3 artifacts/table6_cnns.py [--quick]

fp32, bs 1, on the host CPU, tilegraph against onnxruntime and (when
importable) PyTorch eager. The committed small configurations
(models/resnet18_small, unet_small, vgg16_small; ResNet-50 has none, so it
needs PyTorch to export) unless PyTorch can export the full-size models.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cli, peer_table  # noqa: E402
from common.model_set import CNN_MODELS  # noqa: E402

PAPER = ("V100, ResNet-18 / ResNet-50 / UNet / VGG-16 against the baselines (the paper's Table 6; its "
         "numbers are not transcribed here: compare the speedup column).")


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    peer_table.run("table6", "Table 6 — CNNs vs the peers present", paper=PAPER, models=tuple(CNN_MODELS), args=args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
