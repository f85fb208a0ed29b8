"""Float32 GEMMs and convolutions on the float micro-kernels (sgemm_*), host CPU:

* small models exercising each form the matcher takes (a linear layer with a
  bias + GELU-like epilogue, attention's q @ k^T and attn @ V with operands
  through Transpose/Reshape, padded strided and dilated convs with a residual
  add, a 1x1 conv, odd sizes everywhere: tails in M, N and K, K = 1; asymmetric pads,
  mixed strides and dilations and a transposed input for the B panel's column table);
* every kernel whose op is such a contraction runs on the micro-kernel
  (manifest.json: `ukernel` is sgemm_<variant>) and outputs match onnxruntime;
* every x86 variant the CPU can run (TILEGRAPH_SGEMM_VARIANT), and
  --no-float-ukernels turns the path off;
* column groups: 1x1 convs over few channels of a wide map pack and run their column
  panels in groups (ukernel param column_group), with a residual and an N tail;
* K in kc blocks (the accumulating micro-kernel): a host spec (--arch-file)
  whose L1 holds a B block of 32 k values, and GEMMs and convs whose K spans
  several blocks with a shorter last one, splits evenly, or fits one block.
"""
import json
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

from float_gemm_testlib import host_has_avx512  # noqa: E402
from tilegraph._common import find_tilegraph_bin  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _cpu_flags():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


FLAGS = _cpu_flags()
VARIANTS = ["scalar"] + (["avx2"] if {"avx2", "fma"} <= FLAGS else []) + \
           (["avx512"] if "avx512f" in FLAGS else [])

RNG = np.random.default_rng(0)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.2).astype(np.float32), name)


def _save(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


def linear(path):
    # [3, 7, 19] @ [19, 45] + bias -> x * sigmoid(x); then K = 1: [3, 7, 1] @ [1, 9]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7, 19])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["h"]),
             helper.make_node("Sigmoid", ["h"], ["s"]),
             helper.make_node("Mul", ["h", "s"], ["y"]),
             helper.make_node("ReduceMean", ["x"], ["m"], axes=[2]),
             helper.make_node("MatMul", ["m", "w1"], ["z"])]
    _save(path, nodes, [x], [y, z], [_w("w", 19, 45), _w("b", 45), _w("w1", 1, 9)])


def attention(path):
    # heads through Reshape/Transpose; q @ k^T and attn @ V with activations as both operands
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 13, 24])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    shape = numpy_helper.from_array(np.array([2, 13, 3, 8], np.int64), "shape")
    back = numpy_helper.from_array(np.array([2, 13, 24], np.int64), "back")
    nodes = []
    for t in "qkv":
        nodes += [helper.make_node("MatMul", ["x", "w" + t], [t + "0"]),
                  helper.make_node("Reshape", [t + "0", "shape"], [t + "1"]),
                  helper.make_node("Transpose", [t + "1"], [t + "h"], perm=[0, 2, 1, 3])]
    nodes += [helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["qh", "kt"], ["s"]),
              helper.make_node("Softmax", ["s"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "back"], ["o2"]),
              helper.make_node("MatMul", ["o2", "wo"], ["y0"]),
              helper.make_node("Add", ["y0", "x"], ["y"])]
    _save(path, nodes, [x], [y], [_w("wq", 24, 24), _w("wk", 24, 24), _w("wv", 24, 24), _w("wo", 24, 24),
                                  shape, back])


def convs(path):
    # padded strided 3x3, dilated 3x3 + residual, 1x1 with bias, batch 2, odd sizes
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 17, 15])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1"], ["c1"], pads=[2, 2, 2, 2], dilations=[2, 2]),
             helper.make_node("Add", ["c1", "r0"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"])]
    _save(path, nodes, [x], [y], [_w("w0", 19, 5, 3, 3), _w("b0", 19), _w("w1", 19, 19, 3, 3),
                                  _w("w2", 33, 19, 1, 1), _w("b2", 33)])


def convs_odd(path):
    # the B panel's per-column coordinate table: batch 3, asymmetric pads, stride (2, 1),
    # dilation (1, 2), a 5x3 window, a grouped conv (groups as GEMM batches), a transposed
    # activation feeding a conv; output widths that are no power of 2, N tails in every panel
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6, 21, 19])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[2, 0, 1, 3], strides=[2, 1],
                              dilations=[1, 2]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1], group=2),
             helper.make_node("Transpose", ["c1"], ["t"], perm=[0, 1, 3, 2]),
             helper.make_node("Conv", ["t", "w2"], ["y"], pads=[0, 1, 0, 1], strides=[2, 2])]
    _save(path, nodes, [x], [y], [_w("w0", 10, 6, 5, 3), _w("b0", 10), _w("w1", 14, 5, 3, 3),
                                  _w("w2", 9, 14, 1, 3)])


