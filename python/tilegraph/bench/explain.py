"""`explain BENCHMARK_ID`: everything needed to reproduce one benchmark by hand.

An opaque ID is only useful if it leads back to what was measured: the model and
where its ONNX is, the exact compile and run commands (the ones `run` executes, from
:mod:`tilegraph.bench.workspace`), the device, and where the artifacts are. With
``--results`` it also shows what that run recorded and uses its work folder.
"""

from __future__ import annotations

from pathlib import Path

from .. import _common
from . import devices, presets
from . import suite as suite_file
from . import workspace as ws
from .definitions import CompileBenchmark, RunBenchmark
from .peers import PEERS_BY_DEVICE


def find(benchmark_id: str, configs: str | None) -> tuple[CompileBenchmark | RunBenchmark, str]:
    """The benchmark with BENCHMARK_ID in the CONFIGS file, else in any preset; and the
    `run` command line that reproduces it alone."""
    if configs is not None:
        found = suite_file.load(configs).find(benchmark_id)
        if found is not None:
            return found, f"python -m tilegraph.bench run {configs} --only {benchmark_id}"
    found = presets.everything().find(benchmark_id)
    if found is None:
        raise LookupError(f"no benchmark has ID {benchmark_id!r}"
                          + (f" in {configs} or" if configs is not None else "") + " in any preset")
    preset = presets.presets_with(benchmark_id)[0]
    return found, (f"python -m tilegraph.bench export --preset {preset} --benchmark {benchmark_id} > one.json"
                   " && python -m tilegraph.bench run one.json")


def explain(bench: CompileBenchmark | RunBenchmark, suite_command: str, work: Path, record: dict | None = None,
            compile_record: dict | None = None) -> dict:
    """A JSON-ready description of BENCH (RECORD: its entry in a results file, if any)."""
    tilegraph = _common.find_tilegraph_bin() or "tilegraph"
    build = bench.build if isinstance(bench, RunBenchmark) else bench
    model = build.model
    out = {
        "id": bench.id, "name": bench.name,
        "kind": "run" if isinstance(bench, RunBenchmark) else "compile",
        "model": {"id": model.id, "name": model.name, "onnx": str(ws.model_onnx(model, work)),
                  "inputs": list(model.inputs), "tags": list(model.tags)},
        "compile": {"benchmark": build.id, "config": build.compile.id, "arch": build.compile.arch,
                    "flags": build.compile.tune_args()},
        "commands": {},
        "artifacts": {"work": str(work), "compile_prefix": str(ws.compile_prefix(build, work)),
                      "project": str(ws.project_dir(build, work)),
                      "tune_log": str(ws.compile_prefix(build, work) / "tune.log")},
    }
    export = ws.export_command(model, work)
    if export:
        out["commands"]["export (needs torch)"] = ws.shell_line(export)
    out["commands"]["compile"] = ws.shell_line(ws.compile_command(tilegraph, build, work, jobs=devices.usable_cpus()))
    out["commands"]["schedule (after compile)"] = ws.shell_line(
        [tilegraph, "explain", ws.compile_prefix(build, work), "--arch", build.compile.arch])
    if isinstance(bench, RunBenchmark):
        _explain_run(out, bench, work, tilegraph, record)
    out["commands"]["all of it, as a suite"] = f"{suite_command} --work {work} --out one_results.json"
    if record is not None or compile_record is not None:
        out["recorded"] = {k: v for k, v in (("run", record), ("compile", compile_record)) if v is not None}
    return out


def _explain_run(out: dict, bench: RunBenchmark, work: Path, tilegraph, record: dict | None) -> None:
    # What the recorded run used (it may have shortened the iterations), else the config's.
    recorded = record or {}
    threads = recorded.get("threads") or ws.resolved_threads(bench, devices.usable_cpus())
    warmup, iters = recorded.get("warmup", bench.run.warmup), recorded.get("iters", bench.run.iters)
    r = bench.run
    out["run"] = {"config": r.id, "name": r.name, "threads": threads, "cpus": r.cpus or "any",
                  "warmup": warmup, "iters": iters}
    reason = devices.unavailable_reason(bench.device)
    out["device"] = {"id": bench.device.id, "name": bench.device.name, "kind": bench.device.kind,
                     "description": bench.device.description,
                     "here": "available" if reason is None else f"not available ({reason})"}
    out["commands"]["run"] = ws.shell_line(ws.run_command(tilegraph, bench, work, threads, warmup, iters))
    for peer in PEERS_BY_DEVICE[bench.device.kind]:
        out["commands"][f"peer {peer} (after run)"] = ws.shell_line(
            ws.peer_command(peer, bench, work, threads, warmup, iters))
    out["artifacts"]["run"] = str(ws.run_dir(bench, work))


def text(info: dict) -> str:
    """The human-readable form of :func:`explain`'s dict."""
    lines = [f"{info['id']}: {info['name']}", f"  kind      {info['kind']} benchmark"]
    m = info["model"]
    lines.append(f"  model     {m['name']} ({m['id']}): {m['onnx']}")
    if m["inputs"]:
        lines.append(f"            inputs {', '.join(m['inputs'])}")
    lines.append(f"            tags {', '.join(m['tags'])}")
    c = info["compile"]
    lines.append(f"  compile   {c['config']}: tilegraph tune {' '.join(c['flags'])} (compile benchmark {c['benchmark']})")
    if "run" in info:
        r, d = info["run"], info["device"]
        lines.append(f"  run       {r['config']} ({r['name']}): threads {r['threads']}, cpus {r['cpus']}, "
                     f"warmup {r['warmup']}, iters {r['iters']}")
        lines.append(f"  device    {d['id']} ({d['kind']}): {d['description']}; here: {d['here']}")
    lines.append("  reproduce:")
    for what, cmd in info["commands"].items():
        lines.append(f"    # {what}\n    {cmd}")
    lines.append("  artifacts:")
    for what, path in info["artifacts"].items():
        lines.append(f"    {what:15s} {path}")
    for what, rec in info.get("recorded", {}).items():
        lines.append(f"  recorded {what}: {_recorded_summary(rec)}")
    return "\n".join(lines) + "\n"


def _recorded_summary(rec: dict) -> str:
    parts = [rec.get("status", "?")]
    if "latency_ns" in rec:
        parts.append(f"median {rec['latency_ns']['median'] / 1e6:.4g} ms")
    for peer, ratio in rec.get("peer_ratio", {}).items():
        parts.append(f"{peer}/tilegraph {ratio:.2f}")
    if "kernels" in rec:
        parts.append(f"{rec['kernels']} kernels, compile {rec['seconds']['total']:.2f} s")
    return ", ".join(parts)
