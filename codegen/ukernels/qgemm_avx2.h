// Integer GEMM micro-kernel, AVX2 variant (contract: README.md). Exact: every
// product is formed in int16 x int16 -> int32 (vpmaddwd), nothing saturates.
//
// Register blocking (kMR = 6, kNR = 8, kKU = 4):
//   * One k group of B is 8 columns x 4 k = 32 bytes: two vpmovsxbw loads give
//     two ymm of int16, 4 columns each, one column's 4 values per 64-bit lane.
//   * One k group of an A row is 4 bytes: vbroadcastss (a pure load, no
//     shuffle uop) plus one vpmovsxbw repeats its 4 int16 in every 64-bit lane,
//     lined up with every column of a B register.
//   * vpmaddwd then leaves two int32 per column: a0*b0 + a1*b1 and
//     a2*b2 + a3*b3. They are added once per tile, after the k loop.
//   * Accumulators: 6 rows x 2 ymm = 12 ymm, plus 2 for B and 1 for A: 15 of
//     the 16 ymm registers. Per k group: 12 vpmaddwd + 12 vpaddd (192 MACs)
//     against 8 vpmovsxbw (6 for A, 2 for B), so the multiply-add ports stay
//     the bottleneck rather than the shuffle port.
//   * kKU = 4, not 2: a 32-bit broadcast is a plain load where a 16-bit one
//     costs a shuffle uop, and one A conversion feeds twice the products.
//   * kMR = 6: 4 x 8 and 5 x 8 ran as fast in a hot loop (Zen 4), but 6 rows
//     reuse each B group more (56 bytes read per 192 MACs against 48 per 128),
//     which counts when the B panel streams from L2. 3 x 16 (the only kNR = 16
//     shape that fits) ran about 7% slower.
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

namespace detail {

// The accumulators of one row of the tile: columns 0-3 and 4-7, each column
// as two int32 lanes [pair sum k0,k1 | pair sum k2,k3]. Named members rather
// than an array: GCC 12 keeps an array of vectors partly in memory, which
// puts loads and stores of accumulators inside the k loop.
// (An aggregate without default member initializers: an implicit constructor
// would not inherit a `#pragma GCC target` around this header.)
struct RowAcc {
  __m256i cols0to3;
  __m256i cols4to7;
};

// The 4 int8 of one A row in one k group, sign-extended to int16 and repeated
// in all four 64-bit lanes: vbroadcastss from memory, then vpmovsxbw.
inline __m256i broadcast_a_row(const int8_t* p) {
  const __m128 four_bytes = _mm_broadcast_ss(reinterpret_cast<const float*>(p));
  return _mm256_cvtepi8_epi16(_mm_castps_si128(four_bytes));
}

// The 8 columns x 4 k of one B group, sign-extended to int16: columns 0-3 and
// 4-7, each column's 4 values in one 64-bit lane.
inline __m256i load_b_cols(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline void accumulate_row(RowAcc& acc, const int8_t* a_row, __m256i b0to3, __m256i b4to7) {
  const __m256i a = broadcast_a_row(a_row);
  acc.cols0to3 = _mm256_add_epi32(acc.cols0to3, _mm256_madd_epi16(a, b0to3));
  acc.cols4to7 = _mm256_add_epi32(acc.cols4to7, _mm256_madd_epi16(a, b4to7));
}

// Adds the two pair sums of each column and stores the row's 8 results. The
// sums go through memory rather than vphaddd on the accumulators: with
// vphaddd, GCC 12 spills accumulators inside the k loop. It still vectorizes
// these sums, and they run once per tile.
inline void store_row(int32_t* c_row, const RowAcc& acc) {
  alignas(32) int32_t pairs[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), acc.cols0to3);
  _mm256_store_si256(reinterpret_cast<__m256i*>(pairs + 8), acc.cols4to7);
  for (int j = 0; j < 8; ++j) c_row[j] = pairs[2 * j] + pairs[2 * j + 1];
}

}  // namespace detail

// c[r * kNR + j] = sum over k < k_groups * kKU of A(r, k) * B(k, j).
//   a: A(r, k) at a[((k / kKU) * kMR + r) * kKU + k % kKU], int8
//   b: B(k, j) at b[((k / kKU) * kNR + j) * kKU + k % kKU], int8
// Not inlined: inside a big generated loop nest GCC 12 shuffles the
// accumulators between registers every iteration; alone it keeps them put.
__attribute__((noinline)) inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  static_assert(kMR == 6 && kNR == 8 && kKU == 4, "the code below is written out for 6 x 8 x 4");
  const int8_t* pa = static_cast<const int8_t*>(a);
  const __m256i zero = _mm256_setzero_si256();
  detail::RowAcc r0{zero, zero}, r1{zero, zero}, r2{zero, zero};
  detail::RowAcc r3{zero, zero}, r4{zero, zero}, r5{zero, zero};
  for (int64_t g = 0; g < k_groups; ++g) {
    const __m256i b0to3 = detail::load_b_cols(b);
    const __m256i b4to7 = detail::load_b_cols(b + 16);
    detail::accumulate_row(r0, pa + 0 * kKU, b0to3, b4to7);
    detail::accumulate_row(r1, pa + 1 * kKU, b0to3, b4to7);
    detail::accumulate_row(r2, pa + 2 * kKU, b0to3, b4to7);
    detail::accumulate_row(r3, pa + 3 * kKU, b0to3, b4to7);
    detail::accumulate_row(r4, pa + 4 * kKU, b0to3, b4to7);
    detail::accumulate_row(r5, pa + 5 * kKU, b0to3, b4to7);
    pa += kMR * kKU;
    b += kNR * kKU;
  }
  detail::store_row(c + 0 * kNR, r0);
  detail::store_row(c + 1 * kNR, r1);
  detail::store_row(c + 2 * kNR, r2);
  detail::store_row(c + 3 * kNR, r3);
  detail::store_row(c + 4 * kNR, r4);
  detail::store_row(c + 5 * kNR, r5);
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

}  // namespace avx2
}  // namespace tg_qgemm
