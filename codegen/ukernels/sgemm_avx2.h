// Float32 GEMM micro-kernel, AVX2 + FMA variant (contract: README.md).
//
// Register blocking (kMR = 6, kNR = 16):
//   * One k step of B is 16 floats: two ymm loads.
//   * Each of the 6 A values of a k step is broadcast from memory
//     (vbroadcastss, a pure load).
//   * Accumulators: 6 rows x 2 ymm = 12 ymm, plus 2 for B and 1 for A: 15 of
//     the 16 ymm registers. Per k step 12 FMAs against 8 loads: two FMA ports
//     busy for 6 cycles, 12 chains covering the FMA latency (4-5 cycles x 2).
//
// Include with -mavx2 -mfma (or -march=haswell or newer). A translation unit
// that enables the ISA for this header alone with `#pragma GCC target` (which
// in C++ does not define the feature macros) defines TG_SGEMM_FORCE.
#pragma once

#if !(defined(__AVX2__) && defined(__FMA__)) && !defined(TG_SGEMM_FORCE)
#error "sgemm_avx2.h needs AVX2 and FMA: compile with -mavx2 -mfma (or -march=haswell or newer)"
#endif

#include <cstdint>
#include <immintrin.h>

namespace tg_sgemm {
// Own inline namespace per variant: see sgemm_scalar.h.
inline namespace avx2 {

constexpr const char* kVariant = "avx2";
constexpr int kMR = 6;
constexpr int kNR = 16;
constexpr int kLanes = 8;  // floats per ymm: tile<kCols>'s unit

namespace detail {
// The accumulators at zero: accumulating, c is added at the store (as on
// AVX-512, sgemm_avx512.h: a blocked sum's rounding error).
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void zero_tile(__m256 (&acc)[kRows][kVecs]) {
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
}

// One k step: acc += the outer product of kRows A values (a[r]) and kVecs
// ymm of B (at b).
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void fma_step(__m256 (&acc)[kRows][kVecs], const float* a, const float* b) {
  __m256 bv[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    const __m256 ar = _mm256_broadcast_ss(a + r);
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
  }
}

// c's row r, vector v = acc[r][v], plus c where accumulating.
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void store_tile(const __m256 (&acc)[kRows][kVecs], float* c, bool accumulate) {
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      float* at = c + r * kNR + 8 * v;
      _mm256_storeu_ps(at, accumulate ? _mm256_add_ps(_mm256_loadu_ps(at), acc[r][v]) : acc[r][v]);
    }
}
}  // namespace detail

namespace detail {
// x[j] = lane j of every x[i] as they came in: a 4 x 4 transpose in xmm
// registers. The packings below stay in 128-bit registers: an 8 x 8
// transpose in ymm needs eight lane-crossing vperm2f128, which a Zen 1 core
// splits into 8 macro-ops each (a 6 x 256 A panel took twice as long to pack
// from L3 that way: ViT-B/16's 197 x 3072 activations, 0.24 -> 0.14 ms).
__attribute__((always_inline)) inline void transpose4(__m128& x0, __m128& x1, __m128& x2, __m128& x3) {
  const __m128 t0 = _mm_unpacklo_ps(x0, x1), t1 = _mm_unpackhi_ps(x0, x1);
  const __m128 t2 = _mm_unpacklo_ps(x2, x3), t3 = _mm_unpackhi_ps(x2, x3);
  x0 = _mm_movelh_ps(t0, t2);
  x1 = _mm_movehl_ps(t2, t0);
  x2 = _mm_movelh_ps(t1, t3);
  x3 = _mm_movehl_ps(t3, t1);
}
}  // namespace detail

// a[k' * kMR + r] = rows[r][k'] for k' < k: an A panel packed at run time
// from kMR rows that are each contiguous along k (README.md). Four k at a
// time: rows 0-3 as a 4 x 4 transpose, rows 4 and 5 interleaved, so each k
// is a 4-float and a 2-float store where the generated loop stored each
// value kMR floats apart.
__attribute__((noinline)) inline void pack_a_rows_from(int64_t k, float* a, const float* const* rows) {
  static_assert(kMR == 6, "a 4 x 4 transpose and a pair of rows per 4 k");
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
    __m128 r0 = _mm_loadu_ps(rows[0] + kk), r1 = _mm_loadu_ps(rows[1] + kk);
    __m128 r2 = _mm_loadu_ps(rows[2] + kk), r3 = _mm_loadu_ps(rows[3] + kk);
    const __m128 r4 = _mm_loadu_ps(rows[4] + kk), r5 = _mm_loadu_ps(rows[5] + kk);
    detail::transpose4(r0, r1, r2, r3);  // r0: k's rows 0-3, r1: k + 1's, ...
    const __m128 lo = _mm_unpacklo_ps(r4, r5), hi = _mm_unpackhi_ps(r4, r5);  // rows 4, 5 of k, k + 1 | k + 2, k + 3
    float* out = a + kk * kMR;
    _mm_storeu_ps(out, r0);
    _mm_storel_pi(reinterpret_cast<__m64*>(out + 4), lo);
    _mm_storeu_ps(out + kMR, r1);
    _mm_storeh_pi(reinterpret_cast<__m64*>(out + kMR + 4), lo);
    _mm_storeu_ps(out + 2 * kMR, r2);
    _mm_storel_pi(reinterpret_cast<__m64*>(out + 2 * kMR + 4), hi);
    _mm_storeu_ps(out + 3 * kMR, r3);
    _mm_storeh_pi(reinterpret_cast<__m64*>(out + 3 * kMR + 4), hi);
  }
  // The remaining columns, counted from 0 (see sgemm_avx512.h's pack).
  const int64_t tail = k - kk;
  for (int64_t t = 0; t < tail; ++t)
#pragma GCC unroll 6
    for (int i = 0; i < kMR; ++i) a[(kk + t) * kMR + i] = rows[i][kk + t];
}

