#!/usr/bin/env python3
"""Fig. 9 (CPU part): end-to-end fp32 latency of the Welder model set, bs 1.

    python3 artifacts/fig09_end_to_end_cpu.py [--quick]

tilegraph (tuned for the host) against onnxruntime and, when importable, PyTorch
eager, on the same inputs and threads in the same run, with the geometric mean
of each peer's latency over tilegraph's (above 1: tilegraph is faster). --quick:
four committed small models (models/*_small), few iterations. INT8 rows: the
transformer models quantized with onnxruntime's quantize_dynamic (int8 weights,
activations quantized at run time), tilegraph vs onnxruntime on the same
quantized model (BERT in --quick; BERT and ViT in the full run). The full run
exports the full-size models with tilegraph.torch2onnx (needs torch); without
torch it runs all ten small models and says so. The GPU columns (the paper's
V100 fp32 numbers against PyTorch, TensorRT, ...) need an NVIDIA GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, end_to_end, paths, quantize, report, tables  # noqa: E402
from common.machine import detect  # noqa: E402
from common.model_set import QUICK_MODELS, WELDER_MODELS, export_full, small_source  # noqa: E402

COLUMNS = ["model", "precision", "size", "threads", "tilegraph_ms", "onnxruntime_ms", "pytorch_ms",
           "speedup_vs_onnxruntime", "speedup_vs_pytorch", "kernels"]


# INT8 rows (quantize_dynamic: its MatMulInteger covers the transformers' matmuls).
INT8_QUICK_MODELS = ("bert",)
INT8_MORE_MODELS = ("vit",)


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
    cases = [(model, "fp32") for model in models]
    if why := machine.missing("onnxruntime"):
        skipped.append(("INT8 (CPU)", f"quantizing needs onnxruntime.quantization: {why}"))
    else:
        int8_models = INT8_QUICK_MODELS if args.quick else INT8_QUICK_MODELS + INT8_MORE_MODELS
        cases += [(model, "int8") for model in int8_models]
    for model, precision in cases:
        source = export_full(model) if full_size else small_source(model)
        size = "full" if full_size else "small"
        if precision == "int8":
            prefix = quantize.quantize_dynamic_prefix(source, f"{model}_{size}_int8_dynamic")
        else:
            prefix = compile.prepare(source, f"{model}_{size}_full")
        result = end_to_end.measure(model, source, prefix, machine=machine, threads=threads, iters=iters,
                                    warmup=warmup, full_size=full_size, skipped=skipped,
                                    with_torch=precision == "fp32")
        if result is None:
            continue
        tg, ort_ms, torch_ms = result["tilegraph_ms"], result["onnxruntime_ms"], result["pytorch_ms"]
        rows.append({"model": model, "precision": precision, "size": size, "threads": threads, "tilegraph_ms": tg,
                     "onnxruntime_ms": ort_ms, "pytorch_ms": torch_ms,
                     "speedup_vs_onnxruntime": ort_ms / tg if ort_ms else None,
                     "speedup_vs_pytorch": torch_ms / tg if torch_ms else None, "kernels": result["kernels"]})
        ort_text = "-" if ort_ms is None else f"{ort_ms:.3f}"
        print(f"fig09: {model} {precision}: tilegraph {tg:.3f} ms, onnxruntime {ort_text} ms", flush=True)

    for column, need in (("GPU fp32 (tilegraph CUDA, PyTorch, torch.compile, onnxruntime-gpu)", "gpu"),
                         ("TensorRT", "trtexec")):
        if why := machine.missing(need):
            skipped.append((column, why))
    if any(r["precision"] == "int8" for r in rows) and not torch_why:
        skipped.append(("PyTorch INT8", "not timed: PyTorch's dynamic quantization is a different quantized model"))

    out = paths.out_dir()
    csv = tables.write_csv(out / "fig09_end_to_end_cpu.csv", COLUMNS, rows)
    series = {"tilegraph": [r["tilegraph_ms"] for r in rows], "onnxruntime": [r["onnxruntime_ms"] for r in rows]}
    if any(r["pytorch_ms"] for r in rows):
        series["PyTorch"] = [r["pytorch_ms"] for r in rows]
    chart = charts.bars(out / "fig09_end_to_end_cpu.png",
                        [r["model"] + (" int8" if r["precision"] == "int8" else "") for r in rows], series,
                        ylabel="median latency (ms)", title=f"Fig. 9 (CPU): fp32 and INT8, bs 1, {threads} threads")
    fp32_rows = [r for r in rows if r["precision"] == "fp32"]
    int8_rows = [r for r in rows if r["precision"] == "int8"]
    geo_ort = tables.geomean(r["speedup_vs_onnxruntime"] for r in fp32_rows)
    geo_torch = tables.geomean(r["speedup_vs_pytorch"] for r in fp32_rows)
    geo_int8 = tables.geomean(r["speedup_vs_onnxruntime"] for r in int8_rows)
    body = (tables.markdown_table(COLUMNS, rows) +
            f"\n\nGeomean speedup of tilegraph, fp32: {geo_ort:.2f}x over onnxruntime"
            + (f", {geo_torch:.2f}x over PyTorch" if any(r["speedup_vs_pytorch"] for r in fp32_rows) else "")
            + (f"; INT8 (quantize_dynamic): {geo_int8:.2f}x over onnxruntime" if int8_rows else "")
            + " (above 1: tilegraph faster).")
    report.write_section("fig09", "Fig. 9 — end-to-end latency, fp32 (CPU columns)",
                         paper="V100 fp32 (CUDA cores), bs 1 geomean speedups of Welder: 4.29x over PyTorch, "
                               "2.07x over onnxruntime, 1.96x over Rammer, 1.44x over Ansor, 1.47x over TensorRT; "
                               "bs 64: 1.21x over TensorRT.",
                         body=body, chart=chart, csv=csv, skipped=skipped)
    print(f"fig09: geomean vs onnxruntime fp32 {geo_ort:.2f}x, int8 {geo_int8:.2f}x -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
