#!/usr/bin/env python3
"""Median latency of compiled models vs onnxruntime, measured in the same run.

    PYTHONPATH=python python3 benchmarks/cpu_vs_onnxruntime.py PREFIX [PREFIX ...]
        [--threads 1 2] [--iters 20] [--warmup 3] [--busy-core] [--ort-spin on|off] [--settle-ms 100]
        [--wake-ms 20]

Each PREFIX must have been tuned (`tilegraph tune PREFIX`). Both engines get the
same seeded inputs (tilegraph.test_acc's generator) and the same thread count;
runs alternate between the engines so machine noise hits both alike. Each timed
run follows a pause (--settle-ms) and untimed runs of the same engine for at
least --wake-ms (at least one run):
- the pause, because both engines' threads spin for a while after a run
  (onnxruntime's for 20-50 ms on an Intel Xeon VM), and in one process those
  spinning threads took the cores the other engine's next run needed (ResNet-50
  at 2 threads: tilegraph 40.9 ms right after onnxruntime, 28.7 ms after 50 ms);
- the untimed runs, because after the pause an engine's own threads sleep, which
  the first run pays for (the same model: 32-40 ms), where back-to-back runs,
  which is what each engine takes alone, do not (28.5 ms). One run was not
  enough for the small models: MobileNetV2 (opset 17), one thread, took 5.05 ms
  (tilegraph) and 5.06 (onnxruntime) as the second run after the pause, 4.40
  and 4.65 as the fourth, 4.37 and 4.66 back to back; 20 ms of runs reach the
  back-to-back times (the caches and the core's clock recover, not only the
  threads).
Prints, per
thread count, a table with medians and the ratio onnxruntime / tilegraph (> 1:
tilegraph faster) and the geometric mean of the ratios.

--busy-core measures every configuration twice: quiet, and while a busy loop
(another process, bounded to --busy-seconds) holds core 0, as on a user's
machine that is doing something else. Both engines run under the same load; the
table adds each engine's slowdown (busy / quiet) and their ratio
(onnxruntime's slowdown / tilegraph's: below 1, tilegraph suffers more).
Quiet and busy runs are paired: every round times both engines quiet, then
resumes the busy loop (SIGCONT; SIGSTOP pauses it) and times both again, and
an engine's slowdown is the median of its rounds' busy / quiet. Measured as
two phases (all quiet rounds, then all busy ones), a shift of the shared
machine's speed between the phases (on this 2-vCPU VM, two-thread runs of
MobileNetV2 alone went from 4.5 to 7-10 ms and back within a minute) moved
the slowdowns by more than the effect measured.
A benchmark, not a test: it asserts nothing.
"""
import argparse
import math
import multiprocessing
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import onnxruntime as ort

from tilegraph.runner import CompiledModel
from tilegraph.inputs import generate_inputs, load_input_ranges, model_inputs


def median_ms(fn, iters):
    samples = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def _spin(seconds):
    """The busy loop of --busy-core: pinned to core 0, ends by itself."""
    try:
        os.sched_setaffinity(0, {0})
    except (AttributeError, OSError):
        pass
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


class BusyCore:
    """A process holding core 0 for at most `seconds` while the block runs;
    pause() and resume() stop and continue it (SIGSTOP, SIGCONT)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        self.proc = multiprocessing.Process(target=_spin, args=(self.seconds,), daemon=True)
        self.proc.start()
        time.sleep(0.2)  # let it take the core
        return self

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def __exit__(self, *exc):
        self.resume()  # a stopped process does not act on SIGTERM until continued
        self.proc.terminate()
        self.proc.join(5)


def wake(run, wake_s):
    """Untimed runs for at least wake_s seconds (at least one)."""
    end = time.perf_counter() + wake_s
    run()
    while time.perf_counter() < end:
        run()


def measure(compiled, sess, feeds, iters, warmup, settle_s, wake_s, busy=None):
    """Per engine (tilegraph, onnxruntime), the times of interleaved single
    runs in ms, each after settle_s seconds in which the other engine's threads
    go idle and wake_s seconds of untimed runs that wake the engine's own.
    Without `busy`: ([tilegraph ms], [onnxruntime ms]), one per round. With a
    BusyCore: ([tilegraph quiet, busy pairs], [onnxruntime ...]), each
    round's quiet runs with the busy loop paused, then its busy runs."""
    for _ in range(warmup):
        sess.run(None, feeds)
        compiled.run(feeds)
    run_tg = lambda: compiled.run(feeds)  # noqa: E731
    run_ort = lambda: sess.run(None, feeds)  # noqa: E731

    def one_round():  # interleaved so noise hits both engines alike
        times = []
        for run in (run_tg, run_ort):
            time.sleep(settle_s)
            wake(run, wake_s)
            times.append(median_ms(run, 1))
        return times

    tg_ms, ort_ms = [], []
    for _ in range(iters):
        if busy is None:
            tg, ort_ = one_round()
            tg_ms.append(tg)
            ort_ms.append(ort_)
            continue
        busy.pause()
        quiet = one_round()
        busy.resume()
        loaded = one_round()
        tg_ms.append((quiet[0], loaded[0]))
        ort_ms.append((quiet[1], loaded[1]))
    return tg_ms, ort_ms


