"""Softmax on the softmax micro-kernel (codegen/ukernels/softmax_<variant>.h),
compiled for the host CPU and compared with onnxruntime (test_acc): one model
with three attention-style softmaxes over rows of 45 (five whole AVX2 vectors
and a tail; two AVX-512 vectors and a tail of 13):

* plain: Softmax(x), x read as it lies;
* scaled and masked, as bert's: Softmax(x / 8 + mask), mask[45] broadcast;
* length-masked, as Conformer's: Softmax(Where(position < length, x, -10000)).

On AVX2 + FMA / AVX-512 hosts each is one kernel calling tg_softmax::row<45> per
row (the fused two first compute their row of x into scratch); elsewhere the
generated block kernels. Same values as onnxruntime at one and two threads.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "float_gemm"))
from float_gemm_testlib import REPO, host_has_avx2  # noqa: E402 (puts python/ on the path)
from tilegraph._common import find_tilegraph_bin  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SHAPE = [2, 3, 5, 45]


def _model(path):
    rng = np.random.default_rng(5)
    f = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array(8.0, np.float32), "scale"),
        numpy_helper.from_array(rng.uniform(-3, 0, SHAPE[-1]).astype(np.float32), "mask"),
        numpy_helper.from_array(np.arange(SHAPE[-1], dtype=np.int64), "positions"),
        numpy_helper.from_array(np.array(31, np.int64), "length"),
        numpy_helper.from_array(np.array(-10000.0, np.float32), "masked"),
    ]
    nodes = [
        helper.make_node("Softmax", ["x"], ["plain"], axis=-1),
        helper.make_node("Div", ["x", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "mask"], ["biased"]),
        helper.make_node("Softmax", ["biased"], ["bert_like"], axis=-1),
        helper.make_node("Less", ["positions", "length"], ["valid"]),
        helper.make_node("Where", ["valid", "x", "masked"], ["kept"]),
        helper.make_node("Softmax", ["kept"], ["conformer_like"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "softmaxes", [helper.make_tensor_value_info("x", f, SHAPE)],
                              [helper.make_tensor_value_info(n, f, SHAPE) for n in ("plain", "bert_like", "conformer_like")],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def _tuned(prefix, *flags):
    """The test model tuned for the host at PREFIX (extra tune flags): its
    project folder, the generated kernels' code and the subprocess environment."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    _model(prefix / "model.onnx")
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    tune = subprocess.run([str(exe), "tune", str(prefix), "--arch", "host", *flags], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    project = prefix / "tilegraph_rt" / "host"
    return project, "".join(p.read_text() for p in project.glob("kernels_*.cpp")), env


def test_attention_softmaxes_run_on_the_micro_kernel(tmp_path):
    prefix = tmp_path / "softmaxes"
    _, code, env = _tuned(prefix)
    if host_has_avx2():
        assert code.count("tg_softmax::row<45>(") == 3, code[-6000:]
    for threads in ("1", "2"):
        acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--threads", threads],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
        assert acc.returncode == 0, acc.stdout
        assert "PASS: 3 outputs" in acc.stdout, acc.stdout


def test_profile_topk_leaves_micro_kernel_softmaxes_alone(tmp_path):
    """tune --profile-topk on: a softmax on the micro-kernel runs the same code
    whatever its tile config, so it is not profiled (its calls were also not
    declared in the profiling harness, whose build failed)."""
    project, code, _ = _tuned(tmp_path / "profiled", "--profile-topk", "on", "--topk", "4")
    if host_has_avx2():
        stats = json.loads((project / "compile_stats.json").read_text())["profile"]
        assert stats["problems"] == 0 and stats["variants"] == 0, stats
        assert code.count("tg_softmax::row<45>(") == 3
