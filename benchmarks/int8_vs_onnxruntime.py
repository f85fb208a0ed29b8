"""INT8 models on the host CPU: tilegraph vs onnxruntime, measured in the same run.

    python3 benchmarks/int8_vs_onnxruntime.py [--models vit_b16,vit,bert] [--small] \
        [--threads 2] [--iters 20] [--work build/int8_bench]

For each model: export fp32 with tilegraph.torch2onnx (opset 17), quantize it with
onnxruntime.quantization three ways (quantize_dynamic; quantize_static QDQ;
quantize_static QOperator; after onnxruntime's quant_pre_process; uint8 activations,
int8 weights, calibration on 4 seeded inputs), compile each with `tilegraph tune`, and time both engines on the same
input with the same thread count: interleaved rounds, median of per-round medians.
Prints one table row per (model, form): our ms, onnxruntime's ms, the ratio, the
integer-GEMM micro-kernel used, the share of our time outside integer
matmuls (from the kernel profile), and the first output's largest absolute
difference ours vs onnxruntime, onnxruntime vs the fp32 model, ours vs fp32.
Not a test: timing is noisy on a shared box.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from tilegraph._common import find_tilegraph_bin  # noqa: E402
from tilegraph.runner import CompiledModel  # noqa: E402
from tilegraph.inputs import generate_inputs, load_input_ranges, model_inputs  # noqa: E402


def sh(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kw)


def export(model, prefix, small):
    if (prefix / "model.onnx").is_file():
        return
    cmd = [sys.executable, "-m", "tilegraph.torch2onnx", model, "--prefix", str(prefix), "--opset", "17"]
    sh(cmd + (["--small"] if small else []), env=dict(os.environ, PYTHONPATH=str(REPO / "python")))


def quantize(fp32, out_dir, inputs_for):
    """The three forms, from the model after onnxruntime's recommended pre-processing
    (quant_pre_process: shape inference and constant folding, so transposed weights
    become initializers the quantizer can see)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = out_dir / "fp32_pre" / "model.onnx"
    if not pre.is_file():
        pre.parent.mkdir(parents=True, exist_ok=True)
        quant_pre_process(str(fp32), str(pre))
    fp32 = pre

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([inputs_for(seed) for seed in range(4)])

        def get_next(self):
            return next(self.items, None)

    forms = {}
    for form in ("dynamic", "qdq", "qoperator"):
        prefix = out_dir / form
        prefix.mkdir(parents=True, exist_ok=True)
        path = prefix / "model.onnx"
        for extra in fp32.parent.glob("input_ranges.json"):
            (prefix / extra.name).write_bytes(extra.read_bytes())
        if not path.is_file():
            if form == "dynamic":
                quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8)
            else:
                quantize_static(str(fp32), str(path), Reader(),
                                quant_format=QuantFormat.QDQ if form == "qdq" else QuantFormat.QOperator,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        forms[form] = prefix
    return forms


def time_pair(ours, sess, feed, iters, rounds=5):
    names = [o.name for o in sess.get_outputs()]
    a, b = [], []
    for _ in range(rounds):
        a.append(ours.benchmark(feed, warmup=3, iters=iters)["median_ms"])
        for _ in range(3):
            sess.run(names, feed)
        t = []
        for _ in range(iters):
            t0 = time.perf_counter()
            sess.run(names, feed)
            t.append((time.perf_counter() - t0) * 1e3)
        b.append(float(np.median(t)))
    return float(np.median(a)), float(np.median(b))


def outside_int_matmul_share(ours, prefix, feed):
    manifest = json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())
    int8 = {k["name"] for k in manifest["kernels"] if k.get("ukernel")}
    prof = ours.profile(feed, iters=5)  # [(kernel, ms, nodes)]
    total = sum(ms for _, ms, _ in prof) or 1.0
    return sum(ms for name, ms, _ in prof if name not in int8) / total


