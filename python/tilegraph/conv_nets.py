"""Small VGG- and UNet-shaped conv nets written with onnx.helper (no torch),
for tests and artifacts that need convolution chains whose activations grow
with the input: ``tilegraph tune --memory-budget`` and Table 7's scale-up.

    vgg_like(batch, size, width=8)   conv3x3-relu x2, maxpool, conv3x3-relu x2, maxpool,
                                     flatten, gemm (a VGG block structure)
    unet_like(batch, size, width=8)  encoder conv-relu, maxpool, conv-relu, nearest
                                     upsample, concat with the skip, conv-relu, 1x1 conv

Weights are seeded (``seed``), so a model is the same bytes for the same arguments.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def weight(self, shape, scale: float) -> str:
        name = self.name("w")
        values = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(values, name))
        return name

    def node(self, op: str, inputs, **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=self.name(op), **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int = 3, relu: bool = True) -> str:
        w = self.weight((cout, cin, k, k), (2.0 / (cin * k * k)) ** 0.5)
        b = self.weight((cout,), 0.1)
        y = self.node("Conv", [x, w, b], kernel_shape=[k, k], pads=[k // 2] * 4)
        return self.node("Relu", [y]) if relu else y

    def model(self, name: str, x_shape, y: str, y_shape) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                                  [helper.make_tensor_value_info(y, TensorProto.FLOAT, list(y_shape))],
                                  self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def vgg_like(batch: int, size: int, width: int = 8, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """Two VGG blocks (conv3x3-relu x2 + maxpool 2x2) and a linear classifier."""
    if size % 4:
        raise ValueError(f"size {size}: a multiple of 4 (two 2x2 poolings)")
    b = _Builder(seed)
    x = b.conv(b.conv("x", 3, width), width, width)
    x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv(b.conv(x, width, 2 * width), 2 * width, 2 * width)
    x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Flatten", [x], axis=1)
    features = 2 * width * (size // 4) ** 2
    w = b.weight((classes, features), (1.0 / features) ** 0.5)
    y = b.node("Gemm", [x, w, b.weight((classes,), 0.1)], transB=1)
    return b.model("vgg_like", (batch, 3, size, size), y, (batch, classes))


def unet_like(batch: int, size: int, width: int = 8, seed: int = 0) -> onnx.ModelProto:
    """One UNet level: encoder, bottleneck at half resolution, nearest upsample,
    skip concatenation, decoder, 1x1 output conv (one channel)."""
    if size % 2:
        raise ValueError(f"size {size}: even (one 2x2 pooling)")
    b = _Builder(seed)
    skip = b.conv(b.conv("x", 3, width), width, width)
    x = b.node("MaxPool", [skip], kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv(x, width, 2 * width)
    scales = b.name("scales")
    b.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), scales))
    x = b.node("Resize", [x, "", scales], mode="nearest")
    x = b.node("Concat", [x, skip], axis=1)
    x = b.conv(x, 3 * width, width)
    y = b.conv(x, width, 1, k=1, relu=False)
    return b.model("unet_like", (batch, 3, size, size), y, (batch, 1, size, size))
