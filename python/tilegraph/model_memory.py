"""Measure the memory a compiled model really touches in one run: the growth
of this process's resident-set high-water mark (Linux VmHWM, reset through
/proc/self/clear_refs) from just before ``tg_model_run`` to just after.

    python -m tilegraph.model_memory PREFIX [--arch host] [--threads N]

Prints JSON: {"peak_growth_bytes": ..., "resident_before_bytes": ...}. The
inputs and outputs are allocated and touched before the measurement starts,
so the growth is the model's own: the arena pages the kernels touch, the
weights pages they read (weights.bin is mapped), the kernels' scratch and the
threads' stacks. Run it in a fresh process (one model per process): pages a
previous run touched stay resident and would not count again.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .runner import CompiledModel


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def measure(prefix: str, arch: str = "host", threads: int | None = None) -> dict:
    model = CompiledModel(prefix, arch, num_threads=threads)
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.random(t.shape, dtype=np.float32).astype(t.dtype) if t.dtype.kind == "f"
              else np.zeros(t.shape, t.dtype) for t in model.inputs}
    model._out_bufs = [np.ones(t.shape, dtype=t.dtype) for t in model.outputs]  # touched now, not in the run
    arrays = model._prepare_inputs(inputs)
    with open("/proc/self/clear_refs", "w") as f:  # resets VmHWM to the current resident set
        f.write("5")
    before = _status_kib("VmRSS")
    model.run(arrays, copy=False)
    peak = _status_kib("VmHWM")
    model.close()
    return {"peak_growth_bytes": (peak - before) * 1024, "resident_before_bytes": before * 1024}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tilegraph.model_memory", description=__doc__.splitlines()[0])
    parser.add_argument("prefix")
    parser.add_argument("--arch", default="host")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.prefix, args.arch, args.threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
