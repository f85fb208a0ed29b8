// Integer GEMM micro-kernel, ARMv8.2 dot product (SDOT), int8 x int8 -> int32.
// Contract: README.md beside this file. Needs -march=armv8.2-a+dotprod or later
// (or a -mcpu with dotprod). Not -march=armv8-a+dotprod: it defines
// __ARM_FEATURE_DOTPROD, but GNU as 2.40 (and GCC's own vdotq_laneq_s32) take the
// by-element SDOT only on an armv8.2-a base.
//
// Register blocking: 8x8 tile of C, kKU = 4.
//   Per k group the packed A panel is 8 rows x 4 k = 32 bytes, two q registers:
//   v24 holds rows 0-3 (row r's 4 k bytes in 32-bit lane r), v25 rows 4-7. The
//   packed B panel is 8 columns x 4 k = 32 bytes: v26 holds columns 0-3, v27
//   columns 4-7, one column per 32-bit lane.
//   `sdot acc.4s, vB.16b, vA.4b[r]` adds the dot product of A row r (the
//   broadcast lane) with each of four columns. Accumulator c<r><h> holds row r,
//   columns 4h..4h+3, which is already row-major C: the epilogue is 16 stores.
//   Per k group: 4 loads, 16 SDOT (256 MACs) on 16 independent accumulators;
//   24 of the 32 vector registers are live.
//
// The k loop is inline assembly: GCC 12's pre-RA scheduler turned the same
// loop written with intrinsics into extra register moves inside the loop.
// Loads use immediate offsets and each panel pointer moves once per group:
// with post-index loads llvm-mca models the pointer chain at load latency
// (Neoverse N2: 12 instead of 8 cycles per group). One group per iteration
// already keeps both SDOT pipes of N2 busy (16 SDOT in 8 cycles, the loop
// overhead goes to other pipes), so the loop is not unrolled.
// benchmarks/ukernel_mca.py measures it.
//
// SDOT sums four int8 x int8 products into int32 exactly, so any K fits as long
// as the int32 result does (K <= 65536 at full int8 range: 65536 * 16384 = 2^30).
//
// A translation unit that enables the extension for this header alone, which
// need not define __ARM_FEATURE_DOTPROD, defines TG_QGEMM_FORCE before
// including it: GCC `#pragma GCC target("arch=armv8.2-a+dotprod")` (with GNU as
// 2.40 a plain "+dotprod" on an armv8-a base does not let the assembler take the
// instruction), clang `#pragma clang attribute push(__attribute__((target("dotprod"))),
// apply_to = function)`. tests/arm/run_qgemm_arm_test.sh builds that way too.
#pragma once

#if !defined(__aarch64__) || (!defined(__ARM_FEATURE_DOTPROD) && !defined(TG_QGEMM_FORCE))
#error "qgemm_dotprod.h needs AArch64 with the dot product extension: compile with -march=armv8.2-a+dotprod"
#else

#include <arm_neon.h>

#include <cstdint>

