"""A host model runs with denormal floats flushed to zero, and leaves the caller's mode alone.

Denormal arithmetic takes microcode assists on x86 (about 100x slower): a Swin model's
masked attention made its shifted windows 100x slower than the others. tg_model_run
therefore sets FTZ/DAZ (aarch64: FZ) for its kernels, on the pool's threads too, and
restores the caller's setting on return (runtime/model/cpu_model_runtime.h).
"""
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import subprocess_env, tilegraph_or_skip

# Runs the model in a fresh process (the float mode is per thread: pytest's own must not
# be touched) and prints its outputs and whether the caller still computes denormals.
PROBE = r"""
import sys
import numpy as np
from tilegraph.runner import CompiledModel
x = np.full((64, 256), -100.0, dtype=np.float32)
x[0, :4] = [1.0, 0.0, -80.0, -87.0]
m = CompiledModel(sys.argv[1], num_threads=2)
out = m.run({"x": x})
tiny = np.float32(1e-30) * np.float32(1e-10)
print(repr(float(out["e"][0, 0])), repr(float(out["e"][0, 2])), repr(float(out["e"][0, 3])),
      int(np.count_nonzero(out["e"][1:])), int(np.count_nonzero(out["s"][1:])), repr(float(tiny)))
"""


def _model(path):
    # e = exp(x); s = x * 1e-42 (x * a denormal constant: 0 when inputs flush).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])
    e = helper.make_tensor_value_info("e", TensorProto.FLOAT, [64, 256])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [64, 256])
    tiny = helper.make_tensor("tiny", TensorProto.FLOAT, [1], [1e-42])
    graph = helper.make_graph([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Mul", ["x", "tiny"], ["s"])],
                              "denormals", [x], [e, s], [tiny])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_run_flushes_denormals_and_restores_the_callers_mode(tmp_path):
    exe = tilegraph_or_skip()
    prefix = tmp_path / "denormals"
    prefix.mkdir()
    _model(prefix / "model.onnx")
    tune = subprocess.run([str(exe), "tune", str(prefix)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)
    assert tune.returncode == 0, tune.stdout[-3000:]
    probe = subprocess.run([sys.executable, "-c", PROBE, str(prefix)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120, env=subprocess_env())
    assert probe.returncode == 0, probe.stdout
    e1, e80, e87, nonzero_exp, nonzero_mul, tiny = probe.stdout.split()
    assert float(e1) == pytest.approx(np.e, rel=1e-6)
    assert float(e80) == pytest.approx(np.exp(-80.0), rel=1e-6)  # 1.8e-35: normal, kept
    assert float(e87) == pytest.approx(np.exp(-87.0), rel=1e-6)  # 1.6e-38: normal, kept
    assert int(nonzero_exp) == 0   # e^-100 = 3.7e-44 is denormal: flushed (on both threads' rows)
    assert int(nonzero_mul) == 0   # the denormal constant reads as zero
    assert float(tiny) != 0.0      # the caller computes denormals again after the run
