"""export -> run -> compare -> explain -> dashboard on the x86_64 preset, for real.

Two small committed models (bert_small, mobilenet_small), 1 warmup + 3 timed
iterations, `tune -j 2`: about half a minute, almost all of it the two C++ builds.
Nothing here asserts a latency: benchmarks are measured, never judged, in tests.
"""

import json
import re
from pathlib import Path

import pytest

from bench_testlib import as_commit, bench_cli, find_chromium, render_in_chromium, write_json
from tilegraph._common import find_tilegraph_bin, has_nvidia_gpu

MODELS = ("bert_small", "mobilenet_small")
BERT_1T = "r-34bb379e5db5"  # bert_small [host][topk20] @ local (1 thread)
BERT_HOST = "c-5fbc824b799e"

pytestmark = pytest.mark.skipif(find_tilegraph_bin() is None,
                                reason="tilegraph CLI not built (scripts/build.sh) and TILEGRAPH_BIN not set")


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    """(folder, configs.json, results.json) of one short x86_64 run."""
    d = tmp_path_factory.mktemp("bench")
    export = bench_cli("export", "--preset", "x86_64", *[a for m in MODELS for a in ("--model", m)])
    assert export.returncode == 0, export.stderr
    configs = d / "configs.json"
    configs.write_text(export.stdout)
    run = bench_cli("run", configs, "--out", d / "results.json", "--work", d / "work",
                    "--iters", "3", "--warmup", "1", "-j", "2")
    assert run.returncode == 0, run.stderr
    return d, configs, d / "results.json"


def test_export_lists_the_preset(suite_run):
    _, configs, _ = suite_run
    data = json.loads(configs.read_text())
    names = {r["id"]: r["name"] for r in data["run_benchmarks"]}
    assert names[BERT_1T] == "bert_small [host][topk20] @ local (1 thread)"
    assert len(names) == 4 and len(data["compile_benchmarks"]) == 2


def test_results_hold_latency_memory_peers_and_compile_statistics(suite_run):
    _, _, results_file = suite_run
    results = json.loads(results_file.read_text())
    assert results["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", results["commit"])
    assert results["overrides"] == {"warmup": 1, "iters": 3}
    assert len(results["benchmarks"]) == 4
    for bid, r in results["benchmarks"].items():
        assert r["status"] == "ok", (bid, r["status"])
        lat = r["latency_ns"]
        assert lat["iterations"] == 3
        assert 0 < lat["min"] <= lat["median"] <= lat["p90"] and lat["stddev"] >= 0
        assert lat["min"] > 1000, "latencies are in nanoseconds"
        assert r["peak_host_memory_bytes"] > 1 << 20
        # main_test's own figure (VmHWM), not the child's ru_maxrss, which holds the parent's size
        report = json.loads((Path(r["artifacts"]) / "main_test.json").read_text())
        assert r["peak_host_memory_bytes"] == report["peak_host_memory_bytes"]
        assert r["device"]["kind"] == "cpu" and r["model"] in MODELS
        ort = r["peers"]["onnxruntime"]
        assert ort["status"] == "ok" and ort["threads"] == r["threads"]
        assert r["peer_ratio"]["onnxruntime"] == pytest.approx(ort["latency_ns"]["median"] / lat["median"])
        # The cost model's error on this run's kernels (explain --measured).
        cm = r["cost_model"]
        assert cm["status"] == "ok", cm["status"]
        assert cm["prediction_error"] >= 1 and cm["predicted_ms"] > 0 and cm["measured_ms"] > 0 and cm["kernels"] > 0
    assert results["benchmarks"][BERT_1T]["threads"] == 1

    c = results["compile"][BERT_HOST]
    assert c["status"] == "ok" and c["built"]
    assert set(c["seconds"]) == {"frontend", "passes", "schedule", "codegen", "build", "total"}
    assert c["kernels"] > 0 and c["kernels_unfused"] >= c["kernels"]
    for key in ("generated_source_bytes", "binary_bytes", "weights_bytes", "dram_bytes", "arena_bytes"):
        assert c[key] > 0, key


