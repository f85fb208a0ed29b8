"""Vector-matrix products (a classifier at batch 1) on the CPU loop nest
(codegen/lowering/lower_cpu_kernel.cpp), host CPU: output widths that leave a
ragged last column block (1000 and 300 in tiles of 64 with AVX-512, 32 with AVX2;
48, one tile or one and a half) whose update runs over its own columns only (the
generated loops `jj < 40`, `jj < 44` with AVX-512),
compared with onnxruntime (test_acc); the Gemm's bias as well. K = 200 keeps
each W under a MiB: larger constant weights take the float micro-kernel
(scheduler/int_gemm.h: float_gemm_pays).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))

from tilegraph._common import find_tilegraph_bin  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(5)


def _classifier(path, k, widths):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])
    nodes, inits, outs = [], [], []
    for n in widths:
        w = numpy_helper.from_array((RNG.standard_normal((n, k)) * 0.1).astype(np.float32), f"w{n}")
        b = numpy_helper.from_array(RNG.standard_normal(n).astype(np.float32), f"b{n}")
        nodes.append(helper.make_node("Gemm", ["x", f"w{n}", f"b{n}"], [f"y{n}"], transB=1))
        inits += [w, b]
        outs.append(helper.make_tensor_value_info(f"y{n}", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", [x], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


def test_ragged_vector_matrix_tails_match_onnxruntime(tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    prefix = tmp_path / "classifier"
    _classifier(prefix, 200, (1000, 300, 48))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    tune = subprocess.run([str(exe), "tune", str(prefix)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    code = "".join(p.read_text() for p in (prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp"))
    # The column tile follows the host's vector width: 64 with AVX-512 (tails 40 and
    # 44), 32 with AVX2 (8 and 12).
    tile = max(int(t) for t in re.findall(r"float acc\[(\d+)\];", code))
    tails = {n % tile for n in (1000, 300)}
    assert 0 not in tails, tile
    for tail in tails:
        assert f"jj < INT64_C({tail}); ++jj)" in code, code[-6000:]
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout
    assert "PASS" in acc.stdout, acc.stdout
