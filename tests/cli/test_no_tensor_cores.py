"""`tilegraph tune --no-tensor-cores` (the paper's Fig. 11): on a GPU arch with
tensor cores, fp16 schedules without mma.sync. Half matmuls of an attention-like
model are generated for H100 and A100 with and without the flag: with it no
kernel is on tensor cores and no CUDA kernel calls an MMA, and the CPU emulation
of the GPU kernels still matches onnxruntime."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args, timeout=900):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def half_attention_model(path: Path) -> Path:
    """x[2,256,200] @ W + b, then y @ y^T in float16: big enough that the H100
    and A100 cost models put both matmuls on tensor cores."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((200, 64)) * 0.03).astype(np.float16), "W")
    b = numpy_helper.from_array((rng.standard_normal((64,)) * 0.1).astype(np.float16), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"]),
             helper.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["y", "yt"], ["s"])]
    f16 = onnx.TensorProto.FLOAT16
    graph = helper.make_graph(nodes, "attention_like", [helper.make_tensor_value_info("x", f16, [2, 256, 200])],
                              [helper.make_tensor_value_info("s", f16, [2, 256, 256])], [w, b])
    path.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path / "model.onnx"))
    return path


def kernels_and_source(prefix: Path, arch: str):
    project = prefix / "tilegraph_rt" / arch
    manifest = json.loads((project / "manifest.json").read_text())
    cuda = "".join(p.read_text() for p in sorted(project.glob("kernels_*.cu")))
    return manifest, cuda, (project / "kernels.h").read_text()  # kernels_*.cu: the kernels' own source


@pytest.mark.parametrize("arch", ["H100", "A100"])
def test_without_tensor_cores_no_kernel_uses_mma(arch, tmp_path):
    src = half_attention_model(tmp_path / "src")
    prefixes = {}
    for name, flags in (("with", []), ("without", ["--no-tensor-cores"])):
        prefix = prefixes[name] = tmp_path / name
        shutil.copytree(src, prefix)
        r = tg("tune", prefix, "--arch", arch, "--no-build", *flags)
        assert r.returncode == 0, r.stderr
    manifest, cuda, header = kernels_and_source(prefixes["with"], arch)
    assert [k["launch"]["tensor_cores"] for k in manifest["kernels"]] == [True, True]
    assert cuda.count("tg_mma_m16n8k16(p") == 2 and "mma.sync" in header
    manifest, cuda, header = kernels_and_source(prefixes["without"], arch)
    assert [k["launch"]["tensor_cores"] for k in manifest["kernels"]] == [False, False]
    # kernels.h always defines the mma.sync helper (an unused inline here); no kernel calls it
    assert "mma" not in cuda.lower() and "wmma" not in header
    assert manifest["compile"]["tensor_cores"] is False  # the manifest says how it was compiled
    assert "tensor_cores" not in kernels_and_source(prefixes["with"], arch)[0]["compile"]


def test_emulation_without_tensor_cores_matches_onnxruntime(tmp_path):
    prefix = half_attention_model(tmp_path / "attn")
    r = tg("tune", prefix, "--arch", "H100", "--no-tensor-cores", "--emulate", "--no-gpu-build")
    assert r.returncode == 0, r.stderr
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "TILEGRAPH_BIN": TILEGRAPH}
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--arch", "H100"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert acc.returncode == 0, acc.stdout[-2000:] + acc.stderr[-2000:]
    emulated = "".join(p.read_text() for p in sorted((prefix / "tilegraph_rt/H100/emulation").glob("kernels_*.cpp")))
    assert "tg_warp_mma" not in emulated


def test_the_flag_is_for_gpu_archs_only(tmp_path):
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(REPO / "models/bert_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--arch", "host", "--no-tensor-cores", "--no-build")
    assert r.returncode == 1
    assert r.stderr.strip() == "error: --no-tensor-cores is for GPU archs; --arch host is not a GPU"
