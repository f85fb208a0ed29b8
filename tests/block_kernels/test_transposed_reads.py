"""Block kernels that read an input transposed (codegen/lowering/lower_block_kernel.cpp:
transposed_reads): a layer norm over the channels of an NCHW activation through a
Transpose + Reshape, as Restormer's and MobileViT's. Its last phase writes each token's
channels contiguously while the input holds them 16 x 32 floats apart; the kernel
copies each chunk of tokens into a buffer on the stack along the tokens (contiguous
runs) and reads the channels there: 16 tokens of 48 channels, 8 of 512 (the buffers
stay within 4096 floats). Same values as onnxruntime at one and two threads;
TILEGRAPH_TRANSPOSED_READS=off keeps the strided reads.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "float_gemm"))
from float_gemm_testlib import REPO  # noqa: E402 (puts python/ on the path)
from tilegraph._common import find_tilegraph_bin  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

H, W = 16, 32
STAGING_BUFFER = re.compile(r"float p\d+_ts\d+\[(\d+)\];")


def _model(path, channels):
    rng = np.random.default_rng(7)
    f = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array([1, H * W, channels], np.int64), "tokens"),
        numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, channels).astype(np.float32), "gamma"),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, channels).astype(np.float32), "beta"),
    ]
    nodes = [
        helper.make_node("Transpose", ["x"], ["nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["nhwc", "tokens"], ["t"]),
        helper.make_node("ReduceMean", ["t"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["t", "mean"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
        helper.make_node("Div", ["d", "std"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["g"]),
        helper.make_node("Add", ["g", "beta"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "channel_norm", [helper.make_tensor_value_info("x", f, [1, channels, H, W])],
                              [helper.make_tensor_value_info("y", f, [1, H * W, channels])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def _tuned(prefix, channels, env):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    _model(prefix / "model.onnx", channels)
    tune = subprocess.run([str(exe), "tune", str(prefix), "--arch", "host"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    project = prefix / "tilegraph_rt" / "host"
    return "".join(p.read_text() for p in project.glob("kernels_*.cpp"))


@pytest.mark.parametrize("channels,chunk,reads", [(48, 16, "staged"), (512, 8, "staged"), (48, 16, "off")])
def test_channel_norm_stages_its_transposed_reads(channels, chunk, reads, tmp_path):
    prefix = tmp_path / "channel_norm"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("TILEGRAPH_TRANSPOSED_READS", None)
    if reads == "off":
        env["TILEGRAPH_TRANSPOSED_READS"] = "off"
    code = _tuned(prefix, channels, env)
    buffers = [int(n) for n in STAGING_BUFFER.findall(code)]
    if reads == "staged":
        # x's channels for a chunk of tokens
        assert buffers and all(n == channels * chunk for n in buffers), code[-6000:]
    else:
        assert not buffers
    for threads in ("1", "2"):
        acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--threads", threads],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
        assert acc.returncode == 0, acc.stdout
        assert "PASS: 1 outputs" in acc.stdout, acc.stdout
