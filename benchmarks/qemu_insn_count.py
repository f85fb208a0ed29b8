"""Instructions per inference of an INT8 model on ARM, per GEMM micro-kernel,
counted under qemu-aarch64 (issue figure 3; qemu time is not real time, its
instruction count is).

    python3 benchmarks/qemu_insn_count.py PREFIX [--arch neoverse-n2] \
        [--variants neon,dotprod,i8mm] [--work build/qemu_insn]

PREFIX holds model.onnx (e.g. build/int8_bench/vit/dynamic from
benchmarks/int8_vs_onnxruntime.py). For each variant the model is compiled for
--arch with TILEGRAPH_QGEMM_VARIANT set, and main_test runs under
`qemu-aarch64 -cpu max` with a counting plugin (benchmarks/qemu_insn_plugin.c,
built here with gcc) on one thread, for 1 and for 3 timed iterations: the
difference / 2 is one inference, without start-up and weight loading.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from tilegraph._common import find_tilegraph_bin  # noqa: E402


def sh(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def count(plugin, main_test, iters):
    cmd = ["qemu-aarch64", "-cpu", "max", "-L", "/usr/aarch64-linux-gnu", "-plugin", str(plugin),
           str(main_test), "--threads", "1", "--warmup", "0", "--iters", str(iters)]
    env = dict(os.environ, OMP_WAIT_POLICY="passive")  # no spinning threads in the count
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    m = re.search(r"insns: (\d+)", out.stderr)
    if not m:
        raise SystemExit(f"the plugin printed no count:\n{out.stderr[-2000:]}")
    return int(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("prefix", type=Path)
    p.add_argument("--arch", default="neoverse-n2")
    p.add_argument("--variants", default="neon,dotprod,i8mm")
    p.add_argument("--work", type=Path, default=REPO / "build" / "qemu_insn")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    plugin = args.work / "libinsn.so"
    sh(["gcc", "-shared", "-fPIC", "-O2", str(REPO / "benchmarks" / "qemu_insn_plugin.c"), "-o", str(plugin)])
    exe = find_tilegraph_bin()
    rows = []
    for variant in args.variants.split(","):
        prefix = args.work / args.prefix.name / variant
        prefix.mkdir(parents=True, exist_ok=True)
        shutil.copy(args.prefix / "model.onnx", prefix / "model.onnx")
        sh([str(exe), "tune", str(prefix), "--arch", args.arch],
           env=dict(os.environ, TILEGRAPH_QGEMM_VARIANT=variant))
        main_test = prefix / "tilegraph_rt" / args.arch / "build" / "main_test"
        one, three = count(plugin, main_test, 1), count(plugin, main_test, 3)
        rows.append((variant, (three - one) / 2))
    base = rows[0][1]
    print(f"\n{args.prefix} on {args.arch} (qemu-aarch64 -cpu max, 1 thread): instructions per inference")
    for variant, n in rows:
        print(f"  {variant:10} {n / 1e6:10.1f} M   {n / base:5.2f}x of {rows[0][0]}")


if __name__ == "__main__":
    main()
