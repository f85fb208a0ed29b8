"""Per-kernel times of a compiled model next to onnxruntime's per-node times.

    python -m tilegraph.kernels_vs_onnxruntime PREFIX [--threads 1] [--iters 10] [--rounds 1]
        [--top 30] [--ort-optimization all|basic|none] [--json FILE]

Where a model is slower than onnxruntime, this says which kernels lose the time.
Both engines run ``PREFIX/model.onnx`` on the same seeded inputs (test_acc's
generator) with the same thread count:

* tilegraph: the kernel profile of ``PREFIX/tilegraph_rt/<arch>/build/libmodel.so``,
  the median ms of each kernel over ``--iters`` runs (a mean, as ``tilegraph run
  --profile`` prints, charges a run in which another process held the core to
  whichever kernel was running then);
* onnxruntime: its session profile, the median ms per run of each node.

Each onnxruntime node is charged to the tilegraph kernel that computes the ONNX
node of the same name (a node split over several kernels, such as a conv whose
bias add fuses into the next kernel, to the first of them). onnxruntime's graph
optimizations rename the nodes they fuse or rewrite (``..._nchwc``,
``.../MatMulAddFusion``, ``Gelu_token_3``): the known suffixes are stripped, a
name that is then an output value's stands for the node producing it, and a
fused node ending in an activation or add (onnxruntime's conv + add + ReLU) for
the conv or GEMM feeding it. A node still without a kernel (a layout reorder, a
node onnxruntime created) is listed as unmatched with its time. Fusion differs between the engines (onnxruntime folds a
conv's residual add and ReLU into the conv, tilegraph may fuse them into the next
kernel), so one row can carry work the other engine counts elsewhere: read the
table by groups of neighbouring kernels, and the totals as the truth.
``--ort-optimization none`` keeps onnxruntime's nodes as in the file (every node
matches, but onnxruntime then runs slower than its default).

Rows are sorted by the time tilegraph loses (kernel ms - onnxruntime ms). Noise:
each engine runs for its own stretch of time, and a VM's speed drifts between
them (swin_t at one thread, three runs in a row: its 75 GEMM kernels at 0.83,
1.01 and 1.23x onnxruntime's MatMul nodes). ``--rounds N`` alternates the
engines N times and takes each time's median over the rounds, and prints each
round's totals so the drift shows.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

from tilegraph._common import UsageError
from tilegraph.inputs import generate_inputs, load_input_ranges, model_inputs
from tilegraph.runner import CompiledModel

# Suffixes onnxruntime's optimizers append to the node they keep or create.
_ORT_SUFFIXES = (
    re.compile(r"_nchwc$"),
    re.compile(r"_token_\d+$"),
    re.compile(r"/[A-Za-z0-9]*Fusion[A-Za-z0-9_]*(/.*)?$"),
    re.compile(r"_output_\d+$"),
    re.compile(r"_(quant|QuantizeLinear|DequantizeLinear)$"),
)

_OPTIMIZATION_LEVELS = ("all", "basic", "none")


# Ops onnxruntime fuses into the conv or GEMM that feeds them (FusedConv,
# the NCHWc conv's Sum and activation, FusedGemm).
_FUSED_INTO_PRODUCER = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "Tanh", "Add", "Sum",
                        "BatchNormalization"}
_HEAVY_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "ConvInteger", "MatMulInteger", "QLinearConv",
              "QLinearMatMul"}


class OnnxGraphNames:
    """The node names of an ONNX graph, which node produces each value, and the
    node an onnxruntime profile name stands for."""

    def __init__(self, model_path: Path):
        import onnx

        graph = onnx.load(str(model_path), load_external_data=False).graph
        self.nodes = {n.name: n for n in graph.node if n.name}
        self.producer = {out: n for n in graph.node for out in n.output if out}

    def _heavy_source(self, node):
        """The conv or GEMM onnxruntime fused NODE into: NODE itself when heavy,
        else (NODE an activation or add) the heavy node among its inputs'
        producers, one or two fused ops up; None when there is none."""
        frontier = [node]
        for _ in range(3):
            for n in frontier:
                if n.op_type in _HEAVY_OPS:
                    return n
            frontier = [self.producer[i] for n in frontier if n.op_type in _FUSED_INTO_PRODUCER
                        for i in n.input if i in self.producer]
        return None

    def node_of(self, ort_name: str) -> list:
        """The ONNX node names an onnxruntime profile node stands for, the most
        likely owner of its time first; [] when none is found.
          * its own name, when the model has that node;
          * else, with onnxruntime's suffixes stripped (`_nchwc`, `_token_3`,
            `/MatMulAddFusion...`), a node name or an output value's name (the
            NCHWc transformer names a fused node after its output value); such
            a renamed node that ends in an activation or add stands first for
            the conv or GEMM that feeds it."""
        if ort_name in self.nodes:
            return [ort_name]  # kept its name: not fused, or fused into it
        name = ort_name
        candidates = [name]
        for pattern in _ORT_SUFFIXES:
            stripped = pattern.sub("", name)
            if stripped != name:
                name = stripped
                candidates.append(name)
        for cand in candidates:
            node = self.nodes.get(cand) or self.producer.get(cand)
            if node is None:
                continue
            heavy = self._heavy_source(node) if node.op_type in _FUSED_INTO_PRODUCER else None
            return [n.name for n in (heavy, node) if n is not None and n.name]
        return []


def onnxruntime_node_ms(model_path: Path, feeds: dict, threads: int, iters: int,
                        optimization: str = "all") -> dict:
    """Median ms per run of each onnxruntime node over ``iters`` profiled runs,
    after two warm-up runs (the profile holds those too; they are dropped)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.graph_optimization_level = {
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    }[optimization]
    with tempfile.TemporaryDirectory(prefix="tg_ortprof_") as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])
        warmup = 2
        for _ in range(warmup + iters):
            sess.run(None, feeds)
        events = json.loads(Path(sess.end_profiling()).read_text())
    runs = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            runs[e["name"][: -len("_kernel_time")]].append(e["dur"] / 1000.0)
    return {name: statistics.median(times[warmup:] if len(times) > warmup else times)
            for name, times in runs.items()}