def k_blocks(path):
    # With 32 k values per block where K > 64 (_small_l1_spec): K = 101 (blocks of 26, the
    # last 23) with a bias + Relu epilogue, then K = 45 (one block: its B panel fits the L1);
    # q @ k^T of two activations, K = 67 (23, 23, 21); a padded 3x3 conv over 71 channels,
    # K = 639 (24 blocks of 3 channels, the last 2) with a 1x1 conv (K = 71: 24, 24, 23) as
    # its residual; K = 13 in one block.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7, 101])
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 9, 67])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT, [2, 21, 67])
    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 71, 14, 13])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [5, 13])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y2", "y3", "y4", "y5")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["y1"]),
             helper.make_node("MatMul", ["y1", "w2"], ["y2"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["y3"]),
             helper.make_node("Conv", ["img", "wc", "bc"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["img", "wp"], ["c2"]),
             helper.make_node("Add", ["c1", "c2"], ["s"]),
             helper.make_node("Relu", ["s"], ["y4"]),
             helper.make_node("MatMul", ["z", "w5"], ["y5"])]
    _save(path, nodes, [x, q, k, img, z], outs,
          [_w("w1", 101, 45), _w("b1", 45), _w("w2", 45, 9), _w("wc", 17, 71, 3, 3), _w("bc", 17),
           _w("wp", 17, 71, 1, 1), _w("w5", 13, 20)])


def pixel_rows(path):
    # convs on a 7 x 7 map (49 pixels: the micro-kernel's rows, the filters its columns): a
    # strided 1x1 (its rows' input offsets divide) and a padded 3x3 with bias + Relu over 45
    # channels (K = 405: B in k blocks on avx512, whose next block each row panel prefetches)
    # packed from a per-panel row table; the last row panel holds one pixel
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 40, 13, 13])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], strides=[2, 2]),
             helper.make_node("Conv", ["c0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["y"])]
    _save(path, nodes, [x], [y], [_w("w0", 45, 40, 1, 1), _w("w1", 70, 45, 3, 3), _w("b1", 70)])


def pixel_rows_in_chunks(path):
    # 7 x 7 maps whose filters (300, then 230: a 12 and a 6 column tail on avx512) span
    # several column chunks of the one row block of 49 pixels (the last row panel holds one):
    # a padded 3x3 over 63 channels with bias + Relu (A from the row table), then a 1x1
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 63, 7, 7])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1"], ["y"])]
    _save(path, nodes, [x], [y], [_w("w0", 300, 63, 3, 3), _w("b0", 300), _w("w1", 230, 300, 1, 1)])


def concat_k(path):
    # Channel Concats wider than 4 inputs read along the contraction's K (passes/inline_index_maps.h):
    # a 1x1 conv (bias + Relu) over 6 inputs of 3, 5, 7, 2, 9 and 41 channels (the last computed:
    # a Relu) packs each input's channel range in its own loop; a padded 3x3 conv over the same
    # Concat (its column table); a MatMul over a 5-way Concat along K (A's packing). 11 x 13
    # pixels: a short last column panel.
    chans = [3, 5, 7, 2, 9, 41]
    xs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, c, 11, 13]) for i, c in enumerate(chans)]
    ms = [helper.make_tensor_value_info(f"m{i}", TensorProto.FLOAT, [3, 7, k]) for i, k in enumerate([4, 1, 6, 3, 5])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z", "w")]
    parts = [f"x{i}" for i in range(5)] + ["r5"]
    nodes = [helper.make_node("Relu", ["x5"], ["r5"]),
             helper.make_node("Concat", parts, ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w1", "b1"], ["c1"]),
             helper.make_node("Relu", ["c1"], ["y"]),
             helper.make_node("Conv", ["cat", "w3"], ["z"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", [f"m{i}" for i in range(5)], ["mcat"], axis=2),
             helper.make_node("MatMul", ["mcat", "wm"], ["w"])]
    _save(path, nodes, xs + ms, outs, [_w("w1", 19, 67, 1, 1), _w("b1", 19), _w("w3", 10, 67, 3, 3),
                                       _w("wm", 19, 23)])


def heads36(path):
    # MobileViT-S's transformer shape, small: 4 heads of 36 over 144 channels and 20 tokens, batch 2.
    # attn @ V has N = 36 (a 4-column tail: tile<16> on avx512, tile<8> on avx2, tile<4> scalar),
    # the projections N = 144 (a 16-column tail on avx512), q @ k^T N = 20.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 20, 144])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    shape = numpy_helper.from_array(np.array([2, 20, 4, 36], np.int64), "shape")
    back = numpy_helper.from_array(np.array([2, 20, 144], np.int64), "back")
    nodes = []
    for t in "qkv":
        nodes += [helper.make_node("MatMul", ["x", "w" + t], [t + "0"], name=t + "_proj"),
                  helper.make_node("Reshape", [t + "0", "shape"], [t + "1"]),
                  helper.make_node("Transpose", [t + "1"], [t + "h"], perm=[0, 2, 1, 3])]
    nodes += [helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
              helper.make_node("Softmax", ["s"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["o"], name="attn_v"),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "back"], ["o2"]),
              helper.make_node("MatMul", ["o2", "wo"], ["y0"], name="out_proj"),
              helper.make_node("Add", ["y0", "x"], ["y"])]
    _save(path, nodes, [x], [y], [_w("wq", 144, 144), _w("wk", 144, 144), _w("wv", 144, 144),
                                  _w("wo", 144, 144), shape, back])


def residual_rows(path):
    # 1x1 convs with the filters as rows whose epilogue adds an activation of the output's size
    # (ResNet's conv3 + Add + Relu): each row panel prefetches the next one's residual
    # (prefetch_tile), and the third conv, the last reader of y1, writes its output into y1's
    # bytes (codegen/project/in_place.h); 16 x 16 pixels, 48 filters (no row tail for MR 4, 6 or 8). (With a batch in
    # the columns, a panel that spans two images reads no affine tile: none there.)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 16, 16])
    r = helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 48, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
             helper.make_node("Add", ["c1", "r"], ["s1"]),
             helper.make_node("Relu", ["s1"], ["y1"]),
             helper.make_node("Conv", ["y1", "w2", "b2"], ["c2"]),
             helper.make_node("Relu", ["c2"], ["t2"]),
             helper.make_node("Conv", ["t2", "w3", "b3"], ["c3"]),
             helper.make_node("Add", ["y1", "c3"], ["s3"]),
             helper.make_node("Relu", ["s3"], ["y3"]),
             helper.make_node("Conv", ["y3", "w4"], ["y"])]
    _save(path, nodes, [x, r], [y], [_w("w1", 48, 24, 1, 1), _w("b1", 48), _w("w2", 48, 48, 1, 1), _w("b2", 48),
                                     _w("w3", 48, 48, 1, 1), _w("b3", 48), _w("w4", 8, 48, 1, 1)])


def stem(path):
    # an RGB stem: 3x3 stride 2 pad 1 over 3 channels with bias + Relu, 39 x 37 -> 20 x 19
    # (output rows wider than a run of 16 columns: its input offsets step by two)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 39, 37])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c0"], ["y"])]
    _save(path, nodes, [x], [y], [_w("w0", 24, 3, 3, 3), _w("b0", 24)])


def column_groups(path):
    # 1x1 convs over few channels on a wide map, whose run-time B panels a task packs and
    # runs in groups (ukernel param column_group): 6 -> 20 with bias + Relu, then 20 -> 20
    # plus that as a residual; 29 x 23 = 667 pixels (an N tail for every NR), batch 2
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 29, 23])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1"], ["c1"]),
             helper.make_node("Add", ["c1", "r0"], ["y"])]
    _save(path, nodes, [x], [y], [_w("w0", 20, 6, 1, 1), _w("b0", 20), _w("w1", 20, 20, 1, 1)])


