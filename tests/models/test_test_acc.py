"""Unit tests of tilegraph.test_acc and tilegraph.runner that need no compiler.

The compiled model is faked twice: a C implementation of the C API
(fake/fake_model.c, built with the system C compiler) for the ctypes runner, and a
stand-in `tilegraph` script (fake/fake_tilegraph.py) for the CLI runner.
"""
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import REPO, subprocess_env
from tilegraph import inputs, test_acc
from tilegraph._common import sanitize_name
from tilegraph.inputs import InputSpec, generate_inputs
from tilegraph.test_acc import compare, compare_all

HERE = Path(__file__).resolve().parent


# --------------------------------------------------------------------------- compare
def test_compare_known_relative_and_absolute_errors():
    b = np.array([0.5, -2.0, 10.0, 0.0], dtype=np.float32)
    a = np.array([0.5001, -2.0, 10.002, 0.0], dtype=np.float32)
    c = compare("out", a, b, rtol=1e-3)
    # |a-b| = [1e-4, 0, 2e-3, 0]; /max(|b|,1) = [1e-4, 0, 2e-4, 0]
    assert c.max_abs == pytest.approx(2e-3, rel=1e-3)
    assert c.max_rel == pytest.approx(2e-4, rel=1e-3)
    assert c.ok
    assert not compare("out", a, b, rtol=1e-4).ok  # 2e-4 > 1e-4
    assert c.shape == (4,) and c.dtype == "float32"


def test_compare_small_values_use_absolute_error():
    b = np.array([1e-6, 0.25], dtype=np.float64)
    a = np.array([6e-5, 0.25], dtype=np.float64)
    c = compare("o", a, b)
    assert c.max_abs == pytest.approx(5.9e-5)
    assert c.max_rel == pytest.approx(5.9e-5)  # denominator max(|b|,1) = 1
    assert c.ok  # default rtol 1e-4


def test_compare_default_rtol_fp32_and_fp16():
    b = np.ones(8, dtype=np.float32) * 4
    a = b * (1 + 2e-4)
    assert compare("o", a, b).rtol == 1e-4
    assert not compare("o", a, b).ok
    b16, a16 = b.astype(np.float16), (b * 1.004).astype(np.float16)
    c16 = compare("o", a16, b16)
    assert c16.rtol == 1e-2 and c16.ok
    assert c16.max_rel == pytest.approx(float(np.float16(4 * 1.004) - 4) / 4)


def test_compare_exact_for_integers_and_bools():
    b = np.array([[1, 2], [3, 40]], dtype=np.int64)
    assert compare("i", b.copy(), b, rtol=1.0).ok
    a = b.copy()
    a[1, 1] = 41
    c = compare("i", a, b, rtol=1.0)  # rtol does not loosen exact comparison
    assert not c.ok
    assert c.max_abs == 1.0 and c.max_rel == pytest.approx(1 / 40)
    bb = np.array([True, False, True])
    assert compare("b", bb.copy(), bb).ok
    cb = compare("b", ~bb, bb)
    assert not cb.ok and cb.max_abs == 1.0


def test_compare_large_int64_difference_is_exact():
    b = np.array([2**62], dtype=np.int64)
    a = np.array([2**62 + 1], dtype=np.int64)
    c = compare("i", a, b)
    assert not c.ok and c.max_abs == 1.0


def test_compare_shape_dtype_and_missing():
    b = np.zeros((2, 3), np.float32)
    c = compare("o", np.zeros((3, 2), np.float32), b)
    assert not c.ok and "shape mismatch" in c.note
    c = compare("o", np.zeros((2, 3), np.float64), b)
    assert not c.ok and "dtype" in c.note
    res = compare_all({"a": b}, {"a": b, "b": b})
    assert [r.ok for r in res] == [True, False]
    assert "missing" in res[1].note
    assert compare("e", np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32)).ok


