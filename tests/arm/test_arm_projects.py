"""ARM64 CPU targets end to end: `tilegraph tune PREFIX --arch A` for an AArch64
arch spec cross-compiles the project (aarch64-linux-gnu-g++, the project's
aarch64-toolchain.cmake), `tilegraph run` runs its main_test under
`qemu-aarch64 -cpu max`, and test_acc (whose ctypes runner cannot load an
aarch64 library here, so it falls back to that CLI) matches onnxruntime.

* a small float model (models/bert_small) for neoverse-n2;
* float GEMMs and convs whose K runs in kc blocks on the NEON float micro-kernel
  (neoverse-n2 with a small L1 through --arch-file; the model and block sizes of
  tests/float_gemm/test_float_gemm_models.py's k_blocks);
* onnxruntime-quantized attention blocks (tests/quantized/make_quantized_models.py)
  on each ARM int8 micro-kernel: neoverse-n2 and cortex-a715 (i8mm), cortex-a76
  (dotprod), cortex-a72 (NEON only); every int8 matmul kernel of manifest.json
  names the arch's ukernel.

On an AArch64 host the same projects build and run natively. Elsewhere the tests
skip, with the reason, without aarch64-linux-gnu-g++ or qemu-aarch64 (Debian:
apt-get install g++-aarch64-linux-gnu qemu-user). Small models only: qemu is slow.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for p in (REPO / "python", REPO / "tests" / "quantized", REPO / "tests" / "float_gemm"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from tilegraph._common import elf_machine, find_tilegraph_bin, host_machine  # noqa: E402

CROSS_CXX = "aarch64-linux-gnu-g++"
QEMU = "qemu-aarch64"
NATIVE = host_machine() == "aarch64"
TIMEOUT = 600


def _missing_tool():
    if NATIVE:
        return None
    for tool, package in ((CROSS_CXX, "g++-aarch64-linux-gnu"), (QEMU, "qemu-user")):
        if shutil.which(tool) is None:
            return f"no {tool} to cross-build / run ARM projects (apt-get install {package})"
    return None


pytestmark = pytest.mark.skipif(_missing_tool() is not None, reason=_missing_tool() or "")


def _exe():
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    return exe


def _env(exe):
    return dict(os.environ, TILEGRAPH_BIN=str(exe), PYTHONPATH=str(REPO / "python"))


def _run(cmd, env):
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=TIMEOUT)


def _tune(exe, prefix, arch, env):
    tune = _run([exe, "tune", prefix, "--arch", arch], env)
    assert tune.returncode == 0, f"tilegraph tune --arch {arch} failed:\n{tune.stdout[-3000:]}"
    project = prefix / "tilegraph_rt" / arch
    # A real AArch64 build: both binaries are aarch64 ELF files.
    for binary in ("main_test", "libmodel.so"):
        assert elf_machine(project / "build" / binary) == "aarch64", binary
    return tune.stdout, project


def _test_acc(prefix, arch, env, *flags):
    acc = _run([sys.executable, "-m", "tilegraph.test_acc", prefix, "--arch", arch, *flags], env)
    print(acc.stdout)
    assert acc.returncode == 0, acc.stdout
    if not NATIVE:  # the aarch64 library does not load here: main_test under qemu
        assert "cli runner" in acc.stdout, acc.stdout
    return acc.stdout


def test_bert_small_neoverse_n2(tmp_path):
    exe = _exe()
    env = _env(exe)
    prefix = tmp_path / "bert_small"
    prefix.mkdir()
    for f in (REPO / "models" / "bert_small").iterdir():  # the model files, not an old tilegraph_rt/
        if f.is_file():
            shutil.copy(f, prefix / f.name)
    _, project = _tune(exe, prefix, "neoverse-n2", env)

    cmake = (project / "CMakeLists.txt").read_text()
    assert "-march=armv8.6-a+dotprod+i8mm" in cmake
    assert "-march=native" not in cmake
    assert (project / "aarch64-toolchain.cmake").is_file()

    run = _run([exe, "run", prefix, "--arch", "neoverse-n2", "--warmup", "0", "--iters", "2"], env)
    assert run.returncode == 0, run.stdout
    assert "latency (ms)" in run.stdout, run.stdout
    if not NATIVE:
        assert "qemu-aarch64" in run.stdout and "not real-time" in run.stdout, run.stdout

    _test_acc(prefix, "neoverse-n2", env)


def test_float_k_blocks_on_neon(tmp_path):
    from test_float_gemm_models import k_blocks

    exe = _exe()
    env = _env(exe)
    env.pop("TILEGRAPH_SGEMM_VARIANT", None)  # the arch's isa must choose: neon (8 x 12)
    prefix = tmp_path / "k_blocks"
    k_blocks(prefix)
    # neoverse-n2 with an L1 of 2 x 32 x 12 floats: B panels of K > 64 in blocks of <= 32 k values.
    spec = json.loads((REPO / "scheduler" / "arch" / "neoverse-n2.json").read_text())
    for level in spec["levels"]:
        if level["name"] == "l1":
            level["capacity_bytes"] = 2 * 32 * 12 * 4
    spec_path = tmp_path / "n2_small_l1.json"
    spec_path.write_text(json.dumps(spec))
    tune = _run([exe, "tune", prefix, "--arch-file", spec_path], env)
    assert tune.returncode == 0, tune.stdout[-3000:]
    project = prefix / "tilegraph_rt" / "neoverse-n2"
    assert elf_machine(project / "build" / "libmodel.so") == "aarch64"
    manifest = json.loads((project / "manifest.json").read_text())
    params = [k["ukernel_params"] for k in manifest["kernels"] if k.get("ukernel") == "sgemm_neon"]
    assert sorted((p["kc"], p["k_blocks"]) for p in params) == \
        sorted([(26, 4), (45, 1), (23, 3), (27, 24), (24, 3), (13, 1)]), params
    _test_acc(prefix, "neoverse-n2", env)


@pytest.fixture(scope="module")
def quantized_models(tmp_path_factory):
    pytest.importorskip("onnxruntime.quantization")
    import make_quantized_models

    out = tmp_path_factory.mktemp("quantized_arm")
    make_quantized_models.main(str(out))
    return out


# (model, arch, the int8 micro-kernel the arch's isa selects)
QUANTIZED_CASES = [
    ("attn_dynamic", "neoverse-n2", "i8mm"),
    ("attn_qdq", "neoverse-n2", "i8mm"),
    ("attn_dynamic", "cortex-a715", "i8mm"),
    ("attn_dynamic", "cortex-a76", "dotprod"),
    ("attn_qdq", "cortex-a72", "neon"),
]


@pytest.mark.parametrize("name,arch,variant", QUANTIZED_CASES,
                         ids=[f"{n}-{a}" for n, a, _ in QUANTIZED_CASES])
def test_quantized_model_on_arm_ukernel(quantized_models, name, arch, variant, tmp_path):
    exe = _exe()
    env = _env(exe)
    env.pop("TILEGRAPH_QGEMM_VARIANT", None)  # the arch's isa must choose
    prefix = tmp_path / name
    prefix.mkdir()
    shutil.copy(quantized_models / name / "model.onnx", prefix / "model.onnx")
    log, project = _tune(exe, prefix, arch, env)
    assert f"on the int8 micro-kernel (qgemm_{variant})" in log, log[-3000:]

    manifest = json.loads((project / "manifest.json").read_text())
    int8 = [k for k in manifest["kernels"] if k["int8_matmul"]]
    assert int8, "the model's quantized matmuls were not recognized"
    off = [(k["name"], k.get("ukernel")) for k in int8 if k.get("ukernel") != f"qgemm_{variant}"]
    assert not off, f"int8 matmuls not on qgemm_{variant}: {off}"
    assert (project / f"qgemm_{variant}.h").is_file()

    reference = ["--reference-opt", "none"] if "qdq" in name else []
    _test_acc(prefix, arch, env, "--rtol", "1e-5", *reference)