namespace detail {
// The tile transposed: c[j * kMR + r] (tile_ct), plus c where accumulating,
// through a row-major copy on the stack once per call (against k steps of
// 12 FMAs). A whole tile's store is an A panel's packing of its kMR rows
// (pack_a_rows_from: 4 x 4 transposes in xmm); a tail tile's, and the
// accumulated c, go value by value.
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void store_tile_transposed(const __m256 (&acc)[kRows][kVecs], float* c,
                                                                 bool accumulate) {
  alignas(32) float rows[kRows][kVecs * 8];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) _mm256_store_ps(rows[r] + 8 * v, acc[r][v]);
  if (accumulate)
    for (int j = 0; j < kVecs * 8; ++j)
#pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) rows[r][j] = c[j * kMR + r] + rows[r][j];
  if constexpr (kRows == kMR) {
    const float* const row_ptrs[kMR] = {rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]};
    pack_a_rows_from(kVecs * 8, c, row_ptrs);
  } else {
    for (int j = 0; j < kVecs * 8; ++j)
#pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) c[j * kMR + r] = rows[r][j];
  }
}
}  // namespace detail

// c[r * kNR + j] = (accumulate ? c[r * kNR + j] : 0) + sum over k' < k of A(r, k') * B(k', j),
// for the columns j < kCols (tile<8>: the last column panel of an N whose
// tail fits one ymm; c's other columns are not touched).
//   a: A(r, k') at a[k' * kMR + r]
//   b: B(k', j) at b[k' * kNR + j]
// Rows r < kRows only (tile<kCols, kRows>: the last row panel of an M
// whose tail is kRows rows, M mod kMR; c's other rows are not touched).
// Not inlined: see sgemm_avx512.h. kTransposedC: tile_ct.
template <int kCols = kNR, int kRows = kMR, bool kTransposedC = false>
__attribute__((noinline)) inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                           const float* next = nullptr, int64_t next_floats = 0) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0, "tile<kCols>: whole ymm of a B panel's row");
  static_assert(kRows > 0 && kRows <= kMR, "tile<kCols, kRows>: rows of the A panel");
  __m256 acc[kRows][kCols / 8];
  detail::zero_tile(acc);
  auto step = [&]() __attribute__((always_inline)) {
    detail::fma_step(acc, a, b);
    a += kMR;
    b += kNR;
  };
  // `next` (the next B block, README.md) one 64-byte line every `every` k
  // steps: spread over the loop, the prefetches stay few in flight, where a
  // burst of them before the call would wait for the fill buffers.
  const int64_t lines = (next_floats + 15) / 16;
  const int64_t every = lines == 0 ? k : (k / lines > 0 ? k / lines : 1);
  int64_t kk = 0;
  for (int64_t line = 0; line < lines; ++line) {
    __builtin_prefetch(next + line * 16, 0, 2);
    for (const int64_t stop = kk + every < k ? kk + every : k; kk < stop; ++kk) step();
  }
  for (; kk < k; ++kk) step();
  if constexpr (kTransposedC)
    detail::store_tile_transposed(acc, c, accumulate);
  else
    detail::store_tile(acc, c, accumulate);
}