MODELS = {"linear": linear, "attention": attention, "convs": convs, "convs_odd": convs_odd,
          "pixel_rows": pixel_rows, "concat_k": concat_k, "stem": stem, "column_groups": column_groups}


def _env(variant=None):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    if variant:
        env["TILEGRAPH_SGEMM_VARIANT"] = variant
    return env


def _tune(prefix, env, *flags):
    """Tunes PREFIX (skips without a built tilegraph); returns the CLI's output. With
    --no-winograd: these models' 3x3 convs test the GEMM's packings (on AVX2 any filter
    count would run as Winograd; tests/float_gemm/test_winograd_conv.py tests that)."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    tune = subprocess.run([str(exe), "tune", str(prefix), "--no-winograd", *flags], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    return tune.stdout


def _manifest(prefix):
    return json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())


def _kernel_source(prefix):
    """The generated kernels' C++, every file of the host project."""
    return "".join(p.read_text() for p in sorted((prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp")))


def _tuned_kernels_by_node(make_model, prefix, variant, env=None):
    """Writes and tunes the model for `variant` (in `env`, default _env(variant)); the
    manifest's kernel of each ONNX node."""
    make_model(prefix)
    _tune(prefix, env or _env(variant))
    return {n: k for k in _manifest(prefix)["kernels"] for n in k["onnx_nodes"]}


def _sgemm_kernels(prefix, variant):
    """The manifest's kernels on the float micro-kernel of `variant`."""
    return [k for k in _manifest(prefix)["kernels"] if k.get("ukernel") == f"sgemm_{variant}"]


def _matches_onnxruntime(prefix, env, *flags):
    """test_acc against onnxruntime passes; returns its output."""
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), *flags], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout
    return acc.stdout


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_float_gemm_model(name, variant, tmp_path):
    prefix = tmp_path / name
    MODELS[name](prefix)
    env = _env(variant)
    tune = _tune(prefix, env)
    assert f"on the float micro-kernel (sgemm_{variant})" in tune, tune[-3000:]
    manifest = _manifest(prefix)
    on_ukernel = [k["name"] for k in _sgemm_kernels(prefix, variant)]
    expected = {"linear": 2, "attention": 6, "convs": 3, "convs_odd": 3, "pixel_rows": 2, "concat_k": 3, "stem": 1,
                "column_groups": 2}[name]
    assert len(on_ukernel) == expected, (on_ukernel, [k["name"] for k in manifest["kernels"]])
    if name == "concat_k":  # no kernel writes a Concat: each is inside its contractions' kernels
        readers = [k for k in manifest["kernels"] if {"cat", "mcat"} & set(k["onnx_nodes"])]
        assert len(readers) == 3 and all(k.get("ukernel") for k in readers), manifest["kernels"]
    # The micro-kernel header compiles cleanly at every call's constant k
    # (GCC once warned of undefined behaviour in a dead pack loop).
    log = (prefix / "tilegraph_rt" / "host" / "build.log").read_text()
    assert "warning:" not in log, log[-3000:]
    if name in ("convs", "pixel_rows"):
        # The stride-1 padded conv's packing (convs: B, the dilated conv's columns; pixel_rows:
        # A, the 3x3's row panels inside M) reads its window under the padding test (a masked
        # load on AVX-512 and AVX2, unclamped offsets); the scalar variant clamps.
        source = _kernel_source(prefix)
        guarded = re.findall(r"!= 0\) \? in\d+\[", source)
        assert bool(guarded) == (variant != "scalar"), (variant, len(guarded))
    if name == "stem":
        # The stride-2 runs read 32 contiguous values under a mask, then every other one
        # (AVX-512's 32-column panels; AVX2's 16-column ones too).
        source = _kernel_source(prefix)
        assert ("run_wide" in source) == (variant != "scalar"), variant
    if name == "column_groups":
        groups = [k["ukernel_params"].get("column_group", 1) for k in _sgemm_kernels(prefix, variant)]
        assert len(groups) == 2 and all(g > 1 for g in groups), groups
    _matches_onnxruntime(prefix, env)


def test_no_float_ukernels_keeps_the_loop_nests(tmp_path):
    prefix = tmp_path / "convs"
    convs(prefix)
    env = _env()
    tune = _tune(prefix, env, "--no-float-ukernels", "--no-build")
    assert "float micro-kernel" not in tune
    manifest = _manifest(prefix)
    assert not [k for k in manifest["kernels"] if k.get("ukernel", "").startswith("sgemm")]
    assert not (prefix / "tilegraph_rt" / "host" / "sgemm_avx512.h").exists()


# Columns of each variant's register tile (sgemm_<variant>.h kNR).
NR = {"scalar": 8, "avx2": 16, "avx512": 32}


def _small_l1_spec(path, variant, l2_bytes=1 << 20, l3_bytes=0):
    """A host spec whose L1 is 2 x 32 x NR floats: B panels of K > 64 are split into blocks of
    at most 32 k values (scheduler/float_gemm_blocking.h). No L3 unless l3_bytes."""
    spec = {"name": "host", "target": "cpu", "description": "the host CPU with a small L1 (k blocks test)",
            "isa": "x86-64", "compute_units": os.cpu_count() or 1, "warp_size": 1, "max_threads_per_block": 1,
            "max_threads_per_unit": 1, "max_blocks_per_unit": 1, "shared_bytes_per_block": 1 << 20,
            "shared_bytes_per_unit": 1 << 20, "registers_per_unit": 256, "max_registers_per_thread": 256,
            "kernel_launch_seconds": 2e-6, "peak_fp32_flops": 1e11, "peak_fp16_flops": 1e11,
            "peak_int8_ops": 4e11, "vector_bytes": 32,
            "levels": [
                {"name": "dram", "scope": "device", "capacity_bytes": 1 << 32, "bandwidth_bytes_per_s": 1e10,
                 "transaction_bytes": 64},
                {"name": "l2", "scope": "block", "capacity_bytes": l2_bytes, "bandwidth_bytes_per_s": 1e11,
                 "transaction_bytes": 64},
                {"name": "l1", "scope": "block", "capacity_bytes": 2 * 32 * NR[variant] * 4,
                 "bandwidth_bytes_per_s": 2e11, "transaction_bytes": 64},
                {"name": "registers", "scope": "thread", "capacity_bytes": 1024, "bandwidth_bytes_per_s": 1e12,
                 "transaction_bytes": 32}]}
    if l3_bytes:
        spec["levels"].insert(1, {"name": "l3", "scope": "device", "capacity_bytes": l3_bytes,
                                  "bandwidth_bytes_per_s": 5e10, "transaction_bytes": 64})
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.parametrize("variant", VARIANTS)
def test_k_blocks_accumulate_on_the_micro_kernel(variant, tmp_path):
    prefix = tmp_path / "k_blocks"
    k_blocks(prefix)
    spec = _small_l1_spec(tmp_path / "small_l1.json", variant)
    env = _env(variant)
    _tune(prefix, env, "--arch-file", str(spec))
    params = [k["ukernel_params"] for k in _sgemm_kernels(prefix, variant)]
    # (kc, k_blocks) of the six GEMMs, in any order: K = 101, 45, 67, 639, 71, 13
    assert sorted((p["kc"], p["k_blocks"]) for p in params) == \
        sorted([(26, 4), (45, 1), (23, 3), (27, 24), (24, 3), (13, 1)]), params
    assert all(p["nr"] == NR[variant] for p in params)
    # Each panel's epilogue runs in the last block's iteration, right after
    # the panel's call (its C tile still in L1), not in a loop after the blocks.
    code = _kernel_source(prefix)
    for blocks in sorted({p["k_blocks"] for p in params if p["k_blocks"] > 1}):
        assert f"if ((INT64_C({blocks - 2}) < kcb))" in code, f"no epilogue in the last of {blocks} blocks"
    acc = _matches_onnxruntime(prefix, env)
    assert acc.count("  ok ") == 4, acc


def k_outer(path):
    # A padded 3x3 conv over 71 channels (K = 639: blocks of 3 channels, the last 2) with 37
    # filters (M: a short last row panel) over 14 x 13 output pixels (N = 182: a short last
    # column panel), bias + Relu epilogue.
    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 71, 14, 13])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["img", "wc", "bc"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    _save(path, nodes, [img], [y], [_w("wc", 37, 71, 3, 3), _w("bc", 37)])


@pytest.mark.parametrize("variant", VARIANTS)
def test_k_outer_blocks_match_onnxruntime(variant, tmp_path):
    """With a 24 KiB L2 the filters' A panels (all of K) overflow a row block, so the k-block
    loop goes outside the column panels (scheduler/float_gemm_blocking.h, k outer), in groups
    of column panels whose C tiles wait for the last block; every tail (M, N, K, the last
    group) still matches onnxruntime."""
    prefix = tmp_path / "k_outer"
    k_outer(prefix)
    spec = _small_l1_spec(tmp_path / "small_caches.json", variant, l2_bytes=24 << 10)
    env = _env(variant)
    _tune(prefix, env, "--arch-file", str(spec))
    manifest = _manifest(prefix)
    params = [k["ukernel_params"] for k in _sgemm_kernels(prefix, variant)]
    assert len(params) == 1, manifest["kernels"]
    assert (params[0]["kc"], params[0]["k_blocks"]) == (27, 24), params
    assert 1 <= params[0]["group_panels"] < params[0]["chunk_panels"], params
    _matches_onnxruntime(prefix, env)


def streamed_weights(path):
    # x @ W + b, Relu: K = 139 (blocks of 28, the last 27), 83 rows (a short last row panel),
    # 45 columns (a short last column panel).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [83, 139])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    _save(path, nodes, [x], [y], [_w("w", 139, 45), _w("b", 45)])


@pytest.mark.parametrize("variant", VARIANTS)
def test_streamed_weights_pack_a_per_k_block_match_onnxruntime(variant, tmp_path):
    """With a 24 KiB L2 the packed weights (B) overflow it and the rows' whole-K A panels
    overflow a row block, so A is packed one k block at a time with the k blocks outside
    the column panels (scheduler/float_gemm_blocking.h, a_per_k_block); every tail (M, N,
    K) and the bias + Relu epilogue still match onnxruntime."""
    prefix = tmp_path / "streamed_weights"
    streamed_weights(prefix)
    spec = _small_l1_spec(tmp_path / "small_caches.json", variant, l2_bytes=24 << 10)
    env = _env(variant)
    _tune(prefix, env, "--arch-file", str(spec))
    params = [k["ukernel_params"] for k in _sgemm_kernels(prefix, variant)]
    assert len(params) == 1, _manifest(prefix)["kernels"]
    assert (params[0]["kc"], params[0]["k_blocks"], params[0].get("a_per_k_block")) == (28, 5, 1), params
    _matches_onnxruntime(prefix, env)


@pytest.mark.parametrize("variant", VARIANTS)
def test_streamed_weights_pack_a_whole_match_onnxruntime(variant, tmp_path):
    """The same GEMM with a 1 MiB L3, which holds all of A's panels: k outer with A packed
    whole, once per task run, and each k block's calls reading their block of it
    (scheduler/float_gemm_blocking.h); the tails and the epilogue still match onnxruntime."""
    prefix = tmp_path / "streamed_weights_whole_a"
    streamed_weights(prefix)
    spec = _small_l1_spec(tmp_path / "small_caches_l3.json", variant, l2_bytes=24 << 10, l3_bytes=1 << 20)
    env = _env(variant)
    _tune(prefix, env, "--arch-file", str(spec))
    params = [k["ukernel_params"] for k in _sgemm_kernels(prefix, variant)]
    assert len(params) == 1, _manifest(prefix)["kernels"]
    assert (params[0]["kc"], params[0]["k_blocks"], params[0].get("a_per_k_block")) == (28, 5, None), params
    assert "group_panels" in params[0], params
    _matches_onnxruntime(prefix, env)


def transposed_b(path):
    # q @ k^T with k's rows as B's columns, each contiguous along K (tg_sgemm::pack_b_columns):
    # attention heads (batch 2, 9 x 21 over 67 channels: N tails for every NR) and Restormer's
    # channel attention over the pixels, small (24 x 700 @ 700 x 24: K long against the test's
    # 24 KiB L2, so A and B are packed one k block at a time, k outer).
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("heads", "channels")]
    ins = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 9, 67]),
           helper.make_tensor_value_info("k", TensorProto.FLOAT, [2, 21, 67]),
           helper.make_tensor_value_info("cq", TensorProto.FLOAT, [1, 1, 24, 700]),
           helper.make_tensor_value_info("ck", TensorProto.FLOAT, [1, 1, 24, 700])]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["heads"], name="heads"),
             helper.make_node("Transpose", ["ck"], ["ckt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["cq", "ckt"], ["channels"], name="channels")]
    _save(path, nodes, ins, outs, [])


@pytest.mark.parametrize("variant", VARIANTS)
def test_transposed_b_is_packed_from_its_columns(variant, tmp_path):
    """B whose columns run along K where it lies packs through pack_b_columns (ukernel param
    b_columns), over all of K and per k block; both operands activations with a long K put
    the k blocks outside the column panels with A packed per k block (scheduler/
    float_gemm_blocking.h). Both match onnxruntime; TILEGRAPH_PACK_B_COLUMNS=off (scalar
    only, for time) packs with the generated loop."""
    prefix = tmp_path / "transposed_b"
    transposed_b(prefix)
    spec = _small_l1_spec(tmp_path / "small_caches.json", variant, l2_bytes=24 << 10)
    env = _env(variant)
    _tune(prefix, env, "--arch-file", str(spec))
    kernels = {n: k for k in _sgemm_kernels(prefix, variant) for n in k["onnx_nodes"]}
    assert {"heads", "channels"} <= set(kernels), _manifest(prefix)["kernels"]
    assert all(kernels[n]["ukernel_params"].get("b_columns") == 1 for n in ("heads", "channels")), kernels
    channels = kernels["channels"]["ukernel_params"]
    assert (channels["kc"], channels["k_blocks"], channels.get("a_per_k_block")) == (32, 22, 1), channels
    assert "tg_sgemm::pack_b_columns(" in _kernel_source(prefix)
    _matches_onnxruntime(prefix, env)
    if variant == "scalar":
        _tune(prefix, dict(env, TILEGRAPH_PACK_B_COLUMNS="off"), "--arch-file", str(spec))
        assert "tg_sgemm::pack_b_columns(" not in _kernel_source(prefix)
        assert not any(k["ukernel_params"].get("b_columns") for k in _sgemm_kernels(prefix, variant))


def test_pixel_rows_pack_a_row_block_once_per_run_of_chunks(tmp_path):
    """A pixel-rows conv split into column chunks of one row block packs the row block's A
    panels only on a thread's first task or a batch's first chunk (lower_float_gemm_kernel.cpp:
    the parallel loop's run var): one thread runs every chunk back to back on the panels the
    first one packed, two threads each pack their own; both match onnxruntime."""
    prefix = tmp_path / "pixel_rows_in_chunks"
    pixel_rows_in_chunks(prefix)
    env = _env()
    _tune(prefix, env)
    source = _kernel_source(prefix)
    # The convs whose grid is one row block (all 49 pixel rows) over several column
    # chunks: both with AVX-512's 8-row panels; AVX2's 6-row ones (9 panels) may split
    # the 1x1 conv by rows instead, which the grid's cost model decides.
    gemms = [k["ukernel_params"] for k in _manifest(prefix)["kernels"] if k["schedule"]["kind"] == "float_gemm"]
    assert len(gemms) == 2, gemms
    in_chunks = [p for p, filters in zip(gemms, (300, 230))
                 if p["row_panels"] * p["mr"] >= 49 and -(-filters // p["nr"]) > p["chunk_panels"]]
    if host_has_avx512():
        assert len(in_chunks) == 2, gemms
    assert in_chunks, gemms
    assert source.count("const int64_t run = tg_it - tg_begin;") == len(in_chunks), "each such conv skips the repack"
    for threads in ("1", "2"):
        acc = _matches_onnxruntime(prefix, env, "--threads", threads)
        assert "PASS" in acc, acc


@pytest.mark.parametrize("variant", VARIANTS)
def test_concat_ranges_across_k_blocks(variant, tmp_path):
    """With 32 k values per B block (_small_l1_spec) the 1x1 conv's K = 67 runs in 3 blocks whose
    bounds (23, 46) fall inside the Concat's channel ranges (3, 8, 15, 17, 26): each block packs the
    part of every range it holds, possibly none; the 3x3 conv's blocks (of whole channels) too."""
    prefix = tmp_path / "concat_k"
    concat_k(prefix)
    spec = _small_l1_spec(tmp_path / "small_l1.json", variant)
    env = _env(variant)
    _tune(prefix, env, "--arch-file", str(spec))
    blocks = sorted(k["ukernel_params"]["k_blocks"] for k in _sgemm_kernels(prefix, variant))
    assert len(blocks) == 3 and blocks[-1] > 1 and blocks[-2] > 1, blocks
    acc = _matches_onnxruntime(prefix, env)
    assert acc.count("  ok ") == 3, acc


# The last column panel's micro-kernel call narrowed to whole vectors (ukernel_params tail_cols,
# lower_float_gemm_kernel.cpp): attn @ V's 36 columns and the 144-wide projections, per variant.
NARROW_TAILS = {"scalar": {"attn_v": 4, "scores": 4, "q_proj": 0, "out_proj": 0},
                "avx2": {"attn_v": 8, "scores": 8, "q_proj": 0, "out_proj": 0},
                "avx512": {"attn_v": 16, "scores": 0, "q_proj": 16, "out_proj": 16}}


@pytest.mark.parametrize("variant", VARIANTS)
def test_narrow_column_tails_match_onnxruntime(variant, tmp_path):
    prefix = tmp_path / "heads36"
    heads36(prefix)
    env = _env(variant)
    _tune(prefix, env)
    tails = {}
    for k in _sgemm_kernels(prefix, variant):
        for node in k["onnx_nodes"]:
            tails[node] = k["ukernel_params"].get("tail_cols", 0)
    assert {n: tails.get(n) for n in NARROW_TAILS[variant]} == NARROW_TAILS[variant], tails
    source = _kernel_source(prefix)
    for cols in set(NARROW_TAILS[variant].values()) - {0}:
        assert f"tg_sgemm::tile<{cols}>(" in source
    acc = _matches_onnxruntime(prefix, env, "--threads", "1")
    assert "PASS" in acc, acc


@pytest.mark.parametrize("variant", VARIANTS)
def test_residual_rows_prefetch_the_next_residual_and_write_in_place(variant, tmp_path):
    prefix = tmp_path / "residual_rows"
    residual_rows(prefix)
    env = _env(variant)
    _tune(prefix, env)
    assert len(_sgemm_kernels(prefix, variant)) == 4
    source = _kernel_source(prefix)
    assert source.count("tg_sgemm::prefetch_tile(") == 2, source[-4000:]
    # the in-place pair is printed without __restrict: the third kernel's output only
    assert len(re.findall(r"^void \w+\(.*float\* out\) \{", source, re.M)) == 1, source[-4000:]
    _matches_onnxruntime(prefix, env)


def few_rows(path):
    # NAFNet's last conv: 3x3, 16 -> 3 filters (3 GEMM rows, A the constants) + bias + the
    # image as a residual; and x @ W with 2 rows (B the constants), a vector-matrix product
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 20, 37])
    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 3, 20, 37])
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [2, 40])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "img"], ["y"], name="residual"),
             helper.make_node("MatMul", ["v", "w1"], ["z"], name="mm")]
    _save(path, nodes, [x, img, v], [y, z], [_w("w", 3, 16, 3, 3), _w("b", 3), _w("w1", 40, 24)])


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_conv_with_few_filters_takes_the_micro_kernel(variant, tmp_path):
    """Fewer than 4 GEMM rows: the conv (constant filters as rows) runs on the micro-kernel with
    a row tail of 3 (tile<W, 3>); the 2-row x @ W stays in the loop nest."""
    prefix = tmp_path / "few_rows"
    kernels = _tuned_kernels_by_node(few_rows, prefix, variant)
    assert kernels["conv"].get("ukernel") == f"sgemm_{variant}", kernels["conv"]
    assert kernels["conv"] is kernels["residual"], "the residual add: the conv's epilogue"
    assert kernels["mm"].get("ukernel") is None, kernels["mm"]
    source = _kernel_source(prefix)
    assert re.search(r"tg_sgemm::tile<\d+, 3>\(", source), "the filters' 3 rows: a row-tail tile"
    acc = _matches_onnxruntime(prefix, _env(variant), "--threads", "1")
    assert "PASS" in acc, acc


