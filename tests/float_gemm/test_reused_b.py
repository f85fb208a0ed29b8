"""A chunk's B panels, packed at run time, reused by the same thread's next row block.

ResNet-50's stride-2 1x1 downsample with its residual add and ReLU, over a 40 x 40
map (B: 400 pixels x 256 channels, within a 512 KiB L2) with 2048 filters, so
its weights (2 MiB) take several row blocks on any x86 core's L2: the activation's every other pixel (B, packed at run time in
column groups) is packed once per chunk and kept in the thread's scratch for
the chunk's next row blocks (manifest.json: ukernel_params.b_reused), the pool
handing each thread a chunk's row blocks together. The outputs match
onnxruntime (test_acc) with the reuse and with TILEGRAPH_REUSE_B=off (which
repacks per row block), at one thread and at two.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from float_gemm_testlib import REPO, fan_in_weight, host_has_avx2, tuned_manifest  # noqa: E402 (puts python/ on the path)

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def build_model(path):
    rng = np.random.default_rng(11)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256, 40, 40]),
              helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 2048, 20, 20])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2]),
             helper.make_node("Add", ["c", "r"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    inits = [fan_in_weight(rng, "w", 2048, 256, 1, 1), fan_in_weight(rng, "b", 2048)]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


def tune(prefix, env):
    if not host_has_avx2():
        pytest.skip("the float micro-kernel's x86 variants")
    build_model(prefix)
    manifest = tuned_manifest(prefix, env)
    gemms = [k for k in manifest["kernels"] if k.get("ukernel", "").startswith("sgemm_")]
    assert len(gemms) == 1, [k["name"] for k in manifest["kernels"]]
    return gemms[0].get("ukernel_params", {})


def accurate(prefix, env, threads):
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--threads", str(threads)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout


@pytest.mark.parametrize("reuse", ["on", "off"])
def test_reused_b_matches_onnxruntime(tmp_path, reuse):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("TILEGRAPH_SGEMM_VARIANT", None)
    if reuse == "off":
        env["TILEGRAPH_REUSE_B"] = "off"
    else:
        env.pop("TILEGRAPH_REUSE_B", None)
    params = tune(tmp_path / "downsample", env)
    assert bool(params.get("b_reused")) == (reuse == "on"), params
    for threads in (1, 2):
        accurate(tmp_path / "downsample", env, threads)
