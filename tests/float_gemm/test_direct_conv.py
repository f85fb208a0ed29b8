"""Depthwise convolutions (group == channels) on the direct CPU kernel
(codegen/lowering/lower_direct_conv_kernel.h), host CPU:

* odd shapes: tails in width, height and channels, batch 2, stride 2, padding
  (symmetric and not), dilation, a 5x5 window, channel multiplier 2, feature
  maps too small to have an interior (every row and column a border), and
  maps of one row;
* stride-1 convs on maps at most 14 wide on the padded form
  (lower_direct_conv_kernel.h): 7x7 and 14x14 maps, a 5x5 window (pad 2),
  dilation 2, padding asymmetric along both axes (taller output), a 3-wide
  map, channel multiplier 2, a residual Add; a 'same' conv on a 16-wide map
  on the flat form, its residual twin on the loop per row, and a stride-2
  conv on the segments;
* where the host has AVX-512, stride-1 'same' convs on planes up to 64 x 64
  and 3x3 stride-2 convs padded by 1 call the depthwise micro-kernel
  (codegen/ukernels/dwconv_avx512.h; the manifest names it; with AVX2 alone
  the stride-2 ones, dwconv_avx2.h): 3x3 and 5x5
  windows, 1- and 2-row maps, 7x7 to 56x56 maps, stride 2 on 14x14 and on
  odd 13x11, channel multiplier 2, batch 2, residual Adds; a 65x65 map keeps
  the flat form; with AVX2 alone stride-1 maps up to 112 wide take the padded
  form, and 'same' planes of at most 14 x 14 outputs over channels in eights
  call planes8_same (7x7, 14x14, 9x5, a 5x5 window, batch 2, a residual).
  TILEGRAPH_DWCONV_VARIANT=none keeps the generated loops (the forms above),
  checked as well;
* stems (3 channels, 3x3 stride 2 and 5x5 dilated, batch 2) and a 1x1 conv
  over 3 channels stay off the direct kernel (scheduler/direct_conv.h);
* fused epilogues: bias + Clip (Relu6), Relu, a residual Add;
* each such conv is a kernel of the direct kind (manifest.json
  schedule kind `direct_conv`), its epilogue in the same kernel, and the outputs match
  onnxruntime (test_acc); --no-float-ukernels keeps the loop nests.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from float_gemm_testlib import REPO, host_has_avx2, host_has_avx512  # noqa: E402 (puts python/ on the path)
from tilegraph._common import find_tilegraph_bin  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(1)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)


def _scalar(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def _save(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))


def odd(path):
    # batch 2, 5 channels, 13 x 11: tails everywhere.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 13, 11])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z", "u", "v")]
    nodes = [
        # 3x3 pad 1 + bias + Relu6 (the MobileNet block)
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], group=5, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["r0"]),
        # 3x3 stride 2 pad 1 on odd sizes, + residual-free Relu
        helper.make_node("Conv", ["r0", "w1"], ["c1"], group=5, pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["y"]),
        # 5x5, dilation 2, asymmetric padding, stride (1, 2)
        helper.make_node("Conv", ["r0", "w2", "b2"], ["z"], group=5, pads=[4, 3, 2, 1],
                         dilations=[2, 2], strides=[1, 2]),
        # channel multiplier 2, no padding
        helper.make_node("Conv", ["x", "w3"], ["u"], group=5),
        # 3x3 pad 1 with a residual Add as the epilogue
        helper.make_node("Conv", ["r0", "w4", "b4"], ["c4"], group=5, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c4", "r0"], ["v"]),
    ]
    _save(path, nodes, [x], outs,
          [_w("w0", 5, 1, 3, 3), _w("b0", 5), _scalar("lo", 0.0), _scalar("hi", 6.0),
           _w("w1", 5, 1, 3, 3), _w("w2", 5, 1, 5, 5), _w("b2", 5), _w("w3", 10, 1, 3, 3),
           _w("w4", 5, 1, 3, 3), _w("b4", 5)])


def thin(path):
    # one row (every output row reads the padding), and 2 x 2 maps under a
    # 3x3 window (no interior at all); 17 channels
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 17, 1, 19])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 17, 2, 2])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["y"], group=17, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["s", "w1"], ["z"], group=17, pads=[1, 1, 1, 1])]
    _save(path, nodes, [x, s], outs, [_w("w0", 17, 1, 3, 3), _w("b0", 17), _w("w1", 17, 1, 3, 3)])


def flat(path):
    # stride-1 convs on narrow maps (7x7 and 14x14, as in MobileNetV2): the
    # padded form; on a 16-wide map the flat form (one loop over the interior
    # rows, the border columns stored again).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 14, 14])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 6, 7, 7])
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 6, 5, 3])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 6, 9, 16])
    names = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], group=6, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["a"]),
        helper.make_node("Conv", ["s", "w0", "b0"], ["c1"], group=6, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["b"]),
        # 5x5 pad 2, and 3x3 dilation 2 pad 2
        helper.make_node("Conv", ["x", "w1"], ["c"], group=6, pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["s", "w0"], ["d"], group=6, pads=[2, 2, 2, 2], dilations=[2, 2]),
        # rows: top 0, bottom 2 (2 more output rows); columns: left 2, right 0
        helper.make_node("Conv", ["x", "w0", "b0"], ["e"], group=6, pads=[0, 2, 2, 0]),
        # one interior column; channel multiplier 2
        helper.make_node("Conv", ["t", "w2"], ["f"], group=6, pads=[1, 1, 1, 1]),
        # a residual Add: the padded form stores each output once
        helper.make_node("Conv", ["x", "w0", "b0"], ["c6"], group=6, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c6", "x"], ["g"]),
        # stride 2: the segments
        helper.make_node("Conv", ["x", "w0"], ["h"], group=6, pads=[1, 1, 1, 1], strides=[2, 2]),
        # 16 wide: the flat form, and with a residual Add the loop per row
        helper.make_node("Conv", ["w", "w0", "b0"], ["c8"], group=6, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c8", "lo", "hi"], ["i"]),
        helper.make_node("Conv", ["w", "w0", "b0"], ["c9"], group=6, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c9", "w"], ["j"]),
    ]
    _save(path, nodes, [x, s, t, w], outs,
          [_w("w0", 6, 1, 3, 3), _w("b0", 6), _scalar("lo", 0.0), _scalar("hi", 6.0), _w("w1", 6, 1, 5, 5),
           _w("w2", 12, 1, 3, 3)])


def planes(path):
    # MobileNetV2's larger 'same' maps: 28x28 and 56x56 on the micro-kernel
    # (with a residual Add), 65x65 past its limit (the flat form).
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("a", "b", "c")]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, s, s])
              for n, s in (("x", 28), ("y", 56), ("z", 65))]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], group=3, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["a"]),
        helper.make_node("Conv", ["y", "w0", "b0"], ["c1"], group=3, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "y"], ["b"]),
        helper.make_node("Conv", ["z", "w0", "b0"], ["c"], group=3, pads=[1, 1, 1, 1]),
    ]
    _save(path, nodes, inputs, outs, [_w("w0", 3, 1, 3, 3), _w("b0", 3), _scalar("lo", 0.0), _scalar("hi", 6.0)])


def eight(path):
    # 'same' convs over 16 channels on planes of at most 14 x 14 outputs: on
    # AVX2 hosts planes8_same, eight channels per call (dwconv_avx2.h): 7x7
    # with bias + Clip, 14x14 with a residual Add, 5x5 windows (pad 2) on a
    # batch of 2, and a 9x5 map (45 outputs: 5 past the last group of 8)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 7, 7])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 14, 14])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 16, 7, 7])
    u = helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 16, 9, 5])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("a", "b", "c", "d")]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], group=16, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["a"]),
        helper.make_node("Conv", ["y", "w0", "b0"], ["c1"], group=16, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "y"], ["b"]),
        helper.make_node("Conv", ["z", "w1", "b0"], ["c"], group=16, pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["u", "w0"], ["d"], group=16, pads=[1, 1, 1, 1]),
    ]
    _save(path, nodes, [x, y, z, u], outs,
          [_w("w0", 16, 1, 3, 3), _w("b0", 16), _w("w1", 16, 1, 5, 5), _scalar("lo", 0.0), _scalar("hi", 6.0)])


def stem(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 17, 15])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z", "u")]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c0"], ["y"]),
             helper.make_node("Conv", ["x", "w1"], ["z"], pads=[2, 1, 3, 4], dilations=[2, 1]),
             # K = 3 without a window: the GEMM (or the loop nest), not the direct kernel
             helper.make_node("Conv", ["x", "w2"], ["u"])]
    _save(path, nodes, [x], outs, [_w("w0", 8, 3, 3, 3), _w("b0", 8), _w("w1", 11, 3, 5, 3),
                                   _w("w2", 16, 3, 1, 1)])


# model -> (its builder, its direct convs, its kernels)
MODELS = {"odd": (odd, 5, 5), "thin": (thin, 2, 2), "flat": (flat, 10, 10), "planes": (planes, 3, 3),
          "eight": (eight, 4, 4), "stem": (stem, 0, 3)}

# model -> how many of its direct convs call the depthwise micro-kernel
# where the host has AVX-512, and where it has AVX2 alone (the 3x3 stride-2
# convs padded by 1, and 'same' convs on planes of at most 14 x 14 over
# channels in eights: dwconv_avx2.h has no single-plane 'same' form)
UKERNEL_CONVS = {"odd": 3, "thin": 2, "flat": 8, "planes": 2, "eight": 4, "stem": 0}
AVX2_UKERNEL_CONVS = {"odd": 1, "thin": 0, "flat": 1, "planes": 0, "eight": 4, "stem": 0}


def _forms(prefix):
    # kernel name -> its direct kernel's form: "padded" (a local padded
    # plane), "flat" (a loop over q without one), else "segments"
    code = "".join(p.read_text() for p in (prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp"))
    kernels = {}
    for chunk in code.split("\nvoid ")[1:]:
        form = "ukernel" if "tg_dwconv::plane" in chunk else "padded" if "float padded[" in chunk else "flat" if "for (int64_t q = 0;" in chunk else "segments"
        kernels[chunk.split("(")[0]] = form
    return kernels


def _tune(exe, prefix, env, *flags):
    return subprocess.run([str(exe), "tune", str(prefix), *flags], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=900)


@pytest.mark.parametrize("name,dwconv", [(n, "") for n in MODELS] + [("odd", "none"), ("flat", "none"),
                                                                    ("eight", "none")])
def test_direct_conv_model(name, dwconv, tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    build, expected, kernels = MODELS[name]
    prefix = tmp_path / name
    build(prefix)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), TILEGRAPH_DWCONV_VARIANT=dwconv)
    tune = _tune(exe, prefix, env)
    assert tune.returncode == 0, tune.stdout[-3000:]
    if expected:
        assert f"{expected} convolutions on the direct kernel" in tune.stdout, tune.stdout[-3000:]
    else:
        assert "direct kernel" not in tune.stdout, tune.stdout[-3000:]
    manifest = json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())
    direct = [k for k in manifest["kernels"] if k["schedule"]["kind"] == "direct_conv"]
    assert len(direct) == expected, [k["name"] for k in manifest["kernels"]]
    # Every Clip, Relu and residual Add rides in its conv's kernel as the epilogue.
    assert len(manifest["kernels"]) == kernels, [k["onnx_nodes"] for k in manifest["kernels"]]
    with_ukernel = dwconv != "none" and host_has_avx512()
    with_avx2_ukernel = dwconv != "none" and not with_ukernel and host_has_avx2()
    forms = _forms(prefix)
    by_output = {k["onnx_nodes"][-1]: forms[k["name"]] for k in manifest["kernels"]}
    ukernel = [k["name"] for k in manifest["kernels"] if k.get("ukernel", "").startswith("dwconv_")]
    assert sorted(ukernel) == sorted(n for n, f in forms.items() if f == "ukernel"), by_output
    expected_ukernels = (UKERNEL_CONVS[name] if with_ukernel else
                         AVX2_UKERNEL_CONVS[name] if with_avx2_ukernel else 0)
    assert len(ukernel) == expected_ukernels, by_output
    if name == "flat" and with_ukernel:
        assert sorted(forms.values()) == ["padded"] * 2 + ["ukernel"] * 8, by_output
    elif name == "flat" and with_avx2_ukernel:
        # the stride-2 conv's segments become the micro-kernel; the 16-wide
        # maps (with and without a residual) take the padded form, as every
        # stride-1 map up to 112 wide does there
        assert sorted(forms.values()) == ["padded"] * 9 + ["ukernel"], by_output
    elif name == "flat":
        assert sorted(forms.values()) == ["flat"] + ["padded"] * 7 + ["segments"] * 2, by_output
    if name == "eight" and with_avx2_ukernel:
        assert "tg_dwconv::planes8_same<" in "".join(
            p.read_text() for p in (prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp")), by_output
    if name == "eight" and dwconv == "none":
        assert sorted(forms.values()) == ["padded"] * 4, by_output
    if name == "planes":
        # without it: 28x28 flat, 56x56 with its residual a loop per row;
        # on AVX2 all three (65 <= 112 wide) on the padded form
        expected_forms = (["flat", "ukernel", "ukernel"] if with_ukernel else ["padded"] * 3 if with_avx2_ukernel
                          else ["flat", "flat", "segments"])
        assert sorted(forms.values()) == expected_forms, by_output
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout


def test_no_float_ukernels_keeps_the_loop_nest(tmp_path):
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    prefix = tmp_path / "thin"
    thin(prefix)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    tune = _tune(exe, prefix, env, "--no-float-ukernels", "--no-build")
    assert tune.returncode == 0, tune.stdout[-3000:]
    assert "direct kernel" not in tune.stdout
    manifest = json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())
    assert not [k for k in manifest["kernels"] if k["schedule"]["kind"] == "direct_conv"]
