"""INT8 models quantized by onnxruntime.quantization, compiled for the host CPU:

* outputs match onnxruntime: exactly (max_rel 0; rtol 1e-5 allows float
  reassociation in float outputs) for the dynamic and QOperator forms
  (com.microsoft contrib ops included) and, for QDQ, against onnxruntime with graph optimizations off (which
  runs Quantize/DequantizeLinear as written; with them on, onnxruntime fuses
  QDQ into integer kernels that round requantization differently, by a few
  quantization steps of the output);
* every quantized matmul / batch matmul runs on the int8 micro-kernel
  (asserted from manifest.json: no kernel with `int8_matmul` lacks `ukernel`);
* every x86 micro-kernel variant the CPU can run (TILEGRAPH_QGEMM_VARIANT).
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Not a conftest.py: tests/models' conftest is imported by name ("conftest") when
# both folders run in one pytest session.
REPO = Path(__file__).resolve().parents[2]
for _p in (REPO / "python", Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from tilegraph._common import find_tilegraph_bin  # noqa: E402

pytest.importorskip("onnxruntime.quantization")
import make_quantized_models  # noqa: E402


def _cpu_flags():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


FLAGS = _cpu_flags()
VARIANTS = ["scalar"] + (["avx2"] if "avx2" in FLAGS else []) + \
           (["avx512vnni"] if {"avx512_vnni", "avx512bw"} <= FLAGS else []) + \
           (["amx"] if {"amx_int8", "amx_tile"} <= FLAGS else [])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("quantized")
    make_quantized_models.main(str(out))
    return out


def _tuned(prefix: Path, model: bytes, *tune_args, **env_vars):
    """PREFIX/model.onnx = model, tuned for the host with `tune_args` and the
    environment variables `env_vars`: the tune output and that environment
    (skips without the CLI)."""
    exe = find_tilegraph_bin()
    if exe is None:
        pytest.skip("tilegraph binary not built (build/bin/tilegraph; or set TILEGRAPH_BIN)")
    prefix.mkdir()
    (prefix / "model.onnx").write_bytes(model)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), **env_vars)
    tune = subprocess.run([str(exe), "tune", str(prefix), *tune_args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    assert tune.returncode == 0, tune.stdout[-3000:]
    return tune.stdout, env


def _assert_matches_onnxruntime(prefix: Path, env, *acc_args):
    """test_acc of the tuned PREFIX (its flags `acc_args`) passes."""
    acc = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), *acc_args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    print(acc.stdout)
    assert acc.returncode == 0, acc.stdout


def _manifest(prefix: Path):
    return json.loads((prefix / "tilegraph_rt" / "host" / "manifest.json").read_text())


def _kernel_source(prefix: Path) -> str:
    """The generated kernels' C++, every file of the host project."""
    return "".join(p.read_text() for p in sorted((prefix / "tilegraph_rt" / "host").glob("kernels_*.cpp")))


def _cases():
    for v in VARIANTS:
        for name in ("attn_dynamic", "attn_qoperator", "cnn_qoperator"):
            yield name, v
    for name in ("attn_qdq", "attn_qdq_s8", "cnn_qdq"):
        yield name, VARIANTS[-1]


@pytest.mark.parametrize("name,variant", list(_cases()))
def test_quantized_model(models, name, variant, tmp_path):
    prefix = tmp_path / name
    out, env = _tuned(prefix, (models / name / "model.onnx").read_bytes(), TILEGRAPH_QGEMM_VARIANT=variant)
    assert f"on the int8 micro-kernel (qgemm_{variant})" in out

    int8 = [k for k in _manifest(prefix)["kernels"] if k["int8_matmul"]]
    assert int8, "the model's quantized matmuls were not recognized"
    naive = [k["name"] for k in int8 if k.get("ukernel") != f"qgemm_{variant}"]
    assert not naive, f"quantized matmuls off the micro-kernel path: {naive}"

    reference = ["--reference-opt", "none"] if "qdq" in name else []
    _assert_matches_onnxruntime(prefix, env, "--rtol", "1e-5", *reference)


