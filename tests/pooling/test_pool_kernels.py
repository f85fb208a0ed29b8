"""Pooling fused behind a conv's bias + Relu, compiled for the host CPU and
compared with onnxruntime (test_acc), on the paths of the block kernel's
one-thread lowering (codegen/lowering/lower_block_kernel.cpp). Tuned with
--no-float-ukernels: on the float micro-kernels the bias and Relu stay in
the conv's store where the pool's windows overlap (graph_connecting's
steals_gemm_epilogue; tests/float_gemm's test_a_pools_overlapping_windows_...),
and only the global average pools fuse them.

* a reduction tile too large for L1 reduces row by row (build_row_reduction);
* loops over a padded or haloed row peel the iterations that clamp or test
  the index (peeled_loop), so their middles read contiguously.

GlobalAveragePool sums each plane over one flattened reduce axis
(frontends/onnx/ops/conv_pool.cpp): cases on a 14x14 map (7x7 after the
stride-2 conv, as MobileNetV2's and ResNet's last maps) and an odd 11x5 one.

Cases: the ResNet stem's MaxPool 3x3 stride 2 pad 1 on odd sizes, ceil_mode,
asymmetric pads with stride (1, 2) and a 2x3 window, dilation 2, and
AveragePool with and without the padding counted. The stem case also checks
that the peeled loops are there (the kernel names their `_lo` iterations).
"""
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

RNG = np.random.default_rng(3)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)


def _stem(path, hw, pool):
    """Conv 3x3 stride 2 pad 1 (16 channels) + Relu, then `pool` (a node over r -> y)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, *hw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]), pool]
    graph = helper.make_graph(nodes, "g", [x], [y], [_w("w", 16, 3, 3, 3), _w("b", 16)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


CASES = {
    "max_stem": ((129, 127), helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                               pads=[1, 1, 1, 1])),
    "max_ceil": ((127, 121), helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                               ceil_mode=1)),
    "max_asym": ((97, 131), helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 3], strides=[1, 2],
                                              pads=[0, 2, 1, 1])),
    "max_dilated": ((101, 99), helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], dilations=[2, 2],
                                                 pads=[2, 2, 2, 2])),
    "avg_exclude_pad": ((129, 127), helper.make_node("AveragePool", ["r"], ["y"], kernel_shape=[3, 3],
                                                      strides=[2, 2], pads=[1, 1, 1, 1])),
    "avg_include_pad": ((123, 125), helper.make_node("AveragePool", ["r"], ["y"], kernel_shape=[3, 3],
                                                      strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    "global_avg_7x7": ((14, 14), helper.make_node("GlobalAveragePool", ["r"], ["y"])),
    "global_avg_odd": ((21, 9), helper.make_node("GlobalAveragePool", ["r"], ["y"])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_pool_behind_conv_relu(name, tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    hw, pool = CASES[name]
    prefix = tmp_path / name
    _stem(prefix, hw, pool)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    tune = subprocess.run([str(exe), "tune", str(prefix), "--no-float-ukernels"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    if name == "max_stem":
        code = "".join(p.read_text() for p in (prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp"))
        assert "_lo = 0;" in code, code[-6000:]
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout
    assert "PASS" in acc.stdout, acc.stdout


def _host_has_avx2():
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def test_stem_max_pool_runs_on_the_micro_kernel(tmp_path):
    """With the float micro-kernels (the default) the stem's pool is a kernel of
    its own: on AVX2 the pooling micro-kernel's (codegen/ukernels/maxpool_avx2.h),
    one call per plane of the conv's 65 x 64 output; the same values as
    onnxruntime either way."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    hw, pool = CASES["max_stem"]
    prefix = tmp_path / "max_stem_ukernel"
    _stem(prefix, hw, pool)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    tune = subprocess.run([str(exe), "tune", str(prefix)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    code = "".join(p.read_text() for p in (prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp"))
    if _host_has_avx2():
        assert "tg_maxpool::plane_3x3_s2<65, 64>(" in code, code[-6000:]
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout
    assert "PASS" in acc.stdout, acc.stdout
