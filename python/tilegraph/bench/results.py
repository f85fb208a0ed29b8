"""The results file: what one `run` measured, and where it came from.

    {
      "schema": "tilegraph-bench-results/1",
      "commit": "<git sha or null>", "commit_time": "<ISO 8601>", "dirty": false,
      "created": "<ISO 8601>", "preset": "x86_64", "machine": {...}, "work_dir": "...",
      "overrides": {"warmup": 1, "iters": 3},
      "benchmarks": {RUN_ID: {"name", "model", "tags", "device", "run_config", "status",
                              "latency_ns": {"mean", "median", "stddev", "min", "p90", ...},
                              "peak_host_memory_bytes", "peak_device_memory_bytes",
                              "peers": {PEER: {"status", "latency_ns", ...}},
                              "peer_ratio": {PEER: peer median / tilegraph median}, ...}},
      "compile":    {COMPILE_ID: {"name", "model", "compile_config", "status",
                                  "seconds": {"frontend", "passes", "schedule", "codegen", "build", "total"},
                                  "kernels", "generated_source_bytes", "binary_bytes", "weights_bytes",
                                  "dram_bytes", "arena_bytes", ...}}
    }

A ``status`` is ``ok``, ``skipped: <why>`` (the device or a tool is absent here) or
``failed: <why>``. Latencies are in nanoseconds, sizes in bytes, times in seconds.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path

from .._common import repo_root

SCHEMA = "tilegraph-bench-results/1"


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo_root()), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source_revision() -> dict:
    """The commit measured: $TILEGRAPH_BENCH_COMMIT (for CI without .git) or git's HEAD.

    ``dirty`` says the tree had uncommitted changes to tracked files, so a result is
    not silently attributed to a commit that did not produce it.
    """
    commit = os.environ.get("TILEGRAPH_BENCH_COMMIT") or _git("rev-parse", "HEAD")
    time = _git("show", "-s", "--format=%cI", commit) if commit else None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "commit_time": time, "dirty": bool(status) if status is not None else None}


def new_results(preset: str, machine: dict, work_dir: Path, overrides: dict) -> dict:
    return {"schema": SCHEMA, **source_revision(), "created": now_iso(), "preset": preset,
            "machine": machine, "work_dir": str(work_dir), "overrides": overrides,
            "benchmarks": {}, "compile": {}}


def load(path: str | Path) -> dict:
    """A results file; ValueError when it is not one."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a benchmark results file (expected schema {SCHEMA!r})")
    return data


def save(results: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")


def is_ok(record: dict) -> bool:
    return record.get("status") == "ok"