def quiet_busy_slowdown(pairs):
    """(median quiet ms, median busy ms, median of the rounds' busy / quiet)."""
    return (statistics.median(q for q, _ in pairs), statistics.median(b for _, b in pairs),
            statistics.median(b / q for q, b in pairs))


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefixes", nargs="+")
    ap.add_argument("--arch", default="host")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--busy-core", action="store_true", help="also measure while a busy loop holds core 0")
    ap.add_argument("--busy-seconds", type=float, default=600, help="upper bound of one busy loop")
    ap.add_argument("--ort-spin", choices=["on", "off"], default="on",
                    help="onnxruntime's intra-op threads spin between runs (its default: on); in one process "
                         "they then hold cores while tilegraph runs, which slows tilegraph's threads")
    ap.add_argument("--settle-ms", type=float, default=100,
                    help="pause before each timed run, so that the other engine's spinning threads are idle "
                         "(default 100; 0: back to back)")
    ap.add_argument("--wake-ms", type=float, default=20,
                    help="untimed runs of the engine after the pause, for at least this long (at least one run; "
                         "default 20)")
    args = ap.parse_args()
    if any(t < 1 for t in args.threads) or args.iters < 1 or args.warmup < 0 or args.settle_ms < 0 \
            or args.wake_ms < 0:
        ap.error("--threads and --iters must be >= 1, --warmup, --settle-ms and --wake-ms >= 0")
    settle_s = args.settle_ms / 1e3
    # Every prefix checked before the first measurement: a typo in the last of fifteen models
    # should not cost the minutes spent on the others.
    for prefix in map(Path, args.prefixes):
        if not (prefix / "model.onnx").is_file():
            ap.error(f"{prefix}: no model.onnx (a prefix is a directory made by torch2onnx or holding a model)")
        if not (prefix / "tilegraph_rt" / args.arch).is_dir():
            ap.error(f"{prefix}: no compiled project for --arch {args.arch} "
                     f"(run: tilegraph tune {prefix} --arch {args.arch})")

    for threads in args.threads:
        head = f"{'model':28s} {'tilegraph ms':>13s} {'onnxruntime ms':>15s} {'ort/tg':>7s}"
        if args.busy_core:
            head += f" {'busy tg ms':>11s} {'busy ort ms':>12s} {'busy ort/tg':>12s} {'slowdown tg':>12s}" \
                    f" {'slowdown ort':>13s} {'ort/tg slowdown':>16s}"
        print(f"\n== {threads} thread{'s' if threads > 1 else ''}\n{head}", flush=True)
        ratios, busy_ratios, robustness = [], [], []
        for prefix in map(Path, args.prefixes):
            model_path = prefix / "model.onnx"
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if args.ort_spin == "on" else "0")
            sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
            feeds = generate_inputs(model_inputs(model_path), seed=0, ranges=load_input_ranges(prefix))
            with CompiledModel(prefix, arch=args.arch, num_threads=threads) as compiled:
                timing = (args.iters, args.warmup, settle_s, args.wake_ms / 1e3)
                if not args.busy_core:
                    tg_ms, ort_ms = measure(compiled, sess, feeds, *timing)
                    tg, ref = statistics.median(tg_ms), statistics.median(ort_ms)
                else:
                    with BusyCore(args.busy_seconds) as busy:
                        tg_pairs, ort_pairs = measure(compiled, sess, feeds, *timing, busy=busy)
                    tg, btg, tg_slowdown = quiet_busy_slowdown(tg_pairs)
                    ref, bref, ort_slowdown = quiet_busy_slowdown(ort_pairs)
                line = f"{prefix.name:28s} {tg:13.3f} {ref:15.3f} {ref / tg:7.2f}"
                ratios.append(ref / tg)
                if args.busy_core:
                    busy_ratios.append(bref / btg)
                    robustness.append(ort_slowdown / tg_slowdown)
                    line += f" {btg:11.3f} {bref:12.3f} {bref / btg:12.2f} {tg_slowdown:12.2f}" \
                            f" {ort_slowdown:13.2f} {robustness[-1]:16.2f}"
            print(line, flush=True)
        summary = f"{'geomean':28s} {'':13s} {'':15s} {geomean(ratios):7.2f}"
        if args.busy_core:
            summary += f" {'':11s} {'':12s} {geomean(busy_ratios):12.2f} {'':12s} {'':13s} {geomean(robustness):16.2f}"
        print(summary, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