def _small_cache_host_spec(path: Path) -> Path:
    """A host spec with an 800-byte L1 and a 16 KiB L2: every int8 GEMM of the
    small models is cut into kc blocks (scheduler::int_gemm_blocking: k groups
    of 3 on avx512vnni, 12 on avx2, 25 on scalar, so K = 256 ends in a short
    block; 1 on amx, whose k groups are 64 deep) and into several row blocks."""
    spec = {
        "name": "host", "target": "cpu", "description": "host with tiny caches (kc-block test)",
        "isa": "x86-64-avx512", "compute_units": 2, "warp_size": 1, "max_threads_per_block": 1,
        "max_threads_per_unit": 1, "max_blocks_per_unit": 1, "shared_bytes_per_block": 16384,
        "shared_bytes_per_unit": 16384, "registers_per_unit": 512, "max_registers_per_thread": 128,
        "kernel_launch_seconds": 2e-6, "peak_fp32_flops": 1e11, "peak_fp16_flops": 1e11,
        "peak_int8_ops": 4e11, "vector_bytes": 64,
        "levels": [
            {"name": "dram", "scope": "device", "capacity_bytes": 1 << 32, "bandwidth_bytes_per_s": 1e10,
             "transaction_bytes": 64},
            {"name": "l2", "scope": "block", "capacity_bytes": 16384, "bandwidth_bytes_per_s": 1e11,
             "transaction_bytes": 64},
            {"name": "l1", "scope": "block", "capacity_bytes": 800, "bandwidth_bytes_per_s": 2e11,
             "transaction_bytes": 64},
            {"name": "registers", "scope": "thread", "capacity_bytes": 2048, "bandwidth_bytes_per_s": 1e12,
             "transaction_bytes": 64},
        ],
    }
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.parametrize("variant", VARIANTS)
def test_kc_blocks_match_onnxruntime(models, variant, tmp_path):
    """K in several kc blocks (tile, then tile_accumulate into the same C
    tiles; zero points and the epilogue of each panel right after its last
    block's call) gives the same outputs as onnxruntime, exactly, on every x86
    variant."""
    prefix = tmp_path / "attn_dynamic"
    spec = _small_cache_host_spec(tmp_path / "host.json")
    _, env = _tuned(prefix, (models / "attn_dynamic" / "model.onnx").read_bytes(), "--arch-file", str(spec),
                    TILEGRAPH_QGEMM_VARIANT=variant)
    code = _kernel_source(prefix)
    assert "tg_qgemm::tile_accumulate(" in code, "no GEMM was cut into kc blocks"
    # The epilogue stores a panel's outputs inside the last block's panel
    # loop, while its C tile is in L1: between a kernel's last
    # tile_accumulate call and its first output store no loop over the row
    # panels starts again (it did: for (p ...) after all the blocks).
    kernels = [k for k in re.split(r"\n// ", code) if "tg_qgemm::tile_accumulate(" in k]
    for kernel in kernels:
        after_last_call = kernel[kernel.rindex("tg_qgemm::tile_accumulate("):]
        before_store = after_last_call[:after_last_call.index("out[")]
        assert not re.search(r"for \(int64_t p\w* = 0", before_store), \
            f"epilogue in a loop of its own after the kc blocks:\n{kernel[:300]}"
    _assert_matches_onnxruntime(prefix, env, "--rtol", "1e-5")


QUANTIZE_VARIANTS = ["none"] + (["avx2"] if {"avx2", "fma"} <= FLAGS else []) + \
                    (["avx512"] if "avx512f" in FLAGS else [])


def _quantize_model(path: Path):
    """x [197, 768] (a ViT-B/16 activation) through DynamicQuantizeLinear
    (y, scale, zero point: all outputs; its range in per-row partials), the
    same x reshaped to [2, 75648] through another (its range in one
    reduction), and through QuantizeLinear to int8 with scale 0.004 and zero
    point -3 (x in [-1, 1) saturates at both ends)."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zp"]),
             helper.make_node("Reshape", ["x", "halves"], ["x2"]),
             helper.make_node("DynamicQuantizeLinear", ["x2"], ["y2", "scale2", "zp2"]),
             helper.make_node("QuantizeLinear", ["x", "s8", "z8"], ["y8"])]
    inits = [helper.make_tensor("s8", TensorProto.FLOAT, [], [0.004]),
             helper.make_tensor("z8", TensorProto.INT8, [], [-3]),
             helper.make_tensor("halves", TensorProto.INT64, [2], [2, 75648])]
    graph = helper.make_graph(
        nodes, "quantize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [197, 768])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [197, 768]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("zp", TensorProto.UINT8, []),
         helper.make_tensor_value_info("y2", TensorProto.UINT8, [2, 75648]),
         helper.make_tensor_value_info("scale2", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("zp2", TensorProto.UINT8, []),
         helper.make_tensor_value_info("y8", TensorProto.INT8, [197, 768])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


@pytest.mark.parametrize("variant", QUANTIZE_VARIANTS)
def test_quantize_ukernel_matches_onnxruntime(variant, tmp_path):
    """DynamicQuantizeLinear's range (tg_quantize::extremes) and quantize step,
    and QuantizeLinear, on the quantize micro-kernel (TILEGRAPH_QUANTIZE_VARIANT: the AVX2 one on an AVX-512 CPU
    too; none keeps the generated loops) give onnxruntime's outputs exactly."""
    prefix = tmp_path / "quantize"
    _quantize_model(tmp_path / "quantize.onnx")
    _, env = _tuned(prefix, (tmp_path / "quantize.onnx").read_bytes(), TILEGRAPH_QUANTIZE_VARIANT=variant)
    quantizing = [k for k in _manifest(prefix)["kernels"] if k.get("ukernel", "").startswith("quantize_")]
    if variant == "none":
        assert not quantizing
    else:
        # Each DynamicQuantizeLinear's range kernel and quantize step, and the QuantizeLinear.
        assert len(quantizing) == 5, [k["name"] for k in _manifest(prefix)["kernels"]]
        assert {k["ukernel"] for k in quantizing} == {f"quantize_{variant}"}
    for seed in ("0", "1"):
        _assert_matches_onnxruntime(prefix, env, "--rtol", "0", "--seed", seed)


def test_one_thread_packs_a_once_per_row_block(models, tmp_path):
    """At one thread the tasks of a GEMM's column chunks run back to back: the
    second chunk reuses the row block's A panels the first packed (`run`: the
    tasks the thread ran before this one) and the outputs still equal
    onnxruntime's, at one thread and at two."""
    prefix = tmp_path / "attn_dynamic"
    _, env = _tuned(prefix, (models / "attn_dynamic" / "model.onnx").read_bytes())
    code = _kernel_source(prefix)
    assert "if ((tg_min<int64_t>(run, nc) < INT64_C(1))) {" in code, "no int8 GEMM packs A once for its chunks"
    for threads in ("1", "2"):
        _assert_matches_onnxruntime(prefix, env, "--rtol", "1e-5", "--threads", threads)
