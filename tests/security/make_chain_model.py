"""A long chain of Add nodes, the graph-size stress model of security issue 13 (item 7).

    h_0 = x;  h_{i+1} = h_i + (c_i if i is even else x);  y = h_n

x is float [1, 16]; every even node adds its own small [16] initializer, every odd node
adds the graph input again, so the chain is also a fan-out of n/2 consumers of x. Nothing
in it folds away: each Add depends on x, so the compiler sees all n ops.

Usable as a module (make_chain_model / save_chain_model) and as a CLI:
    python3 tests/security/make_chain_model.py PREFIX --nodes 20000
writes PREFIX/model.onnx.
"""
import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH = 16


def make_chain_model(nodes: int) -> onnx.ModelProto:
    if nodes < 1:
        raise ValueError("a chain needs at least one node")
    rng = np.random.default_rng(13)
    initializers = []
    graph_nodes = []
    previous = "x"
    for i in range(nodes):
        if i % 2 == 0:
            constant = f"c{i}"
            values = rng.uniform(-0.01, 0.01, WIDTH).astype(np.float32)
            initializers.append(numpy_helper.from_array(values, constant))
            addend = constant
        else:
            addend = "x"
        output = "y" if i == nodes - 1 else f"h{i}"
        graph_nodes.append(helper.make_node("Add", [previous, addend], [output], name=f"add{i}"))
        previous = output
    graph = helper.make_graph(
        graph_nodes, "add_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def save_chain_model(prefix, nodes: int) -> Path:
    prefix = Path(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    path = prefix / "model.onnx"
    onnx.save(make_chain_model(nodes), str(path))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix", help="folder to write model.onnx into")
    parser.add_argument("--nodes", type=int, default=20000, help="number of Add nodes (default 20000)")
    args = parser.parse_args()
    print(save_chain_model(args.prefix, args.nodes))


if __name__ == "__main__":
    main()
