#!/usr/bin/env python3
"""Static throughput of the ARM integer GEMM micro-kernels with llvm-mca.

For each ARM variant (codegen/ukernels/qgemm_{neon,dotprod,i8mm}.h) and each
compiler (aarch64-linux-gnu-g++, clang++ --target=aarch64-linux-gnu), compiles a
tiny TU that calls tg_qgemm::tile() in a loop with -O3 -S, extracts the inner k
loop (the innermost loop holding the kernel's multiply instructions), and runs
llvm-mca on it:

  llvm-mca-15 -mcpu=neoverse-n2, llvm-mca-19 -mcpu=neoverse-n2 and -mcpu=neoverse-v1
  (always with -mattr=+dotprod,+i8mm: without it an unsupported instruction is
  dropped silently; the script also checks mca saw every instruction)

Each loop is measured as compiled (immediate-offset loads, one add per panel
pointer) and rewritten to post-index loads (`ldr q0, [x0], #16`, no add), to show
what the addressing mode costs in the model.

Columns: cycles/iter = Total Cycles / iterations; MACs/iter = kMR*kNR*kKU*unroll
(unroll: kernel multiply instructions in the loop / per k group); peak =
vector pipes of the CPU x MACs per vector instruction of the kernel's mix
(N2: 2 pipes, so 32 MACs/cycle for SDOT, 64 for SMMLA, 8 for the NEON
SMULL/SADALP mix; V1: 4 pipes, twice that).

  python3 benchmarks/ukernel_mca.py                  # table
  python3 benchmarks/ukernel_mca.py --show-loops     # also print each extracted loop
  python3 benchmarks/ukernel_mca.py --check          # exit 1 if an N2 target is missed
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UKERNELS = REPO / "codegen" / "ukernels"


class Variant:
    def __init__(self, name, march, mnemonics, per_group, macs_per_insn):
        self.name = name
        self.march = march
        self.mnemonics = mnemonics          # the kernel's multiply instructions
        self.per_group = per_group          # how many of them one k group needs
        self.macs_per_insn = macs_per_insn  # MACs per vector instruction of the mix


VARIANTS = [
    # Per 4x4x16 group: 16 SMULL + 16 SMULL2 + 32 SADALP = 64 vector
    # instructions for 256 MACs -> 4 MACs per vector instruction.
    Variant("neon", "armv8-a", ("smull", "smull2"), 32, 4),
    Variant("dotprod", "armv8.2-a+dotprod", ("sdot",), 16, 16),
    Variant("i8mm", "armv8.6-a+dotprod+i8mm", ("smmla",), 16, 32),
]

# (mca binary, -mcpu, vector pipes the model gives that CPU)
MCA_RUNS = [
    ("llvm-mca-15", "neoverse-n2", 2),
    ("llvm-mca-19", "neoverse-n2", 2),
    ("llvm-mca-19", "neoverse-v1", 4),
]

# Targets on Neoverse N2 with llvm-mca-15, offset addressing (MACs/cycle).
TARGETS = {"dotprod": 31.0, "i8mm": 58.0}

DRIVER = """#include "{header}"
void bench_tiles(int64_t tiles, int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {{
  for (int64_t t = 0; t < tiles; ++t) {{
    tg_qgemm::tile(k_groups, a, b, c + t * tg_qgemm::kMR * tg_qgemm::kNR);
  }}
}}
"""

BRANCH = re.compile(r"^(b\.\w+|b|cbz|cbnz|tbz|tbnz)\s+(.*)$")
LOAD = re.compile(r"^(ldr|ldp)\s+(.*?),?\s*\[(x\d+)(?:,\s*#?(-?\d+))?\]$")


def header_constants(name):
    text = (UKERNELS / f"qgemm_{name}.h").read_text()
    consts = {}
    for key in ("kMR", "kNR", "kKU"):
        m = re.search(rf"constexpr int {key} = (\d+);", text)
        if not m:
            sys.exit(f"error: {key} not found in qgemm_{name}.h")
        consts[key] = int(m.group(1))
    return consts


def compilers():
    found = []
    if shutil.which("aarch64-linux-gnu-g++"):
        found.append(("g++", ["aarch64-linux-gnu-g++"]))
    for clang in ("clang++", "clang++-19", "clang++-15"):
        if shutil.which(clang):
            found.append((clang, [clang, "--target=aarch64-linux-gnu"]))
            break
    return found


def compiler_version(cmd):
    out = subprocess.run([cmd[0], "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+\.\d+(\.\d+)?)", out.splitlines()[0] if out else "")
    return m.group(1) if m else "?"


def compile_to_asm(cmd, variant, work):
    src = work / f"drv_{variant.name}.cpp"
    src.write_text(DRIVER.format(header=f"qgemm_{variant.name}.h"))
    out = work / f"drv_{variant.name}_{Path(cmd[0]).name}.s"
    r = subprocess.run([*cmd, "-std=c++20", "-O3", f"-march={variant.march}", f"-I{UKERNELS}",
                        "-S", str(src), "-o", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return out.read_text(), None


def instructions(asm):
    """(kind, text) per meaningful line: kind is 'label' or 'insn'; comments,
    directives and inline-asm markers are dropped."""
    items = []
    for raw in asm.splitlines():
        line = re.sub(r"(//|@).*$", "", raw).strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([\w.$]+):(.*)$", line)
        if m:
            items.append(("label", m.group(1)))
            line = m.group(2).strip()
            if not line:
                continue
        if line.startswith(".") and not re.match(r"^\.\w+:", line):
            continue  # directive
        items.append(("insn", re.sub(r"\s+", " ", line)))
    return items


def resolve(items, index, target):
    """Index of the label a branch at `index` jumps to (GNU local labels 1b/1f too)."""
    m = re.fullmatch(r"(\d+)([bf])", target)
    if m:
        name, direction = m.group(1), m.group(2)
        rng = range(index - 1, -1, -1) if direction == "b" else range(index + 1, len(items))
        for j in rng:
            if items[j] == ("label", name):
                return j
        return None
    for j, item in enumerate(items):
        if item == ("label", target):
            return j
    return None


def inner_kernel_loop(asm, variant):
    """Instructions of the innermost backward-branch loop that holds the most
    kernel multiplies, the loop label renamed to .Ltg_loop."""
    items = instructions(asm)
    loops = []
    for i, (kind, text) in enumerate(items):
        if kind != "insn":
            continue
        m = BRANCH.match(text)
        if not m:
            continue
        target = m.group(2).split(",")[-1].strip()
        j = resolve(items, i, target)
        if j is not None and j < i:
            loops.append((j, i))
    innermost = [(j, i) for (j, i) in loops
                 if not any(j <= j2 and i2 <= i and (j2, i2) != (j, i) for (j2, i2) in loops)]

    def count(span):
        j, i = span
        return sum(1 for kind, text in items[j:i + 1]
                   if kind == "insn" and text.split(" ")[0] in variant.mnemonics)

    candidates = [s for s in innermost if count(s) > 0]
    if not candidates:
        return None
    j, i = max(candidates, key=lambda s: (count(s), -(s[1] - s[0])))
    body = [text for kind, text in items[j + 1:i] if kind == "insn"]
    branch = BRANCH.match(items[i][1])
    operands = branch.group(2).split(",")
    operands[-1] = " .Ltg_loop"
    body.append(f"{branch.group(1)} {','.join(operands).strip()}")
    return body


def to_post_index(body):
    """The loop with each panel pointer's immediate-offset loads turned into
    post-index loads and its `add xP, xP, #N` removed, where the loads from xP
    read 0..N-1 contiguously in program order. None if no pointer qualifies."""
    out = list(body)
    changed = False
    for idx, text in enumerate(body):
        m = re.fullmatch(r"add (x\d+), (x\d+), #?(\d+)", text)
        if not m or m.group(1) != m.group(2):
            continue
        ptr, step = m.group(1), int(m.group(3))
        loads = []
        for k, t in enumerate(body):
            lm = LOAD.match(t)
            if lm and lm.group(3) == ptr:
                size = 16 * len(lm.group(2).split(",")) if lm.group(2).startswith("q") else None
                loads.append((k, lm.group(1), lm.group(2), int(lm.group(4) or 0), size))
        offset = 0
        ok = bool(loads)
        for k, op, regs, off, size in loads:
            ok = ok and size is not None and off == offset and k < idx
            offset += size or 0
        if not ok or offset != step:
            continue
        for k, op, regs, off, size in loads:
            out[k] = f"{op} {regs}, [{ptr}], #{size}"
        out[idx] = None
        changed = True
    return [t for t in out if t is not None] if changed else None


def run_mca(mca, cpu, body, iterations, work):
    src = work / "loop.s"
    src.write_text(".Ltg_loop:\n" + "\n".join(body) + "\n")
    r = subprocess.run([mca, "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+dotprod,+i8mm",
                        f"-iterations={iterations}", str(src)], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "mca failed"
    cycles = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
    iters = re.search(r"Iterations:\s+(\d+)", r.stdout)
    insns = re.search(r"Instructions:\s+(\d+)", r.stdout)
    if not (cycles and iters and insns):
        return None, "could not parse mca output"
    if int(insns.group(1)) != len(body) * int(iters.group(1)):
        return None, (f"mca modelled {int(insns.group(1)) // int(iters.group(1))} of "
                      f"{len(body)} instructions (unsupported instruction dropped?)")
    return int(cycles.group(1)) / int(iters.group(1)), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=[v.name for v in VARIANTS],
                        choices=[v.name for v in VARIANTS])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--show-loops", action="store_true", help="print each extracted loop")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a Neoverse N2 (llvm-mca-15) target is missed")
    args = parser.parse_args()

    comps = compilers()
    if not comps:
        sys.exit("error: no aarch64 compiler (apt-get install g++-aarch64-linux-gnu, or clang)")
    runs = [r for r in MCA_RUNS if shutil.which(r[0])]
    for missing in sorted({r[0] for r in MCA_RUNS} - {r[0] for r in runs}):
        package = missing.replace("llvm-mca", "llvm")
        print(f"note: {missing} not found (apt-get install {package}); its rows are left out")
    if not runs:
        sys.exit("error: no llvm-mca-15 / llvm-mca-19")

    header = ["variant", "compiler", "mca", "cpu", "addressing", "cycles/iter", "MACs/iter",
              "MACs/cycle", "% of peak"]
    rows = []
    problems = []
    measured = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for variant in VARIANTS:
            if variant.name not in args.variants:
                continue
            consts = header_constants(variant.name)
            for comp_name, cmd in comps:
                comp_label = f"{comp_name} {compiler_version(cmd)}"
                asm, err = compile_to_asm(cmd, variant, work)
                if asm is None:
                    problems.append(f"{variant.name} / {comp_label}: compile failed: {err}")
                    continue
                body = inner_kernel_loop(asm, variant)
                if body is None:
                    problems.append(f"{variant.name} / {comp_label}: no loop with "
                                    f"{'/'.join(variant.mnemonics)} found")
                    continue
                multiplies = sum(1 for t in body if t.split(" ")[0] in variant.mnemonics)
                unroll = multiplies / variant.per_group
                macs = consts["kMR"] * consts["kNR"] * consts["kKU"] * unroll
                if args.show_loops:
                    print(f"--- {variant.name} / {comp_label}: {len(body)} instructions, "
                          f"unroll {unroll:g}")
                    print("\n".join("    " + t for t in body))
                bodies = [("offset", body)]
                post = to_post_index(body)
                if post is not None:
                    bodies.append(("post-index*", post))
                for mca, cpu, pipes in runs:
                    peak = pipes * variant.macs_per_insn
                    for addressing, b in bodies:
                        cpi, err = run_mca(mca, cpu, b, args.iterations, work)
                        if cpi is None:
                            problems.append(f"{variant.name} / {comp_label} / {mca} {cpu}: {err}")
                            continue
                        rate = macs / cpi
                        measured[(variant.name, comp_name, mca, cpu, addressing)] = rate
                        rows.append([variant.name, comp_label, mca.replace("llvm-mca-", "mca "),
                                     cpu, addressing, f"{cpi:.2f}", f"{macs:g}", f"{rate:.1f}",
                                     f"{100 * rate / peak:.0f}%"])

    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    print(fmt(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt(r))
    print("* post-index: the compiled loop rewritten to post-index loads (no pointer adds)")

    missed = []
    for name, target in TARGETS.items():
        if name not in args.variants:
            continue
        for comp_name, _ in comps:
            rate = measured.get((name, comp_name, "llvm-mca-15", "neoverse-n2", "offset"))
            if rate is None:
                continue
            verdict = "met" if rate >= target else "MISSED"
            print(f"target {name} / {comp_name} on neoverse-n2 (mca 15): {rate:.1f} >= {target:g} "
                  f"MACs/cycle: {verdict}")
            if rate < target:
                missed.append(name)
    for p in problems:
        print(f"problem: {p}")
    if args.check and (missed or problems):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
