"""Shared helpers of the security tests: the CLI, a tiny model with weights.
(Not a conftest.py: tests/models imports its own `conftest` by that name.)"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


def env(**extra):
    """The environment of a subprocess: python/ on PYTHONPATH, the tilegraph under test."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR)] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
    e["TILEGRAPH_BIN"] = TILEGRAPH
    e.update(extra)
    return e


def tg(*args, cwd=None, extra_env=None, timeout=600):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env(**(extra_env or {})))


def error_line(result):
    """The one `error:` line of a failed command; asserts there is exactly one."""
    lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
    assert len(lines) == 1, f"expected one 'error:' line in stderr:\n{result.stderr}"
    return lines[0]


def save(model, prefix, **kwargs):
    """Saves an onnx model as PREFIX/model.onnx."""
    prefix = Path(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(prefix / "model.onnx"), **kwargs)
    return prefix


def save_mlp(prefix: Path, seed: int, external_data=False) -> Path:
    """y = softmax(relu(x @ w + b)), x: 4x16, w: 16x8: two models of one
    architecture differ only in their weights (equal weights.bin sizes). The
    softmax's reductions give the host profiler candidates to time."""
    rng = np.random.RandomState(seed)
    w = numpy_helper.from_array(rng.randn(16, 8).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.randn(8).astype(np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["r"]),
         helper.make_node("Softmax", ["r"], ["y"], axis=-1)], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    prefix.mkdir(parents=True, exist_ok=True)
    if external_data:
        onnx.save(m, str(prefix / "model.onnx"), save_as_external_data=True, location="weights.data",
                  size_threshold=0)
    else:
        onnx.save(m, str(prefix / "model.onnx"))
    return prefix


needs_tilegraph = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")
