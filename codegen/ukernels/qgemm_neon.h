// Integer GEMM micro-kernel, baseline ARMv8-A NEON (no dot product), int8 x int8 -> int32.
// Contract: README.md beside this file. Needs only -march=armv8-a (AArch64 NEON).
// For cores without SDOT (Cortex-A53/A57/A72/A73); cores with it use qgemm_dotprod.h.
//
// Register blocking: 4x4 tile of C, kKU = 16.
//   Per k group the packed A panel is 4 rows x 16 k = 64 bytes: q register
//   v24+r is row r's 16 k values. The packed B panel is 4 columns x 16 k: v28+j
//   is column j's 16 k values. For each (row r, column j):
//     smull  t0.8h, vA.8b,  vB.8b     8 exact int8 x int8 -> int16 products (k 0-7)
//     smull2 t1.8h, vA.16b, vB.16b    the same for k 8-15
//     sadalp acc.4s, t0.8h            add adjacent product pairs into int32 lanes
//     sadalp acc.4s, t1.8h
//   Accumulator c<r><j> holds 4 int32 partial sums of C(r, j); the epilogue
//   reduces them with pairwise adds (ADDP), which also lays them out row-major.
//   Per k group: 4 paired loads, 32 SMULL/SMULL2 + 32 SADALP (256 MACs); 16
//   accumulators + 8 operands + 8 products use all 32 vector registers.
//
// Why not SMULL + SMLAL (two products summed in int16, then one SADALP): at full
// int8 range (-128) * (-128) + (-128) * (-128) = 32768 overflows int16, and the
// contract wants exact products at full range. Each int16 here holds one product.
//
// The k loop is inline assembly: with intrinsics GCC 12 spilled accumulators to
// the stack inside the loop. Loads use immediate offsets and each panel pointer
// moves once per group (post-index loads put the pointer chain at load latency
// in llvm-mca's models). Within a row, all 8 multiplies come before the 8
// accumulates, so an in-order core waits less on each SMULL -> SADALP dependency
// (llvm-mca's Cortex-A53 model: 90 cycles per k group, against 223 with each
// SADALP right after its SMULL; out-of-order cores do not care).
// benchmarks/ukernel_mca.py measures it.
#pragma once

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "qgemm_neon.h needs AArch64 NEON: compile for aarch64 (-march=armv8-a or later)"
#else

#include <arm_neon.h>

#include <cstdint>

