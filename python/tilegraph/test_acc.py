"""Check a compiled model against onnxruntime on seeded random inputs.

    python -m tilegraph.test_acc PREFIX [--arch host] [--seed 0] [--rtol 1e-4]
        [--inputs DIR] [--input-shape NAME=1x128 ...] [--runner auto|ctypes|cli]

Steps:

1. Inputs. One array per graph input of ``PREFIX/model.onnx`` (initializers that
   are also listed as inputs are skipped), drawn in graph-input order from one
   ``numpy.random.default_rng(seed)``: floats uniform in [-1, 1); integers uniform
   in [0, 2) unless ``PREFIX/input_ranges.json`` gives ``{"name": [low, high)}``
   (torch2onnx writes it: token ids, lengths ...); bools uniform in {False, True}.
   The same seed gives byte-identical inputs. Shapes are the model's; a symbolic
   dimension takes its size from ``--input-shape``, else from the compiled model,
   else 1. With ``--inputs DIR`` the inputs are read from ``DIR/NAME.npy`` instead.
   They are written to ``PREFIX/test_acc/inputs/NAME.npy``.
2. Reference: onnxruntime, CPU execution provider, default session options.
   Written to ``PREFIX/test_acc/expected/``.
3. Compiled model: ``PREFIX/tilegraph_rt/<arch>/build/libmodel.so`` through ctypes
   (:mod:`tilegraph.runner`), or ``tilegraph run PREFIX --arch A --inputs ...
   --outputs ... --warmup 0 --iters 1`` (``--runner cli``; ``auto`` uses ctypes
   when the library loads in this process, else the CLI: an ARM project
   cross-compiled on x86 runs its main_test under qemu-aarch64, its input shapes
   read from ``manifest.json``). Written to
   ``PREFIX/test_acc/outputs/``. NAME is the ONNX value name with every character
   outside ``[A-Za-z0-9_.-]`` replaced by ``_``.

Tolerance. Per output, with ``a`` the compiled result and ``b`` onnxruntime's:

* ``max_abs = max |a - b|``
* ``max_rel = max ( |a - b| / max(|b|, 1) )`` elementwise, in float64 -- Welder's
  test_acc metric: a relative error for values above 1 in magnitude, an absolute
  one below.
* A floating output passes when ``max_rel <= rtol``. The default ``rtol`` is 1e-4
  (fp32/fp64 outputs: room for a different summation order and fused multiply-add
  over a few thousand-term reductions) and 1e-2 for fp16 outputs; ``--rtol``
  sets one value for all. NaN matches NaN and +-inf matches the same infinity at
  the same position; any other non-finite mismatch is an infinite error.
* Integer and bool outputs must match exactly (their max_rel is reported too).
* Dynamic quantization (a model with DynamicQuantizeLinear) has no single right
  answer: each DynamicQuantizeLinear re-rounds its input to a scale computed from
  that input, so a one-ulp difference upstream can move a value to the next
  quantum, and layers amplify it. onnxruntime disagrees with itself by as much:
  on a ViT-B/16 its optimized and unoptimized graphs differ by 2e-2 to 5e-2
  depending on the seed, and its output moves by up to 6e-2 when every input
  element moves by one ulp. Unless ``--rtol`` is given, such a model's floating
  outputs are held to ``max(default, 2 x spread)``, where ``spread`` is the
  largest max_rel between onnxruntime's reference output and (a) its other
  graph-optimization level on the same inputs, (b) its output for the inputs
  moved one ulp up, (c) one ulp down (each run-time scale comes from a min or
  max, so moving every element shifts the scales too): tilegraph may differ from
  onnxruntime at most twice as much as onnxruntime differs from itself under
  rounding-sized changes. One sample alone (the levels) is a noisy measure of
  that floor: it ranged 2.2e-2 to 4.7e-2 over six seeds of the ViT.
* ``--float-reference FLOAT.onnx`` (the float model a quantized one was made
  from) judges a quantized model by what quantization is for: a floating output
  passes when its max_rel against the float model is no larger than the larger
  of onnxruntime's two graph-optimization levels' (or the default rtol). The
  error against onnxruntime is still printed.
* A shape or missing-output mismatch fails.

Exit status: 0 all outputs pass, 1 some output fails, 2 usage error (missing
``PREFIX/model.onnx`` or compiled project -- "run `tilegraph tune PREFIX` first").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ._common import UsageError, find_tilegraph_bin, project_dir, sanitize_name
from .runner import CompiledModel
from .inputs import (generate_inputs, load_input_ranges, load_model, load_npy, model_inputs, parse_shape_overrides,
                     resolve_shape, save_npy)

DEFAULT_RTOL = 1e-4
DEFAULT_RTOL_FP16 = 1e-2


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    name: str
    shape: tuple
    dtype: str
    max_abs: float
    max_rel: float
    rtol: float
    ok: bool
    note: str = ""

    def line(self) -> str:
        status = "ok" if self.ok else "FAIL"
        shape = "x".join(str(d) for d in self.shape) or "scalar"
        s = (f"{status:4}  {self.name}  shape {shape} {self.dtype}  "
             f"max_abs {self.max_abs:.3e}  max_rel {self.max_rel:.3e}")
        if self.dtype.startswith(("int", "uint", "bool")):
            s += "  (exact)"
        else:
            s += f"  (rtol {self.rtol:g})"
        return s + (f"  {self.note}" if self.note else "")


def default_rtol(dtype) -> float:
    return DEFAULT_RTOL_FP16 if np.dtype(dtype) == np.float16 else DEFAULT_RTOL


def compare(name: str, actual, expected, rtol: float | None = None) -> Comparison:
    """Compares the compiled output ``actual`` with the reference ``expected``.

    max_abs = max|a-b|, max_rel = max(|a-b| / max(|b|, 1)); see the module docstring.
    """
    a = np.asarray(actual)
    b = np.asarray(expected)
    dtype = b.dtype
    tol = default_rtol(dtype) if rtol is None else float(rtol)
    if a.shape != b.shape:
        return Comparison(name, tuple(b.shape), str(dtype), float("inf"), float("inf"), tol,
                          False, f"shape mismatch: got {tuple(a.shape)}, expected {tuple(b.shape)}")
    note = ""
    if a.dtype != b.dtype:
        note = f"dtype {a.dtype}, expected {b.dtype}"
    if a.size == 0:
        return Comparison(name, tuple(b.shape), str(dtype), 0.0, 0.0, tol, not note, note)
    exact = dtype.kind in "biu"
    if exact:
        ai = a.astype(np.int64) if a.dtype.kind == "b" else a
        bi = b.astype(np.int64) if b.dtype.kind == "b" else b
        if max(np.abs(ai.astype(np.float64)).max(), np.abs(bi.astype(np.float64)).max()) > 2**53:
            # float64 cannot hold the difference exactly: take it in integers
            diff = np.abs(ai.astype(np.int64) - bi.astype(np.int64)).astype(np.float64)
        else:
            diff = np.abs(ai.astype(np.float64) - bi.astype(np.float64))
        rel = diff / np.maximum(np.abs(bi.astype(np.float64)), 1.0)
        equal = not note and bool(np.array_equal(a, b))
        if not note and not equal:
            note = f"{int(np.count_nonzero(ai != bi))} of {b.size} elements differ"
        return Comparison(name, tuple(b.shape), str(dtype), float(diff.max()), float(rel.max()),
                          tol, equal, note)
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a64 - b64)
        rel = diff / np.maximum(np.abs(b64), 1.0)
    finite = np.isfinite(a64) & np.isfinite(b64)
    if not finite.all():
        same_nan = np.isnan(a64) & np.isnan(b64)
        same_inf = np.isinf(a64) & np.isinf(b64) & (np.sign(a64) == np.sign(b64))
        matched = same_nan | same_inf
        bad = ~finite & ~matched
        diff = np.where(finite, diff, np.where(matched, 0.0, np.inf))
        rel = np.where(finite, rel, np.where(matched, 0.0, np.inf))
        if bad.any():
            note = (note + "; " if note else "") + f"{int(bad.sum())} non-finite mismatches"
    max_abs = float(diff.max())
    max_rel = float(rel.max())
    ok = max_rel <= tol and not note.startswith("dtype")
    return Comparison(name, tuple(b.shape), str(dtype), max_abs, max_rel, tol, ok, note)


def compare_all(actual: Mapping, expected: Mapping, rtol: float | Mapping | None = None) -> list:
    """One Comparison per expected output; an output missing from ``actual`` fails.
    ``rtol`` is one value for all outputs, or a mapping from output name to its
    tolerance (outputs it does not name take the default)."""
    results = []
    for name, b in expected.items():
        tol = rtol.get(name) if isinstance(rtol, Mapping) else rtol
        if name not in actual:
            b = np.asarray(b)
            results.append(Comparison(name, tuple(b.shape), str(b.dtype), float("inf"),
                                      float("inf"), default_rtol(b.dtype) if tol is None else tol,
                                      False, "missing from the compiled model's outputs"))
        else:
            results.append(compare(name, actual[name], b, tol))
    return results


DYNAMIC_QUANT_SPREAD_FACTOR = 2.0


def has_dynamic_quantization(model) -> bool:
    """Whether the main graph of MODEL (a parsed onnx.ModelProto) quantizes activations at run time."""
    return any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node)


def dynamic_quantization_tolerances(expected: Mapping, *others: Mapping) -> dict:
    """Per floating output: max(default rtol, factor x onnxruntime's own spread), the
    spread being the largest max_rel between ``expected`` and any of ``others``
    (onnxruntime's other optimization level, its outputs for nudged inputs)."""
    tolerances = {}
    for name, b in expected.items():
        b = np.asarray(b)
        if b.dtype.kind != "f":
            continue
        spreads = [compare(name, o[name], b).max_rel for o in others if name in o]
        if not spreads:
            continue
        tolerances[name] = max(default_rtol(b.dtype), DYNAMIC_QUANT_SPREAD_FACTOR * max(spreads))
    return tolerances


def nudged_inputs(feed: Mapping, direction: float) -> dict:
    """``feed`` with every floating element moved one ulp towards ``direction``
    (+inf or -inf); other inputs unchanged."""
    return {name: np.nextafter(v, np.asarray(direction, v.dtype)) if np.asarray(v).dtype.kind == "f" else v
            for name, v in feed.items()}


def judge_against_float_model(results: list, actual: Mapping, expected: Mapping,
                               other: Mapping, float_out: Mapping) -> None:
    """Re-judges each floating output in ``results`` (compared with onnxruntime) by its
    error against the float model's output ``float_out``: it passes when that error is
    no larger than the larger error of onnxruntime's two optimization levels
    (``expected``, ``other``) against the same float output."""
    for r in results:
        if (not r.dtype.startswith("float") or r.name not in float_out or r.name not in actual
                or r.name not in other or not np.isfinite(r.max_rel)):
            continue
        f = np.asarray(float_out[r.name])
        if f.shape != np.asarray(expected[r.name]).shape:
            continue
        ours = compare(r.name, actual[r.name], f).max_rel
        ort = max(compare(r.name, expected[r.name], f).max_rel,
                  compare(r.name, other[r.name], f).max_rel)
        r.rtol = max(default_rtol(r.dtype), ort)
        r.ok = ours <= r.rtol
        note = f"vs float model: {ours:.3e}, onnxruntime's {ort:.3e}"
        r.note = f"{r.note}; {note}" if r.note else note


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
class OnnxruntimeFailure(RuntimeError):
    """onnxruntime itself failed on the model: nothing to compare against."""


def one_line(text: str) -> str:
    """The first non-empty line of a (multi-line) message, control characters escaped."""
    lines = [l.strip() for l in str(text).splitlines() if l.strip()]
    first = lines[0] if lines else ""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in first)


def run_onnxruntime(model_path: str | os.PathLike, inputs: Mapping, optimize: bool = True) -> dict:
    """onnxruntime's outputs. optimize=False turns its graph optimizations off, so
    a QDQ model's QuantizeLinear/DequantizeLinear run as written instead of being
    fused into integer kernels that round differently."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    # On x86 without VNNI onnxruntime multiplies uint8 by int8 with vpmaddubsw,
    # whose int16 pair sums saturate: a weight outside [-64, 63] times a large
    # activation gives a wrong reference (MatMulInteger off by up to ~3e4 on a
    # Zen 1 / AVX2 host). This option has it compute those products exactly
    # (as uint8 x uint8), the integer result tilegraph computes.
    options.add_session_config_entry("session.x64quantprecision", "1")
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
        return dict(zip(names, sess.run(names, feed)))
    except Exception as e:  # onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
        raise OnnxruntimeFailure(f"onnxruntime, the reference, cannot run {model_path}: {one_line(str(e))}") from None


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: the tolerance must be finite and >= 0")
    return value


def run_cli(prefix: Path, arch: str, input_dir: Path, output_dir: Path,
            output_names: Sequence[str]) -> dict:
    """Runs ``tilegraph run`` and reads NAME.npy per expected output back."""
    exe = find_tilegraph_bin()
    if exe is None:
        raise UsageError("tilegraph binary not found (build it, or set TILEGRAPH_BIN)")
    output_dir.mkdir(parents=True, exist_ok=True)
    for f in output_dir.glob("*.npy"):
        f.unlink()
    cmd = [str(exe), "run", str(prefix), "--arch", arch, "--inputs", str(input_dir),
           "--outputs", str(output_dir), "--warmup", "0", "--iters", "1"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-20:])
        raise RuntimeError(f"`{' '.join(cmd)}` exited with {proc.returncode}:\n{tail}")
    out = {}
    for name in output_names:
        f = output_dir / (sanitize_name(name) + ".npy")
        if f.is_file():
            out[name] = np.load(f, allow_pickle=False)
    return out


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tilegraph.test_acc",
        description="Compare a compiled tilegraph model with onnxruntime on random inputs.",
        epilog="Tolerance: max(|a-b|/max(|b|,1)) <= rtol per floating output (default 1e-4, "
               "1e-2 for fp16; for models with DynamicQuantizeLinear, twice onnxruntime's own "
               "spread between its graph-optimization levels when larger); integer/bool "
               "outputs must match exactly.")
    p.add_argument("prefix", help="folder holding model.onnx and tilegraph_rt/")
    p.add_argument("--arch", default="host")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtol", type=_non_negative_float, default=None,
                   help=f"max relative error (default {DEFAULT_RTOL:g}, fp16 outputs "
                        f"{DEFAULT_RTOL_FP16:g})")
    p.add_argument("--inputs", help="read inputs from DIR/NAME.npy instead of generating them")
    p.add_argument("--input-shape", action="append", metavar="NAME=1x128",
                   help="concrete shape for an input with symbolic dimensions")
    p.add_argument("--runner", choices=["auto", "ctypes", "cli"], default="auto")
    p.add_argument("--threads", type=int, default=None, help="kernel threads (ctypes runner)")
    p.add_argument("--reference-opt", choices=["all", "none"], default="all",
                   help="onnxruntime graph optimizations for the reference (none: quantized "
                        "QDQ models run their Quantize/DequantizeLinear ops literally)")
    p.add_argument("--float-reference", metavar="FLOAT.onnx",
                   help="the float model a quantized model was made from: each floating output "
                        "passes when its error against the float model is no larger than "
                        "onnxruntime's (the worse of its two graph-optimization levels)")
    return p


def _compiled_exists(prefix: Path, arch: str, runner: str) -> bool:
    build = project_dir(prefix, arch) / "build"
    lib = (build / "libmodel.so").is_file()
    exe = (build / "main_test").is_file()
    return {"ctypes": lib, "cli": exe}.get(runner, lib or exe)


def _manifest(prefix: Path, arch: str) -> dict:
    """The compiled project's manifest.json ({} when it cannot be read)."""
    try:
        manifest = json.loads((project_dir(prefix, arch) / "manifest.json").read_text())
        return manifest if isinstance(manifest, dict) else {}
    except (OSError, ValueError):
        return {}


def _manifest_input_shapes(prefix: Path, arch: str) -> dict:
    """The compiled input shapes from manifest.json, for the CLI runner (which,
    unlike the ctypes one, cannot ask the library, e.g. a cross-compiled one)."""
    try:
        return {t["name"]: tuple(t["shape"]) for t in _manifest(prefix, arch).get("inputs", [])}
    except (KeyError, TypeError):
        return {}


def _compiled_in_fp16(prefix: Path, arch: str) -> bool:
    """Was the project tuned with --fp16 (float32 outputs computed in half)?"""
    compile_stats = _manifest(prefix, arch).get("compile", {})
    return isinstance(compile_stats, dict) and compile_stats.get("precision") == "fp16"


def run(prefix, arch="host", seed=0, rtol=None, inputs_dir=None, input_shapes=None,
        runner="auto", threads=None, out=None, reference_opt="all", float_reference=None) -> int:
    """The whole check; returns the exit status (0 pass, 1 fail). Raises UsageError."""
    out = sys.stdout if out is None else out
    prefix = Path(prefix)
    model_path = prefix / "model.onnx"
    if not model_path.is_file():
        raise UsageError(f"{model_path} not found")
    if float_reference is not None and not Path(float_reference).is_file():
        raise UsageError(f"--float-reference {float_reference}: file not found")
    if not _compiled_exists(prefix, arch, runner):
        arch_flag = "" if arch == "host" else f" --arch {arch}"
        raise UsageError(f"compiled project {project_dir(prefix, arch)}/build not found; "
                         f"run `tilegraph tune {prefix}{arch_flag}` first")

    compiled = None
    if runner in ("auto", "ctypes"):
        try:
            compiled = CompiledModel(prefix, arch, num_threads=threads)
        except UsageError:
            if runner == "ctypes":
                raise
            compiled = None  # e.g. a cross-compiled library: fall back to the CLI
    used = "ctypes" if compiled is not None else "cli"

    model = load_model(model_path)  # parsed once: for its inputs and the dynamic-quantization check
    specs = model_inputs(model)
    if compiled is not None:
        want = [s.name for s in specs]
        have = [t.name for t in compiled.inputs]
        if sorted(want) != sorted(have):
            compiled.close()
            raise RuntimeError(f"the compiled model's inputs {have} differ from "
                               f"model.onnx's {want}")
    work = prefix / "test_acc"
    if inputs_dir:
        feed = load_npy(inputs_dir, [s.name for s in specs])
    else:
        compiled_shapes = ({t.name: t.shape for t in compiled.inputs} if compiled
                           else _manifest_input_shapes(prefix, arch))
        shapes = {s.name: resolve_shape(s, input_shapes, compiled_shapes) for s in specs}
        feed = generate_inputs(specs, seed, load_input_ranges(prefix), shapes)
    input_dir = work / "inputs"
    if not inputs_dir or Path(inputs_dir).resolve() != input_dir.resolve():
        save_npy(input_dir, feed)

    expected = run_onnxruntime(model_path, feed, optimize=reference_opt != "none")
    save_npy(work / "expected", expected)

    if compiled is not None:
        try:
            actual = compiled.run(feed)
        finally:
            compiled.close()
        save_npy(work / "outputs", actual)
    else:
        actual = run_cli(prefix, arch, input_dir, work / "outputs", list(expected))

    fp16_build = rtol is None and _compiled_in_fp16(prefix, arch)
    # An fp32 model compiled with --fp16 is held to the half-precision tolerance.
    tolerance = DEFAULT_RTOL_FP16 if fp16_build else rtol
    spread_note = ""
    other = None
    if float_reference is not None:
        other = run_onnxruntime(model_path, feed, optimize=reference_opt == "none")
        spread_note = f", judged against the float model {float_reference}"
    elif rtol is None and not fp16_build and has_dynamic_quantization(model):
        other = run_onnxruntime(model_path, feed, optimize=reference_opt == "none")
        optimize = reference_opt != "none"
        nudged = [run_onnxruntime(model_path, nudged_inputs(feed, d), optimize) for d in (np.inf, -np.inf)]
        tolerance = dynamic_quantization_tolerances(expected, other, *nudged)
        spread_note = (f", dynamic quantization: tolerance {DYNAMIC_QUANT_SPREAD_FACTOR:g} x "
                       f"onnxruntime's spread across graph-optimization levels and one-ulp input changes")
    results = compare_all(actual, expected, tolerance)
    if float_reference is not None:
        judge_against_float_model(results, actual, expected, other,
                                  run_onnxruntime(float_reference, feed))
    extra = [n for n in actual if n not in expected]
    for r in results:
        if r.note.startswith("missing") and extra:
            r.note += f" (it has: {', '.join(extra)})"
    fp16_note = ", tuned with --fp16" if fp16_build else ""
    print(f"test_acc {prefix} (arch {arch}, {used} runner, seed {seed}{fp16_note}{spread_note})",
          file=out)
    for r in results:
        print("  " + r.line(), file=out)
    failed = [r for r in results if not r.ok]
    worst = max((r.max_rel for r in results), default=0.0)
    if failed:
        print(f"FAIL: {len(failed)} of {len(results)} outputs out of tolerance "
              f"(worst max_rel {worst:.3e})", file=out)
        return 1
    print(f"PASS: {len(results)} outputs (worst max_rel {worst:.3e})", file=out)
    return 0


def main(argv=None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return run(args.prefix, args.arch, args.seed, args.rtol, args.inputs,
                   parse_shape_overrides(args.input_shape), args.runner, args.threads,
                   reference_opt=args.reference_opt, float_reference=args.float_reference)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (RuntimeError, ValueError) as e:  # the compiled model failed or disagrees
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
