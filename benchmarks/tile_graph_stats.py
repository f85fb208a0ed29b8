#!/usr/bin/env python3
"""Tile-graph fusion figures: per model, kernels and predicted DRAM traffic
unfused (one op per kernel) vs fused, and the scheduling time.

For each PREFIX (a folder with model.onnx) and each --arch, runs
`tilegraph tune PREFIX --arch A --no-build` with a cold schedule cache (the
cache file is removed first, so the time is the real search) and reads the
project's compile_stats.json. Prints a markdown table.

  python3 benchmarks/tile_graph_stats.py models/*_small --arch H100 V100 host
  python3 benchmarks/tile_graph_stats.py /tmp/tilegraph_full/* --arch H100
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tune(exe, prefix, arch, warm):
    project = prefix / "tilegraph_rt" / arch
    cache = project / "schedule_cache.json"
    if not warm and cache.exists():
        cache.unlink()
    start = time.monotonic()
    r = subprocess.run([exe, "tune", str(prefix), "--arch", arch, "--no-build"],
                       capture_output=True, text=True)
    wall = time.monotonic() - start
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:] or ["?"]
    stats = json.loads((project / "compile_stats.json").read_text())
    stats["wall"] = wall
    return stats, None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prefixes", nargs="+", type=Path)
    p.add_argument("--arch", nargs="+", default=["H100"])
    p.add_argument("--warm", action="store_true", help="keep the schedule cache (measures re-tuning)")
    p.add_argument("--tilegraph", default=os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph")))
    args = p.parse_args()
    print("| model | arch | kernels unfused | kernels fused | kernels change | DRAM MB unfused | DRAM MB fused "
          "| DRAM change | schedule s | tune wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for prefix in args.prefixes:
        if not (prefix / "model.onnx").is_file():
            continue
        for arch in args.arch:
            stats, err = tune(args.tilegraph, prefix, arch, args.warm)
            if stats is None:
                print(f"| {prefix.name} | {arch} | failed: {err[0]} |||||||")
                continue
            ku, kf = stats["kernels_unfused"], stats["kernels"]
            du, df = stats["dram_bytes_unfused"] / 1e6, stats["dram_bytes"] / 1e6
            print(f"| {prefix.name} | {arch} | {ku} | {kf} | {100 * (kf - ku) / ku:+.0f}% | {du:.2f} | {df:.2f} "
                  f"| {100 * (df - du) / du:+.0f}% | {stats['seconds']['schedule']:.1f} | {stats['wall']:.1f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
