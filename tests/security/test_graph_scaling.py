"""Compile time and memory grow about linearly with the graph (security issue 13, item 7).

A model file is untrusted: a long chain of elementwise nodes must not make
`tilegraph tune` quadratic. Register-level fusion turns the chain below into one
kernel whose expression is 10k levels deep; before the fix, inlining it rewrote
the whole expression per node (a 4k chain took 78 s, 20k ran out of 4 GB), and
its depth overflowed the default 8 MB stack. The bound is generous (the chain
tunes in about 2 s on a 2-core machine): it catches a quadratic step, not noise.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_chain_model import save_chain_model  # noqa: E402

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")

NODES = 10_000
BOUND_SECONDS = 60


def test_ten_thousand_node_chain_tunes_within_bound(tmp_path):
    save_chain_model(tmp_path, NODES)
    start = time.monotonic()
    result = subprocess.run([TILEGRAPH, "tune", str(tmp_path), "--no-build"], capture_output=True, text=True,
                            timeout=10 * BOUND_SECONDS)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-2000:]
    assert seconds < BOUND_SECONDS, f"tune of a {NODES}-node Add chain took {seconds:.1f} s"
    # The whole chain is one fused kernel implementing every node.
    manifest = json.loads((tmp_path / "tilegraph_rt/host/manifest.json").read_text())
    kernels = manifest["kernels"]
    assert len(kernels) == 1
    assert len(kernels[0]["onnx_nodes"]) == NODES
