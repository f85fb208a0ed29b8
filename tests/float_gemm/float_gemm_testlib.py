"""What the float micro-kernel model tests share: the repository's python/ on the
path, whether this host runs the AVX-512 kernels, seeded weights, and a host
tune that returns the project's manifest.

Not a conftest.py (see tests/bench/bench_testlib.py): tests import it by name.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))


def _host_has(flag):
    try:
        return f" {flag} " in Path("/proc/cpuinfo").read_text().replace("\n", " ")
    except OSError:
        return False


def host_has_avx512():
    """Whether this CPU has AVX-512F (the Winograd, depthwise and operand-layout kernels)."""
    return _host_has("avx512f")


def host_has_avx2():
    """Whether this CPU has AVX2 and FMA (the AVX2 float and stride-2 depthwise kernels)."""
    return _host_has("avx2") and _host_has("fma")


def fan_in_weight(rng, name, *shape):
    """A float32 initializer of standard normals / sqrt(fan-in), so deep sums stay near 1."""
    from onnx import numpy_helper
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name)


def tuned_manifest(prefix, env):
    """`tilegraph tune PREFIX` for the host (skipped where the CLI is not built); its manifest.json."""
    from tilegraph._common import find_tilegraph_bin
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    tune = subprocess.run([str(exe), "tune", str(prefix)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=900)
    assert tune.returncode == 0, tune.stdout[-3000:]
    return json.loads((Path(prefix) / "tilegraph_rt" / "host" / "manifest.json").read_text())
