"""Which devices this machine offers, and what to record about them.

A benchmark whose device is missing here is recorded as ``skipped: <reason>`` instead
of failing, so one config file serves every CI machine and a CPU-only job still
exports, compiles and reports the GPU benchmarks it cannot time.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path

from .._common import has_nvidia_gpu
from .definitions import DeviceSpec

_ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64"}


def is_arm64_host() -> bool:
    return platform.machine().lower() in ("aarch64", "arm64")


def qemu_aarch64() -> str | None:
    return shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")


def unavailable_reason(device: DeviceSpec) -> str | None:
    """Why DEVICE cannot run here, or None when it can."""
    if device.kind == "cuda" and not has_nvidia_gpu():
        return "no GPU"
    if device.kind == "arm64" and not is_arm64_host() and qemu_aarch64() is None:
        return "no arm64 CPU and no qemu-aarch64"
    return None


def elf_machine(path: Path) -> str:
    """The CPU an ELF executable is built for (x86_64, aarch64, or 'unknown')."""
    try:
        header = Path(path).read_bytes()[:20]
    except OSError:
        return "unknown"
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return "unknown"
    return _ELF_MACHINES.get(int.from_bytes(header[18:20], "little"), "unknown")


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cpus_in_list(cpu_list: str) -> int:
    """How many CPUs a taskset list such as ``0-3,6`` names."""
    count = 0
    for part in cpu_list.split(","):
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return count


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_names() -> list[str]:
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def machine_info() -> dict:
    """What the results file says about the machine as a whole."""
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "cpu": cpu_model(),
        "machine": platform.machine(),
        "cpus": usable_cpus(),
        "gpus": gpu_names(),
        "python": platform.python_version(),
    }


def worker_info(node_id: str | None = None) -> dict:
    """Where a step ran: this host, its Ray node (None in a local run) and the process."""
    return {"hostname": socket.gethostname(), "node_id": node_id, "pid": os.getpid()}


def device_info(device: DeviceSpec) -> dict:
    """What a benchmark's record says about its device: the spec plus what was found."""
    info = {"id": device.id, "name": device.name, "kind": device.kind}
    if device.kind == "cuda":
        info["gpus"] = gpu_names()
    elif device.kind == "arm64":
        info["mode"] = "native" if is_arm64_host() else ("qemu" if qemu_aarch64() else "absent")
        info["cpu"] = cpu_model() if is_arm64_host() else "qemu-aarch64 -cpu max"
    else:
        info["cpu"] = cpu_model()
        info["cpus"] = usable_cpus()
    return info
