"""How well the cost model ranks tile configs on this machine: top-1 vs the profiled best.

    python3 benchmarks/cost_model_accuracy.py [--models vit_small,bert_small,NAFNet_small,q:cnn_qdq,...] \
        [--topk 8] [--repeats 3] [--threads N] [--work build/cost_model_accuracy] [--arch-file FILE] [--json OUT]
    python3 benchmarks/cost_model_accuracy.py --rescore SAVED.json [--work DIR] [--arch-file FILE]

For each model, `tilegraph tune PREFIX --profile-topk on --topk K` times the cost
model's K best tile configs of every kernel with more than one candidate (kernels
of the same tiling problem once: the distinct problems are the rows). Per
problem: the cost model's first choice's measured time / the fastest measured
one (1.0: the model picked the best). With --repeats N the profile is taken N
times (profile_cache.json removed in between) and each candidate's median is
used, since a shared machine is noisy.

The fastest of K noisy medians is biased low (the winner's curse: on this VM
more repeats gave worse scores, docs/cost_model_accuracy.md), so with
--repeats of 2 or more each row also has a held-out ratio: the best candidate
chosen on the odd-numbered repeats, both it and the top-1 timed on the even
ones (their medians); "held out" in the summary. --threads N runs the candidates on N
OpenMP threads (OMP_NUM_THREADS) and, without --arch-file, tunes with the built-in
host spec for N cores (`tilegraph arch --cores N --json`): a spec of all the machine's
cores charges a one-tile candidate for the cores it leaves idle, which a one-thread
run does not have (a calibrated spec: `tilegraph calibrate --cores N -o FILE`,
--arch-file FILE). Prefer --threads 1: on a machine
with more runnable processes than cores, every parallel region of two or more
threads waits for the scheduler (milliseconds) and hides the kernels' own
times. Prints per model and overall: the problems, the geometric mean of
top-1 / best and the fraction within 10%.

--rescore SAVED.json [--threads N] scores the current cost model against the measurements a
previous --json run saved, without profiling again (seconds instead of minutes,
and without the machine's noise between the two): each model is tuned without
profiling or building, and each saved kernel's new top-1 is looked up among its
saved candidates (a kernel that now picks a config that was not profiled, or
that no longer exists because fusion changed, is listed as unscored). For trying
a cost model change; the measured run stays the reference.

Models: a name under models/ (its model.onnx), a path to an .onnx file (a
full-size export from torch2onnx, say; its PREFIX under --work is named after
the file's folder), or q:NAME for one of the
quantized models tests/quantized/make_quantized_models.py writes (int8
matmuls run on the int8 micro-kernel, which has no tile candidates; their
other kernels are profiled). Not a test: timing is noisy on a shared box.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = "vit_small,bert_small,mobilenet_small,NAFNet_small,q:cnn_qdq,q:attn_qdq"


def tilegraph_bin() -> str:
    sys.path.insert(0, str(REPO / "python"))
    from tilegraph._common import find_tilegraph_bin  # noqa: E402
    return find_tilegraph_bin() or str(REPO / "build/bin/tilegraph")


def prepare(model: str, work: Path) -> Path:
    """PREFIX holding MODEL's model.onnx under WORK."""
    name = Path(model).parent.name if model.endswith(".onnx") else model.replace(":", "_")
    prefix = work / name
    prefix.mkdir(parents=True, exist_ok=True)
    if model.startswith("q:"):
        quantized = work / "quantized"
        if not (quantized / model[2:] / "model.onnx").exists():
            subprocess.run([sys.executable, str(REPO / "tests/quantized/make_quantized_models.py"), str(quantized)],
                           check=True, stdout=subprocess.DEVNULL)
        shutil.copy(quantized / model[2:] / "model.onnx", prefix / "model.onnx")
    elif model.endswith(".onnx"):
        shutil.copy(model, prefix / "model.onnx")
    else:
        shutil.copy(REPO / "models" / model / "model.onnx", prefix / "model.onnx")
    return prefix


def profiled_problems(manifest: dict) -> dict:
    """{problem: (configs, [seconds per candidate])}: kernels with a profile, those of
    one tiling problem (the same candidates and times, shared through
    profile_cache.json) once."""
    problems = {}
    for k in manifest["kernels"]:
        if "profile" not in k:
            continue
        configs = tuple(c["config"] for c in k["profile"])
        times = [c["measured_ms"] for c in k["profile"]]
        problems.setdefault((configs, tuple(times)), (k["name"], configs, times))
    return {name: (configs, times) for name, configs, times in problems.values()}


def run_tune(tg: str, prefix: Path, flags: list[str], arch_file: str | None, env: dict | None = None) -> dict:
    """`tilegraph tune PREFIX FLAGS [--arch-file]`; the host project's manifest."""
    cmd = [tg, "tune", str(prefix), *flags]
    if arch_file:
        cmd += ["--arch-file", arch_file]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return json.loads((prefix / "tilegraph_rt/host/manifest.json").read_text())


