"""Experiments that only mean something on a GPU: on a machine without one they
write their report section with each column's skip reason, and nothing else.

EXPERIMENTS is the one table of their report titles and the paper's numbers,
so each script's main is a call to ``skip_experiment`` (or, for a script
that measures something where a GPU exists, a test of its return value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from . import report
from .machine import detect


@dataclass(frozen=True)
class GpuExperiment:
    title: str   # the report section's heading
    paper: str   # what the paper measured (V100), quoted in the section


# section id -> its title and the paper's numbers.
EXPERIMENTS = {
    "fig10": GpuExperiment(
        "Fig. 10 — end-to-end latency, fp16 tensor cores (GPU)",
        "V100 fp16 on tensor cores, geomean speedup of Welder: bs 1 7.18x over PyTorch, 3.08x over onnxruntime, "
        "1.53x over TensorRT; bs 64 1.98x / 2.13x / 1.16x."),
    "fig11": GpuExperiment(
        "Fig. 11 — fp16 without tensor cores (GPU)",
        "V100 fp16 on CUDA cores (no tensor cores): Welder 1.74x faster than Ansor on average, up to 2.82x."),
    "table7": GpuExperiment(
        "Table 7 — memory scale-up (GPU)",
        "UNet and VGG-16 at 8k x 8k on V100, spilling to host memory: 38.2 -> 14.5 s and 15.7 -> 8.3 s "
        "with the host-memory tier vs Welder-base."),
}


def skipped_columns(needs: Sequence[tuple], not_yet: Sequence[tuple] = ()) -> list:
    """(column, why) for each of NEEDS' (column, need) pairs this machine cannot
    run (Machine.missing), then NOT_YET's (column, why) pairs."""
    machine = detect()
    return [(column, why) for column, need in needs if (why := machine.missing(need))] + list(not_yet)


def skip_section(section_id: str, title: str, *, paper: str, needs: Sequence[tuple],
                 not_yet: Sequence[tuple] = ()) -> bool:
    """Writes the section when a need is missing; returns True when it did (the
    caller stops). NEEDS: (column, need) pairs for Machine.missing; NOT_YET:
    (column, why) pairs for what tilegraph cannot do yet, reported on any machine."""
    skipped = skipped_columns(needs, not_yet)
    if not skipped:
        return False
    body = "Nothing measured on this machine: every column needs what is missing below."
    report.write_section(section_id, title, paper=paper, body=body, chart=None, csv=None, skipped=skipped)
    print(f"{section_id}: skipped ({'; '.join(why for _, why in skipped)})")
    return True


def skip_experiment(section_id: str, *, needs: Sequence[tuple], not_yet: Sequence[tuple] = ()) -> bool:
    """skip_section for an experiment of EXPERIMENTS (its title and paper quote from there)."""
    e = EXPERIMENTS[section_id]
    return skip_section(section_id, e.title, paper=e.paper, needs=needs, not_yet=not_yet)
