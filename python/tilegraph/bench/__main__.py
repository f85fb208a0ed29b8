"""python -m tilegraph.bench VERB: export, run, compare, explain, dashboard, resources.

    python -m tilegraph.bench export [--preset x86_64] [--model ID]... [--benchmark ID]... [--shards N --shard K] > configs.json
    python -m tilegraph.bench run configs.json --out results.json [--work DIR] [--warmup N] [--iters N] [-j N] [--only ID]...
                                  [--executor ray [--address HOST:PORT] [--device-resource DEVICE=RESOURCE]...]
                                  [--compiler-launcher sccache [--sccache-dir DIR]]
    python -m tilegraph.bench resources                                          # this machine's Ray resources (JSON)
    python -m tilegraph.bench compare BASE.json TARGET.json [--changed-only] [--timing-threshold F]  # exit 1 if anything regressed
    python -m tilegraph.bench explain BENCHMARK_ID [--configs FILE] [--results FILE] [--work DIR] [--json]
    python -m tilegraph.bench dashboard RESULTS.json... --out DIR                 # DIR/index.html

Exit status: 0 success; 1 a regression (compare) or a failed benchmark (run);
2 a usage error (bad file, unknown preset or ID), reported in one line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from .. import _common
from . import compare as cmp
from . import dashboard, explain, presets, run
from . import results as res
from . import suite as suite_file
from .compile_step import CompileSettings
from .devices import usable_cpus
from .run_step import RunSettings
from .workspace import default_work_dir


class UsageError(Exception):
    pass


def non_negative_fraction(text: str) -> float:
    """A relative change such as 0.05 (5%), for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a relative change such as 0.5 (50%), got '{text}'")
    return value


