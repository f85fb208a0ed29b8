"""`run`: execute a suite and write results.json.

Each compile benchmark is compiled once, right before the run benchmarks that use
it, so a long suite makes steady progress and a failure stays local to its model.
A compile benchmark is built (cmake/nvcc) only when something here can use the
build: a run on an available device, or nothing at all (a compile-only benchmark,
whose build time and binary size are the point).
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Callable

from . import devices
from . import results as res
from .compile_step import CompileSettings, compile_benchmark
from .run_step import RunSettings, run_benchmark
from .suite import Suite


def run_suite(suite: Suite, compile_settings: CompileSettings, run_settings: RunSettings, out: Path,
              preset: str = "", log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> dict:
    """Runs SUITE, rewriting OUT after every benchmark so an interrupted run keeps what it measured."""
    overrides = {k: v for k, v in (("warmup", run_settings.warmup), ("iters", run_settings.iters)) if v is not None}
    results = res.new_results(preset, devices.machine_info(), compile_settings.work, overrides)
    total = len(suite.compile_benchmarks) + len(suite.run_benchmarks)
    step = 0
    for build in suite.compile_benchmarks:
        runs = [r for r in suite.run_benchmarks if r.build.id == build.id]
        build_project = not runs or any(devices.unavailable_reason(r.device) is None for r in runs)
        step += 1
        log(f"[{step}/{total}] compile {build.name} ({build.id})")
        record = {**_guarded(log, build.name, compile_benchmark, build, compile_settings, build_project),
                  "worker": devices.worker_info()}
        results["compile"][build.id] = record
        write(results, out)
        for bench in runs:
            step += 1
            log(f"[{step}/{total}] run {bench.name} ({bench.id})")
            results["benchmarks"][bench.id] = {**_guarded(log, bench.name, run_benchmark, bench, record, run_settings),
                                               "worker": devices.worker_info()}
            write(results, out)
    return results


def _guarded(log: Callable[[str], None], name: str, measure: Callable[..., dict], *args) -> dict:
    """MEASURE(*ARGS)'s record; an unexpected exception (a bug in the suite) becomes a
    failed record with its traceback in the log, so one benchmark cannot sink a long run."""
    start = time.perf_counter()
    try:
        record = measure(*args)
    except Exception as e:  # noqa: BLE001 -- reported in full below, and as the record's status
        log(traceback.format_exc())
        record = {"name": name, "status": f"failed: internal error: {type(e).__name__}: {e}"}
    log(f"    {_summary(record, start)}")
    return record


def _summary(record: dict, start: float) -> str:
    return summary(record, time.perf_counter() - start)


def summary(record: dict, seconds: float) -> str:
    """One line about a finished step: its latency, or its compile statistics, or its status."""
    took = f"({seconds:.1f} s)"
    if not res.is_ok(record):
        return f"{record['status']} {took}"
    if "latency_ns" in record:
        ratios = ", ".join(f"{k} x{v:.2f}" for k, v in record.get("peer_ratio", {}).items())
        return f"median {record['latency_ns']['median'] / 1e6:.4f} ms" + (f"; peer/tilegraph {ratios}" if ratios else "") + f" {took}"
    built = "" if record.get("built") else " (not built: nothing here can run it)"
    return f"{record['kernels']} kernels, {record['seconds']['total']:.1f} s compile{built} {took}"


def any_failed(results: dict) -> bool:
    records = list(results["benchmarks"].values()) + list(results["compile"].values())
    return any(r.get("status", "").startswith("failed") for r in records)


def write(results: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    res.save(results, out)
