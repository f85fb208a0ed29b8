"""Stride-1, pad-1 3x3 convolutions as Winograd F(2x2, 3x3) around the float
micro-kernel (scheduler/winograd_conv.h, codegen/lowering/
lower_winograd_conv_kernel.h, codegen/ukernels/winograd_f23_<variant>.h),
host CPU with AVX-512 or AVX2 (each with its float micro-kernel's panels):

* maps with tails: batch 2 on 13 x 11 (odd height and width: the last tile
  row and column half outside), a 7 x 7 map (16 tiles: the half panel), a
  4 x 4 map (4 tiles), 2 x 30 (one row of tiles) and 20 x 20 (100 tiles:
  four column panels, the last one short); 32 to 64 input channels, 32 to 64
  filters; 528 input channels on 10 x 14 (half panels of 16 tiles: 16, 16, 3);
* fused epilogues: bias + Relu, a residual Add then Relu, BatchNormalization;
* a conv over a 3-way Concat along the channels (32 + 40 + 32), each input
  transformed from its own tensor;
* left on the implicit GEMM: stride 2, dilation 2, 16 input channels (below
  kMinWinogradChannels), a 1x1 conv, 384 -> 384 channels on 2 x 2 (9 MiB of
  transformed filters, streamed, for one tile: winograd_conv_pays) and, on
  AVX-512 only, 36 filters (not a multiple of its 8 rows; AVX2's last row
  panel of 6 takes any count);
* 160 -> 104 filters on 22 x 20 (110 tiles, several column panels): on
  AVX-512 12-filter row panels (tg_sgemm::wide), the last of 8 (AVX2: 17 of
  6 and one of 2); its transformed filters (1.1 MB) overflow half this
  machine's L2, so a task takes several column panels (as many as half the
  L2 holds: 3 of 4 with a 2 MiB L2, the second task one);
* 128 -> 128 filters on 8 x 8 (16 tiles: one column task): 11 row panels of
  12 filters (AVX2: 22 of 6) split into as few groups as there are cores
  (2 cores: 6 + 5), each group a task that transforms the input again; not
  11 groups of one panel, as a divisor of the panels gave;
* each Winograd conv is one kernel of kind `winograd_conv` (manifest.json),
  its epilogue in the same kernel, naming the micro-kernel `winograd_f23`,
  and the outputs match onnxruntime (test_acc); --no-winograd and
  TILEGRAPH_SGEMM_VARIANT=scalar (no transforms) keep them all on the float
  GEMM.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from float_gemm_testlib import REPO, fan_in_weight, host_has_avx2, host_has_avx512  # noqa: E402 (puts python/ on the path)
from tilegraph._common import find_tilegraph_bin  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(3)


def _w(name, *shape):
    return fan_in_weight(RNG, name, *shape)


def _pos(name, n):
    return numpy_helper.from_array((0.5 + RNG.random(n)).astype(np.float32), name)


def build_model(path):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32, 13, 11]),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 64, 7, 7]),
              helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 48, 4, 4]),
              helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 32, 2, 30]),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 16, 20, 20]),
              helper.make_tensor_value_info("wide", TensorProto.FLOAT, [1, 528, 10, 14]),
              helper.make_tensor_value_info("deep", TensorProto.FLOAT, [1, 384, 2, 2]),
              helper.make_tensor_value_info("big", TensorProto.FLOAT, [1, 160, 22, 20]),
              helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 128, 8, 8])]
    names = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o")
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names]
    same = dict(pads=[1, 1, 1, 1])
    nodes = [
        # Winograd: bias + Relu, 32 -> 40 filters, batch 2 on 13 x 11
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], **same),
        helper.make_node("Relu", ["c0"], ["a"]),
        # Winograd: 40 -> 32, residual Add of the input, then Relu
        helper.make_node("Conv", ["a", "w1", "b1"], ["c1"], **same),
        helper.make_node("Add", ["c1", "x"], ["r1"]),
        helper.make_node("Relu", ["r1"], ["b"]),
        # Winograd: 7 x 7 map (16 tiles, half a panel), BatchNormalization
        helper.make_node("Conv", ["s", "w2"], ["c2"], **same),
        helper.make_node("BatchNormalization", ["c2", "g2", "be2", "m2", "v2"], ["c"]),
        # Winograd: 4 x 4 map, 48 -> 32; and one row of tiles (2 x 30)
        helper.make_node("Conv", ["t", "w3", "b3"], ["d"], **same),
        helper.make_node("Conv", ["u", "w4"], ["e"], **same),
        # Winograd: 20 x 20, four column panels, 16 -> 32 channels first on the GEMM
        helper.make_node("Conv", ["v", "w5"], ["c5"], **same),  # 16 input channels: GEMM
        helper.make_node("Conv", ["c5", "w6"], ["f"], **same),  # 32 -> 32: Winograd
        # Winograd over a Concat along the channels (inlined into the conv):
        # 32 + 40 + 32 -> 48, a source per input
        helper.make_node("Concat", ["x", "a", "b"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "w11", "b11"], ["k"], **same),
        # Winograd with 528 input channels: half panels of 16 tiles (35 tiles: 16, 16, 3)
        helper.make_node("Conv", ["wide", "w12"], ["l"], **same),
        # left on the float GEMM: stride 2, dilation 2, 36 filters (AVX-512 only), 1x1
        helper.make_node("Conv", ["x", "w7"], ["g"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Conv", ["x", "w8"], ["h"], pads=[2, 2, 2, 2], dilations=[2, 2]),
        helper.make_node("Conv", ["x", "w9"], ["i"], **same),
        helper.make_node("Conv", ["x", "w10"], ["j"]),
        # left on the float GEMM: 16 x 384 x 384 transformed filters (9 MiB) for one tile
        helper.make_node("Conv", ["deep", "w13"], ["m"], **same),
        # Winograd in 12-filter panels (104 = 8 x 12 + 8), column panels grouped per task
        helper.make_node("Conv", ["big", "w14", "b14"], ["c14"], **same),
        helper.make_node("Relu", ["c14"], ["n"]),
        # Winograd in 11 row panels of 12 filters (128 = 10 x 12 + 8), one column task
        helper.make_node("Conv", ["p", "w15"], ["o"], **same),
    ]
    inits = [_w("w0", 40, 32, 3, 3), _w("b0", 40), _w("w1", 32, 40, 3, 3), _w("b1", 32),
             _w("w2", 64, 64, 3, 3), _pos("g2", 64), _w("be2", 64), _w("m2", 64), _pos("v2", 64),
             _w("w3", 32, 48, 3, 3), _w("b3", 32), _w("w4", 32, 32, 3, 3),
             _w("w5", 32, 16, 3, 3), _w("w6", 32, 32, 3, 3),
             _w("w7", 32, 32, 3, 3), _w("w8", 32, 32, 3, 3), _w("w9", 36, 32, 3, 3), _w("w10", 32, 32, 1, 1),
             _w("w11", 48, 104, 3, 3), _w("b11", 48), _w("w12", 32, 528, 3, 3),
             _w("w13", 384, 384, 3, 3), _w("w14", 104, 160, 3, 3), _w("b14", 104),
             _w("w15", 128, 128, 3, 3)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


KERNELS = 16  # one per conv: the Relus, the Add, the BatchNormalization and the Concat ride in their convs


def _host_variant():
    """The float micro-kernel the host target takes, and what its Winograd
    convs look like: (name, MR, NR, wide MR or None, Winograd convs)."""
    if host_has_avx512():  # w0, w1, w2, w3, w4, w6, w11, w12, w14, w15
        return "avx512", 8, 32, 12, 10
    if host_has_avx2():  # and w9's 36 filters
        return "avx2", 6, 16, None, 11
    return None


def _host_l2_bytes():
    """The per-core L2 the host arch reads (sysfs), or None."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(os.listdir(base)):
            d = os.path.join(base, index)
            if not index.startswith("index") or open(os.path.join(d, "level")).read().strip() != "2":
                continue
            size = open(os.path.join(d, "size")).read().strip()
            return int(size[:-1]) * 1024 if size.endswith("K") else int(size)
    except OSError:
        return None
    return None