namespace tg_qgemm {
// Own inline namespace per variant: see qgemm_scalar.h.
inline namespace neon {

constexpr const char* kVariant = "neon";
constexpr int kMR = 4;
constexpr int kNR = 4;
constexpr int kKU = 16;
constexpr bool kAUnsigned = false;
constexpr int kABytes = 1;

namespace detail {

// Row of C from the four 4-lane partial sums of columns 0-3.
inline int32x4_t reduce_row(int32x4_t s0, int32x4_t s1, int32x4_t s2, int32x4_t s3) {
  return vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3));
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
      "ldp q24, q25, [%[pa]]\n\t"       // A rows 0, 1
      "ldp q28, q29, [%[pb]]\n\t"       // B columns 0, 1
      "ldp q30, q31, [%[pb], #32]\n\t"  // B columns 2, 3
      "ldp q26, q27, [%[pa], #32]\n\t"  // A rows 2, 3
      // A row 0 (v24) x B columns 0-3 (v28-v31): 8 + 8 products per column
      "smull v16.8h, v24.8b, v28.8b\n\t"
      "smull2 v17.8h, v24.16b, v28.16b\n\t"
      "smull v18.8h, v24.8b, v29.8b\n\t"
      "smull2 v19.8h, v24.16b, v29.16b\n\t"
      "smull v20.8h, v24.8b, v30.8b\n\t"
      "smull2 v21.8h, v24.16b, v30.16b\n\t"
      "smull v22.8h, v24.8b, v31.8b\n\t"
      "smull2 v23.8h, v24.16b, v31.16b\n\t"
      "sadalp %[c00].4s, v16.8h\n\t"
      "sadalp %[c01].4s, v18.8h\n\t"
      "sadalp %[c02].4s, v20.8h\n\t"
      "sadalp %[c03].4s, v22.8h\n\t"
      "sadalp %[c00].4s, v17.8h\n\t"
      "sadalp %[c01].4s, v19.8h\n\t"
      "sadalp %[c02].4s, v21.8h\n\t"
      "sadalp %[c03].4s, v23.8h\n\t"
      // A row 1 (v25) x B columns 0-3 (v28-v31): 8 + 8 products per column
      "smull v16.8h, v25.8b, v28.8b\n\t"
      "smull2 v17.8h, v25.16b, v28.16b\n\t"
      "smull v18.8h, v25.8b, v29.8b\n\t"
      "smull2 v19.8h, v25.16b, v29.16b\n\t"
      "smull v20.8h, v25.8b, v30.8b\n\t"
      "smull2 v21.8h, v25.16b, v30.16b\n\t"
      "smull v22.8h, v25.8b, v31.8b\n\t"
      "smull2 v23.8h, v25.16b, v31.16b\n\t"
      "sadalp %[c10].4s, v16.8h\n\t"
      "sadalp %[c11].4s, v18.8h\n\t"
      "sadalp %[c12].4s, v20.8h\n\t"
      "sadalp %[c13].4s, v22.8h\n\t"
      "sadalp %[c10].4s, v17.8h\n\t"
      "sadalp %[c11].4s, v19.8h\n\t"
      "sadalp %[c12].4s, v21.8h\n\t"
      "sadalp %[c13].4s, v23.8h\n\t"
      // A row 2 (v26) x B columns 0-3 (v28-v31): 8 + 8 products per column
      "smull v16.8h, v26.8b, v28.8b\n\t"
      "smull2 v17.8h, v26.16b, v28.16b\n\t"
      "smull v18.8h, v26.8b, v29.8b\n\t"
      "smull2 v19.8h, v26.16b, v29.16b\n\t"
      "smull v20.8h, v26.8b, v30.8b\n\t"
      "smull2 v21.8h, v26.16b, v30.16b\n\t"
      "smull v22.8h, v26.8b, v31.8b\n\t"
      "smull2 v23.8h, v26.16b, v31.16b\n\t"
      "sadalp %[c20].4s, v16.8h\n\t"
      "sadalp %[c21].4s, v18.8h\n\t"
      "sadalp %[c22].4s, v20.8h\n\t"
      "sadalp %[c23].4s, v22.8h\n\t"
      "sadalp %[c20].4s, v17.8h\n\t"
      "sadalp %[c21].4s, v19.8h\n\t"
      "sadalp %[c22].4s, v21.8h\n\t"
      "sadalp %[c23].4s, v23.8h\n\t"
      // A row 3 (v27) x B columns 0-3 (v28-v31): 8 + 8 products per column
      "smull v16.8h, v27.8b, v28.8b\n\t"
      "smull2 v17.8h, v27.16b, v28.16b\n\t"
      "smull v18.8h, v27.8b, v29.8b\n\t"
      "smull2 v19.8h, v27.16b, v29.16b\n\t"
      "smull v20.8h, v27.8b, v30.8b\n\t"
      "smull2 v21.8h, v27.16b, v30.16b\n\t"
      "smull v22.8h, v27.8b, v31.8b\n\t"
      "smull2 v23.8h, v27.16b, v31.16b\n\t"
      "sadalp %[c30].4s, v16.8h\n\t"
      "sadalp %[c31].4s, v18.8h\n\t"
      "sadalp %[c32].4s, v20.8h\n\t"
      "sadalp %[c33].4s, v22.8h\n\t"
      "sadalp %[c30].4s, v17.8h\n\t"
      "sadalp %[c31].4s, v19.8h\n\t"
      "sadalp %[c32].4s, v21.8h\n\t"
      "sadalp %[c33].4s, v23.8h\n\t"
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
      : "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",
        "v28", "v29", "v30", "v31", "cc", "memory");

  vst1q_s32(c + 0 * 4, detail::reduce_row(c00, c01, c02, c03));
  vst1q_s32(c + 1 * 4, detail::reduce_row(c10, c11, c12, c13));
  vst1q_s32(c + 2 * 4, detail::reduce_row(c20, c21, c22, c23));
  vst1q_s32(c + 3 * 4, detail::reduce_row(c30, c31, c32, c33));
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

}  // namespace neon
}  // namespace tg_qgemm

#endif
