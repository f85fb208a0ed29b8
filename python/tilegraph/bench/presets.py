"""Presets: named subsets of the catalog that CI jobs and people run.

* ``x86_64``     -- the committed small models on the host CPU, 1 thread and all cores,
                    with onnxruntime on the same threads as the peer.
* ``cuda``       -- the small models compiled for H100 and run on the local NVIDIA GPU
                    (PyTorch as the peer); recorded as skipped where there is no GPU.
* ``arm64``      -- the small models compiled for Neoverse N2, run on an arm64 CPU or
                    under qemu-aarch64.
* ``comp-stats`` -- compile statistics only: the small models for every target, and
                    without fusion for comparison.
* ``all``        -- the four above (small models only, so it fits a CI job).
* ``cpu-float``  -- the full-size float models of issue 15 (Welder's opset-11 exports and
                    today's opset 17, resnet50 included) on the host CPU at 1 and 2
                    threads, onnxruntime as the peer: the ratios that track CPU float speed.
                    Opt-in like ``large`` (needs torch; about an hour on 2 cores).
* ``large``      -- full-size models (exported with torch2onnx, so torch is needed) on the
                    host CPU and the GPU; opt-in, as it takes hours on a small machine.
"""

from __future__ import annotations

from itertools import product
from typing import Callable, Iterable

from . import catalog as c
from .definitions import CompileBenchmark, CompileConfig, DeviceSpec, Model, RunBenchmark, RunConfig
from .suite import Suite


def _runs(models: Iterable[Model], compiles: Iterable[CompileConfig], runs: Iterable[RunConfig],
          device: DeviceSpec) -> list[RunBenchmark]:
    return [RunBenchmark(CompileBenchmark(m, cc), rc, device) for m, cc, rc in product(models, compiles, runs)]


def x86_64() -> Suite:
    return Suite.of(_runs(c.SMALL_MODELS, [c.HOST], [c.CPU_1T, c.CPU_ALL], c.LOCAL_CPU))


def cuda() -> Suite:
    return Suite.of(_runs(c.SMALL_MODELS, [c.H100], [c.GPU], c.LOCAL_GPU))


def arm64() -> Suite:
    return Suite.of(_runs(c.SMALL_MODELS, [c.NEOVERSE_N2], [c.ARM64_1T], c.ARM64))


def comp_stats() -> Suite:
    configs = [c.HOST, c.HOST_NO_FUSION, c.H100, c.NEOVERSE_N2]
    return Suite.of(compiles=[CompileBenchmark(m, cc) for m, cc in product(c.SMALL_MODELS, configs)])


def all_small() -> Suite:
    return x86_64() + cuda() + arm64() + comp_stats()


def cpu_float() -> Suite:
    return Suite.of(_runs(c.CPU_FLOAT_MODELS, [c.HOST], [c.CPU_1T, c.CPU_2T], c.LOCAL_CPU))


def large() -> Suite:
    return (Suite.of(_runs(c.LARGE_MODELS, [c.HOST], [c.CPU_ALL], c.LOCAL_CPU))
            + Suite.of(_runs(c.LARGE_MODELS + c.LARGE_GPU_MODELS, [c.H100], [c.GPU], c.LOCAL_GPU)))


PRESETS: dict[str, Callable[[], Suite]] = {
    "x86_64": x86_64,
    "cuda": cuda,
    "arm64": arm64,
    "comp-stats": comp_stats,
    "all": all_small,
    "cpu-float": cpu_float,
    "large": large,
}


def preset(name: str) -> Suite:
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None


def presets_with(benchmark_id: str) -> list[str]:
    """The presets that contain a benchmark ID (``all`` and ``large`` last: they are big)."""
    order = sorted(PRESETS, key=lambda name: name in ("all", "large", "cpu-float"))
    return [name for name in order if PRESETS[name]().find(benchmark_id) is not None]


def everything() -> Suite:
    """Every benchmark any preset defines: where `explain` looks up a bare ID."""
    return all_small() + large() + cpu_float()
