#!/usr/bin/env python3
"""Fig. 11: fp16 without tensor cores (`tune --no-tensor-cores`) vs with.

    python3 artifacts/fig11_no_tensor_cores.py [--quick]

BERT and ViT (the committed small configurations, bs 1), computed in half
precision (`--fp16`), are scheduled for a GPU with tensor cores twice: as
usual, and with `--no-tensor-cores` (no mma.sync; half operands widened and
accumulated in float on the CUDA cores). Per model and mode: kernels on tensor
cores and the cost model's predicted latency. Where an NVIDIA GPU and nvcc are
present the projects are built for that GPU and timed there as well; on any
other machine the schedules are made for the H100 spec and only predicted.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, paths, report, tables, timing  # noqa: E402
from common.gpu_only import EXPERIMENTS, skipped_columns  # noqa: E402
from common.machine import detect  # noqa: E402
from common.model_set import small_source  # noqa: E402

MODELS = ("bert", "vit")
MODES = {"tensor cores": [], "no tensor cores": ["--no-tensor-cores"]}
COLUMNS = ["model", "arch", "mode", "kernels", "kernels_on_tensor_cores", "predicted_ms", "measured_ms"]
# nvidia-smi's name -> tilegraph's arch, for the GPUs with tensor cores tilegraph uses (sm_80 and later).
GPU_ARCHS = (("H200", "H200"), ("H100", "H100"), ("A100", "A100"), ("L4", "L4"), ("3090", "RTX3090"))


def gpu_arch(machine) -> str | None:
    for name, arch in GPU_ARCHS:
        if machine.gpus and name in machine.gpus[0]:
            return arch
    return None


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    machine = detect()
    local = gpu_arch(machine)
    measured = local is not None and shutil.which("nvcc") is not None
    arch = local or "H100"
    skipped = skipped_columns([("measured latency on the GPU", "gpu")])
    if machine.gpus and not local:
        skipped.append(("measured latency", f"{machine.gpus[0]}: no tilegraph arch with tensor cores matches it"))
    elif local and not measured:
        skipped.append(("measured latency", "nvcc is not on PATH: the CUDA projects are not built"))
    rows = []
    for model in MODELS:
        for mode, flags in MODES.items():
            prefix = compile.prepare(small_source(model), f"{model}_small_fp16_{arch}_{'no_tc' if flags else 'tc'}")
            stats = compile.tune(prefix, arch=arch, build=measured, extra=["--fp16", *flags])
            manifest = json.loads((compile.project(prefix, arch) / "manifest.json").read_text())
            on_tc = sum(1 for k in manifest["kernels"] if k.get("launch", {}).get("tensor_cores"))
            ms = None
            if measured:
                ms = timing.time_tilegraph_and_onnxruntime(prefix, threads=1, iters=10 if args.quick else 50,
                                                           warmup=3, with_onnxruntime=False, arch=arch)["tilegraph"]
            rows.append({"model": model, "arch": arch, "mode": mode, "kernels": stats["kernels"],
                         "kernels_on_tensor_cores": on_tc, "predicted_ms": stats["predicted_ms"], "measured_ms": ms})
            print(f"fig11: {model} {arch} {mode}: {on_tc}/{stats['kernels']} kernels on tensor cores, predicted "
                  f"{stats['predicted_ms']:.4f} ms" + (f", measured {ms:.4f} ms" if ms else ""), flush=True)
    out = paths.out_dir()
    csv = tables.write_csv(out / "fig11_no_tensor_cores.csv", COLUMNS, rows)
    key = "measured_ms" if measured else "predicted_ms"
    chart = charts.bars(out / "fig11_no_tensor_cores.png", list(MODELS),
                        {mode: [next(r[key] for r in rows if r["model"] == m and r["mode"] == mode) for m in MODELS]
                         for mode in MODES},
                        ylabel=f"{'measured' if measured else 'predicted'} latency (ms)",
                        title=f"Fig. 11: fp16 on {arch}, tensor cores on / off")
    slowdown = tables.geomean(next(r[key] for r in rows if r["model"] == m and r["mode"] == "no tensor cores") /
                              next(r[key] for r in rows if r["model"] == m and r["mode"] == "tensor cores")
                              for m in MODELS)
    body = (tables.markdown_table(COLUMNS, rows) +
            f"\n\nWithout tensor cores, {'measured' if measured else 'predicted (cost model)'} latency is "
            f"{slowdown:.2f}x that with them (geomean over the models).")
    e = EXPERIMENTS["fig11"]
    report.write_section("fig11", e.title, paper=e.paper, body=body, chart=chart, csv=csv, skipped=skipped)
    print(f"fig11: no tensor cores / tensor cores = {slowdown:.2f}x ({key}) -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
