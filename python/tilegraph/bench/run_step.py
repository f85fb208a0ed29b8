"""Running one RunBenchmark: main_test, then its peers on the same inputs and threads.

main_test runs first with ``--save-inputs``, so the peer sees the exact tensors the
compiled model saw; then each peer applicable to the device runs in its own child
with the same CPU pinning and thread count. Missing devices and peers become
``skipped: <why>`` records, never errors.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import devices, peers
from . import workspace as ws
from .definitions import RunBenchmark, to_dict
from .measure import latency_stats_ns, peak_host_memory, run_child
from .results import is_ok


@dataclass(frozen=True)
class RunSettings:
    tilegraph: Path
    work: Path
    warmup: int | None = None  # overrides of the run config's counts (shorter test runs)
    iters: int | None = None
    with_peers: bool = True


def base_record(bench: RunBenchmark, settings: RunSettings) -> dict:
    """What a run record says before anything ran (all a skipped record says)."""
    warmup = settings.warmup if settings.warmup is not None else bench.run.warmup
    iters = settings.iters if settings.iters is not None else bench.run.iters
    return {"name": bench.name, "compile_id": bench.build.id, "model": bench.model.id,
            "tags": list(bench.tags), "device": devices.device_info(bench.device),
            "run_config": to_dict(bench.run), "threads": ws.resolved_threads(bench, devices.usable_cpus()),
            "warmup": warmup, "iters": iters}


def run_benchmark(bench: RunBenchmark, compile_record: dict, settings: RunSettings) -> dict:
    """Times BENCH (compiled per COMPILE_RECORD) and its peers; returns its record."""
    record = base_record(bench, settings)
    threads, warmup, iters = record["threads"], record["warmup"], record["iters"]
    reason = devices.unavailable_reason(bench.device)
    if reason:
        return {**record, "status": f"skipped: {reason}"}
    if not is_ok(compile_record):
        return {**record, "status": f"skipped: compile {compile_record.get('status')}"}

    cmd, problem = _main_test_command(bench, settings, threads, warmup, iters)
    if problem:
        return {**record, "status": problem}
    out = ws.run_dir(bench, settings.work)
    shutil.rmtree(out, ignore_errors=True)  # no stale report or inputs from an earlier run
    record["command"] = ws.shell_line(cmd)
    child = run_child(cmd, out / "main_test.log", gpu=bench.device.kind == "cuda")
    if child.returncode != 0:
        return {**record, "status": f"failed: main_test exit {child.returncode}: {child.tail()}"}
    report = json.loads((out / "main_test.json").read_text())
    record.update(status="ok", latency_ns=latency_stats_ns(report["samples_ms"]),
                  peak_host_memory_bytes=peak_host_memory(report, child),
                  peak_device_memory_bytes=child.peak_device_bytes, artifacts=str(out))
    if bench.device.kind == "cpu":
        record["cost_model"] = cost_model_error(bench, settings, threads)
    if settings.with_peers:
        record["peers"] = run_peers(bench, settings, threads, warmup, iters)
        record["peer_ratio"] = {name: p["latency_ns"]["median"] / record["latency_ns"]["median"]
                                for name, p in record["peers"].items() if is_ok(p)}
    return record


def cost_model_error(bench: RunBenchmark, settings: RunSettings, threads: int) -> dict:
    """How far the cost model's per-kernel predictions are from the kernels' measured
    times on this CPU (`tilegraph explain --measured`: a short profiled run of
    main_test): the geometric mean of max(predicted / measured, measured / predicted)
    over the kernels, and both totals, so the model's accuracy is tracked across commits."""
    out = ws.run_dir(bench, settings.work)
    cmd = [*ws.pinning(bench), str(settings.tilegraph), "explain", str(ws.compile_prefix(bench.build, settings.work)),
           "--arch", bench.build.compile.arch, "--measured", "--json", "--iters", "10"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    except subprocess.TimeoutExpired:
        return {"status": "failed: explain --measured timed out"}
    (out / "explain_measured.json").write_text(r.stdout)
    if r.returncode != 0:
        return {"status": f"failed: explain --measured exit {r.returncode}: {r.stderr.strip()[-300:]}"}
    e = json.loads(r.stdout)
    return {"status": "ok", "prediction_error": e["prediction_error"], "predicted_ms": e["predicted_ms"],
            "measured_ms": e["measured_ms"], "kernels": len(e["measured"])}


def _main_test_command(bench: RunBenchmark, settings: RunSettings, threads: int, warmup: int,
                       iters: int) -> tuple[list[str], str | None]:
    """The command that times BENCH here, or a skip status saying why none can."""
    if bench.device.kind == "arm64" and not devices.is_arm64_host():
        main_test = ws.project_dir(bench.build, settings.work) / "build" / "main_test"
        machine = devices.elf_machine(main_test)
        if machine != "aarch64":
            return [], (f"skipped: main_test of the {bench.build.compile.arch} project is built for {machine}, "
                        "not aarch64, so qemu-aarch64 cannot run it")
        return ws.qemu_run_command(devices.qemu_aarch64(), bench, settings.work, threads, warmup, iters), None
    return ws.run_command(settings.tilegraph, bench, settings.work, threads, warmup, iters), None


def run_peers(bench: RunBenchmark, settings: RunSettings, threads: int, warmup: int, iters: int) -> dict:
    """{variant: record} for every peer of the device kind (onnxruntime; torch's three)."""
    out = ws.run_dir(bench, settings.work)
    records = {}
    for peer in peers.PEERS_BY_DEVICE[bench.device.kind]:
        reason = peers.unavailable_reason(peer)
        if reason:
            records[peer] = {"status": f"skipped: {reason}"}
            continue
        cmd = ws.peer_command(peer, bench, settings.work, threads, warmup, iters)
        child = run_child(cmd, out / f"peer_{peer}.log", gpu=bench.device.kind == "cuda")
        if child.returncode != 0:
            records[peer] = {"status": f"failed: exit {child.returncode}: {child.tail()}", "command": ws.shell_line(cmd)}
            continue
        report = json.loads((out / f"peer_{peer}.json").read_text())
        if "status" in report:
            records[peer] = {"status": report["status"]}
            continue
        for variant, result in report["variants"].items():
            rec = {"engine": report["engine"], "version": report.get("version"), "threads": threads,
                   "command": ws.shell_line(cmd), "peak_host_memory_bytes": child.peak_host_bytes,
                   "peak_device_memory_bytes": child.peak_device_bytes}
            if "samples_ms" in result:
                rec.update(status="ok", latency_ns=latency_stats_ns(result["samples_ms"]))
            else:
                rec["status"] = result.get("status", "failed: no samples")
            records[variant] = rec
    return records
