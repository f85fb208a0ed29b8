"""The Ray custom resources of a machine, and which one a run step needs.

A farm (``run --executor ray``, docs/farm.md) sends each run step to a worker that
advertises the resource its device spec names. Every worker starts with what
``python -m tilegraph.bench resources`` prints for its machine::

    ray start --address HEAD:6379 --resources "$(python -m tilegraph.bench resources)"

Each resource has a quantity of 1, so a worker times one benchmark per device at a
time (two runs sharing a CPU or GPU would disturb each other's timing).

Resource names: the CPU architecture (``x86_64``, ``arm64``), the same with each
instruction-set feature the micro-kernels choose by (``x86_64-avx2``,
``x86_64-avx512f``, ``x86_64-avx512vnni``; ``arm64-dotprod``, ``arm64-i8mm``);
``arm64`` also where qemu-aarch64 can emulate it, as in a local run; ``gpu`` and
``gpu-<model>`` (``gpu-H100``) per NVIDIA GPU kind.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

from . import devices
from .definitions import DeviceSpec

# CPU flags (/proc/cpuinfo) that pick a micro-kernel, as resource suffixes.
_X86_FEATURES = {"avx2": "avx2", "avx512f": "avx512f", "avx512_vnni": "avx512vnni"}
_ARM_FEATURES = {"asimddp": "dotprod", "i8mm": "i8mm"}


def cpu_arch() -> str:
    return "arm64" if devices.is_arm64_host() else platform.machine().lower()


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return flags


def _gpu_model(name_line: str) -> str:
    """``NVIDIA H100 80GB HBM3, 550.54, 81559 MiB`` -> ``H100``."""
    name = name_line.split(",")[0].replace("NVIDIA", "").strip()
    words = [w for w in name.split() if not re.fullmatch(r"\d+GB|HBM\d*e?|PCIe|SXM\d*", w, re.IGNORECASE)]
    return "-".join(words) or "unknown"


def local_resources() -> dict[str, int]:
    """The custom resources this machine offers to `ray start --resources`."""
    arch, flags = cpu_arch(), _cpu_flags()
    out = {arch: 1}
    features = _ARM_FEATURES if arch == "arm64" else _X86_FEATURES
    for flag, suffix in features.items():
        if flag in flags:
            out[f"{arch}-{suffix}"] = 1
    if arch != "arm64" and devices.qemu_aarch64():
        out["arm64"] = 1
    gpus = devices.gpu_names()
    if gpus:
        out["gpu"] = 1
        for line in gpus:
            out[f"gpu-{_gpu_model(line)}"] = 1
    return out


def default_resource(device: DeviceSpec) -> str:
    """The resource a run step on DEVICE needs unless `run --device-resource` says otherwise:
    a CPU device this (the head's) CPU architecture, a CUDA device any GPU, arm64 arm64."""
    return {"cpu": cpu_arch(), "cuda": "gpu", "arm64": "arm64"}[device.kind]


def parse_overrides(pairs: list[str] | None) -> dict[str, str]:
    """``DEVICE_ID=RESOURCE`` pairs (``local-cpu=x86_64-avx512vnni``) as a dict; ValueError names a bad one."""
    out = {}
    for pair in pairs or []:
        device, sep, resource = pair.partition("=")
        if not sep or not device or not re.fullmatch(r"[A-Za-z0-9_.:+-]+", resource):
            raise ValueError(f"--device-resource {pair!r}: expected DEVICE_ID=RESOURCE (letters, digits, _ . : + -)")
        out[device] = resource
    return out


def resource_for(device: DeviceSpec, overrides: dict[str, str]) -> str:
    return overrides.get(device.id) or default_resource(device)
