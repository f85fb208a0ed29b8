#!/usr/bin/env python3
"""Stands in for the `tilegraph` CLI in tests: `run PREFIX --inputs D --outputs D ...`
computes the fake model of fake_model.c (y = 2*x + B, ids:out = ids + 1) with B read
from PREFIX/tilegraph_rt/<arch>/weights.bin, and writes y.npy / ids_out.npy."""
import argparse
import sys
from pathlib import Path

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("cmd")
p.add_argument("prefix")
p.add_argument("--arch", default="host")
p.add_argument("--inputs")
p.add_argument("--outputs")
p.add_argument("--warmup")
p.add_argument("--iters")
a = p.parse_args()
if a.cmd != "run":
    sys.exit(f"fake tilegraph: unsupported command {a.cmd}")
b = np.fromfile(Path(a.prefix) / "tilegraph_rt" / a.arch / "weights.bin", dtype=np.float32)[0]
x = np.load(Path(a.inputs) / "x.npy")
ids = np.load(Path(a.inputs) / "ids.npy")
out = Path(a.outputs)
out.mkdir(parents=True, exist_ok=True)
np.save(out / "y.npy", (2 * x + b).astype(np.float32))
np.save(out / "ids_out.npy", ids + 1)
print("fake tilegraph run: ok")