def tune_once(tg: str, prefix: Path, topk: int, arch_file: str | None, threads: int | None) -> dict:
    (prefix / "tilegraph_rt/host/profile_cache.json").unlink(missing_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None
    return run_tune(tg, prefix, ["--profile-topk", "on", "--topk", str(topk)], arch_file, env)


def current_picks(tg: str, prefix: Path, arch_file: str | None) -> dict:
    """{kernel: config} the cost model picks now (tune without profiling or building)."""
    manifest = run_tune(tg, prefix, ["--no-build"], arch_file)
    return {k["name"]: k["launch"]["config"] for k in manifest["kernels"] if "launch" in k}


def spec_for_threads(tg: str, threads: int, work: Path) -> str:
    """The built-in host spec as for THREADS cores, written under WORK: its file."""
    spec = work / f"host_{threads}_cores.json"
    cmd = [tg, "arch", "--cores", str(threads), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    work.mkdir(parents=True, exist_ok=True)
    spec.write_text(r.stdout)
    print(f"spec: the built-in host spec for {threads} core{'s' if threads > 1 else ''} ({spec})")
    return str(spec)


def rescore(tg: str, saved: dict, work: Path, arch_file: str | None) -> None:
    """Scores the current picks against a saved run's measurements (--rescore)."""
    everything, unscored = [], 0
    for model, rows in saved.items():
        picks = current_picks(tg, prepare(model, work), arch_file)
        ratios = []
        print(f"\n{model}:")
        for row in rows:
            configs, times = row["configs"], row["measured_ms"]
            pick = picks.get(row["kernel"])
            if pick not in configs or times[configs.index(pick)] <= 0:
                unscored += 1
                print(f"       -  {row['kernel'][:50]}: now {pick or 'not a kernel (fused otherwise)'}, not profiled")
                continue
            ratio = times[configs.index(pick)] / min(t for t in times if t > 0)
            ratios.append(ratio)
            was = "" if pick == configs[0] else f"  (was {configs[0]}: {row['top1_over_best']:.3f})"
            print(f"  {ratio:6.3f}  {row['kernel'][:50]}: {pick}{was}")
        print(f"  {summary(ratios)}")
        everything += ratios
    print(f"\nall: {summary(everything)}; {unscored} unscored")


def top1_over_best(times: list[float]) -> float | None:
    measured = [t for t in times if t > 0]
    if times[0] <= 0 or not measured:
        return None
    return times[0] / min(measured)


def held_out_ratio(per_run: list[list[float]]) -> float | None:
    """Top-1 / best where the best is chosen on repeats 0, 2, 4, ... and both are
    timed on repeats 1, 3, 5, ... (medians); None with fewer than two repeats."""
    if len(per_run) < 2:
        return None
    choose = [statistics.median(ts) for ts in zip(*per_run[0::2])]
    timed = [statistics.median(ts) for ts in zip(*per_run[1::2])]
    best = min(range(len(choose)), key=lambda c: choose[c] if choose[c] > 0 else math.inf)
    if timed[0] <= 0 or timed[best] <= 0:
        return None
    return timed[0] / timed[best]


def summary(ratios: list[float]) -> str:
    if not ratios:
        return "no profiled kernels"
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    within = sum(r <= 1.10 for r in ratios) / len(ratios)
    return f"{len(ratios)} kernels, geomean top-1/best {geomean:.3f}, within 10%: {100 * within:.0f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", default=str(REPO / "build/cost_model_accuracy"))
    ap.add_argument("--arch-file", default=None, help="a calibrated arch spec (tilegraph calibrate)")
    ap.add_argument("--threads", type=int, default=None, help="OpenMP threads of the profiled candidates")
    ap.add_argument("--json", default=None, help="also write the per-kernel numbers here")
    ap.add_argument("--rescore", default=None, metavar="SAVED.json",
                    help="score the current cost model's picks against a saved --json run, without profiling")
    args = ap.parse_args()
    tg = tilegraph_bin()
    work = Path(args.work)
    if args.threads is not None and args.threads < 1:
        sys.exit("--threads must be at least 1")
    if args.threads and not args.arch_file:
        args.arch_file = spec_for_threads(tg, args.threads, work)
    if args.rescore:
        rescore(tg, json.loads(Path(args.rescore).read_text()), work, args.arch_file)
        return
    everything, everything_held_out, report = [], [], {}
    for model in args.models.split(","):
        prefix = prepare(model, work)
        runs = [profiled_problems(tune_once(tg, prefix, args.topk, args.arch_file, args.threads)) for _ in range(args.repeats)]
        ratios, held_out, rows = [], [], []
        for name, (configs, times) in runs[0].items():
            # The same problem in every repeat: the same kernel name and candidates
            # (they depend on the cost model only; a repeat that fused differently
            # does not count for this kernel).
            per_run = [r[name][1] for r in runs if name in r and r[name][0] == configs]
            median = [statistics.median(ts) for ts in zip(*per_run)]
            ratio = top1_over_best(median)
            if ratio is None:
                continue
            ratios.append(ratio)
            held = held_out_ratio(per_run)
            if held is not None:
                held_out.append(held)
            best = min(range(len(median)), key=lambda c: median[c] if median[c] > 0 else math.inf)
            rows.append({"kernel": name, "top1_over_best": ratio, "held_out": held, "best_rank": best,
                         "configs": list(configs), "measured_ms": median, "repeats": len(per_run)})
        everything += ratios
        everything_held_out += held_out
        report[model] = rows
        print(f"\n{model}: {summary(ratios)}")
        if held_out:
            print(f"  held out: {summary(held_out)}")
        for row in sorted(rows, key=lambda r: -r["top1_over_best"]):
            held = f"{row['held_out']:6.3f}" if row["held_out"] is not None else "     -"
            print(f"  {row['top1_over_best']:6.3f} {held}  best is #{row['best_rank']:<2d} {row['kernel'][:70]}")
    print(f"\nall: {summary(everything)}")
    if everything_held_out:
        print(f"all, held out: {summary(everything_held_out)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
