"""CSV output: one row per measurement, the columns fixed by the experiment."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Mapping, Sequence


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Mapping]) -> Path:
    """Writes ROWS (dicts; a missing or None value is an empty cell) under COLUMNS."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for row in rows:
            w.writerow([_cell(row.get(c)) for c in columns])
    return path


def geomean(values) -> float:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def markdown_table(columns: Sequence[str], rows: Sequence[Mapping]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) or "—" for c in columns) + " |")
    return "\n".join(lines)
