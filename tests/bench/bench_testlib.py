"""Shared helpers of the benchmark-suite tests: paths, the CLI, synthetic results, Chromium.

Deliberately not a conftest.py: tests/models has one whose names its tests import,
and two modules named ``conftest`` on one pytest run would shadow each other.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


def subprocess_env(**extra: str) -> dict:
    """Environment for `python -m tilegraph.bench` children: python/ on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def bench_cli(*args, timeout: float = 600, **env) -> subprocess.CompletedProcess:
    """Runs `python -m tilegraph.bench ARGS` from the repo root, capturing its output."""
    return subprocess.run([sys.executable, "-m", "tilegraph.bench", *map(str, args)], cwd=REPO, text=True,
                          capture_output=True, timeout=timeout, env=subprocess_env(**env))


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=1))
    return path


def as_commit(results: dict, commit: str, time: str) -> dict:
    """A copy of RESULTS that claims to come from another (clean) commit."""
    out = copy.deepcopy(results)
    out.update(commit=commit, commit_time=time, created=time, dirty=False)
    return out


def synthetic_results(commit: str = "a" * 40, time: str = "2030-01-01T00:00:00+00:00") -> dict:
    """A small, hand-made results file: two run benchmarks and one compile benchmark."""
    def run_record(name: str, median_ns: float, ratio: float) -> dict:
        return {"name": name, "compile_id": "c-000000000001", "model": "m", "tags": ["small", "cpu"],
                "device": {"id": "local-cpu", "kind": "cpu"}, "status": "ok",
                "latency_ns": {"mean": median_ns, "median": median_ns, "stddev": 1.0, "min": median_ns, "p90": median_ns},
                "peak_host_memory_bytes": 40 << 20, "peak_device_memory_bytes": None,
                "peers": {"onnxruntime": {"status": "ok", "latency_ns": {"median": median_ns * ratio}}},
                "peer_ratio": {"onnxruntime": ratio}}

    return {
        "schema": "tilegraph-bench-results/1", "commit": commit, "commit_time": time, "dirty": False,
        "created": time, "preset": "x86_64", "machine": {}, "work_dir": "/nonexistent", "overrides": {},
        "benchmarks": {
            "r-000000000001": run_record("m [host][topk20] @ local (1 thread)", 100_000.0, 2.0),
            "r-000000000002": run_record("m [host][topk20] @ local (all cores)", 60_000.0, 1.5),
        },
        "compile": {
            "c-000000000001": {"name": "m [host][topk20]", "status": "ok", "kernels": 10, "dram_bytes": 1000,
                               "arena_bytes": 512, "weights_bytes": 4096, "generated_source_bytes": 20000,
                               "binary_bytes": 80000, "seconds": {"frontend": 0.1, "passes": 0.1, "schedule": 0.3,
                                                                  "codegen": 0.5, "build": 9.0, "total": 10.0}},
        },
    }


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render_in_chromium(page: Path, tmp: Path) -> tuple[str, str]:
    """(DOM after scripts ran, browser log) of PAGE in headless Chromium."""
    chromium = find_chromium()
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
           "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp / 'chromium-profile'}",
           "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"chromium failed ({out.returncode}): {out.stderr[-2000:]}"
    return out.stdout, out.stderr