def test_compare_all_per_output_tolerances():
    b = np.array([1.0, 2.0], np.float32)
    a = b + np.float32(1e-3)  # max_rel 1e-3
    res = compare_all({"x": a, "y": a}, {"x": b, "y": b}, {"x": 2e-3})
    assert [r.ok for r in res] == [True, False]  # y takes the default 1e-4
    assert res[0].rtol == 2e-3 and res[1].rtol == 1e-4


def test_dynamic_quantization_tolerance_is_twice_onnxruntimes_spread():
    expected = {"out": np.array([0.5, 3.0], np.float32), "ids": np.array([1, 2], np.int64)}
    # the other optimization level differs by 0.02 absolute at 0.5 (max_rel 0.02)
    other = {"out": np.array([0.52, 3.0], np.float32), "ids": np.array([1, 2], np.int64)}
    tol = test_acc.dynamic_quantization_tolerances(expected, other)
    assert tol.keys() == {"out"}  # integers stay exact
    assert tol["out"] == pytest.approx(0.04, rel=1e-5)
    # onnxruntime agreeing with itself keeps the default
    assert test_acc.dynamic_quantization_tolerances(expected, expected)["out"] == 1e-4


def test_dynamic_quantization_tolerance_takes_the_largest_spread():
    expected = {"out": np.array([0.5, 3.0], np.float32)}
    levels = {"out": np.array([0.51, 3.0], np.float32)}   # max_rel 0.01
    nudged_up = {"out": np.array([0.5, 3.09], np.float32)}  # 0.09 / 3 = 0.03
    nudged_down = {"out": np.array([0.48, 3.0], np.float32)}  # 0.02
    tol = test_acc.dynamic_quantization_tolerances(expected, levels, nudged_up, nudged_down)
    assert tol["out"] == pytest.approx(0.06, rel=1e-5)
    # an output none of the others has gets no tolerance of its own
    assert test_acc.dynamic_quantization_tolerances({"x": np.ones(2, np.float32)}, levels) == {}


def test_nudged_inputs_move_every_float_one_ulp():
    x = np.array([0.0, 1.0, -2.5, 3e-39], np.float32)
    ids = np.array([1, 2], np.int64)
    up = test_acc.nudged_inputs({"x": x, "ids": ids}, np.inf)
    down = test_acc.nudged_inputs({"x": x, "ids": ids}, -np.inf)
    assert up["x"].dtype == np.float32 and down["x"].dtype == np.float32
    assert np.all(up["x"] > x) and np.all(down["x"] < x)
    # exactly one ulp: moving back lands on the original values
    assert np.array_equal(np.nextafter(up["x"], np.float32(-np.inf)), x)
    assert np.array_equal(np.nextafter(down["x"], np.float32(np.inf)), x)
    assert up["ids"] is ids and down["ids"] is ids


def test_judged_against_the_float_model():
    f = np.array([1.0, 0.0], np.float32)           # the float model's output
    ort_all = np.array([1.05, 0.0], np.float32)     # onnxruntime: 5e-2 from float
    ort_none = np.array([1.0, 0.08], np.float32)    # its other level: 8e-2 from float
    ours_ok = np.array([0.93, 0.0], np.float32)     # 7e-2: within onnxruntime's worse
    ours_bad = np.array([1.0, 0.09], np.float32)    # 9e-2: worse than both
    for ours, ok in ((ours_ok, True), (ours_bad, False)):
        res = compare_all({"o": ours}, {"o": ort_all})
        assert not res[0].ok  # far beyond 1e-4 against onnxruntime
        test_acc.judge_against_float_model(res, {"o": ours}, {"o": ort_all}, {"o": ort_none},
                                           {"o": f})
        assert res[0].ok is ok
        assert res[0].rtol == pytest.approx(0.08, rel=1e-5)
        assert "vs float model" in res[0].note


