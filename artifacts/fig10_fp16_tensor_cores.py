#!/usr/bin/env python3
"""Fig. 10: end-to-end latency in fp16 on tensor cores, bs 1 and 64, vs PyTorch,
torch.compile, onnxruntime and TensorRT. GPU only.

    python3 artifacts/fig10_fp16_tensor_cores.py [--quick]

On a machine with an NVIDIA GPU the suite's `cuda` preset measures these
columns (`python -m tilegraph.bench export --preset cuda`); this script
reports which ones this machine cannot run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cli  # noqa: E402
from common.gpu_only import skip_experiment  # noqa: E402


def main(argv=None) -> int:
    cli.parse(__doc__, argv)  # --quick / --threads change nothing here
    skip_experiment("fig10", needs=[("tilegraph CUDA fp16 (tensor cores)", "gpu"),
                                    ("PyTorch eager / torch.compile", "torch-cuda"), ("TensorRT", "trtexec")],
                    not_yet=[("all columns on a GPU machine", "this script only reports yet; the bench suite's "
                              "cuda preset times tilegraph and PyTorch there")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
