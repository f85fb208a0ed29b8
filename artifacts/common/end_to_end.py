"""One model end to end: compiled for the host (or an earlier experiment's
project reused), checked against onnxruntime, then timed next to onnxruntime
and, when importable, PyTorch eager — the measurement Fig. 9 and Tables 3
and 6 share."""

from __future__ import annotations

from pathlib import Path

from . import compile, timing
from .machine import Machine
from .model_set import torch_impl


def measure(model: str, source: Path, prefix: Path, *, machine: Machine, threads: int, iters: int, warmup: int,
            full_size: bool, skipped: list, with_torch: bool = True) -> dict | None:
    """{'tilegraph_ms', 'onnxruntime_ms', 'pytorch_ms', 'kernels'} (a peer absent: None), or None
    when tilegraph fails to compile or disagrees with onnxruntime (then SKIPPED says so)."""
    try:
        stats = compile.tune(prefix)
        timing.check_outputs(prefix)
    except (compile.CompileFailure, AssertionError) as e:
        skipped.append((model, f"failed: {e}"))
        return None
    ms = timing.time_tilegraph_and_onnxruntime(prefix, threads=threads, iters=iters, warmup=warmup,
                                               with_onnxruntime=machine.missing("onnxruntime") is None)
    torch_ms = None
    if with_torch and machine.missing("torch") is None:
        try:
            torch_ms = timing.time_torch_cpu(model, small=not full_size, impl=torch_impl(source), threads=threads,
                                             iters=iters, warmup=warmup)
        except Exception as e:  # a model PyTorch cannot build here is a gap, not a crash
            skipped.append((f"PyTorch {model}", f"failed: {type(e).__name__}: {e}"))
    return {"tilegraph_ms": ms["tilegraph"], "onnxruntime_ms": ms["onnxruntime"], "pytorch_ms": torch_ms,
            "kernels": stats["kernels"]}


def fastest_peer(result: dict) -> tuple:
    """(name, ms) of the faster of onnxruntime and PyTorch measured, or (None, None)."""
    peers = [(name, result[key]) for name, key in (("onnxruntime", "onnxruntime_ms"), ("PyTorch", "pytorch_ms"))
             if result.get(key)]
    return min(peers, key=lambda p: p[1]) if peers else (None, None)