def depthwise_conv1d(path):
    # Conformer's convolution module: a depthwise Conv1d (31 taps there, 7 here) + Swish; one
    # filter row per channel, the taps the only reduce axis (no column table); T = 200: 6 full
    # panels of 32 columns on AVX-512 and a tail of 8
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 200])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="dw", kernel_shape=[7], pads=[3, 3], group=6),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="swish")]
    _save(path, nodes, [x], [y], [_w("w", 6, 1, 7), _w("b", 6)])


@pytest.mark.parametrize("variant", VARIANTS)
def test_depthwise_conv1d_packs_its_interior_panels_without_padding_tests(variant, tmp_path):
    """The column panels whose windows lie inside the sequence pack B with plain loads (their
    own copy of the packing loop, var names with an `i`); the border panels keep the padding
    select. Both match onnxruntime."""
    prefix = tmp_path / "dw1d"
    kernels = _tuned_kernels_by_node(depthwise_conv1d, prefix, variant)
    assert kernels["dw"].get("ukernel") == f"sgemm_{variant}", kernels["dw"]
    source = _kernel_source(prefix)
    interior = re.findall(r"for \(int64_t kbi0 = 0;[^\n]*\n[^\n]*\n[^\n]*\n\s*panels\[[^\n]*", source)
    assert len(interior) == 1, source[:4000]
    assert "tg_select" not in interior[0] and "tg_min" not in interior[0], interior[0]
    assert "tg_select" in source.split("kbi0")[-1], "the border panels keep the padding select"
    acc = _matches_onnxruntime(prefix, _env(variant), "--threads", "1")
    assert "PASS" in acc, acc


