"""`bash artifacts/run_all.sh --quick` end to end: every experiment's CSV holds real
numbers, its chart is a PNG, and report.md has its section, with a skip line for
each column this machine cannot run. No timing is asserted: numbers are checked
positive and finite, never fast.
"""
import csv
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")

# CSV -> the columns that must be a positive finite number in every row.
MEASURED = {
    "fig01_peer_efficiency": ["gflop", "mb_unfused", "onnxruntime_ms", "onnxruntime_compute_pct",
                              "onnxruntime_memory_pct", "tilegraph_compute_pct"],
    "fig02_matmul_softmax": ["median_ms"],
    "fig09_end_to_end_cpu": ["tilegraph_ms", "onnxruntime_ms", "speedup_vs_onnxruntime", "kernels"],
    "fig13_fusion_ablation": ["median_ms", "kernels", "dram_bytes_predicted", "intermediate_bytes"],
    "fig11_no_tensor_cores": ["kernels", "predicted_ms"],
    "table3_transformers": ["tilegraph_ms", "fastest_peer_ms", "speedup_vs_fastest_peer"],
    "table5_compile_time": ["total_s", "schedule_s", "kernels", "candidates_kept"],
    "table6_cnns": ["tilegraph_ms", "onnxruntime_ms", "fastest_peer_ms", "speedup_vs_fastest_peer"],
    "table7_memory_scaleup": ["untiled_peak_bytes", "tiled_peak_bytes", "measured_peak_bytes", "tilegraph_ms"],
}
SKIP_ONLY = ("fig10",)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("artifacts") / "out"
    env = {**os.environ, "ARTIFACTS_OUT": str(out), "TILEGRAPH_BIN": TILEGRAPH}
    r = subprocess.run(["bash", "artifacts/run_all.sh", "--quick"], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    yield out
    shutil.rmtree(out / "work", ignore_errors=True)  # compiled models: large, not needed after


def rows(out: Path, name: str) -> list:
    with open(out / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_csv_holds_positive_finite_numbers(out, name):
    table = rows(out, name)
    assert table, f"{name}.csv has no rows"
    for row in table:
        for column in MEASURED[name]:
            if name == "fig02_matmul_softmax" and column != "median_ms":
                continue
            value = float(row[column])
            assert math.isfinite(value) and value > 0, (name, column, row)


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_chart_is_a_png(out, name):
    data = (out / f"{name}.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_fig02_has_both_schedules_and_the_peer(out):
    engines = {r["engine"] for r in rows(out, "fig02_matmul_softmax")}
    assert engines == {"tilegraph fused", "tilegraph unfused", "onnxruntime"}
    fused, unfused = (next(r for r in rows(out, "fig02_matmul_softmax") if r["engine"] == e)
                      for e in ("tilegraph fused", "tilegraph unfused"))
    assert int(fused["kernels"]) < int(unfused["kernels"])
    assert int(fused["intermediate_bytes"]) < int(unfused["intermediate_bytes"])


def test_fig13_levels_fuse_progressively(out):
    table = rows(out, "fig13_fusion_ablation")
    for model in {r["model"] for r in table}:
        level = {r["fusion_level"]: r for r in table if r["model"] == model}
        assert set(level) == {"none", "register", "full"}
        kernels = [int(level[l]["kernels"]) for l in ("none", "register", "full")]
        assert kernels[0] > kernels[1] > kernels[2], (model, kernels)
        assert int(level["full"]["dram_bytes_predicted"]) < int(level["none"]["dram_bytes_predicted"])


def test_table7_tiles_over_budget_plans_and_stays_within_the_budget(out):
    table = rows(out, "table7_memory_scaleup")
    for row in table:
        assert row["matches_onnxruntime"] == "yes", row
        assert int(row["tiled_peak_bytes"]) <= int(row["budget_bytes"]), row
        assert int(row["measured_peak_bytes"]) <= int(row["budget_bytes"]), row
    tiled = [r for r in table if int(r["chunks"]) > 1]
    assert tiled, "no case needed micro-batches"
    assert all(int(r["untiled_peak_bytes"]) > int(r["budget_bytes"]) for r in tiled)


def test_report_has_every_section(out):
    report = (out / "report.md").read_text()
    assert "mode `quick" in report
    for name in MEASURED:
        section = name.split("_")[0]
        assert f"<!-- section: {section} -->" in report and f"<!-- end: {section} -->" in report, section
        assert f"]({name}.png)" in report and f"`{name}.csv`" in report, name
    for section in SKIP_ONLY:
        text = report.split(f"<!-- section: {section} -->")[1].split(f"<!-- end: {section} -->")[0]
        assert "- skipped: " in text, section
    if not shutil.which("nvidia-smi"):
        assert report.count("no NVIDIA GPU") >= len(SKIP_ONLY) + 2  # fig02 and fig09's GPU columns too


def test_fig09_has_int8_rows_against_onnxruntime(out):
    int8 = [r for r in rows(out, "fig09_end_to_end_cpu") if r["precision"] == "int8"]
    assert [r["model"] for r in int8] == ["bert"]
    assert float(int8[0]["onnxruntime_ms"]) > 0 and float(int8[0]["speedup_vs_onnxruntime"]) > 0


def test_fig01_fractions_are_below_the_peak(out):
    for r in rows(out, "fig01_peer_efficiency"):
        assert 0 < float(r["onnxruntime_compute_pct"]) < 100 and 0 < float(r["tilegraph_compute_pct"]) < 100, r
        assert float(r["mb_fused"]) <= float(r["mb_unfused"]), r  # fusion never adds predicted traffic


def test_fig11_turns_the_tensor_cores_off(out):
    table = rows(out, "fig11_no_tensor_cores")
    on = [r for r in table if r["mode"] == "tensor cores"]
    off = [r for r in table if r["mode"] == "no tensor cores"]
    assert on and len(on) == len(off)
    assert sum(int(r["kernels_on_tensor_cores"]) for r in on) > 0
    assert all(int(r["kernels_on_tensor_cores"]) == 0 for r in off)


def test_table6_has_the_small_cnns(out):
    assert {r["model"] for r in rows(out, "table6_cnns")} == {"resnet18", "unet", "vgg16"}
    section = (out / "report.md").read_text().split("<!-- section: table6 -->")[1]
    assert "- skipped: resnet50: no committed small export" in section.split("<!-- end: table6 -->")[0]
