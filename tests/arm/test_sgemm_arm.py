"""The AArch64 float32 GEMM micro-kernel (codegen/ukernels/sgemm_neon.h) matches
a reference GEMM: run_sgemm_arm_test.sh cross-compiles the test program and
runs it under qemu-aarch64. Skipped where the cross compiler or qemu is missing.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "run_sgemm_arm_test.sh"
CXX = os.environ.get("AARCH64_CXX", "aarch64-linux-gnu-g++")
QEMU = os.environ.get("QEMU_AARCH64", "qemu-aarch64")


@pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no aarch64 cross compiler ({CXX})")
@pytest.mark.skipif(shutil.which(QEMU) is None, reason=f"no {QEMU}")
def test_sgemm_neon_kernel_matches_reference_under_qemu():
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "ok   neon: sgemm neon 8x12:" in output, output
    assert ", 0 failures" in output, output
