"""An arch's peaks as tilegraph's cost model assumes them: ``tilegraph arch --json``."""

from __future__ import annotations

import json
import subprocess

from . import paths


def arch_spec(arch: str = "host") -> dict:
    """The resolved spec of ARCH (scheduler/arch/*.json's format; the host's read
    from this machine): peak_fp32_flops, peak_fp16_flops, peak_int8_ops,
    compute_units, levels [{name, capacity_bytes, bandwidth_bytes_per_s, ...}]."""
    out = subprocess.run([str(paths.tilegraph_bin()), "arch", "--arch", arch, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def dram_bandwidth(spec: dict) -> float:
    return next(level["bandwidth_bytes_per_s"] for level in spec["levels"] if level["name"] == "dram")
