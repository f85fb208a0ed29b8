"""`tilegraph tune --memory-budget BYTES` (Table 7's next memory tier).

Conv nets built with onnx.helper (tilegraph.conv_nets) whose activations do
not fit the budget are compiled into micro-batches: outputs still match
onnxruntime, the plan's peak and the memory one run really touches (the
resident-set high-water mark, tilegraph.model_memory) stay under the budget.
A budget nothing fits, a graph that mixes batch elements and a bad size are
one-line errors; without the flag nothing changes.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))
sys.path.insert(0, str(REPO / "python"))

from tilegraph import conv_nets  # noqa: E402

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")

MiB = 1 << 20


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=900)


def model_dir(root: Path, name: str, model: onnx.ModelProto) -> Path:
    prefix = root / name
    prefix.mkdir()
    onnx.save(model, prefix / "model.onnx")
    return prefix


def manifest(prefix: Path, arch: str = "host") -> dict:
    return json.loads((prefix / "tilegraph_rt" / arch / "manifest.json").read_text())


def python_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO / "python"), "TILEGRAPH_BIN": TILEGRAPH}


def run_test_acc(prefix: Path, arch: str = "host") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--arch", arch],
                          capture_output=True, text=True, env=python_env(), timeout=600)


def untiled_peak(prefix: Path, *flags) -> int:
    """The plan's peak without tiling (a budget of 1 TiB fits; nothing is built)."""
    r = tg("tune", prefix, "--no-build", "--memory-budget", "1T", *flags)
    assert r.returncode == 0, r.stderr
    stats = manifest(prefix, flags[1] if flags else "host")["compile"]["memory_budget"]
    assert stats["tiling"] == {"kind": "none"}
    assert stats["planned_peak_bytes"] == stats["untiled_peak_bytes"]
    return stats["untiled_peak_bytes"]


def test_vgg_over_budget_runs_in_micro_batches_within_the_budget(tmp_path):
    prefix = model_dir(tmp_path, "vgg", conv_nets.vgg_like(8, 128, width=16))
    untiled = untiled_peak(prefix)
    budget = 12 * MiB
    # Well over the budget (the activations: about 16 MiB of arena at batch 8; the GEMM
    # scratch on top depends on the host's micro-kernel: 18.2 MiB in all with AVX2).
    assert untiled > budget + 4 * MiB
    r = tg("tune", prefix, "--memory-budget", "12M", "-j", "2")
    assert r.returncode == 0, r.stderr
    stats = manifest(prefix)["compile"]["memory_budget"]
    assert stats["budget_bytes"] == budget and stats["untiled_peak_bytes"] == untiled
    tiling = stats["tiling"]
    assert tiling["kind"] == "batch" and tiling["batch"] == 8
    assert tiling["micro_batch"] * tiling["chunks"] == 8 and tiling["chunks"] > 1
    assert stats["planned_peak_bytes"] <= budget
    assert manifest(prefix)["memory_plan"]["arena_bytes"] == stats["planned_peak"]["arena_bytes"]
    assert manifest(prefix)["inputs"][0]["shape"] == [8, 3, 128, 128]  # the C API keeps the whole batch
    assert json.loads((prefix / "tilegraph_rt/host/compile_stats.json").read_text())["memory_budget"] == stats
    acc = run_test_acc(prefix)
    assert acc.returncode == 0, acc.stdout + acc.stderr
    # What one run really touches, in a fresh process.
    measured = subprocess.run([sys.executable, "-m", "tilegraph.model_memory", str(prefix)], capture_output=True,
                              text=True, env=python_env(), timeout=300)
    assert measured.returncode == 0, measured.stderr
    growth = json.loads(measured.stdout)["peak_growth_bytes"]
    assert growth <= budget, f"one run touched {growth} bytes, over the {budget}-byte budget"
    # ... and the measurement sees the arena (it would see the untiled one too).
    assert growth >= stats["planned_peak"]["arena_bytes"] // 2


