#!/usr/bin/env bash
# Static throughput of the AArch64 float GEMM micro-kernel (codegen/ukernels/sgemm_neon.h)
# under llvm-mca on Neoverse N2, against its FMA peak (2 FMLA pipes x 4 lanes = 8 FMA/cycle).
#
#   bash benchmarks/sgemm_neon_mca.sh          # needs aarch64-linux-gnu-g++ and llvm-mca-15
#
# Compiles a call of tg_sgemm::tile with -O3, extracts the inner k loop (the shortest backward
# branch whose body holds the 24 FMLA), and prints cycles per k step and % of peak.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '#include "sgemm_neon.h"\nvoid run(int64_t k, const float* a, const float* b, float* c, bool acc) { tg_sgemm::tile(k, a, b, c, acc); }\n' > "$tmp/s.cpp"
aarch64-linux-gnu-g++ -O3 -march=armv8.2-a -I"$here/codegen/ukernels" -S "$tmp/s.cpp" -o "$tmp/s.s"
python3 - "$tmp/s.s" "$tmp/loop.s" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
labels = {l.rstrip(":"): i for i, l in enumerate(lines) if re.match(r"^\.L\w+:", l)}
loop = None
for i, l in enumerate(lines):
    m = re.match(r"\s+(?:b(?:\.\w+|ne|eq|gt|ge|lt|le|hi|hs|lo|ls|cc|cs)?|cbn?z\s+\w+,)\s*(\.L\w+)", l)
    if m and m.group(1) in labels and labels[m.group(1)] < i:
        body = lines[labels[m.group(1)] + 1:i + 1]
        # The innermost such loop: a backward jump to before it (the zeroing
        # path of tile(..., accumulate = false) rejoining) also spans 24 FMLA.
        if sum("fmla" in x for x in body) >= 24 and (loop is None or len(body) < len(loop)):
            loop = body
if loop is None:
    sys.exit("no k loop with 24 FMLA found")
open(sys.argv[2], "w").write("\n".join(x for x in loop if not x.strip().startswith(".")) + "\n")
PY
fmla=$(grep -c fmla "$tmp/loop.s")
cycles=$(llvm-mca-15 -mtriple=aarch64 -mcpu=neoverse-n2 -mattr=+dotprod,+i8mm -iterations=1000 "$tmp/loop.s" |
         awk '/^Total Cycles:/ {print $3}')
python3 -c "
c = $cycles / 1000; fma = $fmla * 4
print(f'sgemm_neon k loop on Neoverse N2 (llvm-mca-15): {$fmla} FMLA, {c:.2f} cycles/k step, '
      f'{fma / c:.2f} FMA/cycle of 8 peak = {100 * fma / c / 8:.1f}%')"
