"""Model inputs: their specs, seeded random values, and .npy files.

The one home for what test_acc, the ctypes runner, the benchmarks and torch2onnx
need to feed a model: the graph inputs of an ONNX file (``model_inputs``),
``PREFIX/input_ranges.json`` (``load_input_ranges``), seeded random arrays
(``generate_inputs``: floats uniform in [-1, 1), integers in [0, 2) unless a
range is given, bools), ``--input-shape NAME=1x128`` overrides, and reading and
writing one ``NAME.npy`` per tensor, NAME being the value name with every
character outside ``[A-Za-z0-9_.-]`` replaced by ``_``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ._common import UsageError, np_dtype, sanitize_name


@dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: np.dtype
    shape: tuple  # ints, or str / None for symbolic dimensions


def load_model(model_path: str | os.PathLike):
    """The parsed ONNX file (an onnx.ModelProto), without its external weights."""
    import onnx

    return onnx.load(str(model_path), load_external_data=False)


def model_inputs(model) -> list:
    """The real graph inputs of an ONNX model (initializers excluded), in order.
    MODEL is a path, or a ModelProto from ``load_model`` for a caller that reads
    more of the graph (so the file is parsed once)."""
    import onnx

    m = model if isinstance(model, onnx.ModelProto) else load_model(model)
    inits = {t.name for t in m.graph.initializer}
    specs = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or None)
        specs.append(InputSpec(vi.name, np_dtype(tt.elem_type), tuple(dims)))
    return specs


def load_input_ranges(prefix: str | os.PathLike) -> dict:
    """``PREFIX/input_ranges.json``: {name: [low, high)} for integer inputs; {} if absent."""
    f = Path(prefix) / "input_ranges.json"
    if not f.is_file():
        return {}
    try:
        data = json.loads(f.read_text())
    except ValueError as e:
        raise UsageError(f"{f}: invalid JSON: {e}") from None
    out = {}
    for name, r in data.items():
        if isinstance(r, Mapping):
            r = [r.get("low"), r.get("high")]
        if not (isinstance(r, (list, tuple)) and len(r) == 2):
            raise UsageError(f"{f}: range of {name!r} must be [low, high)")
        out[name] = (r[0], r[1])
    return out


def random_array(rng: np.random.Generator, shape, dtype, value_range=None) -> np.ndarray:
    """One input: floats in [-1,1) (or [low,high)), ints in [0,2) (or [low,high)), bools."""
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape, dtype=np.int8).astype(np.bool_)
    if dtype.kind in "iu":
        lo, hi = value_range if value_range is not None else (0, 2)
        if int(hi) <= int(lo):
            raise UsageError(f"empty integer range [{lo}, {hi})")
        return rng.integers(int(lo), int(hi), size=shape, dtype=np.int64).astype(dtype)
    if dtype.kind == "f":
        lo, hi = value_range if value_range is not None else (-1.0, 1.0)
        return rng.uniform(float(lo), float(hi), size=shape).astype(dtype)
    raise UsageError(f"cannot generate inputs of dtype {dtype}")


def resolve_shape(spec: InputSpec, overrides: Mapping | None = None,
                  compiled_shapes: Mapping | None = None) -> tuple:
    if overrides and spec.name in overrides:
        return tuple(int(d) for d in overrides[spec.name])
    if compiled_shapes and spec.name in compiled_shapes:
        return tuple(int(d) for d in compiled_shapes[spec.name])
    return tuple(d if isinstance(d, int) else 1 for d in spec.shape)


def generate_inputs(specs: Sequence[InputSpec], seed: int = 0, ranges: Mapping | None = None,
                    shapes: Mapping | None = None) -> dict:
    """Seeded random inputs, one per spec, drawn in order from one generator.

    ``ranges``: name -> (low, high) for integer (or float) inputs.
    ``shapes``: name -> concrete shape, for inputs with symbolic dimensions.
    """
    rng = np.random.default_rng(seed)
    ranges = ranges or {}
    out = {}
    for s in specs:
        shape = tuple(shapes[s.name]) if shapes and s.name in shapes else resolve_shape(s)
        out[s.name] = random_array(rng, shape, s.dtype, ranges.get(s.name))
    return out


def parse_shape_overrides(items: Sequence[str] | None) -> dict:
    out = {}
    for item in items or []:
        name, sep, dims = item.rpartition("=")
        if not sep or not name:
            raise UsageError(f"--input-shape {item!r}: expected NAME=D1xD2x...")
        try:
            out[name] = tuple(int(d) for d in dims.lower().split("x")) if dims else ()
        except ValueError:
            raise UsageError(f"--input-shape {item!r}: dimensions must be integers") from None
    return out


def npy_file_name(name: str) -> str:
    """The file a tensor called ``name`` is read from and written to."""
    return sanitize_name(name) + ".npy"


def load_npy(directory: str | os.PathLike, names: Sequence[str]) -> dict:
    """``{name: array}`` from ``directory/NAME.npy`` for each name; a missing file is a usage error."""
    d = Path(directory)
    out = {}
    for name in names:
        f = d / npy_file_name(name)
        if not f.is_file():
            raise UsageError(f"input file {f} not found")
        out[name] = np.load(f, allow_pickle=False)
    return out


def save_npy(directory: str | os.PathLike, arrays: Mapping) -> None:
    """Writes ``directory/NAME.npy`` for each array (the folder is created)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(d / npy_file_name(name), np.ascontiguousarray(a), allow_pickle=False)