def wide_panels(path):
    # AVX-512's 12-row A panels (tg_sgemm::wide): x @ W with 100 tokens (8 panels of 12 and a
    # 4-row tail), K = 160, bias + Relu, A packed at run time (wide::pack_a_rows); a 1x1 conv
    # with 96 filters (whole wide panels) over 40 channels with bias + Relu (wide::
    # tile_bias_clamp) on a 20 x 20 map; and two that keep 8 rows: 50 tokens (too few rows)
    # and a 1x1 conv over 24 channels (K too short).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 100, 160])
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 50, 160])
    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 40, 20, 20])
    small = helper.make_tensor_value_info("small", TensorProto.FLOAT, [1, 24, 20, 20])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z", "c", "d")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="tokens"),
             helper.make_node("Add", ["m", "b"], ["h"]),
             helper.make_node("Relu", ["h"], ["y"]),
             helper.make_node("MatMul", ["t", "w"], ["z"], name="few_tokens"),
             helper.make_node("Conv", ["img", "wc", "bc"], ["c0"], name="filters"),
             helper.make_node("Relu", ["c0"], ["c"]),
             helper.make_node("Conv", ["small", "ws"], ["d"], name="short_k")]
    _save(path, nodes, [x, t, img, small], outs,
          [_w("w", 160, 70), _w("b", 70), _w("wc", 96, 40, 1, 1), _w("bc", 96), _w("ws", 96, 24, 1, 1)])


