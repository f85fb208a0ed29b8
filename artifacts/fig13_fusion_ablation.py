#!/usr/bin/env python3
"""Fig. 13: the fusion ablation, none / register-level only ("base") / full tile-graph fusion.

    python3 artifacts/fig13_fusion_ablation.py [--quick]

NAFNet, ViT and Swin (the committed small configurations, bs 1) are compiled
for the host CPU with `tilegraph tune --fusion-level none|register|full` and
each is checked against onnxruntime, then timed. Per level: median latency,
kernel count, the cost model's predicted DRAM traffic and the intermediate
bytes (activation memory of the static plan without reuse: every tensor
that goes through memory between kernels).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, paths, report, tables, timing  # noqa: E402
from common.machine import detect  # noqa: E402
from common.model_set import small_source  # noqa: E402

MODELS = ("NAFNet", "vit", "swin_transformer")
LEVELS = ("none", "register", "full")
COLUMNS = ["model", "fusion_level", "threads", "median_ms", "kernels", "dram_bytes_predicted", "intermediate_bytes"]
METRICS = (("median_ms", "latency"), ("kernels", "kernels"), ("dram_bytes_predicted", "predicted DRAM traffic"),
           ("intermediate_bytes", "intermediate bytes"))


def relative_charts(out: Path, rows: list) -> Path:
    """One chart: each metric of each level relative to 'none' (= 1), averaged over the models."""
    groups = [label for _, label in METRICS]
    series = {}
    for level in LEVELS:
        values = []
        for metric, _ in METRICS:
            ratios = [next(r for r in rows if r["model"] == m and r["fusion_level"] == level)[metric] /
                      next(r for r in rows if r["model"] == m and r["fusion_level"] == "none")[metric]
                      for m in {r["model"] for r in rows}]
            values.append(tables.geomean(ratios))
        series[f"fusion {level}"] = values
    return charts.bars(out / "fig13_fusion_ablation.png", groups, series, ylabel="relative to no fusion (geomean)",
                       title="Fig. 13: fusion ablation on NAFNet, ViT, Swin (CPU, bs 1)", log=False)


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    machine = detect()
    threads = args.threads
    iters, warmup = (10, 2) if args.quick else (50, 5)
    rows = []
    for model in MODELS:
        for level in LEVELS:
            prefix = compile.prepare(small_source(model), f"{model}_small_{level}")
            stats = compile.tune(prefix, fusion_level=level)
            timing.check_outputs(prefix)
            ms = timing.time_tilegraph_and_onnxruntime(prefix, threads=threads, iters=iters, warmup=warmup,
                                                       with_onnxruntime=False)
            rows.append({"model": model, "fusion_level": level, "threads": threads, "median_ms": ms["tilegraph"],
                         "kernels": stats["kernels"], "dram_bytes_predicted": stats["dram_bytes"],
                         "intermediate_bytes": stats["arena_bytes_without_reuse"]})
            print(f"fig13: {model} {level}: {ms['tilegraph']:.3f} ms, {stats['kernels']} kernels", flush=True)

    out = paths.out_dir()
    csv = tables.write_csv(out / "fig13_fusion_ablation.csv", COLUMNS, rows)
    chart = relative_charts(out, rows)

    def change(metric):  # full vs register ("base"), geomean over the models, as the paper reports it
        return tables.geomean(next(r for r in rows if r["model"] == m and r["fusion_level"] == "full")[metric] /
                              next(r for r in rows if r["model"] == m and r["fusion_level"] == "register")[metric]
                              for m in MODELS) - 1

    summary = ", ".join(f"{change(metric):+.0%} {label}" for metric, label in METRICS)
    skipped = [("measured memory traffic", "no hardware counters are read on the CPU (the paper used nvprof on "
                                           "a GPU); the traffic column is the cost model's prediction")]
    if why := machine.missing("gpu"):
        skipped.append(("GPU fp32 bs 64 (the paper's setting)", why))
    report.write_section("fig13", "Fig. 13 — fusion ablation: none / register / full",
                         paper="V100 fp32 bs 64 on NAFNet, ViT, Swin: full vs base (register-level fusion only) "
                               "-29% latency, -60% kernels, -25% memory transactions, -65% intermediate bytes.",
                         body=tables.markdown_table(COLUMNS, rows) +
                         f"\n\nFull vs register-level only (geomean over the three models): {summary}.",
                         chart=chart, csv=csv, skipped=skipped)
    print(f"fig13: full vs register: {summary} -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
