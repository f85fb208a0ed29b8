// Integer GEMM micro-kernel, AVX2 variant (contract: README.md). Exact: every
// product is formed in int16 x int16 -> int32 (vpmaddwd), nothing saturates.
//
// Register blocking (kMR = 6, kNR = 8, kKU = 4):
//   * One k group of B is 8 columns x 4 k = 32 bytes: two vpmovsxbw loads give
//     two ymm of int16, 4 columns each, one column's 4 values per 64-bit lane.
//   * A is packed as int16 (kABytes = 2): its uint8 or int8 values as they
//     are, so one k group of an A row is 8 bytes, and vpbroadcastq from
//     memory (a load, no shuffle uop) repeats them in every 64-bit lane,
//     lined up with every column of a B register. Packed as bytes, each row
//     took a vpmovsxbw per k group: 8 shuffles per 192 MACs, which bounded
//     the loop on Zen 3 (47 -> 77 GMAC/s in a hot loop over K = 768, one
//     core; the generated packing writes the int16 once per row block).
//   * vpmaddwd then leaves two int32 per column: a0*b0 + a1*b1 and
//     a2*b2 + a3*b3. They are added once per tile, after the k loop. With A
//     up to 255 and B down to -128 a pair is at most 65280 in magnitude, and
//     K = 65536 sums to -2139095040: still int32.
//   * Accumulators: 6 rows x 2 ymm = 12 ymm, plus 2 for B, 1 for A and 1 for
//     a product: all 16 ymm registers (tile() says why its loop is assembly).
//     Per k group: 12 vpmaddwd + 12 vpaddd (192 MACs) against 2 vpmovsxbw
//     (B's), so the multiply-add ports are the bottleneck. B as int16 too,
//     multiplied from memory, ran slower (12 loads of B per group instead of
//     2, and twice the bytes from L2).
//   * kKU = 4, not 2: one A broadcast feeds twice the products.
//   * kMR = 6: 4 x 8 and 5 x 8 ran as fast in a hot loop (Zen 4), but 6 rows
//     reuse each B group more, which counts when the B panel streams from
//     L2. 3 x 16 (the only kNR = 16 shape that fits) ran about 7% slower.
//
// Include with -mavx2 (or -march=haswell or newer). A translation unit that
// enables AVX2 for this header alone with `#pragma GCC target("avx2")` (which
// in C++ does not define __AVX2__) defines TG_QGEMM_FORCE before including it.
#pragma once

#if !defined(__AVX2__) && !defined(TG_QGEMM_FORCE)
#error "qgemm_avx2.h needs AVX2: compile with -mavx2 (or -march=haswell or newer)"
#endif

#include <cstdint>
#include <immintrin.h>

