"""Timing a compiled model next to its peers in the same process and run.

tilegraph runs through its ctypes runner (``tilegraph.runner.CompiledModel``),
onnxruntime through an InferenceSession on the same seeded inputs
(``tilegraph.inputs``) and thread count, runs interleaved so machine noise hits
both alike (as benchmarks/cpu_vs_onnxruntime.py does). onnxruntime's intra-op
threads are told not to spin, so that between its runs they do not hold the cores
tilegraph's OpenMP threads need. Before timing, the outputs are checked against
onnxruntime with test_acc's reference run and comparison: a wrong answer is
never timed.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from . import paths  # noqa: F401  (puts python/ on sys.path)
from tilegraph.inputs import generate_inputs, load_input_ranges, model_inputs
from tilegraph.runner import CompiledModel
from tilegraph.test_acc import compare_all, run_onnxruntime


def _once_ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def seeded_inputs(prefix: Path) -> dict:
    return generate_inputs(model_inputs(prefix / "model.onnx"), seed=0, ranges=load_input_ranges(prefix))


def onnxruntime_session(model_path: Path, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])


def check_outputs(prefix: Path, arch: str = "host") -> None:
    """Raises AssertionError naming the output when tilegraph disagrees with onnxruntime."""
    feeds = seeded_inputs(prefix)
    expected = run_onnxruntime(prefix / "model.onnx", feeds)
    with CompiledModel(prefix, arch=arch) as compiled:
        actual = compiled.run(feeds)
    bad = [c.line() for c in compare_all(actual, expected) if not c.ok]
    if bad:
        raise AssertionError(f"{prefix.name}: tilegraph differs from onnxruntime: {bad[0]}")


def time_tilegraph_and_onnxruntime(prefix: Path, *, threads: int, iters: int, warmup: int,
                                   with_onnxruntime: bool = True, arch: str = "host") -> dict:
    """Median ms of each engine: {'tilegraph': ms, 'onnxruntime': ms or None}."""
    feeds = seeded_inputs(prefix)
    sess = onnxruntime_session(prefix / "model.onnx", threads) if with_onnxruntime else None
    with CompiledModel(prefix, arch=arch, num_threads=threads) as compiled:
        run_tg = lambda: compiled.run(feeds, copy=False)  # noqa: E731
        run_ort = (lambda: sess.run(None, feeds)) if sess else None  # noqa: E731
        for _ in range(warmup):
            run_tg()
            if run_ort:
                run_ort()
        tg, ort = [], []
        for _ in range(iters):
            tg.append(_once_ms(run_tg))
            if run_ort:
                ort.append(_once_ms(run_ort))
    return {"tilegraph": statistics.median(tg), "onnxruntime": statistics.median(ort) if ort else None}


def time_torch_cpu(zoo_name: str, *, small: bool, impl: str, threads: int, iters: int, warmup: int) -> float:
    """Median ms of the same architecture in PyTorch eager on the CPU (random weights,
    tilegraph.models; IMPL as torch2onnx's --impl), for when torch is importable."""
    import torch

    from tilegraph import models

    torch.set_num_threads(threads)
    example = models.build(zoo_name, bs=1, small=small, impl=impl)
    module = example.module.eval()
    with torch.inference_mode():
        for _ in range(warmup):
            module(*example.inputs)
        return statistics.median(_once_ms(lambda: module(*example.inputs)) for _ in range(iters))
