"""artifacts/out/report.md: a header naming the machine, then one section per experiment.

Each section sits between ``<!-- section: ID -->`` and ``<!-- end: ID -->``, so
running one experiment again replaces its own section and leaves the others.
A section has the paper's numbers for reference, our table, the chart, the CSV's
name and a ``skipped: why`` line per column that could not run here.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Sequence

from . import paths
from .machine import detect

HEADER_END = "<!-- end: header -->"


def report_path() -> Path:
    return paths.out_dir() / "report.md"


def start(mode: str) -> Path:
    """A fresh report (run_all.sh): the machine and the run's mode."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"# tilegraph: the Welder paper's experiments on this machine\n\n"
            f"Run {now}, mode `{mode}`. {detect().summary()}.\n\n"
            "Numbers quoted from the paper were measured on a V100 GPU; ours come from this machine, "
            "so compare ratios (speedups), not absolute times.\n" + HEADER_END + "\n")
    report_path().write_text(text)
    return report_path()


def write_section(section_id: str, title: str, *, paper: str, body: str, chart: Path | None, csv: Path | None,
                  skipped: Sequence[tuple] = ()) -> Path:
    """Adds (or replaces) section SECTION_ID. SKIPPED: (column, why) pairs."""
    path = report_path()
    if not path.exists():
        start("single experiment")
    lines = [f"<!-- section: {section_id} -->", f"## {title}", "", f"Paper: {paper}", ""]
    if body:
        lines += [body, ""]
    if chart is not None:
        lines += [f"![{title}]({chart.relative_to(path.parent).as_posix()})", ""]
    if csv is not None:
        lines += [f"Data: `{csv.relative_to(path.parent).as_posix()}`", ""]
    for column, why in skipped:
        lines.append(f"- skipped: {column}: {why}")
    if skipped:
        lines.append("")
    lines.append(f"<!-- end: {section_id} -->")
    section = "\n".join(lines) + "\n"
    text = path.read_text()
    pattern = re.compile(rf"<!-- section: {re.escape(section_id)} -->.*?<!-- end: {re.escape(section_id)} -->\n",
                         re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text + "\n" + section
    path.write_text(text)
    return path
