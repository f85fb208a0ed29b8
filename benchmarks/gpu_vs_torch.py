"""tilegraph on an NVIDIA GPU vs PyTorch on the same GPU, in the same run.

    python3 benchmarks/gpu_vs_torch.py [--arch H200] [--models bert,vit,...] [--bs 1,64] \
        [--precisions fp16,fp32] [--iters 200] [--work build/gpu_bench] [--tilegraph PATH]
    python3 benchmarks/gpu_vs_torch.py --smoke     # this machine, no GPU: plumbing only

For each (model, batch, precision): the model is built in PyTorch with
tilegraph.torch2onnx's seeded weights and exported to ONNX (fp16: the
half-precision export), compiled with `tilegraph tune PREFIX --arch ARCH`, and
timed (median over --iters runs after a warm-up) against PyTorch on the same
module and inputs:
  eager        the module as is
  eager+graph  the module captured in a CUDA graph (torch.cuda.graphs) and replayed
  compile      torch.compile (default mode)
  compile-ro   torch.compile(mode="reduce-overhead")
`best` is the fastest of these; `ratio` = best / tilegraph (above 1: we are faster).
`acc` is tilegraph.test_acc against onnxruntime (CPU) on seeded inputs.

Our time is host wall time around tg_model_run: it includes copying the inputs
to the device and the outputs back (PyTorch's times do not), so it is
pessimistic for us. PyTorch is timed with CUDA events around its forward pass.

--smoke runs the same steps on this machine without a GPU: tiny models, the
arch's CPU emulation (`--emulate --no-gpu-build`), PyTorch eager on the CPU.
Its numbers mean nothing; it checks that the script works before GPU time is
spent on it. A benchmark, not a test.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from tilegraph._common import find_tilegraph_bin  # noqa: E402

# The model set; resnet50 comes from torchvision when it is installed.
MODELS = ["bert", "vit", "swin_transformer", "mobilenet", "mobilevit", "resnet50"]


def log(*a):
    print(*a, flush=True)


def build_torch(model, bs, small, fp16, device):
    """The module and inputs torch2onnx exports (same seed, same weights)."""
    import torch

    if model == "resnet50":
        import torchvision
        torch.manual_seed(0)
        module = torchvision.models.resnet50(num_classes=10 if small else 1000)
        size = 32 if small else 224
        inputs = (torch.randn(bs, 3, size, size),)
    else:
        from tilegraph.torch2onnx import build_seeded
        ex = build_seeded(model, bs=bs, small=small, seed=0)
        module, inputs = ex.module, tuple(ex.inputs)
    module = module.eval().to(device)
    inputs = tuple(t.to(device) for t in inputs)
    if fp16:
        module = module.half()
        inputs = tuple(t.half() if t.is_floating_point() else t for t in inputs)
    return module, inputs


def export_onnx(model, prefix, bs, small, fp16):
    if (prefix / "model.onnx").is_file():
        return
    if model == "resnet50":
        import torch
        module, inputs = build_torch(model, bs, small, fp16, "cpu")
        prefix.mkdir(parents=True, exist_ok=True)
        torch.onnx.export(module, inputs, str(prefix / "model.onnx"), input_names=["input"],
                          output_names=["output"], opset_version=11, do_constant_folding=False,
                          dynamo=False)
        return
    cmd = [sys.executable, "-m", "tilegraph.torch2onnx", model, "--prefix", str(prefix), "--bs", str(bs),
           "--no-check"] + (["--small"] if small else []) + (["--fp16"] if fp16 else [])
    subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=str(REPO / "python")))


def time_torch(fn, iters, device):
    """Median ms of fn() over iters calls after a warm-up (CUDA events on a GPU)."""
    import torch

    for _ in range(10):
        fn()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_peers(module, inputs, iters, device, smoke):
    """{variant: median ms}; a variant that fails is reported, not fatal."""
    import torch

    out = {}

    def attempt(name, make):
        try:
            with torch.no_grad():
                fn = make()
                out[name] = time_torch(fn, iters, device)
        except Exception as e:  # noqa: BLE001 - a peer's failure is a table entry
            log(f"  {name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            out[name] = None

    attempt("eager", lambda: (lambda: module(*inputs)))
    if device == "cuda":
        from tilegraph.bench.peers import cuda_graph_replay
        attempt("eager+graph", lambda: cuda_graph_replay(torch, module, inputs))
    if not smoke:
        attempt("compile", lambda: (lambda c=torch.compile(module): c(*inputs)))
        attempt("compile-ro", lambda: (lambda c=torch.compile(module, mode="reduce-overhead"): c(*inputs)))
    return out


def time_tilegraph(prefix, arch, iters):
    from tilegraph.runner import CompiledModel
    from tilegraph.inputs import load_input_ranges

    with CompiledModel(prefix, arch) as m:
        feed = m.random_inputs(0, load_input_ranges(prefix))
        return m.benchmark(feed, warmup=20, iters=iters)["median_ms"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", default="H200")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--bs", default="1,64")
    p.add_argument("--precisions", default="fp16,fp32")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--work", default=str(REPO / "build" / "gpu_bench"))
    p.add_argument("--tilegraph", default=None, help="the tilegraph binary (default: build/bin/tilegraph)")
    p.add_argument("--tune-flags", default="--topk 4",
                   help="extra `tilegraph tune` flags, e.g. '--skip-dot' or '--topk 8 --profile-topk off' "
                        "(default '--topk 4': on a GPU, tune profiles the 4 best configs of each kernel)")
    p.add_argument("--smoke", action="store_true", help="no GPU: tiny models, CPU emulation, eager on the CPU")
    args = p.parse_args(argv)

    import torch

    exe = args.tilegraph or find_tilegraph_bin()
    if exe is None:
        sys.exit("tilegraph binary not found: build it (cmake --build build) or pass --tilegraph")
    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device visible to PyTorch (use --smoke on a machine without a GPU)")
    models = [m for m in args.models.split(",") if m]
    batches = [int(b) for b in args.bs.split(",") if b]
    precisions = [x for x in args.precisions.split(",") if x]
    if args.smoke:
        batches, iters = batches[:1], min(args.iters, 5)
    else:
        iters = args.iters
    work = Path(args.work)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    rows = []
    for model in models:
        for bs in batches:
            for prec in precisions:
                name = f"{model}_bs{bs}_{prec}" + ("_small" if args.smoke else "")
                prefix = work / name
                log(f"== {name}")
                row = {"name": name, "ours": None, "acc": "-", "peers": {}}
                rows.append(row)
                try:
                    export_onnx(model, prefix, bs, args.smoke, prec == "fp16")
                    flags = (["--emulate", "--no-gpu-build"] if args.smoke else []) + shlex.split(args.tune_flags)
                    subprocess.run([str(exe), "tune", str(prefix), "--arch", args.arch, *flags], check=True)
                    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--arch", args.arch],
                                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    log(acc.stdout.strip())
                    row["acc"] = "pass" if acc.returncode == 0 else "FAIL"
                    row["ours"] = time_tilegraph(prefix, args.arch, iters)
                    module, inputs = build_torch(model, bs, args.smoke, prec == "fp16", device)
                    row["peers"] = torch_peers(module, inputs, iters, device, args.smoke)
                except Exception as e:  # noqa: BLE001 - one model's failure is one row
                    log(f"  failed: {type(e).__name__}: {e}")
                    row["acc"] = row["acc"] if row["acc"] != "-" else "error"
    (work / "results.json").parent.mkdir(parents=True, exist_ok=True)
    (work / "results.json").write_text(json.dumps(rows, indent=2) + "\n")

    def fmt(x):
        return f"{x:9.3f}" if isinstance(x, float) else f"{'-':>9}"
    peers = ["eager", "eager+graph", "compile", "compile-ro"]
    log(f"\n{args.arch}{' (smoke: CPU emulation, numbers meaningless)' if args.smoke else ''}; median ms")
    log(f"{'model':32s} {'tilegraph':>9} " + " ".join(f"{x:>11}" for x in peers) + f" {'best':>9} {'ratio':>6}  acc")
    ratios = {}
    for r in rows:
        vals = [r["peers"].get(x) for x in peers]
        best = min((v for v in vals if v), default=None)
        ratio = best / r["ours"] if best and r["ours"] else None
        if ratio:
            ratios.setdefault(r["name"].split("_bs")[1], []).append(ratio)
        cells = " ".join(f"{fmt(v):>11}" for v in vals)
        shown = f"{ratio:6.2f}" if ratio else f"{'-':>6}"
        log(f"{r['name']:32s} {fmt(r['ours'])} {cells} {fmt(best)} {shown}  {r['acc']}")
    for key, rs in sorted(ratios.items()):
        log(f"geomean ratio bs{key}: {float(np.exp(np.mean(np.log(rs)))):.2f} over {len(rs)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
