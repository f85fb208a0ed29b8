#!/usr/bin/env python3
"""Fig. 1: how far a peer is from the hardware — the compute and memory
bandwidth onnxruntime achieves, as a fraction of the arch spec's peaks.

    python3 artifacts/fig01_peer_efficiency.py [--quick]

For BERT, ViT, Swin, MobileViT, NAFNet and NeRF (the committed small
configurations, bs 1, fp32 on the host CPU): the work is the FLOPs of the
compiled model's kernels (manifest.json) and the traffic the cost model's
DRAM bytes of the one-op-per-kernel schedule (what an operator-at-a-time
runtime such as onnxruntime moves); each is divided by onnxruntime's median
time and by the host's peaks as `tilegraph arch --json` prints them. The
compute peak is scaled to the threads used (peak / cores x threads); the
bandwidth peak is the whole DRAM's. tilegraph's own fractions (its fused
schedule's DRAM bytes) are shown beside. --quick measures the four that Fig. 9
compiled already (MobileViT and NeRF only in the full run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, paths, report, tables, timing  # noqa: E402
from common.arch_peaks import arch_spec, dram_bandwidth  # noqa: E402
from common.machine import detect  # noqa: E402
from common.model_set import QUICK_MODELS, small_source  # noqa: E402

MODELS = ("bert", "vit", "swin_transformer", "mobilevit", "NAFNet", "NeRF")
COLUMNS = ["model", "threads", "gflop", "mb_unfused", "mb_fused", "onnxruntime_ms", "tilegraph_ms",
           "onnxruntime_compute_pct", "onnxruntime_memory_pct", "tilegraph_compute_pct", "tilegraph_memory_pct"]


def work_of(prefix: Path) -> tuple:
    """(FLOPs of the fused kernels, predicted DRAM bytes one op per kernel, fused) of PREFIX's host project."""
    manifest = json.loads((compile.project(prefix) / "manifest.json").read_text())
    flops = sum(k["flops"] for k in manifest["kernels"])
    explain = manifest["explain"]
    return flops, explain["dram_bytes_unfused"], explain["dram_bytes"]


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    machine = detect()
    threads = args.threads
    iters, warmup = (10, 2) if args.quick else (30, 3)
    skipped = []
    if why := machine.missing("onnxruntime"):
        skipped.append(("onnxruntime", why))
    spec = arch_spec("host")
    peak_flops = spec["peak_fp32_flops"] / spec["compute_units"] * min(threads, spec["compute_units"])
    peak_bw = dram_bandwidth(spec)
    rows = []
    for model in QUICK_MODELS if args.quick else MODELS:
        prefix = compile.prepare(small_source(model), f"{model}_small_full")  # fig09's project when it ran first
        try:
            compile.tune(prefix)
            timing.check_outputs(prefix)
        except (compile.CompileFailure, AssertionError) as e:
            skipped.append((model, f"failed: {e}"))
            continue
        ms = timing.time_tilegraph_and_onnxruntime(prefix, threads=threads, iters=iters, warmup=warmup,
                                                   with_onnxruntime=machine.missing("onnxruntime") is None)
        flops, unfused_bytes, fused_bytes = work_of(prefix)

        def pct(amount, peak, t_ms):
            return None if not t_ms else 100 * amount / (t_ms * 1e-3) / peak

        ort_ms, tg_ms = ms["onnxruntime"], ms["tilegraph"]
        rows.append({"model": model, "threads": threads, "gflop": flops / 1e9, "mb_unfused": unfused_bytes / 1e6,
                     "mb_fused": fused_bytes / 1e6, "onnxruntime_ms": ort_ms, "tilegraph_ms": tg_ms,
                     "onnxruntime_compute_pct": pct(flops, peak_flops, ort_ms),
                     "onnxruntime_memory_pct": pct(unfused_bytes, peak_bw, ort_ms),
                     "tilegraph_compute_pct": pct(flops, peak_flops, tg_ms),
                     "tilegraph_memory_pct": pct(fused_bytes, peak_bw, tg_ms)})
        r = rows[-1]
        print(f"fig01: {model}: onnxruntime {ort_ms or 0:.3f} ms = {r['onnxruntime_compute_pct'] or 0:.2f}% of "
              f"peak FLOP/s, {r['onnxruntime_memory_pct'] or 0:.2f}% of DRAM bandwidth", flush=True)
    if args.quick:
        skipped.append(("mobilevit, NeRF", "--quick: left out (the four Fig. 9 compiled are measured); the full run "
                                            "has them"))
    skipped.append(("full-size models at bs 64 (the paper's setting)",
                    "the committed small configurations at bs 1 are measured here (the full-size ones need "
                    "PyTorch to export)"))
    if why := machine.missing("gpu"):
        skipped.append(("GPU (onnxruntime-gpu against the GPU arch's peaks)", why))

    out = paths.out_dir()
    csv = tables.write_csv(out / "fig01_peer_efficiency.csv", COLUMNS, rows)
    chart = charts.bars(out / "fig01_peer_efficiency.png", [r["model"] for r in rows],
                        {"onnxruntime compute": [r["onnxruntime_compute_pct"] for r in rows],
                         "onnxruntime memory": [r["onnxruntime_memory_pct"] for r in rows],
                         "tilegraph compute": [r["tilegraph_compute_pct"] for r in rows],
                         "tilegraph memory": [r["tilegraph_memory_pct"] for r in rows]},
                        ylabel="% of the host's peak", title=f"Fig. 1 (CPU): fraction of peak, fp32 bs 1, "
                                                             f"{threads} thread(s)")
    avg = lambda key: tables.geomean(r[key] for r in rows)  # noqa: E731
    body = (f"Peaks (`tilegraph arch --json`, host): {spec['peak_fp32_flops'] / 1e9:.1f} GFLOP/s fp32 over "
            f"{spec['compute_units']} cores ({peak_flops / 1e9:.1f} GFLOP/s for {threads} thread(s)), DRAM "
            f"{peak_bw / 1e9:.1f} GB/s.\n\n" + tables.markdown_table(COLUMNS, rows) +
            f"\n\nGeomean over the models: onnxruntime reaches {avg('onnxruntime_compute_pct'):.2f}% of peak "
            f"compute and {avg('onnxruntime_memory_pct'):.2f}% of DRAM bandwidth; tilegraph "
            f"{avg('tilegraph_compute_pct'):.2f}% and {avg('tilegraph_memory_pct'):.2f}%. Traffic is the cost "
            "model's prediction (one op per kernel for onnxruntime, the fused schedule for tilegraph), not a "
            "counter reading; the small models' tensors stay in the caches, so bytes over time can pass the "
            "DRAM peak (over 100%).")
    report.write_section("fig01", "Fig. 1 — how far a peer is from the hardware (CPU)",
                         paper="V100, onnxruntime on BERT, ViT, Swin, MobileViT, NAFNet (bs 64 fp32) and NeRF: "
                               "51.6% of peak compute, 96.7% of peak memory bandwidth.",
                         body=body, chart=chart, csv=csv, skipped=skipped)
    print(f"fig01: geomean onnxruntime {avg('onnxruntime_compute_pct'):.2f}% compute, "
          f"{avg('onnxruntime_memory_pct'):.2f}% memory -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
