"""PNG charts: grouped bars, one group per model (or case), the engines side by side."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # no display: write files only
import matplotlib.pyplot as plt  # noqa: E402

# Ranges wider than this (largest / smallest bar) are drawn on a log scale.
LOG_SCALE_SPAN = 20.0


def bars(path: Path, groups: Sequence[str], series: Mapping[str, Sequence], *, ylabel: str, title: str,
         log: bool | None = None) -> Path:
    """Grouped bar chart. SERIES: engine -> one value per group (None: not measured,
    left as a gap). LOG: None picks a log scale when the values span > LOG_SCALE_SPAN."""
    values = [v for vs in series.values() for v in vs if v is not None and v > 0 and math.isfinite(v)]
    if log is None:
        log = bool(values) and max(values) / min(values) > LOG_SCALE_SPAN
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 0.35 * len(groups) * max(1, len(series)) + 2)), 4.5))
    for i, (name, vs) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v if v is not None and math.isfinite(v) else 0 for v in vs]
        ax.bar(xs, heights, width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
    ax.set_ylabel(ylabel + (" (log scale)" if log else ""))
    if log:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
