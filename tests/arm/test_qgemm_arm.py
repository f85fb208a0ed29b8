"""The ARM integer GEMM micro-kernels (codegen/ukernels/qgemm_{neon,dotprod,i8mm}.h)
are exact: run_qgemm_arm_test.sh cross-compiles the test program per variant and
runs it under qemu-aarch64. Skipped where the cross compiler or qemu is missing
(Debian packages g++-aarch64-linux-gnu and qemu-user).
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "run_qgemm_arm_test.sh"
CXX = os.environ.get("AARCH64_CXX", "aarch64-linux-gnu-g++")
QEMU = os.environ.get("QEMU_AARCH64", "qemu-aarch64")


@pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no aarch64 cross compiler ({CXX})")
@pytest.mark.skipif(shutil.which(QEMU) is None, reason=f"no {QEMU}")
def test_qgemm_arm_kernels_are_exact_under_qemu():
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"run_qgemm_arm_test.sh failed:\n{output}"
    assert "skipped:" not in output, output
    for variant in ("neon", "dotprod", "i8mm"):
        assert f"ok   {variant}/" in output, f"no passing run of the {variant} kernel:\n{output}"
    assert " 0 failed" in output, output
