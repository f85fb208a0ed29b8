"""Model tests: every model under models/ compiled by `tilegraph tune` and checked
against onnxruntime with tilegraph.test_acc (random inputs, max rel err <= 1e-4).

Skipped when the tilegraph binary is not built (build/bin/tilegraph, or
$TILEGRAPH_BIN). Environment knobs:
  TILEGRAPH_TEST_ARCHS    comma-separated --arch values (default: host,H100,V100); GPU
                          archs are tuned with --emulate and checked through the CPU
                          emulation of their kernels (the exact GPU schedule). H100's
                          CUDA project is also built with nvcc (sm_90) when nvcc is on
                          PATH; V100's is not (sm_70 left CUDA 13), only emulated.
  TILEGRAPH_TEST_RTOL     override test_acc's --rtol
  TILEGRAPH_TUNE_TIMEOUT  seconds allowed for one `tilegraph tune` (default 1200)
  TILEGRAPH_FULL_MODELS   a folder of full-size PREFIXes to test as well (marked slow)
Models in SLOW and the full-size ones carry the `slow` marker; deselect them with
`-m "not slow"`.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, subprocess_env
from tilegraph._common import find_tilegraph_bin

MODELS_DIR = REPO / "models"
MODEL_NAMES = sorted(d.name for d in MODELS_DIR.iterdir()
                     if (d / "model.onnx").is_file()) if MODELS_DIR.is_dir() else []
# Models expected over ~1 min for tune + build + test_acc on a 2-core machine. None of the
# committed ones today: each takes 10-30 s (measured with `pytest --durations=0`).
SLOW = set()
# Optional: a folder of full-size PREFIXes (python -m tilegraph.torch2onnx MODEL --prefix
# DIR/MODEL); each is tested too, marked slow.
FULL_DIR = os.environ.get("TILEGRAPH_FULL_MODELS")
ARCHS = [a for a in os.environ.get("TILEGRAPH_TEST_ARCHS", "host,H100,V100").split(",") if a]
GPU_ARCHS = {"h100", "h200", "a100", "v100", "rtx3090", "l4", "t4"}
# Archs whose CUDA projects this machine's nvcc can build (CUDA 13: sm_75 and up).
NVCC_ARCHS = {"h100", "h200", "a100", "rtx3090", "l4", "t4"}
HAVE_NVCC = shutil.which("nvcc") is not None
TUNE_TIMEOUT = int(os.environ.get("TILEGRAPH_TUNE_TIMEOUT", "1200"))


def _params():
    for name in MODEL_NAMES:
        for arch in ARCHS:
            marks = [pytest.mark.slow] if name in SLOW else []
            yield pytest.param(MODELS_DIR / name, arch, marks=marks, id=f"{name}-{arch}")
    if FULL_DIR and Path(FULL_DIR).is_dir():
        for d in sorted(Path(FULL_DIR).iterdir()):
            if (d / "model.onnx").is_file():
                for arch in ARCHS:
                    yield pytest.param(d, arch, marks=[pytest.mark.slow],
                                       id=f"full-{d.name}-{arch}")


def _tail(text, n=40):
    return "\n".join(text.strip().splitlines()[-n:])


def _tune_and_check(src, arch, tmp_path, extra_flags=()):
    """Tunes a copy of src for arch (GPU archs: with the emulation, and the
    CUDA project built where nvcc can) and runs test_acc on it; returns the
    project folder."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    name = src.name
    prefix = tmp_path / name
    prefix.mkdir()
    for f in src.iterdir():  # the model files only, not an earlier tilegraph_rt/ or test_acc/
        if f.is_file():
            shutil.copy(f, prefix / f.name)
    build_cuda = arch.lower() in NVCC_ARCHS and HAVE_NVCC
    flags = list(extra_flags)
    if arch.lower() in GPU_ARCHS:
        flags += ["--emulate"] + ([] if build_cuda else ["--no-gpu-build"])
    tune = subprocess.run([str(exe), "tune", str(prefix), "--arch", arch, *flags],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TUNE_TIMEOUT)
    what = " ".join([name, "--arch", arch, *flags])
    assert tune.returncode == 0, f"tilegraph tune {what} failed:\n{_tail(tune.stdout)}"
    if build_cuda:  # nvcc built the real CUDA project (sm_90), not only the emulation
        assert (prefix / "tilegraph_rt" / arch / "build" / "libmodel.so").is_file()
    elif arch.lower() in NVCC_ARCHS:
        print(f"note: nvcc not on PATH: the {arch} CUDA project was generated but not built")
    cmd = [sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--arch", arch]
    if os.environ.get("TILEGRAPH_TEST_RTOL"):
        cmd += ["--rtol", os.environ["TILEGRAPH_TEST_RTOL"]]
    acc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=subprocess_env(), timeout=600)
    print(acc.stdout)
    assert acc.returncode == 0, f"test_acc {what}:\n{_tail(acc.stdout)}"
    return prefix / "tilegraph_rt" / arch, acc.stdout


