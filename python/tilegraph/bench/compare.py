"""`compare BASE TARGET`: what changed between two results files, as a markdown table.

Each metric has its own threshold because each has its own noise: latency moves a
few percent run to run, compile time far more (a busy CI machine), while kernel
counts, predicted DRAM bytes and the memory plan are deterministic, so any change
there is real. All metrics are lower-is-better. A benchmark that ran in BASE but
failed in TARGET is a regression; one that is skipped in either cannot be compared.

Timings taken on different machines or under different load (a farm run against a
local run on a shared machine) differ by more than a run's noise; ``timing_threshold``
(``--timing-threshold``) widens the timing metrics' thresholds for such a comparison
and leaves the others as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .results import is_ok

REGRESSED, IMPROVED, SIMILAR = "regressed", "improved", "similar"
MISSING, NEW, REMOVED = "not compared", "new", "removed"


@dataclass(frozen=True)
class Metric:
    path: tuple[str, ...]  # keys into a benchmark record
    label: str
    unit: str              # "ns", "s", "bytes" or "" (a count)
    threshold: float       # relative change that counts; 0: any change counts
    floor: float = 0.0     # absolute change below which it is noise, in the metric's unit
    timing: bool = False   # a time measured on the machine (not a count or a size)


RUN_METRICS = (
    Metric(("latency_ns", "median"), "latency (median)", "ns", 0.05, timing=True),
    Metric(("peak_host_memory_bytes",), "peak host memory", "bytes", 0.10, floor=1 << 20),
    Metric(("peak_device_memory_bytes",), "peak device memory", "bytes", 0.10, floor=1 << 20),
)
COMPILE_METRICS = (
    Metric(("seconds", "total"), "compile time", "s", 0.25, floor=1.0, timing=True),
    Metric(("kernels",), "kernels", "", 0.0),
    Metric(("dram_bytes",), "predicted DRAM traffic", "bytes", 0.0),
    Metric(("arena_bytes",), "peak activation memory", "bytes", 0.0),
    Metric(("weights_bytes",), "weights", "bytes", 0.0),
    Metric(("generated_source_bytes",), "generated source", "bytes", 0.05),
    Metric(("binary_bytes",), "binary size", "bytes", 0.05),
)


@dataclass(frozen=True)
class Row:
    verdict: str
    benchmark: str  # "name `id`"
    metric: str
    base: str
    target: str
    change: float  # relative (0.12 = +12%); +-inf for a status change; nan when none applies

    @property
    def size(self) -> float:
        return -1.0 if math.isnan(self.change) else abs(self.change)


def metrics(timing_threshold: float | None = None) -> tuple[tuple[Metric, ...], tuple[Metric, ...]]:
    """(run metrics, compile metrics), the timings' threshold TIMING_THRESHOLD where given."""
    def adjusted(ms: tuple[Metric, ...]) -> tuple[Metric, ...]:
        if timing_threshold is None:
            return ms
        return tuple(replace(m, threshold=timing_threshold) if m.timing else m for m in ms)
    return adjusted(RUN_METRICS), adjusted(COMPILE_METRICS)


def compare(base: dict, target: dict, timing_threshold: float | None = None) -> list[Row]:
    """Every (benchmark, metric) row, largest change first."""
    run_metrics, compile_metrics = metrics(timing_threshold)
    rows = _compare_section(base["benchmarks"], target["benchmarks"], run_metrics)
    rows += _compare_section(base["compile"], target["compile"], compile_metrics)
    return sorted(rows, key=lambda r: (-r.size, r.benchmark, r.metric))


def _compare_section(base: dict, target: dict, metrics: tuple[Metric, ...]) -> list[Row]:
    rows = []
    for bid in list(base) + [t for t in target if t not in base]:
        b, t = base.get(bid), target.get(bid)
        title = f"{(t or b)['name']} `{bid}`"
        if b is None or t is None:
            status = (t or b)["status"]
            rows.append(Row(NEW if b is None else REMOVED, title, "status", "-" if b is None else status,
                            "-" if t is None else status, math.nan))
        elif not (is_ok(b) and is_ok(t)):
            rows.append(_status_row(title, b["status"], t["status"]))
        else:
            rows += [r for m in metrics if (r := _metric_row(title, m, b, t)) is not None]
    return rows


def _status_row(title: str, base: str, target: str) -> Row:
    if base == "ok" and target.startswith("failed"):
        return Row(REGRESSED, title, "status", base, target, math.inf)
    if base.startswith("failed") and target == "ok":
        return Row(IMPROVED, title, "status", base, target, -math.inf)
    return Row(MISSING, title, "status", base, target, math.nan)


def _metric_row(title: str, metric: Metric, base: dict, target: dict) -> Row | None:
    b, t = _lookup(base, metric.path), _lookup(target, metric.path)
    if b is None or t is None:
        return None
    delta = t - b
    change = delta / b if b else (math.inf if delta > 0 else -math.inf if delta < 0 else 0.0)
    verdict = SIMILAR
    if abs(delta) > metric.floor and abs(change) > metric.threshold:
        verdict = REGRESSED if delta > 0 else IMPROVED
    return Row(verdict, title, metric.label, format_value(b, metric.unit), format_value(t, metric.unit), change)


def _lookup(record: dict, path: tuple[str, ...]):
    for key in path:
        if not isinstance(record, dict) or record.get(key) is None:
            return None
        record = record[key]
    return record


def format_value(value: float, unit: str) -> str:
    if unit == "ns":
        return f"{value / 1e6:.4g} ms"
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "bytes":
        for scale, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if abs(value) >= scale:
                return f"{value / scale:.2f} {name}"
        return f"{int(value)} B"
    return f"{value:g}"


def format_change(change: float) -> str:
    if math.isnan(change):
        return ""
    if math.isinf(change):  # a status change, or a change from zero
        return "+inf" if change > 0 else "-inf"
    return f"{change * 100:+.1f}%"


def markdown(rows: list[Row], base_label: str, target_label: str, changed_only: bool = False,
             timing_threshold: float | None = None) -> str:
    counts = {v: sum(r.verdict == v for r in rows) for v in (REGRESSED, IMPROVED, SIMILAR, MISSING, NEW, REMOVED)}
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    thresholds = ", ".join(f"{m.label} {f'{m.threshold:.0%}' if m.threshold else 'exact'}"
                           for m in sum(metrics(timing_threshold), ()))
    lines = [f"### tilegraph benchmarks: base {base_label} -> target {target_label}", "",
             f"**{summary or 'nothing to compare'}**", "", f"Thresholds: {thresholds}.", "",
             "| verdict | benchmark | metric | base | target | change |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if changed_only and r.verdict == SIMILAR:
            continue
        mark = {REGRESSED: "**regressed**", IMPROVED: "improved"}.get(r.verdict, r.verdict)
        lines.append(f"| {mark} | {r.benchmark} | {r.metric} | {r.base} | {r.target} | {format_change(r.change)} |")
    return "\n".join(lines) + "\n"


def label(results: dict, path: str) -> str:
    commit = results.get("commit")
    return f"{path} ({commit[:10]}{'+dirty' if results.get('dirty') else ''})" if commit else path


def any_regressed(rows: list[Row]) -> bool:
    return any(r.verdict == REGRESSED for r in rows)