def compare(prefix: str | os.PathLike, threads: int = 1, iters: int = 10, arch: str = "host",
            optimization: str = "all", seed: int = 0, rounds: int = 1) -> dict:
    """Both profiles, and each kernel's rows: {"kernels": [...], "unmatched": {...},
    "tilegraph_total_ms", "onnxruntime_total_ms", "threads", "round_totals_ms"}; medians
    per run. With ``rounds`` > 1 the engines take turns, ``iters`` runs each per round,
    and each kernel's or node's time is the median of its per-round medians: the
    machine's speed drifts between one engine's minutes and the other's."""
    prefix = Path(prefix)
    model_path = prefix / "model.onnx"
    feeds = generate_inputs(model_inputs(str(model_path)), seed=seed, ranges=load_input_ranges(prefix))
    tg_rounds, ort_rounds, nodes_of = [], [], {}
    with CompiledModel(prefix, arch=arch, num_threads=threads) as compiled:
        for _ in range(rounds):
            profile = compiled.profile_runs(feeds, iters=iters)
            tg_rounds.append({name: statistics.median(runs) for name, runs, _ in profile})
            nodes_of = {name: nodes for name, _, nodes in profile}
            ort_rounds.append(onnxruntime_node_ms(model_path, feeds, threads, iters, optimization))
    kernels = [(name, statistics.median(r[name] for r in tg_rounds), nodes) for name, nodes in nodes_of.items()]
    ort_ms = {name: statistics.median(r.get(name, 0.0) for r in ort_rounds) for name in ort_rounds[0]}

    # A node split over several kernels (a conv whose bias add and ReLU fuse
    # into the next kernel) is charged to the first: the one that starts its
    # main work (the GEMM).
    owner = {}
    for i, (_, _, nodes) in enumerate(kernels):
        for node in nodes:
            owner.setdefault(node, i)
    names = OnnxGraphNames(model_path)
    charged = [0.0] * len(kernels)
    unmatched = {}
    for ort_name, ms in ort_ms.items():
        kernel = next((owner[n] for n in names.node_of(ort_name) if n in owner), None)
        if kernel is None:
            unmatched[ort_name] = ms
        else:
            charged[kernel] += ms
    rows = [{"kernel": name, "tilegraph_ms": ms, "onnxruntime_ms": charged[i],
             "loss_ms": ms - charged[i], "nodes": list(dict.fromkeys(nodes))}
            for i, (name, ms, nodes) in enumerate(kernels)]
    return {"threads": threads, "iters": iters, "rounds": rounds, "onnxruntime_optimization": optimization,
            "round_totals_ms": [{"tilegraph": sum(t.values()), "onnxruntime": sum(o.values())}
                                for t, o in zip(tg_rounds, ort_rounds)],
            "tilegraph_total_ms": sum(r["tilegraph_ms"] for r in rows),
            "onnxruntime_total_ms": sum(ort_ms.values()),
            "kernels": rows, "unmatched": unmatched}


