"""The typed, frozen definitions a benchmark is made of.

Four leaves say *what* is measured and *where*:

* :class:`Model`         -- a network: where its ONNX comes from, its inputs, tags.
* :class:`CompileConfig` -- how ``tilegraph tune`` compiles it (arch, flags).
* :class:`RunConfig`     -- how ``main_test`` runs it (threads, CPU pinning, iterations).
* :class:`DeviceSpec`    -- the kind of machine that runs it (host CPU, a GPU, arm64).

Two composites are the benchmarks themselves:

* :class:`CompileBenchmark` = Model x CompileConfig: yields compile statistics.
* :class:`RunBenchmark`     = CompileBenchmark x RunConfig x DeviceSpec: yields latency.

Everything is frozen so a definition can be a dict key and cannot drift after its ID
was taken; IDs follow the rules in :mod:`tilegraph.bench.ids`. ``to_dict`` /
``from_dict`` give the JSON form used by config and results files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from .ids import composite_id, non_default_fields

DEVICE_KINDS = ("cpu", "cuda", "arm64")


@dataclass(frozen=True)
class Model:
    """A network to benchmark.

    Its ONNX comes from ``onnx`` (a committed file; relative paths are from the repo
    root) or, when that is empty, from ``python -m tilegraph.torch2onnx ZOO`` with
    ``batch_size`` / ``fp16`` / ``small`` (needs torch). ``zoo`` also names the PyTorch
    module the GPU peer runs. ``inputs`` documents each input as NAME=DIMSxTYPE,
    e.g. ``input=1x3x224x224xf32``. ``opset`` 11 is Welder's export; any other
    value exports with today's settings (that opset, constant folding on).
    """

    id: str
    name: str
    onnx: str = ""
    zoo: str = ""
    small: bool = False
    impl: str = "auto"
    batch_size: int = 1
    fp16: bool = False
    inputs: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    opset: int = 11

    def export_flags(self) -> list[str]:
        """The ``python -m tilegraph.torch2onnx ZOO --prefix P`` flags that build this model."""
        args = ["--bs", str(self.batch_size)]
        if self.fp16:
            args.append("--fp16")
        if self.small:
            args.append("--small")
        if self.impl != "auto":
            args += ["--impl", self.impl]
        if self.opset != 11:
            args += ["--opset", str(self.opset), "--constant-folding"]
        return args


@dataclass(frozen=True)
class CompileConfig:
    """How ``tilegraph tune`` compiles a model.

    ``flags`` holds further tune flags verbatim (``--fp16``, ``--skip-dot`` where the
    CLI has them) so a new compiler flag needs no new field here.
    """

    id: str
    arch: str = "host"
    topk: int = 20
    fusion: bool = True
    emulate: bool = False
    flags: tuple[str, ...] = ()

    def tune_args(self) -> list[str]:
        """The flags of ``tilegraph tune PREFIX`` for this config (no -j, no paths)."""
        args = ["--arch", self.arch, "--topk", str(self.topk)]
        if not self.fusion:
            args.append("--no-fusion")
        if self.emulate:
            args.append("--emulate")
        return args + list(self.flags)

    @property
    def label(self) -> str:
        """``[ARCH][flag,flag]``: the arch, then the flags sorted, e.g. ``[H100][fp16,topk20]``."""
        words = [f"topk{self.topk}"] + [f.lstrip("-") for f in self.flags]
        if not self.fusion:
            words.append("no-fusion")
        if self.emulate:
            words.append("emulate")
        return f"[{self.arch}][{','.join(sorted(words))}]"


@dataclass(frozen=True)
class RunConfig:
    """How ``main_test`` runs a compiled model.

    ``threads`` 0 means every core the run may use (all, or those in ``cpus``);
    ``cpus`` is a ``taskset -c`` list (``"0-3"``) that pins the model and its peer.
    ``warmup`` / ``iters`` are defaults that ``run --warmup/--iters`` may shorten
    without changing the benchmark's identity.
    """

    id: str
    name: str = ""
    threads: int = 0
    cpus: str = ""
    warmup: int = 10
    iters: int = 100


@dataclass(frozen=True)
class DeviceSpec:
    """The kind of machine a run needs: ``cpu`` (the host), ``cuda`` (an NVIDIA GPU)
    or ``arm64`` (an arm64 CPU, or qemu-aarch64 on another host)."""

    id: str
    name: str
    kind: str
    description: str = ""

    def __post_init__(self):
        if self.kind not in DEVICE_KINDS:
            raise ValueError(f"device {self.id!r}: kind {self.kind!r} is not one of {DEVICE_KINDS}")


@dataclass(frozen=True)
class CompileBenchmark:
    """One model compiled with one config; measured by its compile statistics."""

    ID_PARTS: ClassVar[tuple[str, ...]] = ("model", "compile")

    model: Model
    compile: CompileConfig

    @property
    def id(self) -> str:
        return _composite_id("c", "compile", self)

    @property
    def name(self) -> str:
        return f"{self.model.name} {self.compile.label}"


@dataclass(frozen=True)
class RunBenchmark:
    """A compiled model run with one run config on one kind of device."""

    ID_PARTS: ClassVar[tuple[str, ...]] = ("build", "run", "device")

    build: CompileBenchmark
    run: RunConfig
    device: DeviceSpec

    @property
    def id(self) -> str:
        return _composite_id("r", "run", self)

    @property
    def name(self) -> str:
        """``MODEL [ARCH][FLAGS] @ DEVICE (RUN)``; the run part only when the config has a name."""
        run = f" ({self.run.name})" if self.run.name else ""
        return f"{self.build.name} @ {self.device.name}{run}"

    @property
    def model(self) -> Model:
        return self.build.model

    @property
    def tags(self) -> tuple[str, ...]:
        """The model's tags plus the device kind, for filtering dashboards."""
        return tuple(dict.fromkeys(self.model.tags + (self.device.kind,)))


def _composite_id(prefix: str, kind: str, bench: Any) -> str:
    parts = [getattr(bench, name).id for name in bench.ID_PARTS]
    return composite_id(prefix, kind, parts, non_default_fields(bench, exclude=bench.ID_PARTS))


# --------------------------------------------------------------------------- JSON form
def to_dict(leaf: Any) -> dict:
    """A leaf as a JSON-ready dict (tuples become lists)."""
    return {f.name: _jsonable(getattr(leaf, f.name)) for f in dataclasses.fields(leaf)}


def from_dict(cls: type, data: dict) -> Any:
    """The leaf of type CLS described by DATA; missing optional fields take their
    defaults (files written before a field existed stay readable)."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{cls.__name__} {data.get('id', '?')!r}: unknown fields {', '.join(unknown)}")
    values = {}
    for key, value in data.items():
        values[key] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**values)
    except TypeError as e:  # a required field is missing
        raise ValueError(f"{cls.__name__} {data.get('id', '?')!r}: {e}") from None


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