namespace tg_qgemm {
// Own inline namespace per variant: see qgemm_scalar.h.
inline namespace avx2 {

constexpr const char* kVariant = "avx2";
constexpr int kMR = 6;
constexpr int kNR = 8;
constexpr int kKU = 4;
constexpr bool kAUnsigned = false;
constexpr int kABytes = 2;

namespace detail {

// One k group of a row: x = the row's 4 int16 in every 64-bit lane
// (vpbroadcastq from memory, a pure load), each column's two pair sums added
// to the row's accumulators (t: the first product, the second overwrites x).
// %[pa]'s offset picks the row.
#define TG_QGEMM_AVX2_ROW(offset, acc_lo, acc_hi)        \
  "vpbroadcastq " #offset "(%[pa]), %t[x]\n\t"           \
  "vpmaddwd %t[lo], %t[x], %t[t]\n\t"                   \
  "vpaddd %t[t], %t[" #acc_lo "], %t[" #acc_lo "]\n\t" \
  "vpmaddwd %t[hi], %t[x], %t[x]\n\t"                   \
  "vpaddd %t[x], %t[" #acc_hi "], %t[" #acc_hi "]\n\t"

// Adds the two pair sums of each column and stores the row's 8 results, from
// the row's accumulators of columns 0-3 and 4-7 (each column as two int32
// lanes [pair sum k0,k1 | pair sum k2,k3]). The sums go through memory
// rather than vphaddd on the accumulators: with vphaddd, GCC 12 spills
// accumulators inside the k loop. It still vectorizes these sums, and they
// run once per tile.
inline void store_row(int32_t* c_row, __m256i cols0to3, __m256i cols4to7) {
  alignas(32) int32_t pairs[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), cols0to3);
  _mm256_store_si256(reinterpret_cast<__m256i*>(pairs + 8), cols4to7);
  for (int j = 0; j < 8; ++j) c_row[j] = pairs[2 * j] + pairs[2 * j + 1];
}

}  // namespace detail

// c[r * kNR + j] = sum over k < k_groups * kKU of A(r, k) * B(k, j).
//   a: A(r, k) at a[((k / kKU) * kMR + r) * kKU + k % kKU], int16 (int8 or
//      uint8 values)
//   b: B(k, j) at b[((k / kKU) * kNR + j) * kKU + k % kKU], int8
// The k loop's body is inline assembly: the twelve accumulators, the two B
// registers, the A row and one product take all 16 ymm registers, and GCC 12
// (intrinsics, the accumulators as named values or structs, any of its
// register allocation options) kept eight accumulators on the stack, a load
// and a store per vpaddd, whose store-to-load forwarding then sat in every
// accumulator's chain: 13.1-13.5 ns per k group on a Zen 1 core against
// 11.7-11.8 in registers (clang, which allocates them all, 11.6-12.0 on the
// intrinsics). Operands are constrained to registers ("x"), so the compiler
// still chooses them and keeps them across the loop.
// Not inlined: inside a big generated loop nest GCC 12 shuffles the
// accumulators between registers every iteration; alone it keeps them put.
__attribute__((noinline)) inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  static_assert(kMR == 6 && kNR == 8 && kKU == 4, "the code below is written out for 6 x 8 x 4");
  const int16_t* pa = static_cast<const int16_t*>(a);
  __m256i a0 = _mm256_setzero_si256(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0;
  __m256i a3 = a0, b3 = a0, a4 = a0, b4 = a0, a5 = a0, b5 = a0;
  for (int64_t g = 0; g < k_groups; ++g) {
    __m256i lo, hi, x, t;  // B's columns 0-3 and 4-7 as int16, the A row, a product
    asm("vpmovsxbw (%[b]), %t[lo]\n\t"
        "vpmovsxbw 16(%[b]), %t[hi]\n\t"
        TG_QGEMM_AVX2_ROW(0, a0, b0) TG_QGEMM_AVX2_ROW(8, a1, b1) TG_QGEMM_AVX2_ROW(16, a2, b2)
        TG_QGEMM_AVX2_ROW(24, a3, b3) TG_QGEMM_AVX2_ROW(32, a4, b4) TG_QGEMM_AVX2_ROW(40, a5, b5)
        : [a0] "+x"(a0), [b0] "+x"(b0), [a1] "+x"(a1), [b1] "+x"(b1), [a2] "+x"(a2), [b2] "+x"(b2),
          [a3] "+x"(a3), [b3] "+x"(b3), [a4] "+x"(a4), [b4] "+x"(b4), [a5] "+x"(a5), [b5] "+x"(b5),
          [lo] "=&x"(lo), [hi] "=&x"(hi), [x] "=&x"(x), [t] "=&x"(t)
        : [pa] "r"(pa), [b] "r"(b)
        : "memory");
    pa += kMR * kKU;
    b += kNR * kKU;
  }
  detail::store_row(c + 0 * kNR, a0, b0);
  detail::store_row(c + 1 * kNR, a1, b1);
  detail::store_row(c + 2 * kNR, a2, b2);
  detail::store_row(c + 3 * kNR, a3, b3);
  detail::store_row(c + 4 * kNR, a4, b4);
  detail::store_row(c + 5 * kNR, a5, b5);
}
#undef TG_QGEMM_AVX2_ROW

// c[r * kNR + j] += sum over k < k_groups * kKU of A(r, k) * B(k, j): one kc
// block of a GEMM whose K is cut into blocks (lower_int_gemm_kernel.cpp).
// The block's sums go through a tile on the stack and are added to c: kMR x
// kNR additions per call, against kc x kMR x kNR x kKU multiply-adds.
inline void tile_accumulate(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  alignas(64) int32_t block[kMR * kNR];
  tile(k_groups, a, b, block);
  for (int i = 0; i < kMR * kNR; ++i) c[i] += block[i];
}

}  // namespace avx2
}  // namespace tg_qgemm
