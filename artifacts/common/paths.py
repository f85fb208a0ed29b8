"""Where the artifacts read and write: the repository, the CLI, artifacts/out."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "models"

# tilegraph's Python package (runner, inputs, test_acc, bench) without installing it.
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))


def out_dir() -> Path:
    """artifacts/out, or $ARTIFACTS_OUT (the tests write elsewhere)."""
    d = Path(os.environ.get("ARTIFACTS_OUT", REPO / "artifacts" / "out"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def work_dir() -> Path:
    """Compiled models, one PREFIX per model and variant; reused by later experiments."""
    d = out_dir() / "work"
    d.mkdir(parents=True, exist_ok=True)
    return d


def tilegraph_bin() -> Path:
    """The CLI: $TILEGRAPH_BIN, else build/bin/tilegraph of this checkout."""
    return Path(os.environ.get("TILEGRAPH_BIN", REPO / "build" / "bin" / "tilegraph"))
