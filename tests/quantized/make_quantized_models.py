"""Builds small float models and quantizes them with onnxruntime.quantization,
the way users quantize real models:

    python3 tests/quantized/make_quantized_models.py OUT_DIR

writes OUT_DIR/<name>/model.onnx (a tilegraph PREFIX) for
  attn_dynamic    quantize_dynamic       (DynamicQuantizeLinear + MatMulInteger)
  attn_qdq        quantize_static, QDQ   (QuantizeLinear/DequantizeLinear pairs)
  attn_qoperator  quantize_static, QOperator (QLinearMatMul, com.microsoft
                  QLinearAdd / QLinearSoftmax)
  attn_qdq_s8     quantize_static, QDQ, int8 activations, per-channel weights
  cnn_qoperator   quantize_static, QOperator (QLinearConv, com.microsoft
                  QLinearLeakyRelu / QLinearAdd / QLinearGlobalAveragePool /
                  QGemm / QLinearSigmoid / QLinearMul / QLinearConcat /
                  QLinearSoftmax)
  cnn_qdq         its QDQ twin (the same float model and calibration)
The attention float model is one attention block: projections (MatMul +
bias), a batch matmul of two activations (q @ k^T), softmax, a second batch
matmul, an output projection with a residual add, and an MLP with Relu. The
CNN is two 3x3 convs (Relu, LeakyRelu) with a strided 1x1 shortcut added in,
a squeeze-and-excitation gate (GlobalAveragePool, Gemm, Relu, Gemm, Sigmoid,
Mul), the gated and ungated maps concatenated, then GlobalAveragePool,
Flatten, a Gemm classifier and Softmax.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# HIDDEN: the MLP activation (SEQ x HIDDEN = 16384 values) is big enough for
# split_reductions to spread its DynamicQuantizeLinear range over partials.
SEQ, DIM, HIDDEN = 64, 32, 256
CNN_INPUT = (1, 3, 16, 16)


class FloatGraph:
    """Nodes and seeded random weights of a float model; save() writes it."""

    def __init__(self, seed: int, weight_scale: float):
        self.rng = np.random.default_rng(seed)
        self.weight_scale = weight_scale
        self.nodes, self.inits = [], []

    def weight(self, name, *shape, scale=None):
        values = self.rng.standard_normal(shape) * (self.weight_scale if scale is None else scale)
        self.inits.append(numpy_helper.from_array(values.astype(np.float32), name))
        return name

    def node(self, op, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def save(self, path: Path, name: str, x_shape, y_shape) -> None:
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(path))


def float_model(path: Path, seed: int = 0) -> None:
    f = FloatGraph(seed, 0.2)
    node = f.node

    def linear(x, name, n_in, n_out):
        y = node("MatMul", [x, f.weight(name + "_w", n_in, n_out)], name + "_mm")
        return node("Add", [y, f.weight(name + "_b", n_out, scale=0.05)], name)

    q = linear("x", "q", DIM, DIM)
    k = linear("x", "k", DIM, DIM)
    v = linear("x", "v", DIM, DIM)
    kt = node("Transpose", [k], "kt", perm=[0, 2, 1])
    scores = node("MatMul", [q, kt], "scores")
    probs = node("Softmax", [scores], "probs", axis=-1)
    ctx = node("MatMul", [probs, v], "ctx")
    attn = linear(ctx, "o", DIM, DIM)
    h = node("Add", ["x", attn], "h")
    up = node("Relu", [linear(h, "up", DIM, HIDDEN)], "up_relu")
    down = linear(up, "down", HIDDEN, DIM)
    node("Add", [h, down], "y")
    f.save(path, "attention_block", [1, SEQ, DIM], [1, SEQ, DIM])


def cnn_float_model(path: Path, seed: int = 2) -> None:
    f = FloatGraph(seed, 0.3)
    node = f.node

    def conv(x, name, c_in, c_out, k, **attrs):
        return node("Conv", [x, f.weight(name + "_w", c_out, c_in, k, k), f.weight(name + "_b", c_out, scale=0.05)],
                    name, **attrs)

    def gemm(x, name, n_in, n_out):
        return node("Gemm", [x, f.weight(name + "_w", n_out, n_in), f.weight(name + "_b", n_out, scale=0.05)],
                    name, transB=1)

    r1 = node("Relu", [conv("x", "c1", 3, 8, 3, pads=[1, 1, 1, 1])], "r1")
    l2 = node("LeakyRelu", [conv(r1, "c2", 8, 16, 3, pads=[1, 1, 1, 1], strides=[2, 2])], "l2", alpha=0.1)
    s = node("Add", [l2, conv(r1, "c3", 8, 16, 1, strides=[2, 2])], "s")
    squeeze = node("Flatten", [node("GlobalAveragePool", [s], "g1")], "f1")
    excite = gemm(node("Relu", [gemm(squeeze, "e1", 16, 4)], "e1_relu"), "e2", 4, 16)
    f.inits.append(numpy_helper.from_array(np.array([1, 16, 1, 1], np.int64), "gate_shape"))
    gate = node("Reshape", [node("Sigmoid", [excite], "gate"), "gate_shape"], "gate_4d")
    cat = node("Concat", [node("Mul", [s, gate], "gated"), s], "cat", axis=1)
    logits = gemm(node("Flatten", [node("GlobalAveragePool", [cat], "g2")], "f2"), "logits", 32, 10)
    node("Softmax", [logits], "y", axis=-1)
    f.save(path, "small_cnn", CNN_INPUT, [1, 10])


class Calibration:
    """Seeded uniform inputs in [-1, 1), like test_acc draws."""

    def __init__(self, shape=(1, SEQ, DIM), count=8):
        rng = np.random.default_rng(1)
        self.batches = iter([{"x": rng.uniform(-1, 1, shape).astype(np.float32)}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def main(out_dir: str) -> None:
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self, shape=(1, SEQ, DIM)):
            self.inner = Calibration(shape)

        def get_next(self):
            return self.inner.get_next()

    out = Path(out_dir)
    fp32 = out / "attn_fp32" / "model.onnx"
    float_model(fp32)
    (out / "attn_dynamic").mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32), str(out / "attn_dynamic" / "model.onnx"), weight_type=QuantType.QInt8)
    for name, fmt, act, per_channel in [("attn_qdq", QuantFormat.QDQ, QuantType.QUInt8, False),
                                        ("attn_qoperator", QuantFormat.QOperator, QuantType.QUInt8, False),
                                        ("attn_qdq_s8", QuantFormat.QDQ, QuantType.QInt8, True)]:
        (out / name).mkdir(parents=True, exist_ok=True)
        quantize_static(str(fp32), str(out / name / "model.onnx"), Reader(), quant_format=fmt,
                        activation_type=act, weight_type=QuantType.QInt8, per_channel=per_channel)

    cnn_fp32 = out / "cnn_fp32" / "model.onnx"
    cnn_float_model(cnn_fp32)
    for name, fmt in [("cnn_qoperator", QuantFormat.QOperator), ("cnn_qdq", QuantFormat.QDQ)]:
        (out / name).mkdir(parents=True, exist_ok=True)
        quantize_static(str(cnn_fp32), str(out / name / "model.onnx"), Reader(CNN_INPUT), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/quantized_models")
