#!/usr/bin/env python3
"""Table 3: BERT, ViT and Swin next to the fastest peer present.

    python3 artifacts/table3_transformers.py [--quick]

fp32, bs 1, on the host CPU: tilegraph against the faster of onnxruntime and
(when importable) PyTorch eager, same inputs and threads. The committed small
configurations unless PyTorch can export the full-size models (full run).
Reuses Fig. 9's compiled projects when it ran first.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cli, peer_table  # noqa: E402

PAPER = ("V100, BERT / ViT / Swin at fp32 and fp16, bs 1 and 64, Welder's latency next to the fastest "
         "baseline's (the paper's Table 3; its numbers are not transcribed here: compare the speedup column).")


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    peer_table.run("table3", "Table 3 — BERT, ViT, Swin vs the fastest peer", paper=PAPER,
                   models=("bert", "vit", "swin_transformer"), args=args,
                   extra_skipped=[("fp16 columns", "fp16 runs on a GPU's tensor cores in the paper; on this CPU "
                                   "tilegraph computes fp16 in fp32 and onnxruntime's CPU provider has few fp16 "
                                   "kernels, so the comparison would not be the paper's"),
                                  ("bs 64", "not run: the committed small models are exported at bs 1 and the "
                                   "full-size ones at bs 64 would take past the full run's time on 2 cores "
                                   "(export with `tilegraph.torch2onnx MODEL --bs 64` and run fig09's timing "
                                   "by hand)")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