def test_unet_in_the_gpu_emulation_matches_onnxruntime_under_the_budget(tmp_path):
    prefix = model_dir(tmp_path, "unet", conv_nets.unet_like(4, 32, width=4))
    untiled = untiled_peak(prefix, "--arch", "H100")
    budget = untiled // 2
    r = tg("tune", prefix, "--arch", "H100", "--emulate", "--no-gpu-build", "--memory-budget", budget, "-j", "2")
    assert r.returncode == 0, r.stderr
    stats = manifest(prefix, "H100")["compile"]["memory_budget"]
    assert stats["tiling"]["kind"] == "batch" and stats["tiling"]["chunks"] >= 2
    assert stats["planned_peak_bytes"] <= budget < stats["untiled_peak_bytes"]
    # The CUDA project streams the chunks through its device buffers.
    model_cu = (prefix / "tilegraph_rt/H100/model.cu").read_text()
    assert f"const int64_t kBatchChunks = {stats['tiling']['chunks']};" in model_cu
    assert "tg_model_run_chunk(m, chunk_inputs, chunk_outputs)" in model_cu
    acc = run_test_acc(prefix, "H100")
    assert acc.returncode == 0, acc.stdout + acc.stderr


def test_a_budget_nothing_fits_names_the_smallest_peak_and_its_holder(tmp_path):
    # 128 x 128 images: one sample's activations (1 MiB) outweigh the kernels'
    # per-thread scratch on any host. At 64 x 64 the scratch held the peak
    # where the L2 is 2 MiB (column groups within an eighth of it).
    prefix = model_dir(tmp_path, "vgg", conv_nets.vgg_like(4, 128, width=8))
    r = tg("tune", prefix, "--no-build", "--memory-budget", "64K")
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("error: --memory-budget 64.0 KiB: the smallest peak is "), r.stderr
    assert "(micro-batch 1 of 4), held by the activation arena" in lines[-1]
    assert "from ONNX node 'Relu_" in lines[-1]
    assert not (prefix / "tilegraph_rt/host/manifest.json").exists()


def test_a_graph_that_mixes_batch_elements_names_the_node(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 256, 256])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 256, 256])
    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp"),
             helper.make_node("Softmax", ["e"], ["y"], name="softmax_over_batch", axis=0)]
    model = helper.make_model(helper.make_graph(nodes, "mixes", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    prefix = model_dir(tmp_path, "mixes", model)
    r = tg("tune", prefix, "--no-build", "--memory-budget", "1K")  # one fused kernel: its scratch is over
    assert r.returncode != 0
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: --memory-budget 1.0 KiB: the plan needs "), r.stderr
    assert "cannot run in micro-batches: ONNX node 'softmax_over_batch'" in line, line


@pytest.mark.parametrize("value", ["12X", "0", "-1M", "1.5.G", ""])
def test_bad_budgets_are_one_line_errors(tmp_path, value):
    prefix = model_dir(tmp_path, "vgg", conv_nets.vgg_like(2, 16, width=4))
    r = tg("tune", prefix, "--no-build", "--memory-budget", value)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1].startswith(f"error: --memory-budget '{value}': "), r.stderr


def test_a_budget_that_fits_changes_only_the_manifest_and_the_hash(tmp_path):
    plain = model_dir(tmp_path, "plain", conv_nets.vgg_like(4, 32, width=8))
    budgeted = model_dir(tmp_path, "budgeted", conv_nets.vgg_like(4, 32, width=8))
    assert tg("tune", plain, "--no-build").returncode == 0
    assert tg("tune", budgeted, "--no-build", "--memory-budget", "1G").returncode == 0
    a, b = (p / "tilegraph_rt/host" for p in (plain, budgeted))
    assert "memory_budget" not in manifest(plain)["compile"]
    assert "memory_budget" not in json.loads((a / "compile_stats.json").read_text())
    assert manifest(budgeted)["compile"]["memory_budget"]["tiling"] == {"kind": "none"}
    assert (a / "kernels_000.cpp").read_bytes() == (b / "kernels_000.cpp").read_bytes()
    differing = [pair for pair in zip((a / "model.cpp").read_text().splitlines(),
                                      (b / "model.cpp").read_text().splitlines()) if pair[0] != pair[1]]
    assert [line for line, _ in differing] == [next(line for line in (a / "model.cpp").read_text().splitlines()
                                                    if "kProjectHash" in line)]
    assert "kBatchChunks" not in (a / "model.cpp").read_text()
