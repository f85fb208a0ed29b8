"""Measuring a child process: latency statistics, peak host and device memory.

The model and its peers each run in their own child process so that the peak
resident memory belongs to that engine alone, and so that CPU pinning applies to
both alike. main_test reports its own peak (VmHWM) in its JSON; for other children
the kernel's figure for the child (``wait4``'s ``ru_maxrss``) stands in, which is
at least the size of the process that started it (see ``peak_host_memory``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

NS_PER_MS = 1e6


def latency_stats_ns(samples_ms: Sequence[float]) -> dict:
    """mean / median / stddev / min / p90 (and max, count) of per-iteration latencies, in ns.

    The definitions are main_test's (runtime/bench_stats.h): linear-interpolated
    percentiles and the population standard deviation, so a peer's numbers and the
    model's are comparable.
    """
    x = np.asarray(samples_ms, dtype=np.float64) * NS_PER_MS
    if x.size == 0:
        raise ValueError("no latency samples")
    return {
        "mean": float(x.mean()),
        "median": float(np.percentile(x, 50)),
        "stddev": float(x.std()),
        "min": float(x.min()),
        "p90": float(np.percentile(x, 90)),
        "max": float(x.max()),
        "iterations": int(x.size),
    }


@dataclass
class ChildResult:
    returncode: int
    seconds: float
    peak_host_bytes: int
    peak_device_bytes: int | None
    log: Path

    def tail(self, lines: int = 5) -> str:
        """The last lines of the child's output, for a one-line failure reason."""
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        errors = [l for l in text if "error" in l.lower()]
        return " | ".join((errors or text)[-lines:])


def peak_host_memory(report: dict, child: ChildResult) -> int:
    """The peak resident bytes of the program CHILD ran: the figure its REPORT gives
    (main_test's ``peak_host_memory_bytes``, VmHWM read by itself at the end of the
    run), else the child's ``ru_maxrss``.

    ``ru_maxrss`` alone is not the program's own: a forked child starts with its
    parent's resident pages and Linux keeps that high-water mark across ``exec``, so
    a small main_test started by a Ray worker (about 100 MiB) would seem to peak at the
    worker's size, and a farm run's figure would differ from a local run's. It stays as
    the fallback for reports without the field (main_test built before it; peers).
    """
    own = report.get("peak_host_memory_bytes")
    return own if isinstance(own, int) and own > 0 else child.peak_host_bytes


class GpuMemorySampler:
    """Polls nvidia-smi for the GPU memory a process uses; keeps the maximum.

    Sampling misses short peaks, so this is a lower bound on the true peak; the
    static memory plan (arena + weights) in the compile statistics is the exact
    figure for tilegraph's own buffers.
    """

    def __init__(self, pid: int, period_s: float = 0.1):
        self.pid, self.period_s, self.peak_bytes = pid, period_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        query = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
        while not self._stop.is_set():
            try:
                out = subprocess.run(query, capture_output=True, text=True, timeout=10).stdout
            except (OSError, subprocess.TimeoutExpired):
                return
            for line in out.splitlines():
                pid, _, mib = line.partition(",")
                if pid.strip() == str(self.pid) and mib.strip().isdigit():
                    self.peak_bytes = max(self.peak_bytes, int(mib) * 1024 * 1024)
            self._stop.wait(self.period_s)

    def stop(self) -> int | None:
        self._stop.set()
        self._thread.join(timeout=15)
        return self.peak_bytes or None


def run_child(cmd: Sequence[str], log: Path, *, env: dict | None = None, gpu: bool = False,
              timeout_s: float = 3600) -> ChildResult:
    """Runs CMD with its output in LOG; returns its exit code and peak memory.

    ``wait4`` reports the child's own rusage; its ``ru_maxrss`` is in KiB on Linux.
    Commands that exec another program (taskset, `tilegraph run` -> main_test) keep
    the pid, so the peak is the final program's.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "w") as out:
        try:
            proc = subprocess.Popen(list(map(str, cmd)), stdout=out, stderr=subprocess.STDOUT, env=env)
        except OSError as e:  # the program itself is missing (taskset, qemu ...): a failed run, as a shell says
            out.write(f"error: cannot start {cmd[0]}: {e}\n")
            return ChildResult(127, time.perf_counter() - start, 0, None, log)
        sampler = GpuMemorySampler(proc.pid) if gpu and shutil.which("nvidia-smi") else None
        killer = threading.Timer(timeout_s, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    peak_device = sampler.stop() if sampler else None
    return ChildResult(proc.returncode, time.perf_counter() - start, usage.ru_maxrss * 1024, peak_device, log)
