#!/usr/bin/env python3
"""Fig. 11: fp16 without tensor cores vs with. GPU only.

    python3 artifacts/fig11_no_tensor_cores.py [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cli  # noqa: E402
from common.gpu_only import skip_section  # noqa: E402

PAPER = "V100 fp16 on CUDA cores (no tensor cores): Welder 1.74x faster than Ansor on average, up to 2.82x."


def main(argv=None) -> int:
    cli.parse(__doc__, argv)  # --quick / --threads change nothing here
    skip_section("fig11", "Fig. 11 — fp16 without tensor cores (GPU)", paper=PAPER,
                 needs=[("tilegraph CUDA fp16, tensor cores on and off", "gpu")],
                 not_yet=[("tensor cores off", "tilegraph has no `tune --no-tensor-cores` switch yet")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