def accuracy(ours, sess, fp32_sess, feed):
    """Largest |difference| of the first output: ours vs onnxruntime on the
    quantized model, and each of them vs the fp32 model (the quantization
    error both engines carry; dynamic quantization turns tiny float differences
    into whole quantization steps, so ours-vs-ort alone says little)."""
    name = sess.get_outputs()[0].name
    ort_out = sess.run([name], feed)[0]
    ref = fp32_sess.run([fp32_sess.get_outputs()[0].name], feed)[0]
    mine = ours.run(feed)[name]
    worst = lambda a, b: float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
    return worst(mine, ort_out), worst(ort_out, ref), worst(mine, ref)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="vit_b16,vit,bert",
                   help="vit_b16: ViT-B/16; vit: Welder's ViT-S/32; bert: BERT-base, seq 128")
    p.add_argument("--small", action="store_true", help="tiny configurations (a quick check)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--forms", default="", help="comma-separated subset of dynamic,qdq,qoperator")
    p.add_argument("--work", default=str(REPO / "build" / "int8_bench"))
    args = p.parse_args()
    import onnxruntime as ort

    exe = find_tilegraph_bin()
    rows = []
    for model in args.models.split(","):
        base = Path(args.work) / (model + ("_small" if args.small else ""))
        fp32 = base / "fp32"
        export(model, fp32, args.small)
        specs = model_inputs(fp32 / "model.onnx")

        def inputs_for(seed, fp32=fp32, specs=specs):
            return generate_inputs(specs, seed=seed, ranges=load_input_ranges(fp32))

        for form, prefix in quantize(fp32 / "model.onnx", base, inputs_for).items():
            if args.forms and form not in args.forms.split(","):
                continue
            try:
                ort.InferenceSession(str(prefix / "model.onnx"), providers=["CPUExecutionProvider"])
            except Exception as e:  # the quantizer can write models onnxruntime rejects
                print(f"skipping {model} {form}: onnxruntime cannot load it: {str(e).splitlines()[0][:200]}")
                continue
            sh([str(exe), "tune", str(prefix)])
            feed = inputs_for(0)
            ours = CompiledModel(prefix, "host", num_threads=args.threads)
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            sess = ort.InferenceSession(str(prefix / "model.onnx"), so, providers=["CPUExecutionProvider"])
            ms, ort_ms = time_pair(ours, sess, feed, args.iters)
            manifest = json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())
            ukernels = sorted({k["ukernel"] for k in manifest["kernels"] if k.get("ukernel")})
            naive = sum(1 for k in manifest["kernels"] if k["int8_matmul"] and not k.get("ukernel"))
            share = outside_int_matmul_share(ours, prefix, feed)
            fp32_sess = ort.InferenceSession(str(fp32 / "model.onnx"), providers=["CPUExecutionProvider"])
            rows.append((model, form, ms, ort_ms, ukernels, naive, share, accuracy(ours, sess, fp32_sess, feed)))
    print(f"\nthreads {args.threads}; median ms (interleaved rounds); ratio = onnxruntime / tilegraph")
    print(f"{'model':10} {'form':10} {'tilegraph':>10} {'onnxrt':>10} {'ratio':>7}  {'ukernel':20} "
          f"{'naive int8 mm':>13} {'outside int mm':>14}  {'|ours-ort|':>10} {'|ort-fp32|':>10} {'|ours-fp32|':>11}")
    for model, form, ms, ort_ms, uk, naive, share, (d_ort, d_ort_fp32, d_fp32) in rows:
        print(f"{model:10} {form:10} {ms:10.3f} {ort_ms:10.3f} {ort_ms / ms:7.2f}  {','.join(uk):20} "
              f"{naive:13d} {share * 100:13.1f}%  {d_ort:10.4f} {d_ort_fp32:10.4f} {d_fp32:11.4f}")


if __name__ == "__main__":
    main()
