"""Run a compiled tilegraph model from Python through its C API (ctypes).

``tilegraph tune PREFIX --arch A`` writes and builds ``PREFIX/tilegraph_rt/A/``;
its ``build/libmodel.so`` implements ``runtime/tilegraph_model.h``. This module
loads that library and exposes it as :class:`CompiledModel`::

    from tilegraph.runner import CompiledModel
    with CompiledModel("work/bert") as m:
        outs = m.run({"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})
        # outs: dict output name -> numpy array (static shapes from the library)

As a command (the counterpart of Welder's ``run_welder.py``) it times the model::

    python -m tilegraph.runner PREFIX [--arch host] [--warmup 5] [--iters 100]
        [--threads N] [--inputs DIR] [--outputs DIR] [--profile]

Inputs come from ``DIR/NAME.npy`` when ``--inputs`` is given (NAME is the ONNX
value name with characters outside ``[A-Za-z0-9_.-]`` replaced by ``_``), else
seeded random data; ``--outputs DIR`` writes ``DIR/NAME.npy`` per output.

Note: every libmodel.so exports the same symbol names. Loading two different
compiled models into one process may bind one library's internal calls to the
other's symbols unless the generated code is built with hidden visibility; run
each model in its own process when in doubt (the tests do).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ._common import UsageError, elf_machine, host_machine, np_dtype, project_dir
from .inputs import load_input_ranges, load_npy, npy_file_name, random_array, save_npy


class _TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
    ]


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: np.dtype
    shape: tuple

    @property
    def file_name(self) -> str:
        return npy_file_name(self.name)


def _declare(lib: ctypes.CDLL) -> None:
    c_model_p = ctypes.c_void_p
    sigs = {
        "tg_model_create": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(c_model_p)]),
        "tg_model_destroy": (None, [c_model_p]),
        "tg_last_error": (ctypes.c_char_p, []),
        "tg_num_inputs": (ctypes.c_int, []),
        "tg_num_outputs": (ctypes.c_int, []),
        "tg_input_info": (_TensorInfo, [ctypes.c_int]),
        "tg_output_info": (_TensorInfo, [ctypes.c_int]),
        "tg_model_run": (ctypes.c_int, [c_model_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_void_p)]),
        "tg_set_num_threads": (None, [ctypes.c_int]),
        "tg_num_kernels": (ctypes.c_int, []),
        "tg_kernel_name": (ctypes.c_char_p, [ctypes.c_int]),
        "tg_kernel_nodes": (ctypes.c_char_p, [ctypes.c_int]),
        "tg_set_profiling": (None, [c_model_p, ctypes.c_int]),
        "tg_reset_profile": (None, [c_model_p]),
        "tg_kernel_time_ms": (ctypes.c_double, [c_model_p, ctypes.c_int]),
    }
    for name, (restype, argtypes) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise UsageError(f"{lib._name}: missing C API function {name}") from None
        fn.restype = restype
        fn.argtypes = argtypes


def _info(raw: _TensorInfo) -> TensorInfo:
    shape = tuple(int(raw.shape[i]) for i in range(raw.rank)) if raw.rank else ()
    return TensorInfo(raw.name.decode() if raw.name else "", np_dtype(raw.dtype), shape)


def find_library(prefix: str | os.PathLike, arch: str = "host") -> Path:
    return project_dir(prefix, arch) / "build" / "libmodel.so"


def find_weights(prefix: str | os.PathLike, arch: str = "host") -> Path | None:
    """weights.bin of the generated project (its root, else its build folder)."""
    proj = project_dir(prefix, arch)
    for cand in (proj / "weights.bin", proj / "build" / "weights.bin"):
        if cand.is_file():
            return cand
    return None


class CompiledModel:
    """A compiled model loaded from ``PREFIX/tilegraph_rt/<arch>/build/libmodel.so``.

    ``lib`` and ``weights`` override the paths derived from ``prefix``/``arch``.
    """

    def __init__(self, prefix: str | os.PathLike | None = None, arch: str = "host", *,
                 lib: str | os.PathLike | None = None,
                 weights: str | os.PathLike | None = None,
                 num_threads: int | None = None):
        if lib is None:
            if prefix is None:
                raise ValueError("give prefix or lib")
            lib = find_library(prefix, arch)
        lib = Path(lib)
        if not lib.is_file():
            raise UsageError(f"{lib} not found; run `tilegraph tune {prefix or 'PREFIX'}"
                             f"{'' if arch == 'host' else ' --arch ' + arch}` first")
        if weights is None:
            weights = find_weights(prefix, arch) if prefix is not None else None
            if weights is None:
                for cand in (lib.parent / "weights.bin", lib.parent.parent / "weights.bin"):
                    if cand.is_file():
                        weights = cand
                        break
        if weights is None:
            raise UsageError(f"weights.bin not found next to {lib}; run `tilegraph tune` again")
        self.lib_path = lib
        self.weights_path = Path(weights)
        try:
            # Like main_test: OpenMP threads spin briefly between kernels, then
            # sleep, unless the user chose. libgomp reads it when loaded.
            if "OMP_WAIT_POLICY" not in os.environ:
                os.environ.setdefault("GOMP_SPINCOUNT", "30000")
            self._lib = ctypes.CDLL(str(lib.resolve()))
        except OSError as e:
            machine = elf_machine(lib)
            if machine not in ("unknown", host_machine()):  # a cross-compiled ARM project
                where = f"{prefix} --arch {arch}" if prefix is not None else "PREFIX --arch ARCH"
                raise UsageError(f"{lib} is built for {machine}, not this {host_machine()} machine, so it "
                                 f"cannot be loaded here: run it with `tilegraph run {where}` (under "
                                 f"qemu-aarch64), or check it with `python -m tilegraph.test_acc {where}` "
                                 f"(which falls back to that)") from None
            raise UsageError(f"cannot load {lib}: {e}") from None
        _declare(self._lib)
        if num_threads is not None:
            self._lib.tg_set_num_threads(int(num_threads))
        handle = ctypes.c_void_p()
        rc = self._lib.tg_model_create(str(self.weights_path).encode(), ctypes.byref(handle))
        if rc != 0 or not handle:
            raise RuntimeError(f"tg_model_create failed ({rc}): {self._last_error()}")
        self._model = handle
        self.inputs = [_info(self._lib.tg_input_info(i)) for i in range(self._lib.tg_num_inputs())]
        self.outputs = [_info(self._lib.tg_output_info(i))
                        for i in range(self._lib.tg_num_outputs())]
        self._out_bufs = None

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        if getattr(self, "_model", None):
            self._lib.tg_model_destroy(self._model)
            self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _last_error(self) -> str:
        msg = self._lib.tg_last_error()
        return msg.decode(errors="replace") if msg else "(no message)"

    # -- running ------------------------------------------------------------------------------
    def _prepare_inputs(self, inputs) -> list:
        if isinstance(inputs, Mapping):
            missing = [t.name for t in self.inputs if t.name not in inputs]
            if missing:
                raise ValueError(f"missing inputs: {', '.join(missing)}")
            values = [inputs[t.name] for t in self.inputs]
        else:
            values = list(inputs)
            if len(values) != len(self.inputs):
                raise ValueError(f"model takes {len(self.inputs)} inputs, got {len(values)}")
        arrays = []
        for info, v in zip(self.inputs, values):
            a = np.asarray(v)
            if a.dtype != info.dtype:
                if a.dtype.kind != info.dtype.kind and not (
                        a.dtype.kind in "iu" and info.dtype.kind in "iu"):
                    raise ValueError(f"input {info.name}: dtype {a.dtype}, model wants {info.dtype}")
                a = a.astype(info.dtype)
            if tuple(a.shape) != info.shape:
                raise ValueError(f"input {info.name}: shape {tuple(a.shape)}, "
                                 f"model wants {info.shape}")
            arrays.append(np.ascontiguousarray(a))
        return arrays

    def run(self, inputs, *, copy: bool = True) -> dict:
        """Run once. ``inputs``: dict name -> array, or a sequence in input order.

        Returns dict output name -> array. With ``copy=False`` the arrays are the
        model's reusable output buffers, overwritten by the next call.
        """
        arrays = self._prepare_inputs(inputs)
        if self._out_bufs is None:
            self._out_bufs = [np.empty(t.shape, dtype=t.dtype) for t in self.outputs]
        in_ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
        out_ptrs = (ctypes.c_void_p * max(1, len(self._out_bufs)))(
            *[b.ctypes.data for b in self._out_bufs])
        rc = self._lib.tg_model_run(self._model, in_ptrs, out_ptrs)
        if rc != 0:
            raise RuntimeError(f"tg_model_run failed ({rc}): {self._last_error()}")
        return {t.name: (b.copy() if copy else b) for t, b in zip(self.outputs, self._out_bufs)}

    __call__ = run

    def benchmark(self, inputs, warmup: int = 5, iters: int = 100) -> dict:
        """Times ``iters`` runs after ``warmup`` runs; returns ms statistics."""
        arrays = self._prepare_inputs(inputs)
        for _ in range(warmup):
            self.run(arrays, copy=False)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            self.run(arrays, copy=False)
            times.append((time.perf_counter() - t0) * 1e3)
        t = np.array(times) if times else np.zeros(1)
        return {"iters": iters, "min_ms": float(t.min()), "max_ms": float(t.max()),
                "mean_ms": float(t.mean()), "median_ms": float(np.median(t))}

    # -- profiling --------------------------------------------------------------------------
    def kernels(self) -> list:
        """[(kernel name, fused ONNX node names)] in launch order."""
        out = []
        for k in range(self._lib.tg_num_kernels()):
            name = self._lib.tg_kernel_name(k)
            nodes = self._lib.tg_kernel_nodes(k)
            out.append((name.decode() if name else f"kernel{k}",
                        [n for n in (nodes.decode() if nodes else "").split(",") if n]))
        return out

    def profile(self, inputs, iters: int = 10) -> list:
        """Per-kernel mean time in ms over ``iters`` runs: [(name, ms, nodes)]."""
        return [(name, sum(runs) / max(1, iters), nodes) for name, runs, nodes in self.profile_runs(inputs, iters)]

    def profile_runs(self, inputs, iters: int = 10) -> list:
        """Per-kernel time in ms of each of ``iters`` runs: [(name, [ms per run], nodes)].
        A median over the runs ignores the run in which another process held the
        core, which a mean over them (``profile``) charges to whichever kernel
        was running."""
        arrays = self._prepare_inputs(inputs)
        self.run(arrays, copy=False)
        kernels = self.kernels()
        times = [[] for _ in kernels]
        self._lib.tg_set_profiling(self._model, 1)
        try:
            for _ in range(iters):
                self._lib.tg_reset_profile(self._model)
                self.run(arrays, copy=False)
                for k, t in enumerate(times):
                    t.append(self._lib.tg_kernel_time_ms(self._model, k))
        finally:
            self._lib.tg_set_profiling(self._model, 0)
        return [(name, times[k], nodes) for k, (name, nodes) in enumerate(kernels)]

    def random_inputs(self, seed: int = 0, ranges: Mapping | None = None) -> dict:
        """Seeded random inputs for this model's static input shapes (see test_acc)."""
        rng = np.random.default_rng(seed)
        ranges = ranges or {}
        return {t.name: random_array(rng, t.shape, t.dtype, ranges.get(t.name))
                for t in self.inputs}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tilegraph.runner", description=__doc__.split("\n\n")[0])
    p.add_argument("prefix")
    p.add_argument("--arch", default="host")
    p.add_argument("--inputs", help="folder with NAME.npy per model input (default: random)")
    p.add_argument("--outputs", help="folder to write NAME.npy per model output")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--profile", action="store_true", help="print per-kernel times")
    args = p.parse_args(argv)
    try:
        model = CompiledModel(args.prefix, args.arch, num_threads=args.threads)
        if args.inputs:
            inputs = load_npy(args.inputs, [t.name for t in model.inputs])
        else:
            inputs = model.random_inputs(args.seed, load_input_ranges(args.prefix))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    outs = model.run(inputs)
    if args.outputs:
        save_npy(args.outputs, outs)
    for t in model.outputs:
        print(f"output {t.name}: shape {list(t.shape)} {t.dtype}")
    s = model.benchmark(inputs, args.warmup, args.iters)
    print(f"[tilegraph] {args.iters} iters: min {s['min_ms']:.4f} ms, max {s['max_ms']:.4f} ms, "
          f"mean {s['mean_ms']:.4f} ms, median {s['median_ms']:.4f} ms")
    if args.profile:
        prof = model.profile(inputs, iters=max(1, min(args.iters, 20)))
        total = sum(ms for _, ms, _ in prof) or 1.0
        for name, ms, nodes in sorted(prof, key=lambda r: -r[1]):
            print(f"  {ms:10.4f} ms {100 * ms / total:5.1f}%  {name}  [{len(nodes)} nodes]")
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