// tile with the C tile transposed: c[j * kMR + r] (rows r < kRows, columns
// j < kCols), as on AVX-512: a convolution whose pixels are the GEMM's rows
// stores each filter's kMR pixels contiguously in the output, where over
// the row-major tile its epilogue stored every value H x W floats from the
// last (GCC left those stores and the residual's loads scalar: a quarter of
// ResNet-50's 14 x 14 conv3 + Add + Relu kernels on a Zen 3 core, perf).
template <int kCols = kNR, int kRows = kMR>
inline void tile_ct(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                    const float* next = nullptr, int64_t next_floats = 0) {
  tile<kCols, kRows, true>(k, a, b, c, accumulate, next, next_floats);
}

// B read where it lies (README.md): B(k', j) at b[k' * ldb + j], each row's
// kNR columns contiguous, the rows ldb floats apart (a stride-1 1x1 conv's
// activation: the next kNR pixels of every input channel), so the
// generated code packs no B panel, as on AVX-512. Each k step also brings
// that row's next kNR floats (the next column panel, one line) into the
// L1: rows H x W floats apart are more streams than the prefetchers follow.
template <int kCols = kNR, int kRows = kMR>
__attribute__((noinline)) inline void tile_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c,
                                               bool accumulate) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0, "tile_ldb<kCols>: whole ymm of a B row");
  static_assert(kRows > 0 && kRows <= kMR, "tile_ldb<kCols, kRows>: rows of the A panel");
  __m256 acc[kRows][kCols / 8];
  detail::zero_tile(acc);
  for (int64_t kk = 0; kk < k; ++kk) {
    __builtin_prefetch(b + kNR, 0, 3);
    detail::fma_step(acc, a, b);
    a += kMR;
    b += ldb;
  }
  detail::store_tile(acc, c, accumulate);
}

namespace detail {
// tile_bias_clamp (B packed, ldb = kNR) and tile_bias_clamp_ldb (B in place,
// prefetching as tile_ldb): one body.
// From the accumulators, as on AVX-512: through a C tile and a loop over
// it, GCC compiled the clamp to two compares and branches per value, which
// mispredict on ReLU6 data (MobileNetV2 on a Zen 1 core: a sixth of the
// model's time, its 16 -> 96 1x1 conv over 112 x 112 pixels 3x
// onnxruntime's). vmaxps / vminps return their second operand where one is
// NaN: with the bound first they keep a NaN x like x < lo ? lo : x and
// hi < x ? hi : x.
template <bool kInPlace>
__attribute__((noinline)) inline void bias_clamp_tile(int64_t k, const float* a, const float* b, int64_t ldb, float* c,
                                                      int64_t ldc, const float* bias, float lo, float hi) {
  __m256 acc[kMR][2];
  zero_tile(acc);
  for (int64_t kk = 0; kk < k; ++kk) {
    if constexpr (kInPlace) __builtin_prefetch(b + kNR, 0, 3);
    fma_step(acc, a, b);
    a += kMR;
    b += ldb;
  }
  const __m256 low = _mm256_set1_ps(lo), high = _mm256_set1_ps(hi);
#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r) {
    const __m256 bias_r = _mm256_broadcast_ss(bias + r);
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      const __m256 x = _mm256_max_ps(low, _mm256_add_ps(acc[r][v], bias_r));
      _mm256_storeu_ps(c + r * ldc + 8 * v, _mm256_min_ps(high, x));
    }
  }
}
}  // namespace detail