namespace tg_qgemm {
// Own inline namespace per variant: see qgemm_scalar.h.
inline namespace dotprod {

constexpr const char* kVariant = "dotprod";
constexpr int kMR = 8;
constexpr int kNR = 8;
constexpr int kKU = 4;
constexpr bool kAUnsigned = false;
constexpr int kABytes = 1;

// Not inlined: inside a big generated loop nest GCC 12 shuffles the
// accumulators between registers every iteration; alone it keeps them put.
__attribute__((noinline)) inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  const int8_t* pa = static_cast<const int8_t*>(a);
  const int8_t* pb = b;
  int64_t groups_left = k_groups;  // >= 1 by contract: the loop runs at least once
  int32x4_t c00, c01, c10, c11, c20, c21, c30, c31;
  int32x4_t c40, c41, c50, c51, c60, c61, c70, c71;
  asm("movi %[c00].4s, #0\n\t"
      "movi %[c01].4s, #0\n\t"
      "movi %[c10].4s, #0\n\t"
      "movi %[c11].4s, #0\n\t"
      "movi %[c20].4s, #0\n\t"
      "movi %[c21].4s, #0\n\t"
      "movi %[c30].4s, #0\n\t"
      "movi %[c31].4s, #0\n\t"
      "movi %[c40].4s, #0\n\t"
      "movi %[c41].4s, #0\n\t"
      "movi %[c50].4s, #0\n\t"
      "movi %[c51].4s, #0\n\t"
      "movi %[c60].4s, #0\n\t"
      "movi %[c61].4s, #0\n\t"
      "movi %[c70].4s, #0\n\t"
      "movi %[c71].4s, #0\n"
      "1:\n\t"
      "ldr q24, [%[pa]]\n\t"       // A rows 0-3
      "ldr q26, [%[pb]]\n\t"       // B columns 0-3
      "ldr q27, [%[pb], #16]\n\t"  // B columns 4-7
      "ldr q25, [%[pa], #16]\n\t"  // A rows 4-7
      "sdot %[c00].4s, v26.16b, v24.4b[0]\n\t"
      "sdot %[c01].4s, v27.16b, v24.4b[0]\n\t"
      "sdot %[c10].4s, v26.16b, v24.4b[1]\n\t"
      "sdot %[c11].4s, v27.16b, v24.4b[1]\n\t"
      "sdot %[c20].4s, v26.16b, v24.4b[2]\n\t"
      "sdot %[c21].4s, v27.16b, v24.4b[2]\n\t"
      "sdot %[c30].4s, v26.16b, v24.4b[3]\n\t"
      "sdot %[c31].4s, v27.16b, v24.4b[3]\n\t"
      "sdot %[c40].4s, v26.16b, v25.4b[0]\n\t"
      "sdot %[c41].4s, v27.16b, v25.4b[0]\n\t"
      "sdot %[c50].4s, v26.16b, v25.4b[1]\n\t"
      "sdot %[c51].4s, v27.16b, v25.4b[1]\n\t"
      "sdot %[c60].4s, v26.16b, v25.4b[2]\n\t"
      "sdot %[c61].4s, v27.16b, v25.4b[2]\n\t"
      "sdot %[c70].4s, v26.16b, v25.4b[3]\n\t"
      "sdot %[c71].4s, v27.16b, v25.4b[3]\n\t"
      "add %[pa], %[pa], #32\n\t"
      "add %[pb], %[pb], #32\n\t"
      "subs %[groups_left], %[groups_left], #1\n\t"
      "b.ne 1b\n"
      : [c00] "=w"(c00), [c01] "=w"(c01), [c10] "=w"(c10), [c11] "=w"(c11),
        [c20] "=w"(c20), [c21] "=w"(c21), [c30] "=w"(c30), [c31] "=w"(c31),
        [c40] "=w"(c40), [c41] "=w"(c41), [c50] "=w"(c50), [c51] "=w"(c51),
        [c60] "=w"(c60), [c61] "=w"(c61), [c70] "=w"(c70), [c71] "=w"(c71),
        [pa] "+r"(pa), [pb] "+r"(pb), [groups_left] "+r"(groups_left)
      :
      : "v24", "v25", "v26", "v27", "cc", "memory");

  vst1q_s32(c + 0 * 8, c00);
  vst1q_s32(c + 0 * 8 + 4, c01);
  vst1q_s32(c + 1 * 8, c10);
  vst1q_s32(c + 1 * 8 + 4, c11);
  vst1q_s32(c + 2 * 8, c20);
  vst1q_s32(c + 2 * 8 + 4, c21);
  vst1q_s32(c + 3 * 8, c30);
  vst1q_s32(c + 3 * 8 + 4, c31);
  vst1q_s32(c + 4 * 8, c40);
  vst1q_s32(c + 4 * 8 + 4, c41);
  vst1q_s32(c + 5 * 8, c50);
  vst1q_s32(c + 5 * 8 + 4, c51);
  vst1q_s32(c + 6 * 8, c60);
  vst1q_s32(c + 6 * 8 + 4, c61);
  vst1q_s32(c + 7 * 8, c70);
  vst1q_s32(c + 7 * 8 + 4, c71);
}

// c[r * kNR + j] += sum over k < k_groups * kKU of A(r, k) * B(k, j): one kc
// block of a GEMM whose K is cut into blocks (lower_int_gemm_kernel.cpp).
// The block's sums go through a tile on the stack and are added to c: kMR x
// kNR additions per call, against kc x kMR x kNR x kKU multiply-adds.
inline void tile_accumulate(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  alignas(64) int32_t block[kMR * kNR];
  tile(k_groups, a, b, block);
  for (int i = 0; i < kMR * kNR; ++i) c[i] += block[i];
}

}  // namespace dotprod
}  // namespace tg_qgemm

#endif
