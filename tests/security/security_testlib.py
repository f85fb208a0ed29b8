"""Shared helpers of the security tests: run the real CLI, read its error line."""
import os
import subprocess
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))


def tg(*args, timeout=600, **kwargs):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          **kwargs)


def error_line(result):
    """The one `error:` line of a failed command; asserts there is exactly one line of it."""
    lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
    assert len(lines) == 1, f"expected one 'error:' line in stderr:\n{result.stderr}"
    return lines[0]


def save(model, prefix, **kwargs):
    prefix = Path(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(prefix / "model.onnx"), **kwargs)
    return prefix
