"""Compiling one CompileBenchmark and reading its compile statistics.

The statistics come from what `tilegraph tune` writes (compile_stats.json: per-stage
seconds, kernels, predicted DRAM bytes; manifest.json: the memory plan and the cost
model's prediction) and from the files on disk (generated source, libmodel.so,
weights.bin), so they describe exactly the artifact the run step times.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import workspace as ws
from .definitions import CompileBenchmark, to_dict
from .measure import run_child


@dataclass(frozen=True)
class CompileSettings:
    tilegraph: Path
    work: Path
    jobs: int
    compiler_launcher: str = ""  # `tune --compiler-launcher` (sccache): "" compiles directly


def compile_benchmark(build: CompileBenchmark, settings: CompileSettings, build_project: bool) -> dict:
    """Compiles BUILD (building the project only when BUILD_PROJECT) and returns its record.

    Building is skipped when nothing here can run the result (a GPU project on a
    machine without a GPU): the statistics up to code generation are still worth having.
    """
    record = {"name": build.name, "model": to_dict(build.model), "compile_config": to_dict(build.compile),
              "tags": list(build.model.tags)}
    problem = _ensure_model(build, settings)
    if problem:
        return {**record, "status": problem}
    cmd = ws.compile_command(settings.tilegraph, build, settings.work, settings.jobs, no_build=not build_project,
                             compiler_launcher=settings.compiler_launcher)
    record["command"] = ws.shell_line(cmd)
    prefix = ws.compile_prefix(build, settings.work)
    prefix.mkdir(parents=True, exist_ok=True)
    # A cold compile every time: a schedule cache or CMake build left from an earlier
    # run would make compile times depend on the work folder's history.
    shutil.rmtree(ws.project_dir(build, settings.work), ignore_errors=True)
    child = run_child(cmd, prefix / "tune.log")
    if child.returncode != 0:
        return {**record, "status": f"failed: tune exit {child.returncode}: {child.tail()}"}
    stats = read_statistics(ws.project_dir(build, settings.work))
    # Built means a library exists: tune writes but skips a GPU build when nvcc/hipcc is absent.
    return {**record, "status": "ok", "built": stats["binary_bytes"] is not None, "wall_seconds": child.seconds,
            "peak_host_memory_bytes": child.peak_host_bytes, **stats}


def _ensure_model(build: CompileBenchmark, settings: CompileSettings) -> str | None:
    """Makes sure the model's ONNX exists (exporting it if need be); a status if not."""
    model = build.model
    onnx = ws.model_onnx(model, settings.work)
    if onnx.is_file():
        return None
    cmd = ws.export_command(model, settings.work)
    if cmd is None:
        return f"failed: {onnx} does not exist"
    if importlib.util.find_spec("torch") is None:
        return f"skipped: exporting {model.name} needs torch (pip install torch torchvision)"
    child = run_child(cmd, onnx.parent / "export.log")
    if child.returncode != 0 or not onnx.is_file():
        return f"failed: export exit {child.returncode}: {child.tail()}"
    return None


def read_statistics(project: Path) -> dict:
    """Compile statistics of a generated project folder."""
    stats = json.loads((project / "compile_stats.json").read_text())
    manifest = json.loads((project / "manifest.json").read_text())
    plan = manifest.get("memory_plan", {})
    explain = manifest.get("explain", {})
    seconds = dict(stats.get("seconds", {}))
    seconds["total"] = sum(seconds.values())
    library = project / "build" / "libmodel.so"
    weights = project / "weights.bin"
    return {
        "seconds": seconds,
        "kernels": stats.get("kernels"),
        "kernels_unfused": stats.get("kernels_unfused"),
        "dram_bytes": stats.get("dram_bytes"),
        "dram_bytes_unfused": stats.get("dram_bytes_unfused"),
        "predicted_ms": explain.get("predicted_ms"),
        "schedule_cache": stats.get("schedule_cache"),
        # {"program", "hits", "misses"} with --compiler-launcher (sccache), else None
        "compiler_launcher": stats.get("compiler_launcher"),
        "generated_source_bytes": ws.generated_source_bytes(project),
        "binary_bytes": library.stat().st_size if library.is_file() else None,
        "weights_bytes": weights.stat().st_size if weights.is_file() else plan.get("weights_bytes"),
        "arena_bytes": plan.get("arena_bytes"),
        "arena_bytes_without_reuse": plan.get("arena_bytes_without_reuse"),
        "project": str(project),
    }
