"""`python -m tilegraph.kernels_vs_onnxruntime`: each kernel's time next to the
onnxruntime nodes it computes, on a committed model tuned for the host.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

from tilegraph.kernels_vs_onnxruntime import OnnxGraphNames, compare  # noqa: E402
from tilegraph.runner import CompiledModel  # noqa: E402


def residual_block(path):
    """x -> Conv -> Add(x) -> Relu -> y, and a MatMul: the shapes onnxruntime fuses."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4, 1, 1], [0.1] * 16)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/block/conv/Conv"),
             helper.make_node("Add", ["c", "x"], ["s"], name="/block/Add"),
             helper.make_node("Relu", ["s"], ["/block/Relu_output_0"], name="/block/Relu"),
             helper.make_node("MatMul", ["/block/Relu_output_0", "/block/Relu_output_0"], ["y"],
                              name="/head/MatMul")]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w])), path)


def test_onnxruntime_names_map_to_the_nodes_they_fused(tmp_path):
    residual_block(tmp_path / "m.onnx")
    names = OnnxGraphNames(tmp_path / "m.onnx")
    assert names.node_of("/block/Add") == ["/block/Add"]
    # The NCHWc transformer names conv + add + ReLU after the ReLU's output value:
    # its time belongs to the conv first.
    assert names.node_of("/block/Relu_output_0_nchwc") == ["/block/conv/Conv", "/block/Relu"]
    assert names.node_of("/head/MatMul/MatMulAddFusion") == ["/head/MatMul"]
    assert names.node_of("/head/MatMul_token_3") == ["/head/MatMul"]
    assert names.node_of("ReorderOutput_token_2") == []
    assert names.node_of("Gelu_token_1") == []


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    if not Path(TILEGRAPH).exists():
        pytest.skip("tilegraph is not built")
    prefix = tmp_path_factory.mktemp("kvo") / "resnet18"
    prefix.mkdir()
    shutil.copy(REPO / "models/resnet18_small/model.onnx", prefix / "model.onnx")
    r = subprocess.run([TILEGRAPH, "tune", str(prefix)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return prefix


def charged_total(result):
    return sum(k["onnxruntime_ms"] for k in result["kernels"]) + sum(result["unmatched"].values())


def test_unoptimized_onnxruntime_nodes_all_find_their_kernel(tuned):
    result = compare(tuned, threads=1, iters=2, optimization="none")
    assert result["unmatched"] == {}
    assert sum(k["onnxruntime_ms"] for k in result["kernels"]) == pytest.approx(result["onnxruntime_total_ms"])
    with CompiledModel(tuned) as m:
        assert [k["kernel"] for k in result["kernels"]] == [name for name, _ in m.kernels()]
    for k in result["kernels"]:
        assert k["tilegraph_ms"] >= 0 and k["loss_ms"] == pytest.approx(k["tilegraph_ms"] - k["onnxruntime_ms"])
    # The stem conv's kernel (its bias and ReLU ride in the GEMM's store).
    stem = next(k for k in result["kernels"] if "/stem/stem.0/Conv" in k["nodes"])
    assert stem["onnxruntime_ms"] > 0 and stem["tilegraph_ms"] > 0


def test_optimized_onnxruntime_charges_its_fused_convs_to_our_conv_kernels(tuned):
    result = compare(tuned, threads=1, iters=2, optimization="all")
    assert charged_total(result) == pytest.approx(result["onnxruntime_total_ms"])
    # Only the NCHWc layout reorders, which compute no node of the model, stay unmatched.
    assert result["unmatched"] and all(n.startswith("Reorder") for n in result["unmatched"])
    # The stem's Conv + ReLU runs as one NCHWc node named after the ReLU's output;
    # it is charged to the kernel running the conv's GEMM (and its ReLU).
    stem = next(k for k in result["kernels"] if "/stem/stem.0/Conv" in k["nodes"])
    assert stem["onnxruntime_ms"] > 0


def test_the_command_prints_the_table_and_writes_json(tuned, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, "-m", "tilegraph.kernels_vs_onnxruntime", str(tuned), "--iters", "2",
                        "--top", "3", "--json", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "lost ms" in r.stdout and "more kernels (--top N)" in r.stdout
    rows = json.loads(out.read_text())
    assert rows["threads"] == 1 and len(rows["kernels"]) > 3
    r = subprocess.run([sys.executable, "-m", "tilegraph.kernels_vs_onnxruntime", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "no model.onnx" in r.stderr


def test_profile_runs_gives_each_kernel_one_time_per_run(tuned):
    with CompiledModel(tuned) as m:
        feeds = m.random_inputs(seed=0)
        runs = m.profile_runs(feeds, iters=3)
        assert [name for name, _, _ in runs] == [name for name, _ in m.kernels()]
    assert all(len(times) == 3 and min(times) >= 0 for _, times, _ in runs)
    # Every run timed real work: the convs take time in each one.
    for r in range(3):
        assert sum(times[r] for _, times, _ in runs) > 0
    stem = next(times for _, times, nodes in runs if "/stem/stem.0/Conv" in nodes)
    assert min(stem) > 0


def test_rounds_alternate_the_engines_and_take_medians_over_them(tuned):
    result = compare(tuned, threads=1, iters=2, optimization="none", rounds=3)
    assert result["rounds"] == 3 and len(result["round_totals_ms"]) == 3
    totals = result["round_totals_ms"]
    assert all(t["tilegraph"] > 0 and t["onnxruntime"] > 0 for t in totals)
    # Medians per kernel and node over the rounds (their sum need not lie between the
    # rounds' totals: each kernel's median may come from another round).
    assert result["tilegraph_total_ms"] > 0 and result["onnxruntime_total_ms"] > 0
    assert sum(k["onnxruntime_ms"] for k in result["kernels"]) == pytest.approx(result["onnxruntime_total_ms"])
    with CompiledModel(tuned) as m:
        assert [k["kernel"] for k in result["kernels"]] == [name for name, _ in m.kernels()]
    assert result["unmatched"] == {}  # unoptimized onnxruntime: every node found its kernel
