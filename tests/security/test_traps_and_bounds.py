"""Generated code never traps and never reads out of bounds (security issue 13).

* Integer Div / Mod (fmod 0 and 1) by zero and INT_MIN / -1 give the values of
  the rule in compiler/ir/expr.h (x / 0 = 0, x % 0 = 0, INT_MIN / -1 = INT_MIN,
  INT_MIN % -1 = 0) instead of killing main_test with SIGFPE.
* An out-of-range runtime index of Gather, GatherElements, GatherND,
  ScatterElements or ScatterND makes main_test exit 2 with one line naming the
  node; in-range and negative indices match onnxruntime.

Each model is tuned for the host and for the H100 schedule's CPU emulation and
run through `tilegraph run PREFIX --inputs DIR` with .npy inputs.
"""
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")

ARCHS = {"host": [], "H100": ["--arch", "H100", "--emulate", "--no-gpu-build"]}


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=900)


def tune(model, prefix, arch):
    prefix.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(prefix / "model.onnx"))
    r = tg("tune", prefix, *ARCHS[arch])
    assert r.returncode == 0, r.stderr
    return prefix


def run(prefix, arch, feeds, tmp):
    inputs, outputs = tmp / "in", tmp / "out"
    for d in (inputs, outputs):
        d.mkdir(parents=True, exist_ok=True)
        for f in d.glob("*.npy"):
            f.unlink()
    for name, value in feeds.items():
        np.save(inputs / f"{name}.npy", value)
    arch_flags = [] if arch == "host" else ["--arch", arch]
    r = tg("run", prefix, *arch_flags, "--inputs", inputs, "--outputs", outputs, "--warmup", "0", "--iters", "1")
    return r, outputs


# ---------------------------------------------------------------- division

