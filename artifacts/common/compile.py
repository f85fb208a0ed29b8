"""Compiling a model with ``tilegraph tune`` into the artifacts' work folder.

Every variant (fusion level, arch) gets its own PREFIX under artifacts/out/work,
holding a copy of the model folder, so variants never overwrite each other and a
later experiment (Table 5) can read what an earlier one compiled. The statistics
are tilegraph.bench's (``read_statistics``: compile_stats.json + manifest.json).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Sequence

from . import paths
from tilegraph.bench.compile_step import read_statistics
from tilegraph.bench.measure import run_child

# Files of a model folder that tune or the runner read (besides external data).
_MODEL_FILES = ("model.onnx", "input_ranges.json", "export.json")


class CompileFailure(RuntimeError):
    """tilegraph tune failed; the message is one line naming the model and the log."""


def prepare(source: Path, name: str) -> Path:
    """WORK/NAME holding SOURCE's model files (a folder with model.onnx, or an .onnx file)."""
    prefix = paths.work_dir() / name
    prefix.mkdir(parents=True, exist_ok=True)
    if source.is_file():
        shutil.copyfile(source, prefix / "model.onnx")
        return prefix
    for f in source.iterdir():
        if f.is_file() and (f.name in _MODEL_FILES or f.suffix in (".data", ".bin", ".weights")):
            shutil.copyfile(f, prefix / f.name)
    return prefix


def project(prefix: Path, arch: str = "host") -> Path:
    return prefix / "tilegraph_rt" / arch


def _record(prefix: Path, arch: str) -> Path:
    return prefix / f"tune-{arch}.json"


def _reused(prefix: Path, arch: str, settings: dict) -> dict | None:
    """The statistics of PREFIX's project when it was tuned with SETTINGS by the
    current tilegraph binary and is still complete; None otherwise."""
    record, proj = _record(prefix, arch), project(prefix, arch)
    if not record.is_file() or not (proj / "compile_stats.json").is_file():
        return None
    if settings["build"] and not (proj / "build" / "libmodel.so").is_file():
        return None
    if record.stat().st_mtime < paths.tilegraph_bin().stat().st_mtime:
        return None
    saved = json.loads(record.read_text())
    return saved["stats"] if saved.get("settings") == settings else None


def tune(prefix: Path, *, arch: str = "host", fusion_level: str = "full", build: bool = True,
         extra: Sequence[str] = (), reuse: bool = True) -> dict:
    """Compiles PREFIX cold (its project and schedule cache removed first, so the
    compile time is not a cache hit) and returns tilegraph.bench's statistics plus
    the tune's wall time and peak memory. REUSE: a project that an earlier
    experiment compiled with the same settings and the current tilegraph binary is
    read instead (its statistics are those of its own cold compile)."""
    model_hash = hashlib.sha256((prefix / "model.onnx").read_bytes()).hexdigest()
    settings = {"fusion_level": fusion_level, "build": build, "extra": list(extra), "model_sha256": model_hash}
    if reuse and (stats := _reused(prefix, arch, settings)) is not None:
        return stats
    shutil.rmtree(project(prefix, arch), ignore_errors=True)
    cmd = [str(paths.tilegraph_bin()), "tune", str(prefix), "--arch", arch, "--fusion-level", fusion_level,
           *([] if build else ["--no-build"]), *extra]
    child = run_child(cmd, prefix / f"tune-{arch}.log")
    if child.returncode != 0:
        raise CompileFailure(f"tilegraph tune {prefix.name} --arch {arch} --fusion-level {fusion_level} failed "
                             f"(exit {child.returncode}): {child.tail(2)} (log: {child.log})")
    stats = read_statistics(project(prefix, arch))
    stats["wall_seconds"] = child.seconds
    stats["peak_host_bytes"] = child.peak_host_bytes
    _record(prefix, arch).write_text(json.dumps({"settings": settings, "stats": stats}, indent=1) + "\n")
    return stats
