#!/usr/bin/env python3
"""Table 7: memory scale-up, UNet and VGG-16 at inputs whose activations exceed
the device memory, tiled by the scheduler over one more memory tier.

    python3 artifacts/table7_memory_scaleup.py [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cli  # noqa: E402
from common.gpu_only import skip_section  # noqa: E402

PAPER = ("UNet and VGG-16 at 8k x 8k on V100, spilling to host memory: 38.2 -> 14.5 s and 15.7 -> 8.3 s "
         "with the host-memory tier vs Welder-base.")


def main(argv=None) -> int:
    cli.parse(__doc__, argv)  # --quick / --threads change nothing here
    skip_section("table7", "Table 7 — memory scale-up (GPU)", paper=PAPER,
                 needs=[("UNet / VGG-16 beyond the GPU's memory", "gpu")],
                 not_yet=[("the next memory tier", "the scheduler has no `--memory-budget` tier yet, and UNet / "
                           "VGG-16 are not in torch2onnx's model zoo yet")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
