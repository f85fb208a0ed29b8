"""Tables 3 and 6: tilegraph next to the fastest peer present, per model, bs 1 fp32
on the host CPU (the committed small configurations unless PyTorch can export
the full-size ones)."""

from __future__ import annotations

from typing import Sequence

from . import charts, compile, end_to_end, paths, report, tables
from .machine import detect
from .model_set import export_full, small_source

COLUMNS = ["model", "size", "batch", "precision", "threads", "tilegraph_ms", "onnxruntime_ms", "pytorch_ms",
           "fastest_peer", "fastest_peer_ms", "speedup_vs_fastest_peer", "kernels"]


def run(section_id: str, title: str, *, paper: str, models: Sequence[str], args, extra_skipped: Sequence = ()) -> list:
    """Measures MODELS and writes SECTION_ID's CSV, chart and report section; returns the rows."""
    machine = detect()
    threads = args.threads
    iters, warmup = (10, 2) if args.quick else (30, 3)
    full_size = not args.quick and machine.torch is not None
    skipped = list(extra_skipped)
    if not full_size:
        skipped.append(("full-size models", "--quick: the committed small configurations" if args.quick else
                        "exporting them needs PyTorch (pip install torch); ran the committed small configurations"))
    for column, need in (("onnxruntime", "onnxruntime"), ("PyTorch (CPU, eager)", "torch")):
        if why := machine.missing(need):
            skipped.append((column, why))
    rows = []
    for model in models:
        source = export_full(model) if full_size else small_source(model)
        if source is None:
            skipped.append((model, "no committed small export (models/); the full-size one needs PyTorch to export"))
            continue
        size = "full" if full_size else "small"
        prefix = compile.prepare(source, f"{model}_{size}_full")  # Fig. 9's project where it made one
        r = end_to_end.measure(model, source, prefix, machine=machine, threads=threads, iters=iters, warmup=warmup,
                               full_size=full_size, skipped=skipped)
        if r is None:
            continue
        peer, peer_ms = end_to_end.fastest_peer(r)
        rows.append({"model": model, "size": size, "batch": 1, "precision": "fp32", "threads": threads, **r,
                     "fastest_peer": peer, "fastest_peer_ms": peer_ms,
                     "speedup_vs_fastest_peer": peer_ms / r["tilegraph_ms"] if peer_ms else None})
        print(f"{section_id}: {model}: tilegraph {r['tilegraph_ms']:.3f} ms, fastest peer {peer} "
              f"{peer_ms or float('nan'):.3f} ms", flush=True)
    if why := machine.missing("gpu"):
        skipped.append(("GPU columns", why))
    out = paths.out_dir()
    name = {"table3": "table3_transformers", "table6": "table6_cnns"}[section_id]
    csv = tables.write_csv(out / f"{name}.csv", COLUMNS, rows)
    chart = charts.bars(out / f"{name}.png", [r["model"] for r in rows],
                        {"tilegraph": [r["tilegraph_ms"] for r in rows],
                         "fastest peer": [r["fastest_peer_ms"] for r in rows]},
                        ylabel="median latency (ms)", title=f"{title.split(' —')[0]} (CPU): fp32 bs 1, "
                                                            f"{threads} thread(s)")
    geo = tables.geomean(r["speedup_vs_fastest_peer"] for r in rows)
    body = (tables.markdown_table(COLUMNS, rows) +
            f"\n\nGeomean speedup of tilegraph over the fastest peer present: {geo:.2f}x (above 1: tilegraph faster).")
    report.write_section(section_id, title, paper=paper, body=body, chart=chart, csv=csv, skipped=skipped)
    print(f"{section_id}: geomean vs the fastest peer {geo:.2f}x -> {csv}")
    return rows