// c[r * ldc + j] = min(max(S(r, j) + bias[r], lo), hi), S the sum tile()
// computes (not accumulating): a conv's bias with ReLU (hi = INFINITY),
// Clip or none (lo = -INFINITY) as the generated epilogue computes it,
// NaN kept; c: row r of the output at c + r * ldc (README.md).
inline void tile_bias_clamp(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias,
                            float lo, float hi) {
  detail::bias_clamp_tile<false>(k, a, b, kNR, c, ldc, bias, lo, hi);
}

// tile_bias_clamp with B read where it lies, as tile_ldb.
inline void tile_bias_clamp_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                                const float* bias, float lo, float hi) {
  detail::bias_clamp_tile<true>(k, a, b, ldb, c, ldc, bias, lo, hi);
}

// Brings the kMR x kNR tile at p (row r at p + r * ld) toward the L1: a
// hint with no effect on results (README.md), for the generated epilogue's
// next read of an activation (a residual add).
inline void prefetch_tile(const float* p, int64_t ld) {
#if defined(__GNUC__)
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; j += 16) __builtin_prefetch(p + r * ld + j, 0, 3);
#else
  (void)p;
  (void)ld;
#endif
}


// b[k' * kNR + j] = first[j * ld + k'] for k' < k: a B panel packed at run
// time from kNR columns each contiguous along k (README.md; sgemm_avx512.h).
// Columns from `cols` on repeat column cols - 1. Four k at a time, each
// group of four columns a 4 x 4 transpose (detail::transpose4), so every k's
// row of the panel (one 64-byte line) is written whole before the next.
__attribute__((noinline)) inline void pack_b_columns(int64_t k, float* b, const float* first, int64_t ld,
                                                     int64_t cols) {
  static_assert(kNR % 4 == 0, "groups of 4 columns");
  const float* rows[kNR];
#pragma GCC unroll 16
  for (int j = 0; j < kNR; ++j) rows[j] = first + (j < cols ? j : cols - 1) * ld;
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
    float* out = b + kk * kNR;
#pragma GCC unroll 4
    for (int g = 0; g < kNR; g += 4) {
      __m128 x0 = _mm_loadu_ps(rows[g] + kk), x1 = _mm_loadu_ps(rows[g + 1] + kk);
      __m128 x2 = _mm_loadu_ps(rows[g + 2] + kk), x3 = _mm_loadu_ps(rows[g + 3] + kk);
      detail::transpose4(x0, x1, x2, x3);
      _mm_storeu_ps(out + g, x0);
      _mm_storeu_ps(out + kNR + g, x1);
      _mm_storeu_ps(out + 2 * kNR + g, x2);
      _mm_storeu_ps(out + 3 * kNR + g, x3);
    }
  }
  const int64_t tail = k - kk;
  for (int64_t t = 0; t < tail; ++t)
#pragma GCC unroll 16
    for (int j = 0; j < kNR; ++j) b[(kk + t) * kNR + j] = rows[j][kk + t];
}

// The generated code's form: the kMR row pointers as arguments.
template <class... Rows>
inline void pack_a_rows(int64_t k, float* a, Rows... rows) {
  static_assert(sizeof...(Rows) == kMR, "pack_a_rows: one pointer per row of the panel");
  const float* const r[kMR] = {rows...};
  pack_a_rows_from(k, a, r);
}

}  // namespace avx2
}  // namespace tg_sgemm
