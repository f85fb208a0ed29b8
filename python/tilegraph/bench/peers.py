"""The peers a benchmark is compared with, each timed in its own child process.

    python -m tilegraph.bench.peers onnxruntime --onnx M --inputs DIR --threads T --warmup W --iters N --out F
    python -m tilegraph.bench.peers torch --zoo bert [--small] [--bs 1] [--fp16] ... --out F

A ratio against a peer measured in the same run, on the same machine, means
something across machines and days; an absolute latency alone does not.

* onnxruntime (CPU): the same ONNX file, the very inputs main_test used (its
  ``--save-inputs``), the same number of intra-op threads, one inter-op thread.
* torch (GPU): the same architecture from tilegraph.models with random weights, run
  eagerly, replayed from a CUDA graph, and through torch.compile. Needs torch + CUDA.

Each writes ``{"engine", "version", "variants": {VARIANT: {"samples_ms": [...]} or
{"status": "failed: ..."}}}`` to --out. The parent computes the statistics.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

from .._common import sanitize_name

PEERS_BY_DEVICE = {"cpu": ("onnxruntime",), "cuda": ("torch",), "arm64": ()}


def unavailable_reason(peer: str) -> str | None:
    """Why PEER cannot run here, or None (checked before starting the child)."""
    if peer == "torch" and importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    if peer == "onnxruntime" and importlib.util.find_spec("onnxruntime") is None:
        return "onnxruntime is not installed"
    return None


def _time_ms(fn, warmup: int, iters: int, sync=lambda: None) -> list[float]:
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        sync()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return samples


def time_onnxruntime(args) -> dict:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(args.onnx, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(Path(args.inputs) / f"{sanitize_name(i.name)}.npy") for i in sess.get_inputs()}
    samples = _time_ms(lambda: sess.run(None, feeds), args.warmup, args.iters)
    return {"engine": "onnxruntime", "version": ort.__version__, "threads": args.threads,
            "variants": {"onnxruntime": {"samples_ms": samples}}}


def time_torch(args) -> dict:
    import torch

    from .. import models

    if not torch.cuda.is_available():
        return {"engine": "torch", "version": torch.__version__, "status": "skipped: CUDA is not available"}
    ex = models.build(args.zoo, bs=args.bs, small=args.small, impl=args.impl)
    module = ex.module.eval().cuda()
    inputs = [t.cuda() for t in ex.inputs]
    if args.fp16:
        module = module.half()
        inputs = [t.half() if t.is_floating_point() else t for t in inputs]
    sync = torch.cuda.synchronize
    variants = {}
    with torch.inference_mode():
        variants["torch_eager"] = {"samples_ms": _time_ms(lambda: module(*inputs), args.warmup, args.iters, sync)}
        variants["torch_cuda_graph"] = _guarded(lambda: _cuda_graph_samples(torch, module, inputs, args))
        variants["torch_compile"] = _guarded(lambda: _compiled_samples(torch, module, inputs, args))
    return {"engine": "torch", "version": torch.__version__, "variants": variants}


def cuda_graph_replay(torch, module, inputs):
    """module(*inputs) captured in a CUDA graph; returns the graph's replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up on a side stream before capture, as CUDA graphs require
        for _ in range(3):
            module(*inputs)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        module(*inputs)
    return graph.replay


def _cuda_graph_samples(torch, module, inputs, args) -> dict:
    replay = cuda_graph_replay(torch, module, inputs)
    return {"samples_ms": _time_ms(replay, args.warmup, args.iters, torch.cuda.synchronize)}


def _compiled_samples(torch, module, inputs, args) -> dict:
    compiled = torch.compile(module)
    # torch.compile compiles on the first calls: at least two extra warmups.
    return {"samples_ms": _time_ms(lambda: compiled(*inputs), args.warmup + 2, args.iters, torch.cuda.synchronize)}


def _guarded(fn) -> dict:
    """A variant that may fail (capture or compile unsupported) without losing the others."""
    try:
        return fn()
    except Exception as e:  # report any failure of the peer as data, not as a crash
        return {"status": f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tilegraph.bench.peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("peer", choices=["onnxruntime", "torch"])
    p.add_argument("--onnx", help="the model (onnxruntime)")
    p.add_argument("--inputs", help="folder of NAME.npy inputs saved by main_test (onnxruntime)")
    p.add_argument("--zoo", help="tilegraph.models name (torch)")
    p.add_argument("--bs", type=int, default=1)
    p.add_argument("--small", action="store_true")
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--impl", default="auto")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    result = time_onnxruntime(args) if args.peer == "onnxruntime" else time_torch(args)
    Path(args.out).write_text(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