def _expected_panels_per_task(channels, filters, mr, nr, col_panels):
    """Column panels per task: several where the transformed filters
    overflow half the L2 (lower_winograd_conv_kernel.cpp)."""
    half_l2 = max(_host_l2_bytes() or (1 << 20), 1 << 18) // 2
    u_bytes = 16 * channels * -(-filters // mr) * mr * 4
    v_bytes = 16 * channels * nr * 4
    return min(max(half_l2 // v_bytes, 1), col_panels) if u_bytes > half_l2 else 1


def _tune(exe, prefix, env, *flags):
    return subprocess.run([str(exe), "tune", str(prefix), *flags], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=900)


def _winograd_kernels(prefix):
    manifest = json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())
    return manifest, [k for k in manifest["kernels"] if k["schedule"]["kind"] == "winograd_conv"]


def test_winograd_convs_match_onnxruntime(tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    variant = _host_variant()
    if variant is None:
        pytest.skip("Winograd convs run on AVX-512 and AVX2 hosts only")
    name, mr, nr, wide_mr, winograd_convs = variant
    prefix = tmp_path / "winograd"
    build_model(prefix)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("TILEGRAPH_SGEMM_VARIANT", None)
    env["TILEGRAPH_WIDE_PANELS"] = "on"  # the 12-filter panels on any AVX-512 host (Zen 4 keeps 8 by itself)
    tune = _tune(exe, prefix, env)
    assert tune.returncode == 0, tune.stdout[-3000:]
    assert f"{winograd_convs} 3x3 convolutions as Winograd F(2x2, 3x3)" in tune.stdout, tune.stdout[-3000:]
    manifest, winograd = _winograd_kernels(prefix)
    assert len(winograd) == winograd_convs, [(k["name"], k["schedule"]["kind"]) for k in manifest["kernels"]]
    assert all(k.get("ukernel") == "winograd_f23" for k in winograd), winograd
    assert len(manifest["kernels"]) == KERNELS, [k["onnx_nodes"] for k in manifest["kernels"]]
    # AVX-512: 12-filter panels from 64 filters on; 8 below (w0's 40, w12's 32)
    panels = {k["name"]: k["ukernel_params"] for k in winograd}
    big = next(k for k in winograd if {"tensor": "n", "written": True} in k["params"])["ukernel_params"]
    big_mr = wide_mr or mr
    assert big["mr"] == big_mr and big["nr"] == nr, big
    col_panels = -(-110 // nr)
    assert big["panels_per_task"] == _expected_panels_per_task(160, 104, big_mr, nr, col_panels), (
        big, _host_l2_bytes())
    wide = 3 if wide_mr else 0
    assert sorted(p["mr"] for p in panels.values()) == sorted([mr] * (winograd_convs - wide) + [wide_mr] * wide), (
        name, panels)
    # the row panels over min(cores, row panels) groups of ceil(row panels / that)
    grouped = next(k for k in winograd if {"tensor": "o", "written": True} in k["params"])["ukernel_params"]
    row_panels = -(-128 // big_mr)
    per_group = -(-row_panels // min(os.cpu_count() or 1, row_panels))
    assert grouped["mr"] == big_mr and grouped["row_panel_groups"] == -(-row_panels // per_group), grouped
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout


@pytest.mark.parametrize("flag,variant", [("--no-winograd", ""), ("", "scalar")])
def test_winograd_off_keeps_the_float_gemm(flag, variant, tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    prefix = tmp_path / "winograd_off"
    build_model(prefix)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), TILEGRAPH_SGEMM_VARIANT=variant)
    tune = _tune(exe, prefix, env, *[f for f in (flag, "--no-build") if f])
    assert tune.returncode == 0, tune.stdout[-3000:]
    assert "Winograd" not in tune.stdout, tune.stdout[-3000:]
    manifest, winograd = _winograd_kernels(prefix)
    assert not winograd
    gemms = [k for k in manifest["kernels"] if k["schedule"]["kind"] == "float_gemm"]
    assert len(gemms) == KERNELS, [(k["name"], k["schedule"]["kind"]) for k in manifest["kernels"]]
