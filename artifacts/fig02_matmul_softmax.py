#!/usr/bin/env python3
"""Fig. 2: one fused subgraph, batched MatMul + Softmax, fused vs unfused.

    python3 artifacts/fig02_matmul_softmax.py [--quick]

The paper's case: Q (64x12x128x64) x K^T (64x12x64x128), then Softmax over the
last axis; Welder fuses the two (the 128x128 scores never reach DRAM) and goes
from 0.36 ms (unfused) to 0.29 ms on a V100. Here the same graph, built with
onnx.helper, is compiled for the host CPU with `--fusion-level full` and `none`
and timed next to onnxruntime; --quick uses batch 1 instead of 64.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, paths, report, tables, timing  # noqa: E402
from common.machine import detect  # noqa: E402

HEADS, SEQ, DIM = 12, 128, 64
COLUMNS = ["case", "engine", "batch", "threads", "median_ms", "kernels", "dram_bytes_predicted",
           "intermediate_bytes"]


def matmul_softmax_model(batch: int) -> onnx.ModelProto:
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [batch, HEADS, SEQ, DIM])
    k = helper.make_tensor_value_info("k_t", TensorProto.FLOAT, [batch, HEADS, DIM, SEQ])
    out = helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, HEADS, SEQ, SEQ])
    nodes = [helper.make_node("MatMul", ["q", "k_t"], ["scores"], name="batched_matmul"),
             helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1)]
    graph = helper.make_graph(nodes, "matmul_softmax", [q, k], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tilegraph-artifacts")
    onnx.checker.check_model(model)
    return model


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    machine = detect()
    batch, iters, warmup = (1, 10, 2) if args.quick else (64, 30, 3)
    threads = args.threads
    source = paths.work_dir() / f"matmul_softmax_b{batch}.onnx"
    onnx.save(matmul_softmax_model(batch), source)

    rows, skipped = [], []
    ort_ms = None
    for level, engine in (("full", "tilegraph fused"), ("none", "tilegraph unfused")):
        prefix = compile.prepare(source, f"fig02_b{batch}_{level}")
        stats = compile.tune(prefix, fusion_level=level)
        timing.check_outputs(prefix)
        ms = timing.time_tilegraph_and_onnxruntime(prefix, threads=threads, iters=iters, warmup=warmup,
                                                   with_onnxruntime=machine.missing("onnxruntime") is None)
        ort_ms = ms["onnxruntime"] if ms["onnxruntime"] is not None else ort_ms
        rows.append({"case": "CPU", "engine": engine, "batch": batch, "threads": threads,
                     "median_ms": ms["tilegraph"], "kernels": stats["kernels"],
                     "dram_bytes_predicted": stats["dram_bytes"],
                     "intermediate_bytes": stats["arena_bytes_without_reuse"]})
    if ort_ms is not None:
        rows.append({"case": "CPU", "engine": "onnxruntime", "batch": batch, "threads": threads, "median_ms": ort_ms})
    else:
        skipped.append(("onnxruntime", machine.missing("onnxruntime")))
    if why := machine.missing("gpu"):
        skipped.append(("GPU (V100-class, the paper's column)", why))

    out = paths.out_dir()
    csv = tables.write_csv(out / "fig02_matmul_softmax.csv", COLUMNS, rows)
    chart = charts.bars(out / "fig02_matmul_softmax.png", ["CPU"],
                        {r["engine"]: [r["median_ms"]] for r in rows},
                        ylabel="median latency (ms)",
                        title=f"Fig. 2: MatMul ({batch}x{HEADS}x{SEQ}x{DIM}) + Softmax, {threads} threads")
    fused, unfused = rows[0]["median_ms"], rows[1]["median_ms"]
    body = (tables.markdown_table(COLUMNS, rows) +
            f"\n\nFusion speedup on this CPU: {unfused / fused:.2f}x (paper, V100: 0.36 / 0.29 = 1.24x). "
            f"`intermediate_bytes` is the activation memory without reuse (the scores tensor when unfused).")
    report.write_section("fig02", "Fig. 2 — batched MatMul + Softmax, fused vs unfused",
                         paper="64x12x128x64 MatMul + Softmax on V100: 0.36 ms unfused, 0.29 ms fused by Welder.",
                         body=body, chart=chart, csv=csv, skipped=skipped)
    print(f"fig02: fused {fused:.3f} ms, unfused {unfused:.3f} ms, onnxruntime "
          f"{ort_ms if ort_ms is None else round(ort_ms, 3)} ms -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