@pytest.mark.parametrize("src,arch", list(_params()))
def test_model_matches_onnxruntime(src, arch, tmp_path):
    _tune_and_check(src, arch, tmp_path)


@pytest.mark.parametrize("name,arch", [("bert_small", "H100"), ("mobilevit_small", "H100"),
                                       ("swin_transformer_small", "host")])
def test_fp16_build_of_an_fp32_model_matches_onnxruntime(name, arch, tmp_path):
    """tune --fp16: weights and activations stored in half, float32 inputs
    and outputs, within the fp16 tolerance of onnxruntime's float32 run."""
    project, report = _tune_and_check(MODELS_DIR / name, arch, tmp_path, ["--fp16"])
    assert "tuned with --fp16" in report and "(rtol 0.01)" in report
    manifest = json.loads((project / "manifest.json").read_text())
    assert manifest["compile"]["precision"] == "fp16"
    assert all(t["dtype"] == "float32" for t in manifest["inputs"] + manifest["outputs"] if t["dtype"].startswith("f"))
    # Every weight and activation the project stores is half (or an integer).
    stored = {b["dtype"] for b in manifest["buffers"]}
    assert "float16" in stored and "float32" not in stored, stored


# (model, library GEMMs, of them with a bias epilogue, kernels in all).
# BERT: per layer q, k, v, q@k^T, p@v and both FFN matmuls (the attention
# output projection reads the merged heads through floordiv/floormod: not
# one stride, so it stays fused), plus the pooler; every linear layer's bias
# add rides along. ViT: per block qkv, q@k^T, p@v, fc1, fc2, plus the head
# (its patch-embedding conv and output projection stay fused).
@pytest.mark.parametrize("name,gemms,biased,kernels", [("bert_small", 15, 11, 25), ("vit_small", 11, 7, 23),
                                                       ("bert_small_fp16", 15, 11, 25)])
def test_skip_dot_sends_gemms_to_cublaslt(name, gemms, biased, kernels, tmp_path):
    """tune --skip-dot: each float GEMM its own kernel (with its bias add as
    cuBLASLt's bias epilogue where it has one), a cuBLASLt call in the CUDA
    project (built by nvcc where present) and a reference GEMM in the CPU
    emulation that test_acc checks against onnxruntime."""
    project, _ = _tune_and_check(MODELS_DIR / name, "H100", tmp_path, ["--skip-dot"])
    manifest = json.loads((project / "manifest.json").read_text())
    library = [k for k in manifest["kernels"] if k.get("library") == "cublasLt"]
    assert len(library) == gemms, [k["name"] for k in library]
    assert manifest["num_kernels"] == kernels
    assert manifest["compile"]["library_gemms"] == gemms
    assert sum(k["gemm"]["epilogue"] == "bias" for k in library) == biased
    for k in library:
        parts = [p for p in k["gemm"]["epilogue"].split("+") if p != "none"]
        assert k["schedule"]["ops"] == 1 + len(parts) and "launch" not in k, k
        assert k["gemm"]["dtype"] == ("float16" if name.endswith("fp16") else "float32")
    assert sum(1 for s in manifest["explain"]["subgraphs"] if s.get("library")) == gemms
    model_cu = (project / "model.cu").read_text()
    assert model_cu.count("tg_blas_gemm(&m->blas, ") == gemms
    assert model_cu.count(", nullptr, m->stream)") == gemms - biased  # no bias pointer
    assert "CUDA::cublasLt" in (project / "CMakeLists.txt").read_text()
    assert (project / "tg_cublaslt.h").is_file()
    emulated = "".join(f.read_text() for f in (project / "emulation").glob("kernels_*.cpp"))
    assert emulated.count("tg_gemm(") == gemms


