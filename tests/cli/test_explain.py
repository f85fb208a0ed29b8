"""`tilegraph explain` and the tile-graph scheduler's report, on a committed model.

Tunes models/bert_small for a GPU arch without building (the scheduler and the
code generator run; no compiler is needed) and checks the report's contract:
the JSON keys, fused vs one-op-per-kernel numbers, and the text form.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("explain") / "bert_small"
    prefix.mkdir()
    shutil.copy(REPO / "models/bert_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--arch", "H100", "--no-build")
    assert r.returncode == 0, r.stderr
    return prefix, r


def test_explain_json_contract(tuned):
    prefix, _ = tuned
    r = tg("explain", prefix, "--arch", "h100", "--json")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)
    for key in ("kernels", "kernels_unfused", "dram_bytes", "dram_bytes_unfused"):
        assert isinstance(e[key], int) and e[key] > 0, key
    assert e["kernels"] == len(e["subgraphs"])
    assert e["kernels_unfused"] == len(e["subgraphs_unfused"])
    # Fusion keeps intermediates on chip: fewer kernels, less DRAM traffic.
    assert e["kernels"] < e["kernels_unfused"]
    assert e["dram_bytes"] < e["dram_bytes_unfused"]
    assert sum(k["dram_bytes"] for k in e["subgraphs"]) == e["dram_bytes"]
    fused = [k for k in e["subgraphs"] if len(k["ops"]) > 1]
    assert fused, "no kernel holds more than one op"
    levels = {edge["level"] for k in fused for edge in k["edges"]}
    assert levels <= {"register", "shared"} and levels
    for k in e["subgraphs"]:
        assert k["kind"] == "block"  # every H100 kernel without --skip-dot is a grid of blocks
        assert k["threads"] % 32 == 0 and 0 < k["threads"] <= 1024
        assert 0 <= k["shared_bytes"] <= 227 * 1024
        assert k["predicted_ms"] > 0 and k["blocks"] >= 1
    # The manifest carries the same report.
    manifest = json.loads((prefix / "tilegraph_rt/H100/manifest.json").read_text())
    assert manifest["explain"] == e


def test_explain_text_shows_fused_vs_unfused(tuned):
    prefix, _ = tuned
    r = tg("explain", prefix, "--arch", "H100")
    assert r.returncode == 0, r.stderr
    assert "one op per kernel" in r.stdout and "DRAM" in r.stdout and "edge " in r.stdout
    # Each kernel's head line names it, its kind and its config.
    heads = [line.split() for line in r.stdout.splitlines() if line.startswith("#")]
    assert heads and all(h[2] == "block" and h[3].startswith("[") for h in heads)
    unfused = tg("explain", prefix, "--arch", "H100", "--no-fusion")
    assert unfused.returncode == 0
    assert unfused.stdout.count("\n#") > r.stdout.count("\n#")


def test_explain_candidates_show_what_the_cost_model_weighed(tmp_path):
    """Host block kernels with several tile candidates list them, best first, with the
    prediction and its roofline terms (--json always; the text with --candidates)."""
    prefix = tmp_path / "bert_small"
    prefix.mkdir()
    shutil.copy(REPO / "models/bert_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--no-build")
    assert r.returncode == 0, r.stderr
    e = json.loads(tg("explain", prefix, "--json").stdout)
    ranked = [k for k in e["subgraphs"] if "candidate_costs" in k]
    assert ranked, "no block kernel with several candidates"
    for k in ranked:
        costs = k["candidate_costs"]
        assert [c["config"] for c in costs] == k["candidates"] and len(costs) >= 2
        # Not profiled: the chosen config is the first candidate, with the kernel's prediction.
        assert costs[0]["config"] == k["config"]
        assert costs[0]["predicted_ms"] == pytest.approx(k["predicted_ms"], rel=1e-9)
        predicted = [c["predicted_ms"] for c in costs]
        assert predicted == sorted(predicted), k["name"]
        for c in costs:
            terms = [c["dram_ms"], c["l2_ms"], c["scratch_ms"], c["compute_ms"]]
            assert min(terms) >= 0 and max(terms) > 0
            assert c["predicted_ms"] >= max(terms) * (1 - 1e-9)  # the roofline's max, plus overheads
    text = tg("explain", prefix, "--candidates").stdout
    assert "candidates, best first (ms)" in text
    for c in ranked[0]["candidate_costs"]:
        assert c["config"] in text
    assert "candidates, best first" not in tg("explain", prefix).stdout


def test_retune_hits_the_schedule_cache(tuned):
    prefix, first = tuned
    again = tg("tune", prefix, "--arch", "H100", "--no-build")
    assert again.returncode == 0, again.stderr
    stats = json.loads((prefix / "tilegraph_rt/H100/compile_stats.json").read_text())
    assert stats["schedule_cache"]["misses"] == 0 and stats["schedule_cache"]["hits"] > 0


def test_explain_without_tune_is_a_clear_error(tmp_path):
    r = tg("explain", tmp_path, "--arch", "H100")
    assert r.returncode == 1
    assert "no manifest" in r.stderr and "tilegraph tune" in r.stderr


def test_emulate_needs_a_gpu_arch(tmp_path):
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(REPO / "models/bert_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--emulate", "--no-build")
    assert r.returncode == 1 and "--emulate" in r.stderr


def test_unknown_arch_lists_the_known_ones(tmp_path):
    r = tg("tune", tmp_path, "--arch", "Z80")
    assert r.returncode == 1
    assert "H100" in r.stderr and "V100" in r.stderr and "MI250" in r.stderr


def residual_block_model():
    """x -> a = x + bias -> LayerNorm-like (mean, var over the last axis) -> y,
    and a also feeds a later Add (residual): a leaves the fused kernel too."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    n, h = 64, 48
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["a"]),
        helper.make_node("ReduceMean", ["a"], ["mean"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["a", "mean"], ["c"]),
        helper.make_node("Mul", ["c", "c"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["c", "sd"], ["norm"]),
        helper.make_node("MatMul", ["norm", "w"], ["proj"]),
        helper.make_node("Add", ["proj", "a"], ["y"]),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((h,)).astype(np.float32), "bias"),
             numpy_helper.from_array(np.array([1e-5], np.float32), "eps"),
             numpy_helper.from_array((rng.standard_normal((h, h)) * 0.1).astype(np.float32), "w")]
    g = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, h]),
                           helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, h])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("arch", ["H100", "host"])