def test_compare_identical_and_regressed(suite_run, tmp_path):
    _, _, results_file = suite_run
    same = bench_cli("compare", results_file, results_file)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "regressed" not in same.stdout.split("Thresholds")[0]

    worse = json.loads(results_file.read_text())
    worse["benchmarks"][BERT_1T]["latency_ns"]["median"] *= 1.10
    worse["compile"][BERT_HOST]["kernels"] += 1
    out = bench_cli("compare", results_file, write_json(tmp_path / "worse.json", worse))
    assert out.returncode == 1
    rows = [line for line in out.stdout.splitlines() if line.startswith("| **regressed**")]
    assert len(rows) == 2
    assert BERT_1T in rows[0] and "+10.0%" in rows[0]  # the largest change first
    assert BERT_HOST in rows[1] and "kernels" in rows[1]


def test_explain_gives_what_reproduces_a_benchmark(suite_run):
    d, configs, results_file = suite_run
    out = bench_cli("explain", BERT_1T, "--configs", configs, "--results", results_file)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "bert_small [host][topk20] @ local (1 thread)" in text
    assert "models/bert_small/model.onnx" in text
    assert re.search(rf"tilegraph tune \S*{BERT_HOST} --model \S+ --arch host --topk 20", text)
    assert "--threads 1" in text and "onnxruntime" in text
    assert "local-cpu (cpu)" in text
    assert f"run {configs} --only {BERT_1T}" in text

    info = json.loads(bench_cli("explain", BERT_1T, "--results", results_file, "--json").stdout)
    assert Path(info["artifacts"]["project"], "build", "main_test").is_file()
    assert Path(info["artifacts"]["run"], "main_test.json").is_file()
    assert info["recorded"]["run"]["status"] == "ok"
    assert bench_cli("explain", "r-000000000000").returncode == 2


def test_dashboard_of_two_commits_in_chromium(suite_run, tmp_path):
    if find_chromium() is None:
        pytest.skip("chromium not found: install Debian's chromium package (scripts/install_deps.sh does)")
    _, _, results_file = suite_run
    first = json.loads(results_file.read_text())
    second = as_commit(first, "f" * 40, "2100-01-01T00:00:00+00:00")
    second["benchmarks"][BERT_1T]["latency_ns"]["median"] *= 0.9
    out = bench_cli("dashboard", results_file, write_json(tmp_path / "next.json", second), "--out", tmp_path / "site")
    assert out.returncode == 0, out.stderr
    dom, log = render_in_chromium(tmp_path / "site" / "index.html", tmp_path)
    assert "Uncaught" not in log, log
    assert 'id="dashboard-ready"' in dom
    for bid in list(first["benchmarks"]) + list(first["compile"]):
        assert re.search(rf'<path class="series" data-series="{bid}" d="M[\d. ]+L', dom), bid
    assert f'data-series="{BERT_1T}/onnxruntime"' in dom
    assert "ffffffffff" in dom  # the second commit on the x axis


def test_cuda_and_arm64_presets_are_skipped_without_their_devices(tmp_path):
    """No GPU here: the cuda run is recorded as skipped, its compile statistics kept."""
    if has_nvidia_gpu():
        pytest.skip("this machine has an NVIDIA GPU: the cuda preset would really run")
    for preset in ("cuda", "arm64"):
        export = bench_cli("export", "--preset", preset, "--model", "bert_small")
        configs = tmp_path / f"{preset}.json"
        configs.write_text(export.stdout)
        run = bench_cli("run", configs, "--out", tmp_path / f"{preset}_results.json", "--work", tmp_path / "work")
        assert run.returncode == 0, run.stderr
        results = json.loads((tmp_path / f"{preset}_results.json").read_text())
        (record,) = results["benchmarks"].values()
        (compiled,) = results["compile"].values()
        assert compiled["status"] == "ok" and compiled["kernels"] > 0
        if preset == "cuda":
            assert record["status"] == "skipped: no GPU"
            assert not compiled["built"] and compiled["binary_bytes"] is None
        else:  # skipped: no qemu here, or an x86 build of the arm project, or it ran on arm64
            assert record["status"].startswith("skipped") or record["status"] == "ok"
