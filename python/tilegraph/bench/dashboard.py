"""`dashboard RESULTS... --out DIR`: a static HTML page of benchmark history.

One self-contained ``DIR/index.html`` (no server, no network: the data, the script
and the styles are inline) with one chart per metric -- latency, the peer ratio,
compile time, kernels, predicted DRAM traffic, peak activation memory, binary
size -- and in each chart one series per benchmark over commits.

The Python side does the data work (grouping files by commit, ordering commits,
picking values) so the page's script only draws; see dashboard_page.py for that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from . import results as res
from .dashboard_page import render_page


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    section: str                       # "benchmarks" or "compile"
    value: Callable[[dict], float | None]
    log_scale: bool = False


def _get(*path: str, scale: float = 1.0) -> Callable[[dict], float | None]:
    def value(record: dict) -> float | None:
        for key in path:
            if not isinstance(record, dict) or record.get(key) is None:
                return None
            record = record[key]
        return record * scale
    return value


MIB = 1.0 / (1 << 20)
CHARTS = (
    Chart("latency", "Latency, median (ms)", "benchmarks", _get("latency_ns", "median", scale=1e-6), log_scale=True),
    Chart("compile_time", "Compile time, all stages (s)", "compile", _get("seconds", "total"), log_scale=True),
    Chart("kernels", "Kernels", "compile", _get("kernels")),
    Chart("dram", "Predicted DRAM traffic (MiB)", "compile", _get("dram_bytes", scale=MIB), log_scale=True),
    Chart("arena", "Peak activation memory, memory plan (MiB)", "compile", _get("arena_bytes", scale=MIB), log_scale=True),
    Chart("binary", "Binary size, libmodel.so (MiB)", "compile", _get("binary_bytes", scale=MIB), log_scale=True),
    Chart("host_memory", "Peak host memory of main_test (MiB)", "benchmarks", _get("peak_host_memory_bytes", scale=MIB)),
)


@dataclass
class Point:
    """One commit on the x axis: every results file of that commit merged (shards)."""
    key: str
    commit_time: str
    created: str
    benchmarks: dict
    compile: dict


def commits(files: Iterable[dict]) -> list[Point]:
    """Results grouped by commit (a dirty tree is its own point), oldest first.

    Several files of one commit (shards, reruns) merge; where two hold the same
    benchmark, the later-created file wins.
    """
    points: dict[str, Point] = {}
    for data in sorted(files, key=lambda d: d.get("created") or ""):
        commit = data.get("commit") or f"uncommitted {data.get('created', '')}"
        key = commit[:10] + ("+dirty" if data.get("dirty") else "")
        p = points.setdefault(key, Point(key, data.get("commit_time") or "", data.get("created") or "", {}, {}))
        p.benchmarks.update(data.get("benchmarks", {}))
        p.compile.update(data.get("compile", {}))
        p.created = max(p.created, data.get("created") or "")
    return sorted(points.values(), key=lambda p: (p.commit_time or p.created, p.created))


def page_data(points: list[Point]) -> dict:
    """What the page draws: commits, and per chart one series per benchmark."""
    charts = [_chart_data(c, points) for c in CHARTS]
    charts.insert(1, _peer_ratio_chart(points))
    return {
        "commits": [{"key": p.key, "time": p.commit_time or p.created} for p in points],
        "charts": [c for c in charts if c["series"]],
    }


def _chart_data(chart: Chart, points: list[Point]) -> dict:
    series = {}
    for i, p in enumerate(points):
        for bid, record in getattr(p, chart.section).items():
            v = chart.value(record) if res.is_ok(record) else None
            if v is None:
                continue
            s = series.setdefault(bid, {"id": bid, "values": [None] * len(points)})
            s["name"] = record["name"]  # the newest name: names may change, IDs do not
            s["values"][i] = v
    return {"id": chart.id, "title": chart.title, "log": chart.log_scale,
            "series": sorted(series.values(), key=lambda s: s["name"])}


def _peer_ratio_chart(points: list[Point]) -> dict:
    series = {}
    for i, p in enumerate(points):
        for bid, record in p.benchmarks.items():
            for peer, ratio in record.get("peer_ratio", {}).items():
                sid = f"{bid}/{peer}"
                s = series.setdefault(sid, {"id": sid, "values": [None] * len(points)})
                s["name"] = f"{record['name']} vs {peer}"
                s["values"][i] = ratio
    return {"id": "peer_ratio", "title": "Peer median / tilegraph median (above 1: tilegraph is faster)",
            "log": True, "reference": 1.0, "series": sorted(series.values(), key=lambda s: s["name"])}


def write_dashboard(result_files: list[str | Path], out_dir: Path) -> Path:
    points = commits(res.load(f) for f in result_files)
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "index.html"
    page.write_text(render_page(json.dumps(page_data(points))))
    return page