def test_has_dynamic_quantization(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    outs = [helper.make_tensor_value_info(n, t, s) for n, t, s in
            (("q", TensorProto.UINT8, [4]), ("s", TensorProto.FLOAT, []), ("z", TensorProto.UINT8, []))]
    dq = helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])
    onnx.save(helper.make_model(helper.make_graph([dq], "g", [x], outs)), tmp_path / "dq.onnx")
    relu = helper.make_node("Relu", ["x"], ["y"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    onnx.save(helper.make_model(helper.make_graph([relu], "g", [x], [y])), tmp_path / "f.onnx")
    assert test_acc.has_dynamic_quantization(inputs.load_model(tmp_path / "dq.onnx"))
    assert not test_acc.has_dynamic_quantization(inputs.load_model(tmp_path / "f.onnx"))


def test_compare_non_finite():
    b = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert compare("o", b.copy(), b).ok  # NaN~NaN, same infinities
    a = b.copy()
    a[1] = -np.inf
    c = compare("o", a, b)
    assert not c.ok and c.max_rel == np.inf and "non-finite" in c.note
    a = b.copy()
    a[3] = np.nan
    assert not compare("o", a, b).ok


def test_comparison_line_format():
    c = compare("out:0", np.float32([1.5]), np.float32([1.5]))
    line = c.line()
    assert line.startswith("ok") and "out:0" in line and "max_rel 0.000e+00" in line
    assert "(exact)" in compare("i", np.int32([1]), np.int32([1])).line()


# --------------------------------------------------------------------------- inputs
SPECS = [InputSpec("input_ids", np.dtype(np.int64), (2, 8)),
         InputSpec("mask", np.dtype(np.bool_), (2, 8)),
         InputSpec("x", np.dtype(np.float32), ("batch", 5)),
         InputSpec("h", np.dtype(np.float16), (3,)),
         InputSpec("n", np.dtype(np.int32), (4,))]


def test_generate_inputs_deterministic():
    a = generate_inputs(SPECS, seed=0, ranges={"input_ids": (0, 100)})
    b = generate_inputs(SPECS, seed=0, ranges={"input_ids": (0, 100)})
    assert list(a) == [s.name for s in SPECS]
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        assert a[k].tobytes() == b[k].tobytes()
    c = generate_inputs(SPECS, seed=1, ranges={"input_ids": (0, 100)})
    assert c["x"].tobytes() != a["x"].tobytes()


def test_generate_inputs_ranges_dtypes_and_shapes():
    a = generate_inputs(SPECS, seed=3, ranges={"input_ids": (5, 9)}, shapes={"x": (7, 5)})
    assert a["input_ids"].dtype == np.int64 and a["input_ids"].shape == (2, 8)
    assert a["input_ids"].min() >= 5 and a["input_ids"].max() < 9
    assert a["mask"].dtype == np.bool_
    assert a["x"].shape == (7, 5) and a["x"].dtype == np.float32
    assert a["x"].min() >= -1 and a["x"].max() < 1
    assert a["h"].dtype == np.float16
    assert set(np.unique(a["n"])) <= {0, 1} and a["n"].dtype == np.int32
    # symbolic dimension without an override -> 1
    assert generate_inputs(SPECS, seed=3)["x"].shape == (1, 5)


def test_large_sample_statistics():
    a = generate_inputs([InputSpec("x", np.dtype(np.float32), (100000,)),
                         InputSpec("i", np.dtype(np.int64), (100000,))], seed=0)
    assert -1 <= a["x"].min() and a["x"].max() < 1 and abs(a["x"].mean()) < 0.01
    assert set(np.unique(a["i"])) == {0, 1}


def test_load_input_ranges(tmp_path):
    assert inputs.load_input_ranges(tmp_path) == {}
    (tmp_path / "input_ranges.json").write_text(
        json.dumps({"ids": [0, 30522], "len": {"low": 1, "high": 17}}))
    assert inputs.load_input_ranges(tmp_path) == {"ids": (0, 30522), "len": (1, 17)}


def test_parse_shape_overrides():
    assert inputs.parse_shape_overrides(["input_ids=1x128", "a=b=4"]) == {
        "input_ids": (1, 128), "a=b": (4,)}
    with pytest.raises(test_acc.UsageError):
        inputs.parse_shape_overrides(["x=1xq"])


def test_sanitize_name():
    assert sanitize_name("ids:out") == "ids_out"
    assert sanitize_name("a/b c.d-e_f") == "a_b_c.d-e_f"


# --------------------------------------------------------------------------- reference
def test_onnxruntime_reference_multiplies_uint8_by_int8_exactly(tmp_path):
    """Products whose pair sums leave int16 (255 * -128 twice): onnxruntime's
    u8s8 kernel on x86 without VNNI saturates them unless asked for exact
    products, which would make an exact int8 kernel look wrong."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    a = rng.integers(200, 256, (8, 32)).astype(np.uint8)
    b = rng.integers(-128, -100, (32, 16)).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [8, 32])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [8, 16])],
        [onnx.numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    y = test_acc.run_onnxruntime(tmp_path / "m.onnx", {"a": a})["y"]
    np.testing.assert_array_equal(y, a.astype(np.int32) @ b.astype(np.int32))


# --------------------------------------------------------------------------- end to end
def _twin_onnx(path: Path):
    """y = 2*x + 1 (f32 [2,3]); ids:out = ids + 1 (i64 [4])."""
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t"]),
         helper.make_node("Add", ["t", "one"], ["y"]),
         helper.make_node("Add", ["ids", "one_i"], ["ids:out"])],
        "twin",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("ids:out", TensorProto.INT64, [4])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
         helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
         helper.make_tensor("one_i", TensorProto.INT64, [], [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


@pytest.fixture(scope="module")
def fake_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the fake libmodel.so")
    out = tmp_path_factory.mktemp("fakelib") / "libmodel.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", str(REPO / "runtime"),
                    str(HERE / "fake" / "fake_model.c"), "-o", str(out)], check=True)
    return out


def _prefix(tmp_path, bias: float, lib=None, main_test=False) -> Path:
    prefix = tmp_path / "m"
    build = prefix / "tilegraph_rt" / "host" / "build"
    build.mkdir(parents=True)
    _twin_onnx(prefix / "model.onnx")
    (prefix / "input_ranges.json").write_text(json.dumps({"ids": [10, 20]}))
    np.array([bias], np.float32).tofile(prefix / "tilegraph_rt" / "host" / "weights.bin")
    if lib is not None:
        shutil.copy(lib, build / "libmodel.so")
    if main_test:
        (build / "main_test").write_text("#!/bin/sh\nexit 1\n")
        (build / "main_test").chmod(0o755)
    return prefix


def test_runner_ctypes_fake_model(tmp_path, fake_lib):
    from tilegraph.runner import CompiledModel

    prefix = _prefix(tmp_path, 1.0, fake_lib)
    with CompiledModel(prefix) as m:
        assert [(t.name, t.dtype, t.shape) for t in m.inputs] == [
            ("x", np.float32, (2, 3)), ("ids", np.int64, (4,))]
        assert [t.name for t in m.outputs] == ["y", "ids:out"]
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        out = m.run({"x": x, "ids": np.array([1, 2, 3, 4])})
        np.testing.assert_array_equal(out["y"], 2 * x + 1)
        np.testing.assert_array_equal(out["ids:out"], [2, 3, 4, 5])
        with pytest.raises(ValueError, match="shape"):
            m.run([x.T, np.zeros(4, np.int64)])
        assert m.kernels() == [("fused_mul_add", ["Mul_0", "Add_1"]), ("add_i64", ["Add_2"])]
        prof = m.profile({"x": x, "ids": np.zeros(4, np.int64)}, iters=4)
        assert [(n, ms) for n, ms, _ in prof] == [("fused_mul_add", 0.5), ("add_i64", 0.25)]
        stats = m.benchmark({"x": x, "ids": np.zeros(4, np.int64)}, warmup=1, iters=3)
        assert stats["iters"] == 3 and stats["min_ms"] <= stats["mean_ms"] <= stats["max_ms"]
        r = m.random_inputs(0, {"ids": (10, 20)})
        assert r["ids"].min() >= 10 and r["x"].shape == (2, 3)


def test_test_acc_ctypes_pass_and_fail(tmp_path, fake_lib):
    prefix = _prefix(tmp_path / "good", 1.0, fake_lib)
    buf = io.StringIO()
    assert test_acc.run(prefix, out=buf) == 0, buf.getvalue()
    text = buf.getvalue()
    assert "ctypes runner" in text and "PASS: 2 outputs" in text
    assert (prefix / "test_acc" / "inputs" / "x.npy").is_file()
    assert (prefix / "test_acc" / "outputs" / "ids_out.npy").is_file()
    ids = np.load(prefix / "test_acc" / "inputs" / "ids.npy")
    assert ids.min() >= 10 and ids.max() < 20  # input_ranges.json honoured
    expected = np.load(prefix / "test_acc" / "expected" / "y.npy")
    x = np.load(prefix / "test_acc" / "inputs" / "x.npy")
    np.testing.assert_allclose(expected, 2 * x + 1, rtol=1e-6)

    bad = _prefix(tmp_path / "bad", 1.001, fake_lib)
    buf = io.StringIO()
    assert test_acc.run(bad, out=buf) == 1
    assert "FAIL" in buf.getvalue() and "1 of 2 outputs" in buf.getvalue()
    assert test_acc.run(bad, rtol=1e-2, out=io.StringIO()) == 0


def test_test_acc_parses_the_model_once(tmp_path, fake_lib, monkeypatch):
    """Its inputs and the dynamic-quantization check (rtol not given) share one parse."""
    prefix = _prefix(tmp_path, 1.0, fake_lib)
    parsed = []
    real_load = onnx.load

    def counting_load(f, *args, **kwargs):
        parsed.append(str(f))
        return real_load(f, *args, **kwargs)

    monkeypatch.setattr(onnx, "load", counting_load)
    buf = io.StringIO()
    assert test_acc.run(prefix, out=buf) == 0, buf.getvalue()
    assert parsed == [str(prefix / "model.onnx")]


def test_test_acc_reads_inputs_dir(tmp_path, fake_lib):
    prefix = _prefix(tmp_path, 1.0, fake_lib)
    d = tmp_path / "in"
    d.mkdir()
    np.save(d / "x.npy", np.full((2, 3), 7, np.float32))
    np.save(d / "ids.npy", np.arange(4, dtype=np.int64))
    assert test_acc.run(prefix, inputs_dir=d, out=io.StringIO()) == 0
    np.testing.assert_array_equal(np.load(prefix / "test_acc" / "outputs" / "y.npy"), 15)
    (d / "ids.npy").unlink()
    with pytest.raises(test_acc.UsageError, match="ids.npy"):
        test_acc.run(prefix, inputs_dir=d, out=io.StringIO())


def test_test_acc_cli_runner(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGRAPH_BIN", str(HERE / "fake" / "fake_tilegraph.py"))
    prefix = _prefix(tmp_path / "good", 1.0, main_test=True)
    buf = io.StringIO()
    assert test_acc.run(prefix, out=buf) == 0, buf.getvalue()  # auto: no libmodel.so -> CLI
    assert "cli runner" in buf.getvalue()
    bad = _prefix(tmp_path / "bad", 3.0, main_test=True)
    assert test_acc.run(bad, runner="cli", out=io.StringIO()) == 1


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "tilegraph.test_acc", *map(str, args)],
                          capture_output=True, text=True, env=subprocess_env(), **kw)


def test_cli_missing_model_and_project(tmp_path):
    r = _cli(tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "model.onnx not found" in r.stderr
    _twin_onnx(tmp_path / "model.onnx")
    r = _cli(tmp_path, "--arch", "x86")
    assert r.returncode == 2
    assert f"run `tilegraph tune {tmp_path} --arch x86` first" in r.stderr


def test_cli_exit_codes_with_fake_library(tmp_path, fake_lib):
    good = _prefix(tmp_path / "g", 1.0, fake_lib)
    r = _cli(good, "--seed", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok    y  shape 2x3 float32" in r.stdout
    bad = _prefix(tmp_path / "b", 1.5, fake_lib)
    r = _cli(bad)
    assert r.returncode == 1 and "FAIL  y" in r.stdout
