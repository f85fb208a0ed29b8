"""The x86 GEMM micro-kernels' k loops keep their accumulators in registers
when the generated code calls them with a constant depth.

Generated kernels pass k as a literal (`tg_qgemm::tile(INT64_C(96), ...)`).
With the AVX-512 VNNI micro-kernel marked only `noinline`, GCC 12 at -O3
cloned it for that constant (IPA constant propagation), and in the clone it
copied all 16 accumulators to other registers and spilled two to the stack on
every k group: ~2% of the INT8 ViT-B/16's time on Zen 4, invisible to every
correctness test. This compiles a caller as a generated kernel source is
compiled (the project's flags), disassembles it and checks each micro-kernel's
hot loop (the backward jump around its multiply-adds): no stack access and no
vector register-to-register copy in it.

Compile only, nothing runs: any x86-64 host with GCC and objdump checks every
variant, whatever its own CPU.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UKERNELS = REPO / "codegen" / "ukernels"
# The generated project's flags for a kernel source (codegen's CMakeLists), less -march=native;
# the last two GCC's only.
PROJECT_FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-fPIC"]
GCC_FLAGS = ["-fno-split-loops", "-fno-tree-loop-distribute-patterns"]

# header, ISA flags, the calls a generated kernel makes (constant depth), the loop's multiply-add
VARIANTS = {
    "qgemm_avx512vnni": (
        ["-mavx512f", "-mavx512bw", "-mavx512vnni"],
        "tg_qgemm::tile(INT64_C(96), a, b, c);\n"
        "tg_qgemm::tile_accumulate(INT64_C(96), a + 3072, b + 12288, c);",
        "vpdpbusd"),
    "qgemm_avx2": (
        ["-mavx2", "-mfma"],
        "tg_qgemm::tile(INT64_C(96), a, b, c);\n"
        "tg_qgemm::tile_accumulate(INT64_C(96), a, b + 12288, c);",
        "vpmaddwd"),
    "sgemm_avx512": (
        ["-mavx512f", "-mfma"],
        "tg_sgemm::tile(INT64_C(384), fa, fb, fc, false);\n"
        "tg_sgemm::tile(INT64_C(384), fa + 3072, fb + 12288, fc, true);",
        "vfmadd231ps"),
    "sgemm_avx2": (
        ["-mavx2", "-mfma"],
        "tg_sgemm::tile(INT64_C(384), fa, fb, fc, false);\n"
        "tg_sgemm::tile(INT64_C(384), fa + 3072, fb + 12288, fc, true);",
        "vfmadd231ps"),
}

CALLER = """#include <cstdint>
#include "{header}.h"
void generated_kernel(const uint8_t* a, const int8_t* b, int32_t* c,
                      const float* fa, const float* fb, float* fc) {{
  (void)a; (void)b; (void)c; (void)fa; (void)fb; (void)fc;
  {calls}
}}
"""

INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")


def _tools_missing():
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        return "x86-64 micro-kernels: compiled for an x86-64 host only"
    if shutil.which("objdump") is None:
        return "no objdump"
    return None


pytestmark = pytest.mark.skipif(_tools_missing() is not None, reason=_tools_missing() or "")


def _functions(disassembly):
    """{name: [(address, mnemonic, operands)]} of an `objdump -d -C` listing."""
    functions, current = {}, None
    for line in disassembly.splitlines():
        head = FUNCTION.match(line)
        if head:
            current = functions.setdefault(head.group(1), [])
            continue
        ins = INSTRUCTION.match(line)
        if ins and current is not None:
            current.append((int(ins.group(1), 16), ins.group(2), ins.group(3)))
    return functions


def _hot_loops(instructions, multiply_add):
    """The bodies of the innermost loops (a conditional backward jump, none
    inside; an unconditional jmp back is a branch into the middle of one) that
    hold a multiply-add. Outer loops (a k block's prefetch, the row loop of a
    tail) may keep their counters on the stack."""
    back_jumps = []
    for address, mnemonic, operands in instructions:
        target = re.match(r"([0-9a-f]+)\b", operands)
        if mnemonic.startswith("j") and not mnemonic.startswith("jmp") and target \
                and int(target.group(1), 16) < address:
            back_jumps.append((int(target.group(1), 16), address))
    loops = []
    for start, end in back_jumps:
        if any(start <= s and e < end for s, e in back_jumps if (s, e) != (start, end)):
            continue
        body = [i for i in instructions if start <= i[0] <= end]
        if any(m == multiply_add for _, m, _ in body):
            loops.append(body)
    return loops


def _vector_copy(mnemonic, operands):
    """A register-to-register vector move (no memory operand)."""
    return (mnemonic.startswith(("vmovdqa", "vmovdqu", "vmovaps", "vmovups"))
            and "(" not in operands and operands.count("%") == 2
            and all(r.startswith(("%xmm", "%ymm", "%zmm")) for r in operands.split(",")))


# GCC builds the generated projects; clang is what a user's CMake may pick instead
# (it has no noipa: the header keeps noinline for it).
@pytest.mark.parametrize("compiler", ["g++", "clang++"])
@pytest.mark.parametrize("header", sorted(VARIANTS))
def test_micro_kernel_k_loop_keeps_accumulators_in_registers(header, compiler, tmp_path):
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler}")
    isa, calls, multiply_add = VARIANTS[header]
    source = tmp_path / "caller.cpp"
    source.write_text(CALLER.format(header=header, calls=calls))
    obj = tmp_path / "caller.o"
    flags = PROJECT_FLAGS + (GCC_FLAGS if compiler == "g++" else [])
    built = subprocess.run([compiler, "-std=c++17", *flags, *isa, "-I", str(UKERNELS), "-c", str(source),
                            "-o", str(obj)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert "warning" not in built.stderr, built.stderr
    listing = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", str(obj)], check=True,
                             capture_output=True, text=True, timeout=60).stdout
    micro_kernels = {name: body for name, body in _functions(listing).items()
                     if ("tg_qgemm::" in name or "tg_sgemm::" in name) and "tile" in name}
    assert micro_kernels, f"no micro-kernel function in the object:\n{listing[:2000]}"
    checked = 0
    for name, instructions in micro_kernels.items():
        # The stack: memory at %rsp, or at %rbp where the function keeps its frame there
        # (clang may use %rbp as one more register: an index is no stack access).
        frame = any(m == "mov" and o == "%rsp,%rbp" for _, m, o in instructions)
        stack_bases = {"%rsp", "%rbp"} if frame else {"%rsp"}
        for body in _hot_loops(instructions, multiply_add):
            checked += 1
            stack = [f"{m} {o}" for _, m, o in body
                     if any(base in stack_bases for base in re.findall(r"\((%\w+)", o))]
            copies = [f"{m} {o}" for _, m, o in body if _vector_copy(m, o)]
            assert not stack, f"{name}: the k loop touches the stack: {stack}"
            assert not copies, f"{name}: the k loop copies vector registers: {copies}"
            assert sum(m == multiply_add for _, m, _ in body) >= 8, f"{name}: a k loop of few {multiply_add}"
    # Every call site's micro-kernel (a clone per constant, or the function itself) has its loop.
    assert checked >= 1, f"no {multiply_add} loop found in {sorted(micro_kernels)}"