def test_fused_kernel_with_several_outputs_matches_onnxruntime(tmp_path, arch):
    import onnx
    prefix = tmp_path / "residual"
    prefix.mkdir()
    onnx.save(residual_block_model(), str(prefix / "model.onnx"))
    flags = ["--emulate", "--no-gpu-build"] if arch == "H100" else []
    r = tg("tune", prefix, "--arch", arch, *flags)
    assert r.returncode == 0, r.stderr
    e = json.loads(tg("explain", prefix, "--arch", arch, "--json").stdout)
    assert any(len(k["outputs"]) > 1 for k in e["subgraphs"]), "no kernel writes several outputs"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    acc = subprocess.run(["python3", "-m", "tilegraph.test_acc", str(prefix), "--arch", arch],
                         capture_output=True, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout + acc.stderr


def nvcc_lacks_sm70():
    if shutil.which("nvcc") is None:
        return False
    listed = subprocess.run(["nvcc", "--list-gpu-arch"], capture_output=True, text=True).stdout
    return bool(listed) and "compute_70" not in listed.split()


@pytest.mark.skipif(not nvcc_lacks_sm70(), reason="needs an nvcc without sm_70 (CUDA 13+)")
def test_arch_this_nvcc_cannot_build_is_a_clear_error(tmp_path):
    # CUDA 13 has no sm_70: building a V100 project must say so up front.
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--arch", "V100")
    assert r.returncode == 1
    assert "sm_70" in r.stderr and "--no-gpu-build" in r.stderr and "--emulate" in r.stderr
    ok = tg("tune", prefix, "--arch", "V100", "--no-gpu-build", "--emulate")
    assert ok.returncode == 0, ok.stderr
