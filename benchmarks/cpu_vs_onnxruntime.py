#!/usr/bin/env python3
"""Median latency of compiled models vs onnxruntime, measured in the same run.

    PYTHONPATH=python python3 benchmarks/cpu_vs_onnxruntime.py PREFIX [PREFIX ...] [--threads 2] [--iters 20]

Each PREFIX must have been tuned (`tilegraph tune PREFIX`). Both engines get the
same seeded inputs (tilegraph.test_acc's generator) and the same thread count;
runs alternate between the engines so machine noise hits both alike. Prints a
table with medians and the ratio onnxruntime / tilegraph (> 1: tilegraph faster).
A benchmark, not a test: it asserts nothing.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import onnxruntime as ort

from tilegraph.runner import CompiledModel
from tilegraph.test_acc import generate_inputs, load_input_ranges, model_inputs


def median_ms(fn, iters):
    samples = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefixes", nargs="+")
    ap.add_argument("--arch", default="host")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    print(f"{'model':28s} {'tilegraph ms':>13s} {'onnxruntime ms':>15s} {'ort/tg':>7s}")
    for prefix in map(Path, args.prefixes):
        model_path = prefix / "model.onnx"
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        feeds = generate_inputs(model_inputs(model_path), seed=0, ranges=load_input_ranges(prefix))
        compiled = CompiledModel(prefix, arch=args.arch, num_threads=args.threads)
        for _ in range(args.warmup):
            sess.run(None, feeds)
            compiled.run(feeds)
        tg_ms, ort_ms = [], []
        for _ in range(args.iters):  # interleaved so noise hits both engines alike
            tg_ms.append(median_ms(lambda: compiled.run(feeds), 1))
            ort_ms.append(median_ms(lambda: sess.run(None, feeds), 1))
        tg, ref = statistics.median(tg_ms), statistics.median(ort_ms)
        print(f"{prefix.name:28s} {tg:13.3f} {ref:15.3f} {ref / tg:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
