#!/usr/bin/env bash
# Cross-compiles tests/arm/qgemm_arm_test.cpp once per ARM micro-kernel variant
# (codegen/ukernels/qgemm_{neon,dotprod,i8mm}.h) and runs each under qemu-aarch64
# (-cpu cortex-a53 for neon, neoverse-n1 for dotprod, max for i8mm).
# Also builds all three into one armv8-a object through target pragmas.
# Prints one summary line per variant and build; exits 0 only if all pass.
# Exits 0 with 'skipped: ...' when the cross compiler or qemu is missing.
#
# Environment:
#   AARCH64_CXX      cross compiler (default aarch64-linux-gnu-g++)
#   QEMU_AARCH64     emulator (default qemu-aarch64)
#   QEMU_LD_PREFIX   aarch64 sysroot for qemu (default /usr/aarch64-linux-gnu)
#   QGEMM_CLANG      clang++ to also build with (default clang++ when it can
#                    target aarch64; set to "none" to skip the clang builds)
# apt packages on Debian: g++-aarch64-linux-gnu qemu-user
set -uo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
src="$repo/tests/arm/qgemm_arm_test.cpp"
include="$repo/codegen/ukernels"
cxx="${AARCH64_CXX:-aarch64-linux-gnu-g++}"
qemu="${QEMU_AARCH64:-qemu-aarch64}"
sysroot="${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}"

if ! command -v "$cxx" > /dev/null; then
  echo "skipped: no aarch64 cross compiler ($cxx; apt-get install g++-aarch64-linux-gnu)"
  exit 0
fi
if ! command -v "$qemu" > /dev/null; then
  echo "skipped: no $qemu (apt-get install qemu-user)"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# clang builds reuse the GNU cross toolchain's headers and libraries.
clang="${QGEMM_CLANG:-clang++}"
compilers=("$cxx")
if [[ "$clang" != none ]] && command -v "$clang" > /dev/null &&
   echo 'int main() { return 0; }' | "$clang" --target=aarch64-linux-gnu -x c++ - \
     -o "$work/probe" > /dev/null 2>&1; then
  compilers+=("$clang")
fi

# variant, -march, and the smallest qemu CPU that has the variant's instructions
# (so a kernel that used an instruction beyond its -march would fault there).
variants=(
  "neon armv8-a cortex-a53"
  "dotprod armv8.2-a+dotprod neoverse-n1"
  "i8mm armv8.6-a+dotprod+i8mm max"
)
qemu_cpus="$("$qemu" -cpu help 2>/dev/null)"

passed=0
failed=0
for compiler in "${compilers[@]}"; do
  target=()
  [[ "$compiler" == "$clang" && "$compiler" != "$cxx" ]] && target=(--target=aarch64-linux-gnu)
  for entry in "${variants[@]}"; do
    read -r variant march cpu <<< "$entry"
    grep -qw -- "$cpu" <<< "$qemu_cpus" || cpu=max
    name="$variant/$(basename "$compiler")"
    exe="$work/qgemm_${variant}_$(basename "$compiler")"
    define="TG_QGEMM_VARIANT_${variant^^}"
    if ! "$compiler" "${target[@]}" -std=c++20 -O3 -Wall -Wextra -Werror -march="$march" \
         -D"$define" -I"$include" "$src" -o "$exe" > "$work/build.log" 2>&1; then
      echo "FAIL $name: build failed (-march=$march):"
      sed 's/^/  /' "$work/build.log"
      failed=$((failed + 1))
      continue
    fi
    if output="$("$qemu" -cpu "$cpu" -L "$sysroot" "$exe" 2>&1)"; then
      echo "ok   $name: $(tail -n 1 <<< "$output") [qemu -cpu $cpu]"
      passed=$((passed + 1))
    else
      echo "FAIL $name (exit $?):"
      sed 's/^/  /' <<< "$output"
      failed=$((failed + 1))
    fi
  done
done

# All three variants in one translation unit built for plain armv8-a: the
# extensions enabled per header with target pragmas and TG_QGEMM_FORCE, the
# inline namespaces keeping the three tile() functions apart. Build only.
cat > "$work/all_variants.cpp" << 'EOF'
#include <arm_neon.h>
#include <cstdint>
#include "qgemm_neon.h"
#define TG_QGEMM_FORCE 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#include "qgemm_dotprod.h"
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("i8mm"))), apply_to = function)
#include "qgemm_i8mm.h"
#pragma clang attribute pop
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#include "qgemm_dotprod.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=armv8.6-a+i8mm")
#include "qgemm_i8mm.h"
#pragma GCC pop_options
#endif
using Tile = void (*)(int64_t, const void*, const int8_t*, int32_t*);
Tile tiles[] = {tg_qgemm::neon::tile, tg_qgemm::dotprod::tile, tg_qgemm::i8mm::tile};
EOF
for compiler in "${compilers[@]}"; do
  target=()
  [[ "$compiler" == "$clang" && "$compiler" != "$cxx" ]] && target=(--target=aarch64-linux-gnu)
  name="one-TU/$(basename "$compiler")"
  if "$compiler" "${target[@]}" -std=c++20 -O3 -Wall -Wextra -Werror -march=armv8-a \
       -I"$include" -c "$work/all_variants.cpp" -o "$work/all_variants.o" > "$work/build.log" 2>&1; then
    echo "ok   $name: neon, dotprod and i8mm built into one armv8-a object (target pragmas)"
    passed=$((passed + 1))
  else
    echo "FAIL $name: one-TU build with target pragmas failed:"
    sed 's/^/  /' "$work/build.log"
    failed=$((failed + 1))
  fi
done

echo "qgemm_arm: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
