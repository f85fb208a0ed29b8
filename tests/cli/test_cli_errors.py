"""Bad input gets a clear one-line error and a non-zero exit, never a crash.

Each case runs the real CLI (`tilegraph tune` / `tilegraph run` / main_test) and
asserts the exit code and that stderr names the culprit.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=600)


def error_line(result):
    lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
    assert lines, f"no 'error:' line in stderr:\n{result.stderr}"
    return lines[0]


def save(model, prefix):
    prefix.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(prefix / "model.onnx"))
    return prefix


def relu_model(shape=(2, 3), name="x"):
    g = helper.make_graph([helper.make_node("Relu", [name], ["y"])], "g",
                          [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_missing_model(tmp_path):
    r = tg("tune", tmp_path / "nothing")
    assert r.returncode != 0
    assert "model.onnx" in error_line(r)


def test_not_an_onnx_file(tmp_path):
    (tmp_path / "model.onnx").write_text("hello, I am a text file\n")
    r = tg("tune", tmp_path)
    assert r.returncode == 1
    assert "not a valid ONNX model" in error_line(r)


def test_truncated_model(tmp_path):
    data = relu_model().SerializeToString()
    (tmp_path / "model.onnx").write_bytes(data[: len(data) // 2])
    r = tg("tune", tmp_path)
    assert r.returncode == 1
    assert "model.onnx" in error_line(r)


def test_every_unsupported_op_is_listed(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("NoSuchOp", ["a"], ["b"], name="bad_one"),
             helper.make_node("Unique", ["b"], ["y"], name="bad_two")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path)
    line = error_line(tg("tune", tmp_path, "--no-build"))
    assert "node 'bad_one' (NoSuchOp, opset 13)" in line
    assert "node 'bad_two' (Unique, opset 13)" in line
    assert "'ok'" not in line


def test_dynamic_shape_names_input_and_flag(tmp_path):
    save(relu_model(shape=("batch", 3), name="tokens"), tmp_path)
    line = error_line(tg("tune", tmp_path, "--no-build"))
    assert "tokens [batchx3]" in line and "--input-shape" in line
    ok = tg("tune", tmp_path, "--no-build", "--input-shape", "tokens=4x3")
    assert ok.returncode == 0, ok.stderr


def test_bad_input_shape_flag(tmp_path):
    save(relu_model(), tmp_path)
    assert "expected NAME=DIMS" in error_line(tg("tune", tmp_path, "--input-shape", "x"))
    assert "not an input" in error_line(tg("tune", tmp_path, "--input-shape", "zz=2x3"))
    assert "rank" in error_line(tg("tune", tmp_path, "--input-shape", "x=6"))


def external_data_model(tmp_path, truncate):
    w = numpy_helper.from_array(np.arange(1024, dtype=np.float32).reshape(32, 32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    tmp_path.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(tmp_path / "model.onnx"), save_as_external_data=True, location="weights.data",
              size_threshold=0)
    if truncate:
        data = (tmp_path / "weights.data").read_bytes()
        (tmp_path / "weights.data").write_bytes(data[:100])
    return tmp_path


def test_missing_external_data(tmp_path):
    external_data_model(tmp_path, truncate=False)
    (tmp_path / "weights.data").unlink()
    line = error_line(tg("tune", tmp_path, "--no-build"))
    assert "initializer 'w'" in line and "weights.data" in line


def test_short_external_data(tmp_path):
    external_data_model(tmp_path, truncate=True)
    line = error_line(tg("tune", tmp_path, "--no-build"))
    assert "initializer 'w'" in line and "too short" in line


def test_external_data_compiles(tmp_path):
    external_data_model(tmp_path, truncate=False)
    r = tg("tune", tmp_path, "--no-build")
    assert r.returncode == 0, r.stderr


def test_run_before_tune(tmp_path):
    save(relu_model(), tmp_path)
    assert "tilegraph tune" in error_line(tg("run", tmp_path))


@pytest.fixture(scope="module")
def built_relu(tmp_path_factory):
    prefix = save(relu_model(), tmp_path_factory.mktemp("relu"))
    r = tg("tune", prefix)
    assert r.returncode == 0, r.stderr
    return prefix


def test_wrong_input_shape_at_run_time(built_relu, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 3), np.float32))
    r = tg("run", built_relu, "--inputs", tmp_path, "--iters", 1, "--warmup", 0)
    assert r.returncode == 2
    line = error_line(r)
    assert "'x'" in line and "[2,3]" in line and "[3,3]" in line


def test_wrong_input_dtype_at_run_time(built_relu, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.int64))
    r = tg("run", built_relu, "--inputs", tmp_path, "--iters", 1, "--warmup", 0)
    assert r.returncode == 2
    assert "int64" in error_line(r)


def test_expected_mismatch_exits_1(built_relu, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "exp").mkdir()
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    np.save(tmp_path / "in" / "x.npy", x)
    np.save(tmp_path / "exp" / "y.npy", np.maximum(x, 0))
    good = tg("run", built_relu, "--inputs", tmp_path / "in", "--expected", tmp_path / "exp", "--iters", 1)
    assert good.returncode == 0, good.stderr
    np.save(tmp_path / "exp" / "y.npy", np.maximum(x, 0) + 1)
    bad = tg("run", built_relu, "--inputs", tmp_path / "in", "--expected", tmp_path / "exp", "--iters", 1)
    assert bad.returncode == 1


def test_outputs_written_and_correct(built_relu, tmp_path):
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    (tmp_path / "in").mkdir()
    np.save(tmp_path / "in" / "x.npy", x)
    r = tg("run", built_relu, "--inputs", tmp_path / "in", "--outputs", tmp_path / "out", "--iters", 3)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), np.maximum(x, 0))
    assert "median" in r.stdout and "p90" in r.stdout


def test_tune_is_deterministic(tmp_path):
    a = save(relu_model(), tmp_path / "a")
    b = save(relu_model(), tmp_path / "b")
    for p in (a, b):
        assert tg("tune", p, "--no-build").returncode == 0
    for name in ("model.cpp", "manifest.json", "weights.bin", "CMakeLists.txt"):
        assert (a / "tilegraph_rt/host" / name).read_bytes() == (b / "tilegraph_rt/host" / name).read_bytes(), name


def test_freeze_input_makes_a_shape_operand_static(tmp_path):
    g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                           helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path)
    line = error_line(tg("tune", tmp_path, "--no-build"))
    assert "Reshape" in line and "compile time" in line
    pb = tmp_path / "shape.pb"
    pb.write_bytes(numpy_helper.from_array(np.array([3, 2, 2], np.int64)).SerializeToString())
    assert "not an input" in error_line(tg("tune", tmp_path, "--no-build", "--freeze-input", f"nope={pb}"))
    r = tg("tune", tmp_path, "--freeze-input", f"shape={pb}")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "tilegraph_rt/host/manifest.json").read_text())
    assert [i["name"] for i in manifest["inputs"]] == ["x"]  # the frozen input is gone
    assert manifest["outputs"][0]["shape"] == [3, 2, 2]