def _tune_and_build(model, arch, tmp_path):
    """`tilegraph tune` (with its build) of a copy of models/<model> for arch;
    returns the project folder and tune's output."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    prefix = tmp_path / model
    prefix.mkdir()
    shutil.copy(MODELS_DIR / model / "model.onnx", prefix / "model.onnx")
    tune = subprocess.run([str(exe), "tune", str(prefix), "--arch", arch], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TUNE_TIMEOUT)
    assert tune.returncode == 0, _tail(tune.stdout)
    return prefix / "tilegraph_rt" / arch, tune.stdout


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not on PATH: CUDA projects are generated but not built")
@pytest.mark.parametrize("model,arch,sm", [("mobilevit_small", "A100", 80), ("bert_small", "T4", 75),
                                            ("bert_small", "RTX3090", 86), ("bert_small", "L4", 89)])
def test_cuda_project_builds_for_each_sm(model, arch, sm, tmp_path):
    """The model tests build every H100 project (sm_90); these cover sm_75, sm_80, sm_86, sm_89."""
    project, _ = _tune_and_build(model, arch, tmp_path)
    assert (project / "build" / "libmodel.so").is_file()
    assert f"set(CMAKE_CUDA_ARCHITECTURES {sm})" in (project / "CMakeLists.txt").read_text()


HAVE_HIPCC = shutil.which("hipcc") is not None


@pytest.mark.skipif(not HAVE_HIPCC, reason="hipcc is not on PATH (Debian: apt-get install hipcc): "
                                          "HIP projects are generated but not built")
@pytest.mark.parametrize("model", ["bert_small", "NeRF_small"])
def test_hip_project_builds_with_hipcc(model, tmp_path):
    """tune --arch MI250 builds the HIP project with Debian's ROCm hipcc (the C++
    compiler of its CMakeLists), without warnings. No AMD GPU here: it is not run."""
    project, tune_log = _tune_and_build(model, "MI250", tmp_path)
    assert "not built" not in tune_log, _tail(tune_log)
    assert (project / "build" / "libmodel.so").is_file() and (project / "build" / "main_test").is_file()
    assert "set(CMAKE_CXX_COMPILER hipcc)" in (project / "CMakeLists.txt").read_text()
    assert "set(TG_HIP_ARCHITECTURES gfx90a " in (project / "CMakeLists.txt").read_text()
    log = (project / "build.log").read_text()
    assert "hipcc" in (project / "build" / "CMakeCache.txt").read_text()
    assert "warning" not in log, _tail(log)
    assert json.loads((project / "manifest.json").read_text())["target"] == "hip"


def _attention_like_model(path, elem_type):
    """x[2,256,200] @ W + b, then y @ y^T: a K (200) that no 16-deep MMA step
    divides and a transposed operand; big enough that the H100 cost model
    puts both matmuls on tensor cores."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    dtype = np.float16 if elem_type == onnx.TensorProto.FLOAT16 else np.float32
    rng = np.random.default_rng(0)
    # Moderate values: an fp32 model tuned with --fp16 is checked against
    # onnxruntime in fp32, and y @ y^T cancels (half rounding of y shows).
    w = numpy_helper.from_array((rng.standard_normal((200, 64)) * 0.03).astype(dtype), "W")
    b = numpy_helper.from_array((rng.standard_normal((64,)) * 0.1).astype(dtype), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"]),
             helper.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["y", "yt"], ["s"])]
    graph = helper.make_graph(nodes, "attention_like",
                              [helper.make_tensor_value_info("x", elem_type, [2, 256, 200])],
                              [helper.make_tensor_value_info("s", elem_type, [2, 256, 256])], [w, b])
    path.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path / "model.onnx"))
    return path