def _host_half_width_fma():
    """Whether the host runs its 512-bit FMAs as two halves (AMD family 19h with AVX-512: Zen 4),
    where the float GEMM keeps 8-row panels by itself (scheduler/arch_spec.h: half_width_fma)."""
    info = open("/proc/cpuinfo").read()
    return "AuthenticAMD" in info and re.search(r"^cpu family\s*:\s*25$", info, re.M) is not None


@pytest.mark.skipif("avx512" not in VARIANTS, reason="no AVX-512F on this CPU")
@pytest.mark.parametrize("panels", ["auto", "on", "off"])
def test_wide_panels_take_twelve_rows_where_they_pay(panels, tmp_path):
    """GEMMs of >= 64 rows and K >= 128 (or whole 12-row panels and K >= 32) pack A in 12-row
    panels on AVX-512 (manifest mr 12, tg_sgemm::wide:: calls); others keep 8. Without
    TILEGRAPH_WIDE_PANELS that holds on hosts with full-width 512-bit FMAs, and a Zen 4 host
    keeps every GEMM in 8; =on takes them on any AVX-512 host, =off on none. All match
    onnxruntime."""
    prefix = tmp_path / "wide_panels"
    wide_panels(prefix)
    env = _env("avx512")
    if panels != "auto":
        env["TILEGRAPH_WIDE_PANELS"] = panels
    wide = panels == "on" or (panels == "auto" and not _host_half_width_fma())
    _tune(prefix, env)
    kernels = {n: k for k in _manifest(prefix)["kernels"] for n in k["onnx_nodes"]}
    rows = {n: kernels[n]["ukernel_params"]["mr"] for n in ("tokens", "few_tokens", "filters", "short_k")}
    expected = {"tokens": 12, "few_tokens": 8, "filters": 12, "short_k": 8} if wide else \
        {"tokens": 8, "few_tokens": 8, "filters": 8, "short_k": 8}
    assert rows == expected
    source = _kernel_source(prefix)
    for call in ("tg_sgemm::wide::tile<32, 4>(", "tg_sgemm::wide::pack_a_rows(", "tg_sgemm::wide::tile_bias_clamp"):
        assert (call in source) == wide, call
    acc = _matches_onnxruntime(prefix, env, "--threads", "2")
    assert "PASS" in acc, acc


