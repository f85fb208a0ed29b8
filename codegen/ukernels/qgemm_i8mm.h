// Integer GEMM micro-kernel, ARMv8.6 int8 matrix multiply (SMMLA), int8 x int8 -> int32.
// Contract: README.md beside this file. Needs -march=armv8.6-a+i8mm (armv8.2-a+i8mm
// also works; armv8-a+i8mm does not: GNU as 2.40 rejects SMMLA on that base).
//
// Register blocking: 8x8 tile of C, kKU = 8.
//   `smmla acc.4s, vA.16b, vB.16b` reads vA as a 2x8 int8 matrix (two rows of 8
//   k values), vB as another 2x8 (two columns of 8 k values), and adds
//   vA * vB^T, a 2x2 int32 block stored row-major: [r0c0, r0c1, r1c0, r1c1].
//   Per k group the packed A panel is 8 rows x 8 k = 64 bytes, and its q
//   register i (v16..v19) is rows 2i, 2i+1: exactly the 2x8 operand SMMLA wants.
//   Likewise B: q register j (v20..v23) is columns 2j, 2j+1.
//   Accumulator c<i><j> = rows 2i..2i+1 x columns 2j..2j+1, so 16 accumulators
//   cover the 8x8 tile. Per k group: 4 paired loads (128 bytes), 16 SMMLA (512
//   MACs) on 16 independent accumulators; all 32 vector registers are in use.
//   The epilogue un-interleaves the 2x2 blocks: row 2i, columns 4h..4h+3 is the
//   low halves of c<i><2h> and c<i><2h+1> (ZIP1 on 64-bit lanes), row 2i+1 the
//   high halves (ZIP2).
//
// The k loop is inline assembly: with intrinsics GCC 12 spilled the loaded
// operands through register moves in the loop (all 32 registers are live).
// Loads use immediate offsets and each panel pointer moves once per group:
// with post-index loads llvm-mca models the pointer chain at load latency
// (Neoverse N2: 24 instead of 8 cycles per group). One group per iteration
// already keeps both SMMLA pipes of N2 busy, so the loop is not unrolled.
// benchmarks/ukernel_mca.py measures it.
//
// SMMLA sums eight int8 x int8 products into int32 exactly, so any K fits as
// long as the int32 result does (K <= 65536 at full int8 range).
//
// A translation unit that enables the extension for this header alone, which
// need not define __ARM_FEATURE_MATMUL_INT8, defines TG_QGEMM_FORCE before
// including it: GCC `#pragma GCC target("arch=armv8.6-a+i8mm")` (with GNU as
// 2.40 a plain "+i8mm" on an armv8-a base does not let the assembler take the
// instruction), clang `#pragma clang attribute push(__attribute__((target("i8mm"))),
// apply_to = function)`. tests/arm/run_qgemm_arm_test.sh builds that way too.
#pragma once

#if !defined(__aarch64__) || (!defined(__ARM_FEATURE_MATMUL_INT8) && !defined(TG_QGEMM_FORCE))
#error "qgemm_i8mm.h needs AArch64 with the int8 matrix multiply extension: compile with -march=armv8.6-a+i8mm"
#else

#include <arm_neon.h>

#include <cstdint>