def division_model(elem):
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Div", ["a", "b"], ["q"], name="div"),
             helper.make_node("Mod", ["a", "b"], ["m"], name="mod"),
             helper.make_node("Mod", ["a", "b"], ["f"], name="fmod", fmod=1)]
    g = helper.make_graph(nodes, "division", [vi("a", elem, [8]), vi("b", elem, [8])],
                          [vi(n, elem, [8]) for n in ("q", "m", "f")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_division_by_zero_and_min_over_minus_one(tmp_path, arch, dtype):
    elem = TensorProto.INT32 if dtype == np.int32 else TensorProto.INT64
    prefix = tune(division_model(elem), tmp_path / "model", arch)
    lo = np.iinfo(dtype).min
    a = np.array([7, -7, lo, lo, lo, 0, -7, 5], dtype)
    b = np.array([0, 0, 0, -1, 1, 0, 2, -2], dtype)
    r, out = run(prefix, arch, {"a": a, "b": b}, tmp_path)
    assert r.returncode == 0, f"exit {r.returncode} (136 = SIGFPE): {r.stderr}"
    # x / 0 = 0, x % 0 = 0, MIN / -1 = MIN, MIN % -1 = 0; otherwise C / Python semantics.
    np.testing.assert_array_equal(np.load(out / "q.npy"), np.array([0, 0, 0, lo, lo, 0, -3, -2], dtype))
    np.testing.assert_array_equal(np.load(out / "m.npy"), np.array([0, 0, 0, 0, 0, 0, 1, -1], dtype))
    np.testing.assert_array_equal(np.load(out / "f.npy"), np.array([0, 0, 0, 0, 0, 0, -1, 1], dtype))


# ---------------------------------------------------------------- indices

def index_model():
    """One node of each indexing op, each with its own runtime index input."""
    vi = helper.make_tensor_value_info
    F, I = TensorProto.FLOAT, TensorProto.INT64
    nodes = [
        helper.make_node("Gather", ["data", "g_idx"], ["g"], name="the_gather", axis=1),
        helper.make_node("GatherElements", ["data", "ge_idx"], ["ge"], name="the_gather_elements", axis=0),
        helper.make_node("GatherND", ["data", "gnd_idx"], ["gnd"], name="the_gather_nd"),
        helper.make_node("ScatterElements", ["data", "se_idx", "se_upd"], ["se"], name="the_scatter_elements",
                         axis=1),
        helper.make_node("ScatterND", ["data", "snd_idx", "snd_upd"], ["snd"], name="the_scatter_nd"),
    ]
    inputs = [vi("data", F, [4, 5]), vi("g_idx", I, [3]), vi("ge_idx", I, [2, 5]), vi("gnd_idx", I, [3, 2]),
              vi("se_idx", I, [4, 2]), vi("se_upd", F, [4, 2]), vi("snd_idx", I, [2, 1]),
              vi("snd_upd", F, [2, 5])]
    outputs = [vi("g", F, [4, 3]), vi("ge", F, [2, 5]), vi("gnd", F, [3]), vi("se", F, [4, 5]),
               vi("snd", F, [4, 5])]
    g = helper.make_graph(nodes, "indices", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def good_feeds():
    rng = np.random.default_rng(0)
    return {
        "data": rng.standard_normal((4, 5)).astype(np.float32),
        "g_idx": np.array([4, -5, 2], np.int64),                       # axis 1 of size 5
        "ge_idx": np.array([[0, -1, 3, 2, -4], [3, 1, 0, -2, 1]], np.int64),  # axis 0 of size 4
        "gnd_idx": np.array([[0, 4], [-1, -5], [2, 2]], np.int64),     # (size 4, size 5)
        "se_idx": np.array([[0, 4], [-1, 2], [1, 3], [-5, 0]], np.int64),
        "se_upd": rng.standard_normal((4, 2)).astype(np.float32),
        "snd_idx": np.array([[-1], [1]], np.int64),
        "snd_upd": rng.standard_normal((2, 5)).astype(np.float32),
    }


# (index input, position to spoil, bad value, node, axis, dim)
BAD_INDICES = [
    ("g_idx", (1,), 5, "Gather node 'the_gather'", 1, 5),
    ("g_idx", (0,), -6, "Gather node 'the_gather'", 1, 5),
    ("ge_idx", (1, 2), 4, "GatherElements node 'the_gather_elements'", 0, 4),
    ("gnd_idx", (2, 1), 9, "GatherND node 'the_gather_nd'", 1, 5),
    ("gnd_idx", (1, 0), -5, "GatherND node 'the_gather_nd'", 0, 4),
    ("se_idx", (3, 1), 7, "ScatterElements node 'the_scatter_elements'", 1, 5),
    ("snd_idx", (0, 0), 4, "ScatterND node 'the_scatter_nd'", 0, 4),
]


@pytest.fixture(scope="module", params=list(ARCHS))
def index_project(request, tmp_path_factory):
    arch = request.param
    return tune(index_model(), tmp_path_factory.mktemp(f"indices_{arch}"), arch), arch


def test_in_range_and_negative_indices_match_onnxruntime(index_project, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    prefix, arch = index_project
    feeds = good_feeds()
    r, out = run(prefix, arch, feeds, tmp_path)
    assert r.returncode == 0, r.stderr
    session = ort.InferenceSession(str(prefix / "model.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for name, expected in zip(names, session.run(None, feeds)):
        np.testing.assert_allclose(np.load(out / f"{name}.npy"), expected, rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", BAD_INDICES, ids=[f"{c[0]}={c[2]}" for c in BAD_INDICES])
def test_out_of_range_index_fails_naming_the_node(index_project, tmp_path, case):
    prefix, arch = index_project
    name, where, value, node, axis, dim = case
    feeds = good_feeds()
    feeds[name] = feeds[name].copy()
    feeds[name][where] = value
    r, _ = run(prefix, arch, feeds, tmp_path)
    assert r.returncode == 2, f"exit {r.returncode}: {r.stderr}"
    expected = f"{node}: index {value} out of range [-{dim}, {dim}) for axis {axis}"
    errors = [l for l in r.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and errors[0].endswith(expected), r.stderr
    # The next run with good indices succeeds: the error does not stick.
    r, _ = run(prefix, arch, good_feeds(), tmp_path)
    assert r.returncode == 0, r.stderr


def test_ctypes_runner_raises_and_recovers(index_project):
    """The C API reports the bad index through tg_model_run / tg_last_error,
    and the next run of the same loaded model is clean again."""
    prefix, arch = index_project
    if arch != "host":
        pytest.skip("the ctypes runner loads the host library")
    from tilegraph.runner import CompiledModel
    feeds = good_feeds()
    feeds["g_idx"] = np.array([4, 9, 2], np.int64)
    with CompiledModel(prefix) as model:
        with pytest.raises(RuntimeError, match=r"Gather node 'the_gather': index 9 out of range \[-5, 5\) for axis 1"):
            model.run(feeds)
        out = model.run(good_feeds())
        np.testing.assert_array_equal(out["g"], good_feeds()["data"][:, [4, 0, 2]])