def wide_k_blocks(path):
    # Wide panels across k blocks (the accumulating calls): x @ W with 100 rows and K = 130
    # (bias + Relu); a padded 3x3 conv with 64 filters over 15 channels (K = 135, the packing's
    # runs under the padding test) and a residual; q @ k^T of two activations with 72 rows and
    # K = 130 (A by pack_a_rows, B by pack_b_columns).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 100, 130])
    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 15, 10, 11])
    res = helper.make_tensor_value_info("res", TensorProto.FLOAT, [1, 64, 10, 11])
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 72, 130])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT, [2, 40, 130])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "c", "s")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="tokens"),
             helper.make_node("Add", ["m", "b"], ["h"]),
             helper.make_node("Relu", ["h"], ["y"]),
             helper.make_node("Conv", ["img", "wc"], ["c0"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c0", "res"], ["c"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores")]
    _save(path, nodes, [x, img, res, q, k], outs, [_w("w", 130, 40), _w("b", 40), _w("wc", 64, 15, 3, 3)])


@pytest.mark.skipif("avx512" not in VARIANTS, reason="no AVX-512F on this CPU")
def test_wide_panels_accumulate_across_k_blocks(tmp_path):
    prefix = tmp_path / "wide_k_blocks"
    wide_k_blocks(prefix)
    spec = _small_l1_spec(tmp_path / "small_l1.json", "avx512")
    env = _env("avx512")
    _tune(prefix, env, "--arch-file", str(spec))
    kernels = {n: k for k in _manifest(prefix)["kernels"] for n in k["onnx_nodes"]}
    for node in ("tokens", "conv", "scores"):
        params = kernels[node]["ukernel_params"]
        assert params["mr"] == 12 and params["k_blocks"] > 1, (node, params)
    source = _kernel_source(prefix)
    assert "tg_sgemm::wide::pack_a_rows(" in source and "tg_sgemm::pack_b_columns(" in source
    acc = _matches_onnxruntime(prefix, env)
    assert acc.count("  ok ") == 3, acc