def format_table(result: dict, top: int) -> str:
    rows = sorted(result["kernels"], key=lambda r: -r["loss_ms"])
    rounds = result.get("rounds", 1)
    lines = [f"{result['threads']} thread(s), {result['iters']} runs each"
             + (f" in each of {rounds} alternated rounds (medians of the rounds' medians)" if rounds > 1 else "")
             + f"; onnxruntime graph optimization: {result['onnxruntime_optimization']}",
             f"tilegraph kernels {result['tilegraph_total_ms']:.3f} ms, onnxruntime nodes "
             f"{result['onnxruntime_total_ms']:.3f} ms (both summed per run)"]
    if rounds > 1:
        lines.append("per round, tilegraph / onnxruntime ms: " + ", ".join(
            f"{t['tilegraph']:.1f} / {t['onnxruntime']:.1f}" for t in result["round_totals_ms"]))
    if result["unmatched"]:
        worst = sorted(result["unmatched"].items(), key=lambda kv: -kv[1])
        lines.append(f"onnxruntime nodes without a kernel: {sum(result['unmatched'].values()):.3f} ms: "
                     + ", ".join(f"{n}={ms:.3f}" for n, ms in worst[:8])
                     + (f" (+{len(worst) - 8} more)" if len(worst) > 8 else ""))
    lines.append(f"{'kernel':28s} {'tilegraph ms':>12s} {'ort ms':>9s} {'lost ms':>9s}  onnx nodes")
    for r in rows[:top]:
        nodes = " ".join(r["nodes"])
        lines.append(f"{r['kernel']:28s} {r['tilegraph_ms']:12.3f} {r['onnxruntime_ms']:9.3f} "
                     f"{r['loss_ms']:9.3f}  {nodes[:80]}{'...' if len(nodes) > 80 else ''}")
    if len(rows) > top:
        lines.append(f"... {len(rows) - top} more kernels (--top N)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilegraph.kernels_vs_onnxruntime",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", help="a tuned model directory (PREFIX/model.onnx, PREFIX/tilegraph_rt)")
    ap.add_argument("--arch", default="host")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=10, help="profiled runs per engine (per round)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate the engines this many times and take medians over the rounds "
                         "(this machine's speed drifts between one engine's run and the other's)")
    ap.add_argument("--top", type=int, default=30, help="rows to print, most time lost first")
    ap.add_argument("--seed", type=int, default=0, help="input seed (test_acc's generator)")
    ap.add_argument("--ort-optimization", choices=_OPTIMIZATION_LEVELS, default="all",
                    help="onnxruntime's graph optimization level (none: its nodes are the file's)")
    ap.add_argument("--json", metavar="FILE", help="also write every row as JSON")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.iters < 1 or args.rounds < 1 or args.top < 0:
        ap.error("--threads, --iters and --rounds must be at least 1, --top at least 0")
    if not (Path(args.prefix) / "model.onnx").is_file():
        ap.error(f"{args.prefix}: no model.onnx (tune the model first: tilegraph tune PREFIX)")
    try:
        result = compare(args.prefix, args.threads, args.iters, args.arch, args.ort_optimization, args.seed,
                         args.rounds)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_table(result, args.top))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
