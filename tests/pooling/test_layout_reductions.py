"""Layer norms that read their rows through a layout change, compiled for the
host CPU and compared with onnxruntime (test_acc):

* over channels read through a Transpose (Restormer's and MobileViT's
  [1, C, HW] as [1, HW, C]): the keepdims mean and variance [1, HW, 1] tile
  their pixels, so the vector loop moves along memory and the reduce loop
  over the strided channels runs outside it (scheduler::reduction_col_axis;
  the manifest's loop-nest kernels then have tile_cols > 1);
* over a Concat of four strided slices (Swin's patch merging): every loop
  over the concatenated axis is cut into one loop per piece
  (codegen/lowering/split_piecewise_loops.h), so no select between the
  pieces is left in the layer norm's kernels.
"""
import json
import os
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


def _const(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _save(path, nodes, inputs, inits):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", inputs, [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


def channels_through_transpose(path):
    """x [1, 48, 24, 40] -> [1, 48, 960] -> [1, 960, 48] -> LayerNormalization over the 48 channels."""
    c = 48
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 24, 40])
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["flat"]),
             helper.make_node("Transpose", ["flat"], ["rows"], perm=[0, 2, 1]),
             helper.make_node("LayerNormalization", ["rows", "gamma", "beta"], ["y"], axis=-1)]
    _save(path, nodes, [x], [_const("shape", [1, c, -1], np.int64), _const("gamma", RNG.standard_normal(c)),
                             _const("beta", RNG.standard_normal(c))])


def patch_merge(path):
    """x [1, 16, 16, 24]: its four 2x2-strided slices concatenated to [1, 8, 8, 96], then LayerNormalization."""
    c = 24
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, c])
    nodes, pieces = [], []
    for i, (h0, w0) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
        nodes.append(helper.make_node("Slice", ["x", f"s{i}", "e", "axes", "steps"], [f"p{i}"]))
        pieces.append(f"p{i}")
    nodes += [helper.make_node("Concat", pieces, ["merged"], axis=-1),
              helper.make_node("LayerNormalization", ["merged", "gamma", "beta"], ["y"], axis=-1)]
    inits = [_const(f"s{i}", [h0, w0], np.int64) for i, (h0, w0) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1)))]
    inits += [_const("e", [16, 16], np.int64), _const("axes", [1, 2], np.int64), _const("steps", [2, 2], np.int64),
              _const("gamma", RNG.standard_normal(4 * c)), _const("beta", RNG.standard_normal(4 * c))]
    _save(path, nodes, [x], inits)


CASES = {"channels_through_transpose": channels_through_transpose, "patch_merge": patch_merge}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_norm_through_a_layout_change(name, tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    prefix = tmp_path / name
    CASES[name](prefix)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    tune = subprocess.run([str(exe), "tune", str(prefix)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    project = prefix / "tilegraph_rt" / "host"
    manifest = json.loads((project / "manifest.json").read_text())
    norms = [k for k in manifest["kernels"] if k["name"].startswith("layer_norm")]
    assert norms, [k["name"] for k in manifest["kernels"]]
    code = "".join(p.read_text() for p in project.glob("kernels_*.cpp"))
    bodies = {chunk.split("(")[0]: chunk for chunk in code.split("\nvoid ")[1:]}
    if name == "channels_through_transpose":
        stats = [k for k in norms if k["schedule"]["kind"] == "loop_nest" and "_var" in k["name"]]
        assert stats, [(k["name"], k["schedule"]) for k in norms]
        for k in stats:
            assert k["schedule"]["tile_cols"] > 1, (k["name"], k["schedule"])
        # The mean and variance (loop nest or block kernel) reduce outside their
        # vector loop: no element sums its strided channels in a simd reduction.
        for k in norms:
            if "_mean" in k["name"] or "_var" in k["name"]:
                assert "reduction(+:" not in bodies[k["name"]], bodies[k["name"]][:4000]
    else:
        for k in norms:
            assert "tg_select" not in bodies[k["name"]], bodies[k["name"]][:4000]
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout
    assert "PASS" in acc.stdout, acc.stdout
