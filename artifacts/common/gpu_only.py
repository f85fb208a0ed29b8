"""Experiments that only mean something on a GPU: on a machine without one they
write their report section with each column's skip reason, and nothing else."""

from __future__ import annotations

from typing import Sequence

from . import report
from .machine import detect


def skip_section(section_id: str, title: str, *, paper: str, needs: Sequence[tuple],
                 not_yet: Sequence[tuple] = ()) -> bool:
    """Writes the section when a need is missing; returns True when it did (the
    caller stops). NEEDS: (column, need) pairs for Machine.missing; NOT_YET:
    (column, why) pairs for what tilegraph cannot do yet, reported on any machine."""
    machine = detect()
    skipped = [(column, why) for column, need in needs if (why := machine.missing(need))]
    skipped += list(not_yet)
    if not skipped:
        return False
    body = "Nothing measured on this machine: every column needs what is missing below."
    report.write_section(section_id, title, paper=paper, body=body, chart=None, csv=None, skipped=skipped)
    print(f"{section_id}: skipped ({'; '.join(why for _, why in skipped)})")
    return True
