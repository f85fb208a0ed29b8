"""Every user error names its cause in one line; flags are validated.

The cases an attacker (or an unlucky user) found printing `error: stoll`,
`std::bad_alloc`, `basic_filebuf::underflow` or a Python traceback, or being
accepted without complaint.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from security_cli import REPO, TILEGRAPH, error_line, save, tg

pytestmark = pytest.mark.skipif(not os.path.exists(TILEGRAPH), reason="tilegraph is not built")


def relu_model(opset=13, extra_nodes=(), name="x"):
    nodes = [helper.make_node("Relu", [name], ["y"], name="relu")] + list(extra_nodes)
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def refused(result, *words):
    assert result.returncode != 0, result.stderr
    line = error_line(result)
    for w in words:
        assert w in line, line
    assert "Traceback" not in result.stderr
    return line


def test_huge_initializer_without_data(tmp_path):
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2**40])  # declared, no values
    g = helper.make_graph([helper.make_node("Add", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**40])], [w])
    prefix = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m")
    refused(tg("tune", prefix, "--no-build"), "initializer 'W'", "has 0 values")


def test_model_file_is_a_directory(tmp_path):
    (tmp_path / "model.onnx").mkdir()
    refused(tg("tune", tmp_path, "--no-build"), "not a regular file")


def test_newer_opset_than_supported(tmp_path):
    prefix = save(relu_model(opset=99), tmp_path / "m")
    refused(tg("tune", prefix, "--no-build"), "opset 99", "ai.onnx", "supports versions 1 to 21")


def test_two_nodes_write_one_value(tmp_path):
    second = helper.make_node("Neg", ["x"], ["y"], name="second_writer")
    prefix = save(relu_model(extra_nodes=[second]), tmp_path / "m")
    refused(tg("tune", prefix, "--no-build"), "node 'second_writer' (Neg) writes 'y'", "node 'relu' (Relu)")


def test_node_overwriting_an_input(tmp_path):
    writer = helper.make_node("Neg", ["y"], ["x"], name="writer")
    prefix = save(relu_model(extra_nodes=[writer]), tmp_path / "m")
    refused(tg("tune", prefix, "--no-build"), "node 'writer' (Neg) writes 'x'", "a graph input")


def test_newline_in_a_name_stays_one_line(tmp_path):
    bad = helper.make_node("NoSuchOp", ["y"], ["z"], name="evil\nerror: fake second line\x1b[31m")
    prefix = save(relu_model(extra_nodes=[bad]), tmp_path / "m")
    line = refused(tg("tune", prefix, "--no-build"), "NoSuchOp", "evil\\nerror: fake second line\\x1b[31m")
    assert "\x1b" not in line


@pytest.mark.parametrize("flags, words", [
    (["--topk", "0"], ["--topk 0"]),
    (["-j", "-3"], ["--jobs -3"]),
    (["--dump-after", "no_such_pass"], ["--dump-after no_such_pass", "fold_constants"]),
    (["--input-shape", "x=2x3", "--input-shape", "x=4x3"], ["--input-shape x", "2x3", "4x3"]),
])
def test_bad_tune_flags(tmp_path, flags, words):
    prefix = save(relu_model(), tmp_path / "m")
    refused(tg("tune", prefix, "--no-build", *flags), *words)


def test_repeated_identical_input_shape_is_fine(tmp_path):
    prefix = save(relu_model(), tmp_path / "m")
    r = tg("tune", prefix, "--no-build", "--input-shape", "x=2x3", "--input-shape", "x=2x3")
    assert r.returncode == 0, r.stderr


def test_freeze_input_from_a_directory(tmp_path):
    prefix = save(relu_model(), tmp_path / "m")
    refused(tg("tune", prefix, "--no-build", "--freeze-input", f"x={tmp_path}"), "--freeze-input x", "not a readable file")


# --- test_acc -------------------------------------------------------------------------------

def run_test_acc(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    return subprocess.run([sys.executable, "-m", "tilegraph.test_acc", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=600)


def test_acc_rejects_negative_rtol(tmp_path):
    r = run_test_acc(tmp_path, "--rtol", "-1")
    assert r.returncode == 2 and "--rtol" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.fixture(scope="module")
def built_relu(tmp_path_factory):
    prefix = save(relu_model(), tmp_path_factory.mktemp("relu") / "m")
    r = tg("tune", prefix)
    assert r.returncode == 0, r.stderr
    return prefix


def test_acc_reports_onnxruntime_failure_in_one_line(built_relu, tmp_path):
    """A model onnxruntime refuses (here: an opset newer than it knows) is one error line."""
    model = onnx.load(str(built_relu / "model.onnx"))
    model.opset_import[0].version = 30
    prefix = tmp_path / "m"
    prefix.mkdir()
    onnx.save(model, str(prefix / "model.onnx"))
    os.symlink(built_relu / "tilegraph_rt", prefix / "tilegraph_rt")
    r = run_test_acc(prefix)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: onnxruntime, the reference, cannot run"), r.stderr


def test_acc_counts_differing_integer_elements():
    sys.path.insert(0, str(REPO / "python"))
    from tilegraph.test_acc import compare
    r = compare("ids", np.array([1, 2, 3, 4], np.int64), np.array([1, 0, 3, 0], np.int64))
    assert not r.ok and r.note == "2 of 4 elements differ"
    assert compare("ids", np.arange(4), np.arange(4)).ok
