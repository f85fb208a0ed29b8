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

// c[r * kNR + j] = (accumulate ? c[r * kNR + j] : 0) + sum over k' < k of A(r, k') * B(k', j),
// for the columns j < kCols (tile<8>: the last column panel of an N whose
// tail fits one ymm; c's other columns are not touched).
//   a: A(r, k') at a[k' * kMR + r]
//   b: B(k', j) at b[k' * kNR + j]
// Not inlined: see sgemm_avx512.h.
template <int kCols = kNR>
__attribute__((noinline)) inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                           const float* next = nullptr, int64_t next_floats = 0) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0, "tile<kCols>: whole ymm of a B panel's row");
  constexpr int kVecs = kCols / 8;  // ymm per row
  __m256 acc[kMR][kVecs];
#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v)
      acc[r][v] = accumulate ? _mm256_loadu_ps(c + r * kNR + 8 * v) : _mm256_setzero_ps();

  // One k step: the outer product of MR A values and NR B values.
  auto step = [&]() __attribute__((always_inline)) {
    __m256 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
    for (int r = 0; r < kMR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
    }
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

#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(c + r * kNR + 8 * v, acc[r][v]);
}

// c[r * ldc + j] = min(max(S(r, j) + bias[r], lo), hi), S the sum tile()
// computes (not accumulating): a conv's bias with ReLU (hi = INFINITY),
// Clip or none (lo = -INFINITY) as the generated epilogue computes it,
// NaN kept; c: row r of the output at c + r * ldc (README.md).
inline void tile_bias_clamp(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias,
                            float lo, float hi) {
  alignas(64) float t[kMR * kNR];
  tile(k, a, b, t, false);
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) {
      float x = t[r * kNR + j] + bias[r];
      x = x < lo ? lo : x;
      c[r * ldc + j] = hi < x ? hi : x;
    }
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

}  // namespace avx2
}  // namespace tg_sgemm
