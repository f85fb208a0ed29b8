"""The dashboard: commits ordered and merged in Python, the page rendered by real Chromium."""

import re

import pytest

from bench_testlib import as_commit, bench_cli, find_chromium, render_in_chromium, synthetic_results, write_json
from tilegraph.bench import dashboard


def history(tmp_path):
    """Three commits; the middle one split over two shard files."""
    first = synthetic_results(commit="1" * 40, time="2030-01-01T00:00:00+00:00")
    second = as_commit(first, "2" * 40, "2030-01-02T00:00:00+00:00")
    shard_a, shard_b = as_commit(second, "2" * 40, "2030-01-02T00:00:00+00:00"), as_commit(second, "2" * 40, "2030-01-02T00:10:00+00:00")
    del shard_a["benchmarks"]["r-000000000002"]
    shard_b["benchmarks"] = {"r-000000000002": shard_b["benchmarks"]["r-000000000002"]}
    shard_b["compile"] = {}
    shard_b["benchmarks"]["r-000000000002"]["latency_ns"]["median"] = 50_000.0
    third = as_commit(first, "3" * 40, "2030-01-03T00:00:00+00:00")
    third["benchmarks"]["r-000000000001"]["name"] = "tricky </script><b>name</b>"
    # Files given out of order: the page must order by commit time.
    return [write_json(tmp_path / f"{n}.json", d) for n, d in
            (("c", third), ("a", first), ("b1", shard_a), ("b2", shard_b))]


def test_commits_are_ordered_and_shards_merged(tmp_path):
    from tilegraph.bench import results
    points = dashboard.commits(results.load(f) for f in history(tmp_path))
    assert [p.key for p in points] == ["1111111111", "2222222222", "3333333333"]
    assert set(points[1].benchmarks) == {"r-000000000001", "r-000000000002"}
    data = dashboard.page_data(points)
    latency = next(c for c in data["charts"] if c["id"] == "latency")
    series = {s["id"]: s["values"] for s in latency["series"]}
    assert series["r-000000000002"] == pytest.approx([0.06, 0.05, 0.06])
    ratio = next(c for c in data["charts"] if c["id"] == "peer_ratio")
    assert {s["id"] for s in ratio["series"]} == {"r-000000000001/onnxruntime", "r-000000000002/onnxruntime"}


def test_page_renders_in_headless_chromium(tmp_path):
    if find_chromium() is None:
        pytest.skip("chromium not found: install Debian's chromium package (scripts/install_deps.sh does)")
    out = bench_cli("dashboard", *history(tmp_path), "--out", tmp_path / "site")
    assert out.returncode == 0, out.stderr
    page = tmp_path / "site" / "index.html"
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.read_text()), "the page must not load anything"

    dom, log = render_in_chromium(page, tmp_path)
    assert "Uncaught" not in log, log
    assert re.search(r'<div id="dashboard-errors"></div>', dom), "the page reported a script error"
    ready = re.search(r'id="dashboard-ready" data-charts="(\d+)" data-series="(\d+)"', dom)
    assert ready, "the script did not finish rendering"
    for bench in ("r-000000000001", "r-000000000002", "c-000000000001"):
        assert re.search(rf'<path class="series" data-series="{bench}" d="M[\d. ]+L', dom), bench
    assert 'data-series="r-000000000002/onnxruntime"' in dom
    assert "m [host][topk20] @ local (all cores)" in dom
    assert "tricky &lt;/script&gt;&lt;b&gt;name&lt;/b&gt;" in dom  # shown as text, never as markup
    assert int(ready.group(1)) >= 6
