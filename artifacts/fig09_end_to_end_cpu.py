#!/usr/bin/env python3
"""Fig. 9 (CPU part): end-to-end fp32 latency of the Welder model set, bs 1.

    python3 artifacts/fig09_end_to_end_cpu.py [--quick]

tilegraph (tuned for the host) against onnxruntime and, when importable, PyTorch
eager, on the same inputs and threads in the same run, with the geometric mean
of each peer's latency over tilegraph's (above 1: tilegraph is faster). --quick:
four committed small models (models/*_small), few iterations. The full run
exports the full-size models with tilegraph.torch2onnx (needs torch); without
torch it runs all ten small models and says so. The GPU columns (the paper's
V100 fp32 numbers against PyTorch, TensorRT, ...) need an NVIDIA GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, paths, report, tables, timing  # noqa: E402
from common.machine import detect  # noqa: E402
from common.model_set import QUICK_MODELS, WELDER_MODELS, export_full, small_source, torch_impl  # noqa: E402

COLUMNS = ["model", "size", "threads", "tilegraph_ms", "onnxruntime_ms", "pytorch_ms",
           "speedup_vs_onnxruntime", "speedup_vs_pytorch", "kernels"]


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    machine = detect()
    threads = args.threads
    iters, warmup = (10, 2) if args.quick else (30, 3)
    skipped = []
    full_size = not args.quick and machine.torch is not None
    models = QUICK_MODELS if args.quick else tuple(WELDER_MODELS)
    if not args.quick and not full_size:
        skipped.append(("full-size models", "exporting them needs PyTorch (pip install torch); "
                                            "ran the committed small configurations instead"))
    torch_why = machine.missing("torch")
    if torch_why:
        skipped.append(("PyTorch (CPU, eager)", torch_why))
    if why := machine.missing("onnxruntime"):
        skipped.append(("onnxruntime", why))

    rows = []
    for model in models:
        source = export_full(model) if full_size else small_source(model)
        size = "full" if full_size else "small"
        prefix = compile.prepare(source, f"{model}_{size}_full")
        try:
            stats = compile.tune(prefix)
            timing.check_outputs(prefix)
        except (compile.CompileFailure, AssertionError) as e:
            skipped.append((model, f"failed: {e}"))
            continue
        ms = timing.time_tilegraph_and_onnxruntime(prefix, threads=threads, iters=iters, warmup=warmup,
                                                   with_onnxruntime=machine.missing("onnxruntime") is None)
        torch_ms = None
        if not torch_why:
            try:
                torch_ms = timing.time_torch_cpu(model, small=not full_size, impl=torch_impl(source),
                                                 threads=threads, iters=iters, warmup=warmup)
            except Exception as e:  # a model PyTorch cannot build here is a gap, not a crash
                skipped.append((f"PyTorch {model}", f"failed: {type(e).__name__}: {e}"))
        tg = ms["tilegraph"]
        rows.append({"model": model, "size": size, "threads": threads, "tilegraph_ms": tg,
                     "onnxruntime_ms": ms["onnxruntime"], "pytorch_ms": torch_ms,
                     "speedup_vs_onnxruntime": ms["onnxruntime"] / tg if ms["onnxruntime"] else None,
                     "speedup_vs_pytorch": torch_ms / tg if torch_ms else None, "kernels": stats["kernels"]})
        ort_text = "-" if ms["onnxruntime"] is None else f"{ms['onnxruntime']:.3f}"
        print(f"fig09: {model}: tilegraph {tg:.3f} ms, onnxruntime {ort_text} ms", flush=True)

    for column, need in (("GPU fp32 (tilegraph CUDA, PyTorch, torch.compile, onnxruntime-gpu)", "gpu"),
                         ("TensorRT", "trtexec")):
        if why := machine.missing(need):
            skipped.append((column, why))
    skipped.append(("INT8 (CPU)", "not in this script yet; benchmarks/int8_vs_onnxruntime.py times the INT8 models"))

    out = paths.out_dir()
    csv = tables.write_csv(out / "fig09_end_to_end_cpu.csv", COLUMNS, rows)
    series = {"tilegraph": [r["tilegraph_ms"] for r in rows], "onnxruntime": [r["onnxruntime_ms"] for r in rows]}
    if any(r["pytorch_ms"] for r in rows):
        series["PyTorch"] = [r["pytorch_ms"] for r in rows]
    chart = charts.bars(out / "fig09_end_to_end_cpu.png", [r["model"] for r in rows], series,
                        ylabel="median latency (ms)", title=f"Fig. 9 (CPU): fp32 bs 1, {threads} threads")
    geo_ort = tables.geomean(r["speedup_vs_onnxruntime"] for r in rows)
    geo_torch = tables.geomean(r["speedup_vs_pytorch"] for r in rows)
    body = (tables.markdown_table(COLUMNS, rows) +
            f"\n\nGeomean speedup of tilegraph: {geo_ort:.2f}x over onnxruntime"
            + (f", {geo_torch:.2f}x over PyTorch" if rows and any(r["speedup_vs_pytorch"] for r in rows) else "")
            + " (above 1: tilegraph faster).")
    report.write_section("fig09", "Fig. 9 — end-to-end latency, fp32 (CPU columns)",
                         paper="V100 fp32 (CUDA cores), bs 1 geomean speedups of Welder: 4.29x over PyTorch, "
                               "2.07x over onnxruntime, 1.96x over Rammer, 1.44x over Ansor, 1.47x over TensorRT; "
                               "bs 64: 1.21x over TensorRT.",
                         body=body, chart=chart, csv=csv, skipped=skipped)
    print(f"fig09: geomean vs onnxruntime {geo_ort:.2f}x -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