def _conv_model(path):
    """Half 3x3 conv (padding 1, bias) + ReLU + 1x1 conv with stride 2 on
    28 x 28: implicit GEMMs whose rows are (n, oh, ow) and k is (c, kh, kw)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float16), name)
             for name, shape, scale in [("w1", (64, 64, 3, 3), 0.05), ("b1", (64,), 0.05), ("w2", (128, 64, 1, 1), 0.1)]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]), helper.make_node("Conv", ["r1", "w2"], ["y"], strides=[2, 2])]
    graph = helper.make_graph(nodes, "convs",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, [1, 64, 28, 28])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, [1, 128, 14, 14])], inits)
    path.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path / "model.onnx"))
    return path


@pytest.mark.parametrize("form", ["fp16_model", "fp32_model_tuned_fp16", "fp16_convolutions"])
def test_tensor_core_kernels_match_onnxruntime_in_emulation(form, tmp_path):
    """Half matmuls and convolutions on H100 run on mma.sync m16n8k16: the
    CUDA kernels call it (and nvcc builds them where it can), the emulation
    computes each warp's MMA from the lanes' fragments by the PTX lane
    mapping, and the result matches onnxruntime."""
    import onnx
    elem = onnx.TensorProto.FLOAT if form == "fp32_model_tuned_fp16" else onnx.TensorProto.FLOAT16
    src = (_conv_model(tmp_path / "src" / form) if form == "fp16_convolutions"
           else _attention_like_model(tmp_path / "src" / form, elem))
    flags = [] if form == "fp16_model" else ["--fp16"]
    project, _ = _tune_and_check(src, "H100", tmp_path, flags)
    manifest = json.loads((project / "manifest.json").read_text())
    assert [k["launch"]["tensor_cores"] for k in manifest["kernels"]] == [True, True]
    cuda = "".join(p.read_text() for p in sorted(project.glob("kernels_*.cu")))
    assert cuda.count("tg_mma_m16n8k16(p") == 2
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in (project / "kernels.h").read_text()
    emulated = "".join(p.read_text() for p in sorted((project / "emulation").glob("kernels_*.cpp")))
    assert emulated.count("tg_warp_mma_m16n8k16(p") == 2


def test_profile_topk_on_the_host_cpu_keeps_the_fastest_measured_config(tmp_path):
    """tune --profile-topk on: every multi-candidate kernel's top-k configs are
    timed by the harness, the fastest is compiled (and still matches
    onnxruntime), and a second tune answers from profile_cache.json."""
    project, _ = _tune_and_check(MODELS_DIR / "bert_small", "host", tmp_path, ["--profile-topk", "on", "--topk", "4"])
    manifest = json.loads((project / "manifest.json").read_text())
    profiled = [k for k in manifest["kernels"] if "profile" in k]
    assert profiled, "no kernel was profiled"
    for k in profiled:
        times = {p["config"]: p["measured_ms"] for p in k["profile"]}
        assert len(times) >= 2 and all(t > 0 for t in times.values()), k
        assert k["launch"]["config"] == min(times, key=times.get), k
    stats = json.loads((project / "compile_stats.json").read_text())["profile"]
    assert stats["kernels"] == len(profiled) and stats["variants"] >= 2 * stats["problems"] > 0
    exe = find_tilegraph_bin()
    again = subprocess.run([str(exe), "tune", str(project.parent.parent), "--profile-topk", "on", "--topk", "4"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TUNE_TIMEOUT)
    assert again.returncode == 0, _tail(again.stdout)
    cached = json.loads((project / "compile_stats.json").read_text())["profile"]
    assert cached["variants"] == 0 and cached["cache_hits"] == stats["problems"]
    assert [k["launch"]["config"] for k in json.loads((project / "manifest.json").read_text())["kernels"]
            if "profile" in k] == [k["launch"]["config"] for k in profiled]


def test_profile_topk_on_needs_its_device(tmp_path):
    """Asking to profile on an absent GPU (or a HIP one) is a one-line error, not a silent cost-model run."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built")
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(MODELS_DIR / "bert_small" / "model.onnx", prefix / "model.onnx")
    for arch in ["MI250"] + ([] if Path("/dev/nvidiactl").exists() else ["H100"]):
        r = subprocess.run([str(exe), "tune", str(prefix), "--arch", arch, "--profile-topk", "on"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        assert r.returncode != 0 and "--profile-topk on:" in r.stdout, r.stdout


@pytest.mark.parametrize("half", [False, True])
def test_skip_dot_epilogues_match_onnxruntime(half, tmp_path):
    """--skip-dot on an MLP: x @ W1 + b1 -> ReLU -> @ W2 -> ReLU. Both GEMMs
    take their tails as cuBLASLt epilogues (RELU_BIAS, RELU), so the project
    is two library calls and nothing else; the emulation's reference
    epilogues match onnxruntime."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    dtype, elem = (np.float16, onnx.TensorProto.FLOAT16) if half else (np.float32, onnx.TensorProto.FLOAT)
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(dtype), name)
             for name, shape in [("W1", (96, 128)), ("b1", (128,)), ("W2", (128, 32))]]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["o"]),
             helper.make_node("Relu", ["o"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", elem, [1, 64, 96])],
                              [helper.make_tensor_value_info("y", elem, [1, 64, 32])], inits)
    src = tmp_path / "src" / ("mlp_fp16" if half else "mlp")
    src.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src / "model.onnx"))
    project, _ = _tune_and_check(src, "H100", tmp_path, ["--skip-dot"])
    manifest = json.loads((project / "manifest.json").read_text())
    assert [(k.get("library"), k.get("gemm", {}).get("epilogue")) for k in manifest["kernels"]] == \
        [("cublasLt", "bias+relu"), ("cublasLt", "relu")]
    rows = (project / "model.cu").read_text()
    assert "}, 3},  // kernel 0" in rows and "}, 2},  // kernel 1" in rows  # the epilogue bits in kGemmShapes
