"""`tilegraph tune --fusion-level none|register|full` (the paper's Fig. 13 ablation).

Tunes models/bert_small for the H100 schedule without building (the scheduler
runs, no compiler is needed) at each level and checks what each level allows:
none = one op per kernel, register = only register-level edges, full = also
shared-level edges; --no-fusion is the alias of none, the default is full.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=600)


def tuned_manifest(root: Path, name: str, *flags) -> dict:
    prefix = root / name
    prefix.mkdir()
    shutil.copy(REPO / "models/bert_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--arch", "H100", "--no-build", *flags)
    assert r.returncode == 0, r.stderr
    return json.loads((prefix / "tilegraph_rt/H100/manifest.json").read_text())


@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    root = tmp_path_factory.mktemp("fusion_level")
    return {name: tuned_manifest(root, name, *flags) for name, flags in {
        "default": (), "full": ("--fusion-level", "full"), "register": ("--fusion-level", "register"),
        "none": ("--fusion-level", "none"), "no-fusion": ("--no-fusion",)}.items()}


def edge_levels(manifest) -> set:
    return {edge["level"] for k in manifest["explain"]["subgraphs"] for edge in k["edges"]}


def test_levels_fuse_progressively(manifests):
    none, reg, full = (manifests[n]["explain"] for n in ("none", "register", "full"))
    assert none["kernels"] == none["kernels_unfused"]
    assert all(len(k["ops"]) == 1 for k in none["subgraphs"])
    assert edge_levels(manifests["register"]) == {"register"}
    assert "shared" in edge_levels(manifests["full"])
    assert full["kernels"] < reg["kernels"] < none["kernels"]
    assert full["dram_bytes"] < reg["dram_bytes"] < none["dram_bytes"]
    # The one-op-per-kernel reference is the same whatever the level.
    assert none["kernels_unfused"] == reg["kernels_unfused"] == full["kernels_unfused"]


def test_compile_stats_name_the_level_except_the_default(manifests):
    assert "fusion_level" not in manifests["full"]["compile"]
    assert manifests["register"]["compile"]["fusion_level"] == "register"
    assert manifests["none"]["compile"]["fusion_level"] == "none"


def test_aliases_give_the_same_project(manifests):
    assert manifests["no-fusion"] == manifests["none"]
    assert manifests["default"] == manifests["full"]
    assert manifests["register"]["project_hash"] not in (manifests["none"]["project_hash"],
                                                         manifests["full"]["project_hash"])


@pytest.mark.parametrize("flags, message", [
    (("--fusion-level", "shared"), "--fusion-level 'shared': expected none, register or full"),
    (("--no-fusion", "--fusion-level", "full"), "--no-fusion means --fusion-level none"),
])
def test_bad_fusion_level_is_one_line_user_error(tmp_path, flags, message):
    shutil.copy(REPO / "models/bert_small/model.onnx", tmp_path / "model.onnx")
    r = tg("tune", tmp_path, "--no-build", *flags)
    assert r.returncode != 0
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "tilegraph_rt").exists()