def cmd_export(args) -> int:
    suite = presets.preset(args.preset)
    if args.model:
        suite = suite.only_models(args.model)
    if args.benchmark:
        suite = suite.only_benchmarks(args.benchmark)
    if not (suite.compile_benchmarks or suite.run_benchmarks):
        raise UsageError(f"preset {args.preset!r} has no benchmark matching the --model/--benchmark filters")
    suite = suite.shard(args.shard, args.shards)
    json.dump(suite_file.to_json(suite, args.preset, (args.shard, args.shards)), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def _tilegraph_bin() -> Path:
    """The CLI; waits a little if it is missing, since a concurrent relink removes it briefly."""
    for _ in range(10):
        found = _common.find_tilegraph_bin()
        if found:
            return found
        time.sleep(1)
    raise UsageError("tilegraph CLI not found: build it (scripts/build.sh) or set TILEGRAPH_BIN")


def cmd_run(args) -> int:
    data = json.loads(Path(args.configs).read_text())
    suite = suite_file.from_json(data)
    if args.only:
        suite = suite.only_benchmarks(args.only)
        if not (suite.compile_benchmarks or suite.run_benchmarks):
            raise UsageError(f"{args.configs} has no benchmark {', '.join(args.only)}")
    work = Path(args.work).resolve()
    tilegraph = _tilegraph_bin()
    compile_settings = CompileSettings(tilegraph, work, args.jobs or usable_cpus(), args.compiler_launcher or "")
    run_settings = RunSettings(tilegraph, work, args.warmup, args.iters, with_peers=not args.no_peers)
    env = {"SCCACHE_DIR": str(Path(args.sccache_dir).resolve())} if args.sccache_dir else {}
    if args.executor == "ray":
        from . import ray_executor, resources
        options = ray_executor.FarmOptions(
            address=args.address, device_resources=resources.parse_overrides(args.device_resource),
            device_wait_s=args.device_wait, max_retries=args.max_retries,
            artifact_limit_bytes=args.artifact_limit_mb << 20, compile_anywhere=args.compile_anywhere, env=env)
        results = ray_executor.run_suite_on_ray(suite, compile_settings, run_settings, Path(args.out), options,
                                                preset=data.get("preset", ""))
    else:
        if args.address or args.device_resource:
            raise UsageError("--address and --device-resource need --executor ray")
        os.environ.update(env)  # tune's children inherit it (sccache reads SCCACHE_DIR when its server starts)
        results = run.run_suite(suite, compile_settings, run_settings, Path(args.out), preset=data.get("preset", ""))
    print(f"wrote {args.out}", file=sys.stderr)
    return 1 if run.any_failed(results) else 0


def cmd_resources(args) -> int:
    from . import resources
    sys.stdout.write(json.dumps(resources.local_resources(), sort_keys=True) + "\n")
    return 0


def cmd_compare(args) -> int:
    base, target = res.load(args.base), res.load(args.target)
    rows = cmp.compare(base, target, args.timing_threshold)
    sys.stdout.write(cmp.markdown(rows, cmp.label(base, args.base), cmp.label(target, args.target),
                                  changed_only=args.changed_only, timing_threshold=args.timing_threshold))
    return 1 if cmp.any_regressed(rows) else 0


def cmd_explain(args) -> int:
    try:
        bench, suite_command = explain.find(args.benchmark_id, args.configs)
    except LookupError as e:
        raise UsageError(str(e)) from None
    work, record, compile_record = Path(args.work), None, None
    if args.results:
        data = res.load(args.results)
        work = Path(data.get("work_dir") or work)
        record = data["benchmarks"].get(bench.id)
        compile_id = record["compile_id"] if record else bench.id
        compile_record = data["compile"].get(compile_id)
    info = explain.explain(bench, suite_command, work, record, compile_record)
    sys.stdout.write(json.dumps(info, indent=1) + "\n" if args.json else explain.text(info))
    return 0


def cmd_dashboard(args) -> int:
    page = dashboard.write_dashboard(args.results, Path(args.out))
    print(f"wrote {page}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tilegraph.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="verb", required=True)

    e = verbs.add_parser("export", help="print a preset's run configs as JSON")
    e.add_argument("--preset", default="x86_64", choices=list(presets.PRESETS))
    e.add_argument("--model", action="append", help="keep only this model ID (repeatable)")
    e.add_argument("--benchmark", action="append", help="keep only this benchmark ID (repeatable)")
    e.add_argument("--shards", type=int, default=1)
    e.add_argument("--shard", type=int, default=0, help="which shard, 0-based")
    e.set_defaults(fn=cmd_export)

    r = verbs.add_parser("run", help="run a config file, write results.json")
    r.add_argument("configs")
    r.add_argument("--out", required=True)
    r.add_argument("--work", default=str(default_work_dir()), help="artifacts folder (default: %(default)s)")
    r.add_argument("--warmup", type=int, help="override every run config's warmup iterations")
    r.add_argument("--iters", type=int, help="override every run config's timed iterations")
    r.add_argument("-j", "--jobs", type=int, help="parallel build jobs for tune (default: all cores)")
    r.add_argument("--only", action="append", help="run only this benchmark ID (repeatable)")
    r.add_argument("--no-peers", action="store_true", help="do not time onnxruntime / PyTorch")
    r.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local (default): one step after another here; ray: on a Ray cluster (docs/farm.md)")
    r.add_argument("--address", help="ray: the head node's HOST:PORT (default: $RAY_ADDRESS, else a private one-node cluster here)")
    r.add_argument("--device-resource", action="append", metavar="DEVICE_ID=RESOURCE",
                   help="ray: the custom resource a device spec's run steps need (default: the head's CPU "
                        "architecture for cpu, gpu, arm64); repeatable")
    r.add_argument("--device-wait", type=float, default=60.0, metavar="S",
                   help="ray: seconds a run step waits for a worker with its resource before it is skipped")
    r.add_argument("--max-retries", type=int, default=3, help="ray: re-runs of a step whose worker died")
    r.add_argument("--artifact-limit-mb", type=int, default=1024,
                   help="ray: largest compiled project passed through the object store")
    r.add_argument("--compile-anywhere", action="store_true",
                   help="ray: the workers' CPUs are alike, so a host-arch project (-march=native) may compile on "
                        "any node, not only on one with its run steps' resource")
    r.add_argument("--compiler-launcher", help="tune --compiler-launcher (e.g. sccache)")
    r.add_argument("--sccache-dir", help="SCCACHE_DIR for the compiles (a folder every worker shares)")
    r.set_defaults(fn=cmd_run)

    c = verbs.add_parser("compare", help="markdown table of changes; exit 1 if anything regressed")
    c.add_argument("base")
    c.add_argument("target")
    c.add_argument("--changed-only", action="store_true", help="leave out the rows that are similar")
    c.add_argument("--timing-threshold", type=non_negative_fraction, metavar="F",
                   help="relative change of latency and compile time that counts (default 0.05 and 0.25): "
                        "wider for results from different machines or loads, e.g. 1.0")
    c.set_defaults(fn=cmd_compare)

    x = verbs.add_parser("explain", help="how to reproduce one benchmark")
    x.add_argument("benchmark_id")
    x.add_argument("--configs", help="config file to look the ID up in (default: every preset)")
    x.add_argument("--results", help="results file: show what was recorded, use its work folder")
    x.add_argument("--work", default=str(default_work_dir()))
    x.add_argument("--json", action="store_true")
    x.set_defaults(fn=cmd_explain)

    d = verbs.add_parser("dashboard", help="static HTML page of results over commits")
    d.add_argument("results", nargs="+")
    d.add_argument("--out", required=True, help="folder for index.html")
    d.set_defaults(fn=cmd_dashboard)

    rs = verbs.add_parser("resources", help="this machine's custom resources, for ray start --resources")
    rs.set_defaults(fn=cmd_resources)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (UsageError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
