"""`tilegraph explain --measured`: the cost model's prediction next to main_test's
per-kernel profile, on a committed model tuned and built for the host.
"""
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=900)


def error_factor(ratio):
    return max(ratio, 1 / ratio)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("measured") / "nerf"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix)
    assert r.returncode == 0, r.stderr
    return prefix


def check_measured(e, ms_per_kernel):
    """E (explain --json --measured) against MS_PER_KERNEL, main_test's ms per iteration by kernel index."""
    assert len(e["subgraphs"]) == e["kernels"] == len(ms_per_kernel)
    for i, k in enumerate(e["subgraphs"]):
        assert k["measured_ms"] == pytest.approx(ms_per_kernel[i], rel=1e-9)
        if k["measured_ms"] > 0:
            assert k["ratio"] == pytest.approx(k["predicted_ms"] / k["measured_ms"], rel=1e-9)
    rows = e["measured"]
    assert rows, "no kernel measured"
    assert len(rows) == sum(1 for k in e["subgraphs"] if k["measured_ms"] > 0)
    for r in rows:
        k = e["subgraphs"][r["index"]]
        assert r["measured_ms"] > 0 and r["predicted_ms"] > 0
        assert r["name"] == k["name"] and r["ratio"] == k["ratio"] and r["kind"] == k["kind"]
        assert r["ratio"] == pytest.approx(r["predicted_ms"] / r["measured_ms"], rel=1e-9)
    errors = [error_factor(r["ratio"]) for r in rows]
    assert errors == sorted(errors, reverse=True), "not sorted by largest error"
    assert e["measured_ms"] == pytest.approx(sum(ms_per_kernel), rel=1e-9)
    geomean = math.exp(sum(math.log(x) for x in errors) / len(errors))
    assert e["prediction_error"] == pytest.approx(geomean, rel=1e-9) and e["prediction_error"] >= 1


def test_measured_runs_main_test_itself(tuned):
    r = tg("explain", tuned, "--measured", "--json", "--iters", "5")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)
    # explain kept main_test's export in the project: the same numbers.
    export = json.loads((tuned / "tilegraph_rt/host/kernel_profile.json").read_text())
    assert export["profile"]["iterations"] == 5
    by_index = {k["index"]: k["median_ms"] for k in export["profile"]["kernels"]}
    check_measured(e, [by_index[i] for i in range(len(by_index))])
    # The kernels are real work: every one takes time.
    assert all(k["measured_ms"] > 0 for k in e["subgraphs"])


def test_measured_from_a_run_profile(tuned, tmp_path):
    export = tmp_path / "run.json"
    run = tg("run", tuned, "--warmup", "1", "--iters", "3", "--profile", "--export-json", export)
    assert run.returncode == 0, run.stderr
    r = tg("explain", tuned, "--measured", "--json", "--profile-json", export)
    assert r.returncode == 0, r.stderr
    kernels = json.loads(export.read_text())["profile"]["kernels"]
    # One run's time is the median over the runs (a run the machine slowed
    # counts once, not in every kernel's mean).
    by_index = {k["index"]: k["median_ms"] for k in kernels}
    assert all(0 <= k["median_ms"] <= k["total_ms"] for k in kernels)
    check_measured(json.loads(r.stdout), [by_index[i] for i in range(len(by_index))])
    # An export from before the medians: its means.
    old = json.loads(export.read_text())
    for k in old["profile"]["kernels"]:
        del k["median_ms"]
    old_export = tmp_path / "old.json"
    old_export.write_text(json.dumps(old))
    r_old = tg("explain", tuned, "--measured", "--json", "--profile-json", old_export)
    assert r_old.returncode == 0, r_old.stderr
    means = {k["index"]: k["ms_per_iter"] for k in kernels}
    check_measured(json.loads(r_old.stdout), [means[i] for i in range(len(means))])
    text = tg("explain", tuned, "--measured", "--profile-json", export)
    assert text.returncode == 0, text.stderr
    assert "predicted vs measured" in text.stdout and "geometric-mean error" in text.stdout
    # One line per measured kernel after the header.
    table = text.stdout.split("predicted vs measured", 1)[1].splitlines()
    rows = [line.split() for line in table if line.strip()[:1].isdigit()]
    assert len(rows) == len(kernels)
    # Each row carries its kernel's kind (loop nest, float_gemm, ...) after the name.
    subgraphs = json.loads(r.stdout)["subgraphs"]
    assert all(row[2] == subgraphs[int(row[0])]["kind"] for row in rows)
    assert {row[2] for row in rows} >= {"float_gemm"}


def test_profile_without_kernels_is_a_clear_error(tuned, tmp_path):
    export = tmp_path / "no_profile.json"
    run = tg("run", tuned, "--warmup", "0", "--iters", "1", "--export-json", export)
    assert run.returncode == 0, run.stderr
    r = tg("explain", tuned, "--measured", "--profile-json", export)
    assert r.returncode == 1 and "no per-kernel profile" in r.stderr and str(export) in r.stderr
    report = json.loads(export.read_text())
    report["profile"] = {"iterations": 1, "kernels": [{"index": 0, "name": "k", "ms_per_iter": 1.0}]}
    export.write_text(json.dumps(report))
    r = tg("explain", tuned, "--measured", "--profile-json", export)
    assert r.returncode == 1 and "the profile has 1 kernels" in r.stderr


def test_measured_is_not_for_a_gpu_arch_here(tmp_path):
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    assert tg("tune", prefix, "--arch", "H100", "--no-build").returncode == 0
    r = tg("explain", prefix, "--arch", "H100", "--measured")
    assert r.returncode == 1 and "--profile-json" in r.stderr