namespace tg_qgemm {
// Own inline namespace per variant: see qgemm_scalar.h.
inline namespace i8mm {

constexpr const char* kVariant = "i8mm";
constexpr int kMR = 8;
constexpr int kNR = 8;
constexpr int kKU = 8;
constexpr bool kAUnsigned = false;
constexpr int kABytes = 1;

namespace detail {

// Rows 2i and 2i+1 of C from the 2x2 blocks of one accumulator row i:
// blocks[j] = rows 2i..2i+1 x columns 2j..2j+1.
inline void store_row_pair(int32_t* c, int i, int32x4_t b0, int32x4_t b1, int32x4_t b2,
                           int32x4_t b3) {
  const int64x2_t q0 = vreinterpretq_s64_s32(b0);
  const int64x2_t q1 = vreinterpretq_s64_s32(b1);
  const int64x2_t q2 = vreinterpretq_s64_s32(b2);
  const int64x2_t q3 = vreinterpretq_s64_s32(b3);
  int32_t* upper = c + (2 * i) * 8;
  int32_t* lower = upper + 8;
  vst1q_s32(upper, vreinterpretq_s32_s64(vzip1q_s64(q0, q1)));
  vst1q_s32(upper + 4, vreinterpretq_s32_s64(vzip1q_s64(q2, q3)));
  vst1q_s32(lower, vreinterpretq_s32_s64(vzip2q_s64(q0, q1)));
  vst1q_s32(lower + 4, vreinterpretq_s32_s64(vzip2q_s64(q2, q3)));
}

}  // namespace detail

// Not inlined: inside a big generated loop nest GCC 12 shuffles the
// accumulators between registers every iteration; alone it keeps them put.
__attribute__((noinline)) inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  const int8_t* pa = static_cast<const int8_t*>(a);
  const int8_t* pb = b;
  int64_t groups_left = k_groups;  // >= 1 by contract: the loop runs at least once
  int32x4_t c00, c01, c02, c03, c10, c11, c12, c13;
  int32x4_t c20, c21, c22, c23, c30, c31, c32, c33;
  asm("movi %[c00].4s, #0\n\t"
      "movi %[c01].4s, #0\n\t"
      "movi %[c02].4s, #0\n\t"
      "movi %[c03].4s, #0\n\t"
      "movi %[c10].4s, #0\n\t"
      "movi %[c11].4s, #0\n\t"
      "movi %[c12].4s, #0\n\t"
      "movi %[c13].4s, #0\n\t"
      "movi %[c20].4s, #0\n\t"
      "movi %[c21].4s, #0\n\t"
      "movi %[c22].4s, #0\n\t"
      "movi %[c23].4s, #0\n\t"
      "movi %[c30].4s, #0\n\t"
      "movi %[c31].4s, #0\n\t"
      "movi %[c32].4s, #0\n\t"
      "movi %[c33].4s, #0\n"
      "1:\n\t"
      "ldp q16, q17, [%[pa]]\n\t"       // A rows 0-1, 2-3
      "ldp q20, q21, [%[pb]]\n\t"       // B columns 0-1, 2-3
      "ldp q22, q23, [%[pb], #32]\n\t"  // B columns 4-5, 6-7
      "ldp q18, q19, [%[pa], #32]\n\t"  // A rows 4-5, 6-7
      "smmla %[c00].4s, v16.16b, v20.16b\n\t"
      "smmla %[c01].4s, v16.16b, v21.16b\n\t"
      "smmla %[c02].4s, v16.16b, v22.16b\n\t"
      "smmla %[c03].4s, v16.16b, v23.16b\n\t"
      "smmla %[c10].4s, v17.16b, v20.16b\n\t"
      "smmla %[c11].4s, v17.16b, v21.16b\n\t"
      "smmla %[c12].4s, v17.16b, v22.16b\n\t"
      "smmla %[c13].4s, v17.16b, v23.16b\n\t"
      "smmla %[c20].4s, v18.16b, v20.16b\n\t"
      "smmla %[c21].4s, v18.16b, v21.16b\n\t"
      "smmla %[c22].4s, v18.16b, v22.16b\n\t"
      "smmla %[c23].4s, v18.16b, v23.16b\n\t"
      "smmla %[c30].4s, v19.16b, v20.16b\n\t"
      "smmla %[c31].4s, v19.16b, v21.16b\n\t"
      "smmla %[c32].4s, v19.16b, v22.16b\n\t"
      "smmla %[c33].4s, v19.16b, v23.16b\n\t"
      "add %[pa], %[pa], #64\n\t"
      "add %[pb], %[pb], #64\n\t"
      "subs %[groups_left], %[groups_left], #1\n\t"
      "b.ne 1b\n"
      : [c00] "=w"(c00), [c01] "=w"(c01), [c02] "=w"(c02), [c03] "=w"(c03),
        [c10] "=w"(c10), [c11] "=w"(c11), [c12] "=w"(c12), [c13] "=w"(c13),
        [c20] "=w"(c20), [c21] "=w"(c21), [c22] "=w"(c22), [c23] "=w"(c23),
        [c30] "=w"(c30), [c31] "=w"(c31), [c32] "=w"(c32), [c33] "=w"(c33),
        [pa] "+r"(pa), [pb] "+r"(pb), [groups_left] "+r"(groups_left)
      :
      : "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "cc", "memory");

  detail::store_row_pair(c, 0, c00, c01, c02, c03);
  detail::store_row_pair(c, 1, c10, c11, c12, c13);
  detail::store_row_pair(c, 2, c20, c21, c22, c23);
  detail::store_row_pair(c, 3, c30, c31, c32, c33);
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

}  // namespace i8mm
}  // namespace tg_qgemm

#endif
