"""`compare` on hand-made results: thresholds per metric, statuses, ordering, exit status."""

import copy

import pytest

from bench_testlib import bench_cli, synthetic_results, write_json
from tilegraph.bench import compare as cmp

R1, R2, C1 = "r-000000000001", "r-000000000002", "c-000000000001"


def verdicts(base, target):
    return {(r.benchmark.split("`")[1], r.metric): r.verdict for r in cmp.compare(base, target)}


def scaled(results, bench, factor):
    out = copy.deepcopy(results)
    out["benchmarks"][bench]["latency_ns"]["median"] *= factor
    return out


@pytest.mark.parametrize("factor, verdict", [(1.04, "similar"), (0.96, "similar"), (1.06, "regressed"),
                                             (0.90, "improved")])
def test_latency_threshold_is_five_percent(factor, verdict):
    base = synthetic_results()
    assert verdicts(base, scaled(base, R1, factor))[(R1, "latency (median)")] == verdict


def test_kernel_count_is_exact_and_compile_time_loose():
    base = synthetic_results()
    target = copy.deepcopy(base)
    target["compile"][C1]["kernels"] += 1
    target["compile"][C1]["seconds"]["total"] *= 1.2  # +20%: within compile time's 25%
    v = verdicts(base, target)
    assert v[(C1, "kernels")] == "regressed"
    assert v[(C1, "compile time")] == "similar"
    target["compile"][C1]["seconds"]["total"] = 13.0  # +30%
    assert verdicts(base, target)[(C1, "compile time")] == "regressed"


def test_compile_time_noise_floor():
    base = synthetic_results()
    base["compile"][C1]["seconds"]["total"] = 0.2
    target = copy.deepcopy(base)
    target["compile"][C1]["seconds"]["total"] = 0.4  # +100%, but 0.2 s is noise
    assert verdicts(base, target)[(C1, "compile time")] == "similar"


def test_status_changes():
    base = synthetic_results()
    target = copy.deepcopy(base)
    target["benchmarks"][R1] = {"name": "x", "status": "failed: main_test exit 2: boom"}
    target["benchmarks"][R2]["status"] = "skipped: no GPU"
    del target["compile"][C1]
    target["compile"]["c-000000000009"] = {"name": "new one", "status": "ok"}
    v = verdicts(base, target)
    assert v[(R1, "status")] == "regressed"
    assert v[(R2, "status")] == "not compared"
    assert v[(C1, "status")] == "removed"
    assert v[("c-000000000009", "status")] == "new"
    assert verdicts(target, base)[(R1, "status")] == "improved"  # fixed


def test_rows_are_sorted_by_size_of_change():
    base = synthetic_results()
    target = scaled(scaled(base, R1, 1.5), R2, 0.8)
    rows = cmp.compare(base, target)
    assert [(r.benchmark.split("`")[1], r.metric) for r in rows[:2]] == [(R1, "latency (median)"),
                                                                        (R2, "latency (median)")]
    sizes = [r.size for r in rows]
    assert sizes == sorted(sizes, reverse=True)


def test_cli_exit_status_and_markdown(tmp_path):
    base = write_json(tmp_path / "base.json", synthetic_results())
    same = bench_cli("compare", base, base)
    assert same.returncode == 0, same.stderr
    assert "| verdict | benchmark | metric | base | target | change |" in same.stdout
    worse = write_json(tmp_path / "worse.json", scaled(synthetic_results(commit="b" * 40), R2, 1.25))
    out = bench_cli("compare", base, worse, "--changed-only")
    assert out.returncode == 1
    assert "**1 regressed" in out.stdout
    assert f"| **regressed** | m [host][topk20] @ local (all cores) `{R2}` | latency (median) | 0.06 ms | 0.075 ms | +25.0% |" \
        in out.stdout
    assert "| similar |" not in out.stdout
    assert bench_cli("compare", base, tmp_path / "missing.json").returncode == 2


def test_timing_threshold_widens_timings_only():
    base = synthetic_results()
    target = scaled(base, R1, 1.8)  # +80% latency
    target["compile"][C1]["seconds"]["total"] *= 1.9  # +90% compile time
    target["compile"][C1]["kernels"] += 1
    target["benchmarks"][R2]["peak_host_memory_bytes"] *= 2
    v = {(r.benchmark.split("`")[1], r.metric): r.verdict for r in cmp.compare(base, target, timing_threshold=1.0)}
    assert v[(R1, "latency (median)")] == "similar" and v[(C1, "compile time")] == "similar"
    assert v[(C1, "kernels")] == "regressed" and v[(R2, "peak host memory")] == "regressed"
    v = {(r.benchmark.split("`")[1], r.metric): r.verdict for r in cmp.compare(base, target, timing_threshold=0.5)}
    assert v[(R1, "latency (median)")] == "regressed" and v[(C1, "compile time")] == "regressed"


def test_cli_timing_threshold(tmp_path):
    base = write_json(tmp_path / "base.json", synthetic_results())
    slower = write_json(tmp_path / "slower.json", scaled(synthetic_results(), R2, 1.5))
    assert bench_cli("compare", base, slower).returncode == 1
    out = bench_cli("compare", base, slower, "--timing-threshold", "1")
    assert out.returncode == 0, out.stdout
    assert "Thresholds: latency (median) 100%, peak host memory 10%," in out.stdout
    assert "compile time 100%, kernels exact" in out.stdout
    bad = bench_cli("compare", base, slower, "--timing-threshold", "-1")
    assert bad.returncode == 2 and "expected a relative change such as 0.5 (50%), got '-1'" in bad.stderr
