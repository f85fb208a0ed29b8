#!/usr/bin/env bash
# Cross-compiles tests/arm/sgemm_arm_test.cpp (codegen/ukernels/sgemm_neon.h)
# for plain armv8-a and runs it under qemu-aarch64 -cpu cortex-a53 (the
# smallest CPU with the instructions: a kernel using more would fault).
# Exits 0 with 'skipped: ...' when the cross compiler or qemu is missing.
#   AARCH64_CXX (default aarch64-linux-gnu-g++), QEMU_AARCH64 (qemu-aarch64),
#   QEMU_LD_PREFIX (/usr/aarch64-linux-gnu)
set -uo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
cxx="${AARCH64_CXX:-aarch64-linux-gnu-g++}"
qemu="${QEMU_AARCH64:-qemu-aarch64}"
sysroot="${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}"
command -v "$cxx" > /dev/null || { echo "skipped: no aarch64 cross compiler ($cxx)"; exit 0; }
command -v "$qemu" > /dev/null || { echo "skipped: no $qemu"; exit 0; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cpu=cortex-a53
"$qemu" -cpu help 2>/dev/null | grep -qw "$cpu" || cpu=max
if ! "$cxx" -std=c++20 -O3 -Wall -Wextra -Werror -march=armv8-a -I"$repo/codegen/ukernels" \
     "$repo/tests/arm/sgemm_arm_test.cpp" -o "$work/sgemm_test" > "$work/build.log" 2>&1; then
  echo "FAIL build:"; sed 's/^/  /' "$work/build.log"; exit 1
fi
if output="$("$qemu" -cpu "$cpu" -L "$sysroot" "$work/sgemm_test" 2>&1)"; then
  echo "ok   neon: $(tail -n 1 <<< "$output") [qemu -cpu $cpu]"
else
  echo "FAIL neon:"; sed 's/^/  /' <<< "$output"; exit 1
fi
