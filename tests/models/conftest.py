"""pytest setup for the model tests: puts python/ on sys.path, registers `slow`."""
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: takes over about a minute (deselect with -m 'not slow')")


def subprocess_env():
    """Environment for `python -m tilegraph...` subprocesses: PYTHONPATH has python/."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PYTHON_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def tilegraph_or_skip():
    """The tilegraph binary under test; skips the test when it is not built."""
    import pytest
    from tilegraph._common import find_tilegraph_bin
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    return exe


def copy_model(src, prefix):
    """A fresh PREFIX holding the model files of src (not an earlier tilegraph_rt/)."""
    prefix.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            (prefix / f.name).write_bytes(f.read_bytes())
    return prefix
