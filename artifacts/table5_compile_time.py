#!/usr/bin/env python3
"""Table 5: compile time per model and arch, with the candidates compiled and profiled.

    python3 artifacts/table5_compile_time.py [--quick]

For the host CPU the time is that of the cold `tilegraph tune` (schedule cache
and project removed first) of each model Fig. 9 compiled (compiled here when
Fig. 9 did not run); per stage from compile_stats.json. For a GPU arch (H100)
the same models are scheduled and their CUDA project written; it is built only
where nvcc exists, and top-k candidates are profiled only on a present GPU.
Caveat: the generated project's C++ build goes through ccache when CMake finds
it (CMAKE_CXX_COMPILER_LAUNCHER), so a second run's build stage can be a cache hit.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import charts, cli, compile, paths, report, tables  # noqa: E402
from common.machine import detect  # noqa: E402
from common.model_set import QUICK_MODELS, WELDER_MODELS, export_full, small_source  # noqa: E402

GPU_ARCH = "H100"
QUICK_GPU_MODELS = ("bert",)  # --quick: building a CUDA project takes half a minute on 2 cores
COLUMNS = ["model", "size", "arch", "total_s", "frontend_s", "passes_s", "schedule_s", "codegen_s", "build_s",
           "kernels", "candidates_kept", "profiled_kernels", "profiled_variants", "built"]
STAGES = ("frontend", "passes", "schedule", "codegen", "build")


def _candidates(project: Path) -> int:
    """Tile configs the cost model kept over all kernels (explain's top-k list per kernel)."""
    explain = json.loads((project / "manifest.json").read_text())["explain"]
    return sum(max(1, len(k.get("candidates", []))) for k in explain["subgraphs"])


def main(argv=None) -> int:
    args = cli.parse(__doc__, argv)
    machine = detect()
    full_size = not args.quick and machine.torch is not None
    models = QUICK_MODELS if args.quick else tuple(WELDER_MODELS)
    size = "full" if full_size else "small"
    gpu_build = shutil.which("nvcc") is not None
    rows, skipped = [], []
    for model in models:
        source = export_full(model) if full_size else small_source(model)
        prefix = compile.prepare(source, f"{model}_{size}_full")
        archs = [("host", True)]
        if not args.quick or model in QUICK_GPU_MODELS:
            archs.append((GPU_ARCH, gpu_build))
        for arch, build in archs:
            try:
                stats = compile.tune(prefix, arch=arch, build=build)
            except compile.CompileFailure as e:
                skipped.append((f"{model} {arch}", str(e)))
                continue
            seconds = stats["seconds"]
            prof = json.loads((compile.project(prefix, arch) / "compile_stats.json").read_text())
            rows.append({"model": model, "size": size, "arch": arch, "total_s": seconds["total"],
                         **{f"{s}_s": seconds.get(s, 0.0) for s in STAGES}, "kernels": stats["kernels"],
                         "candidates_kept": _candidates(compile.project(prefix, arch)),
                         "profiled_kernels": prof["profile"]["kernels"],
                         "profiled_variants": prof["profile"]["variants"], "built": build})
            print(f"table5: {model} {arch}: {seconds['total']:.1f} s", flush=True)
    if not gpu_build:
        skipped.append((f"{GPU_ARCH} build stage", "nvcc is not on PATH: the CUDA project is written, not built"))
    if why := machine.missing("gpu"):
        skipped.append(("top-k profiling on the GPU (the paper's compile time is mostly this)", why))
    if not full_size and not args.quick:
        skipped.append(("full-size models", "exporting them needs PyTorch; small configurations instead"))

    out = paths.out_dir()
    csv = tables.write_csv(out / "table5_compile_time.csv", COLUMNS, rows)
    groups = [f"{r['model']} {r['arch']}" for r in rows]
    chart = charts.bars(out / "table5_compile_time.png", groups,
                        {stage: [r[f"{stage}_s"] for r in rows] for stage in STAGES},
                        ylabel="seconds", title="Table 5: compile time per stage")
    paper = ("tuning time on V100: BERT 244 s with Welder (651 trials) vs 15,285 s with Ansor; "
             "MobileNet 561 s vs 45,527 s (Ansor: TVM 0.9, 800 trials per task).")
    body = (tables.markdown_table(COLUMNS, rows) +
            "\n\n`candidates_kept`: tile configs in the cost model's top-k lists (one per kernel at least); "
            "`profiled_*`: kernels and configs compiled and timed on the device (`--profile-topk`; "
            "auto = only on a present NVIDIA GPU, so 0 here).")
    report.write_section("table5", "Table 5 — compile time", paper=paper, body=body, chart=chart, csv=csv,
                         skipped=skipped)
    print(f"table5: {len(rows)} rows -> {csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