def stem_pool(path):
    # ResNet's stem: a 7x7 stride-2 conv with bias, Relu, then a 3x3 stride-2 max pool with
    # padding (its windows overlap), 3 -> 16 channels on 45 x 43
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 45, 43])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[3, 3, 3, 3], strides=[2, 2], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
                              name="pool")]
    _save(path, nodes, [x], [y], [_w("w", 16, 3, 7, 7), _w("b", 16)])


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_pools_overlapping_windows_leave_the_conv_its_epilogue(variant, tmp_path):
    """The conv's bias and Relu run in the micro-kernel's store (graph_connecting's
    steals_gemm_epilogue), not staged in the max pool's tile; the pool's simd loop has its
    padded first column peeled (split_piecewise_loops), so the rest indexes without a clamp.
    The pool's loops, not the pooling micro-kernel it takes on AVX2 and AVX-512
    (TILEGRAPH_MAXPOOL_VARIANT=none; tests/pooling/test_pool_kernels.py tests that one)."""
    prefix = tmp_path / "stem_pool"
    env = dict(_env(variant), TILEGRAPH_MAXPOOL_VARIANT="none")
    kernels = _tuned_kernels_by_node(stem_pool, prefix, variant, env)
    assert kernels["conv"].get("ukernel") == f"sgemm_{variant}", kernels["conv"]
    assert kernels["relu"] is kernels["conv"], "the bias and Relu: the GEMM's epilogue"
    assert kernels["pool"]["onnx_nodes"] == ["pool"], kernels["pool"]
    source = _kernel_source(prefix)
    pool = source[source.index(f"void {kernels['pool']['name']}("):]
    pool = pool[:pool.index("\n}\n")]
    assert "shared" not in pool and "tg_block_scratch" not in pool, "the pool stages no tile"
    assert re.search(r"for \(int64_t \w+_s1 = 0; \w+_s1 < INT64_C\(\d+\)", pool), \
        "the window's padded first column peeled off its simd loop"
    acc = _matches_onnxruntime(prefix, env, "--threads", "1")
    assert "PASS" in acc, acc
