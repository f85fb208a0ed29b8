"""The float micro-kernel's operand layouts (codegen/lowering/
lower_float_gemm_kernel.cpp), host CPU with AVX-512. B read where it lies
(tg_sgemm::tile_ldb, tile_bias_clamp_ldb: find_in_place_b):

* stride-1 1x1 convs with the filters as rows (B: the activation, rows of
  H x W floats): bias + Relu fused into the micro-kernel (12 x 16 map), a
  residual Add in the generated epilogue, a map whose pixels leave a tail
  panel (20 x 20: 400 = 12 x 32 + 16, that panel packed), 12 filters (M's
  tail: tile_ldb<32, 4>), 600 input channels (K in blocks);
* a MatMul whose B is an activation (x @ y, y contiguous along N);
* left packed: 512 filters (more than 16 row panels share each B panel),
  batch 2 (the GEMM's columns run over both images, so a panel is not one
  run of each row), a stride-2 1x1 conv, a 16 x 16 map (rows 1 KiB apart
  reach 4 of the L1's 64 sets);
The C tile transposed (tg_sgemm::tile_ct: transposes_c) where the pixels
are the GEMM's rows (small maps):
* 7 x 7 (49 pixels: a row panel of 1) with a residual Add and Relu, 14 x 14
  (196: a row panel of 4; 256 -> 1024 filters, whose 1 MiB of weights makes
  the pixels the rows) with bias and Relu; a 2 x 2 map (4 pixels: no full
  row panel);
* left row-major: a stride-2 3x3 conv over 256 channels (K in more than 4
  blocks).
The outputs match onnxruntime (test_acc); the kernels say which layout they
use in manifest.json (ukernel_params.b_in_place, c_transposed);
TILEGRAPH_B_IN_PLACE=off packs every B, TILEGRAPH_TRANSPOSED_C=off keeps
every C tile row-major.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from float_gemm_testlib import REPO, fan_in_weight, host_has_avx512, tuned_manifest  # noqa: E402 (puts python/ on the path)

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(5)


def _w(name, *shape):
    return fan_in_weight(RNG, name, *shape)


# Output name -> whether its kernel reads B in place.
IN_PLACE = {"relu": True, "residual": True, "tail": True, "rows12": True, "deep": True, "matmul": True,
            "tall": False, "batch2": False, "strided": False, "aliased": False}
# Output name -> whether its kernel stores the C tile transposed.
TRANSPOSED = {"pix_res": True, "pix14": True, "pix2x2": True, "pix_s2": False}


def build_model(path):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 12, 16]),
              helper.make_tensor_value_info("sq", TensorProto.FLOAT, [1, 24, 16, 16]),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 40, 20, 20]),
              helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, 600, 12, 16]),
              helper.make_tensor_value_info("two", TensorProto.FLOAT, [2, 24, 12, 16]),
              helper.make_tensor_value_info("m7", TensorProto.FLOAT, [1, 96, 7, 7]),
              helper.make_tensor_value_info("m14", TensorProto.FLOAT, [1, 256, 14, 14]),
              helper.make_tensor_value_info("wide14", TensorProto.FLOAT, [1, 256, 14, 14]),
              helper.make_tensor_value_info("m2", TensorProto.FLOAT, [1, 256, 2, 2]),
              helper.make_tensor_value_info("p", TensorProto.FLOAT, [48, 80]),
              helper.make_tensor_value_info("q", TensorProto.FLOAT, [80, 64])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in [*IN_PLACE, *TRANSPOSED]]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"]),  # 24 -> 32, bias + Relu
        helper.make_node("Relu", ["c0"], ["relu"]),
        helper.make_node("Conv", ["relu", "w1"], ["c1"]),  # 32 -> 24, + x, Relu
        helper.make_node("Add", ["c1", "x"], ["r1"]),
        helper.make_node("Relu", ["r1"], ["residual"]),
        helper.make_node("Conv", ["s", "w2", "b2"], ["tail"]),  # 20 x 20: a 16-column tail panel
        helper.make_node("Conv", ["s", "w3"], ["rows12"]),  # 12 filters
        helper.make_node("Conv", ["d", "w4"], ["deep"]),  # K = 600
        helper.make_node("MatMul", ["p", "q"], ["matmul"]),
        helper.make_node("Conv", ["x", "w5"], ["tall"]),  # 512 filters: packed
        helper.make_node("Conv", ["two", "w0", "b0"], ["batch2"]),  # packed
        helper.make_node("Conv", ["x", "w6"], ["strided"], strides=[2, 2]),  # packed
        helper.make_node("Conv", ["sq", "w0", "b0"], ["aliased"]),  # packed: rows 1 KiB apart
        helper.make_node("Conv", ["m7", "w7"], ["c7"]),  # pixel rows: C transposed, + m7, Relu
        helper.make_node("Add", ["c7", "m7"], ["r7"]),
        helper.make_node("Relu", ["r7"], ["pix_res"]),
        helper.make_node("Conv", ["m14", "w8", "b8"], ["c8"]),  # 1 MiB of weights: pixel rows, 196 = 24 x 8 + 4
        helper.make_node("Relu", ["c8"], ["pix14"]),
        helper.make_node("Conv", ["wide14", "w9"], ["pix_s2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["m2", "w8"], ["c2"]),  # 4 pixels, the same 1 MiB of weights
        helper.make_node("Relu", ["c2"], ["pix2x2"]),
    ]
    inits = [_w("w0", 32, 24, 1, 1), _w("b0", 32), _w("w1", 24, 32, 1, 1), _w("w2", 16, 40, 1, 1), _w("b2", 16),
             _w("w3", 12, 40, 1, 1), _w("w4", 32, 600, 1, 1), _w("w5", 512, 24, 1, 1), _w("w6", 32, 24, 1, 1),
             _w("w7", 96, 96, 1, 1), _w("w8", 1024, 256, 1, 1), _w("b8", 1024), _w("w9", 64, 256, 3, 3)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


def _tune(prefix, env):
    if not host_has_avx512():
        pytest.skip("B is read in place on AVX-512 hosts only")
    build_model(prefix)
    env.pop("TILEGRAPH_SGEMM_VARIANT", None)
    manifest = tuned_manifest(prefix, env)
    layouts = {}
    for k in manifest["kernels"]:
        params = k.get("ukernel_params", {})
        for p in k["params"]:
            if p["written"] and p["tensor"] in IN_PLACE:
                layouts[p["tensor"]] = bool(params.get("b_in_place"))
            if p["written"] and p["tensor"] in TRANSPOSED:
                layouts[p["tensor"]] = bool(params.get("c_transposed"))
    assert set(layouts) == {*IN_PLACE, *TRANSPOSED}, [(k["name"], k["params"]) for k in manifest["kernels"]]
    return layouts


def test_operand_layouts_match_onnxruntime(tmp_path):
    prefix = tmp_path / "layouts"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("TILEGRAPH_B_IN_PLACE", None)
    env.pop("TILEGRAPH_TRANSPOSED_C", None)
    assert _tune(prefix, env) == {**IN_PLACE, **TRANSPOSED}
    source = (prefix / "tilegraph_rt" / "host" / "kernels_000.cpp").read_text()
    assert "tg_sgemm::tile_bias_clamp_ldb(" in source and "tg_sgemm::tile_ldb<32, 4>(" in source
    assert "tg_sgemm::tile_ct<32, 1>(" in source and "tg_sgemm::tile_ct<32, 4>(" in source
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout


def test_layouts_off_pack_every_b_and_keep_c_row_major(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), TILEGRAPH_B_IN_PLACE="off", TILEGRAPH_TRANSPOSED_C="off")
    assert not any(_tune(tmp_path / "packed", env).values())
