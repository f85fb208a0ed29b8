// Softmax micro-kernel, AVX2 + FMA: one row of N contiguous floats (ONNX
// Softmax over the last axis). The generated block kernel ran the four
// phases (max, exp, sum, scale) as separate loops over a tile of rows, each
// with a scalar remainder per row, and staged exp through a scratch tile: on a
// Zen 4 core, one thread, a ViT-B/16 attention softmax (12 x 197 rows of 197)
// took 0.33-0.45 ms that way, onnxruntime's 0.18-0.19.
//
// Three passes over the row, all in L1: the maximum (two accumulators), then
// e = exp(x - max) stored to `out` while summing it, then out *= 1 / sum (the
// generated code's rounding: a reciprocal, then products). The last N % 8
// values go through masked loads and stores, so no lane reads or writes past
// the row. exp is tg_exp's (codegen/printing/vector_math_prelude.h): the same
// reduction, polynomial and two-halves scaling, on eight lanes.
//
// Used on AVX2 and AVX-512 targets (codegen/lowering/lower_softmax_kernel.h);
// elsewhere the generated loops remain.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace tg_softmax {
inline namespace avx2 {

constexpr const char* kVariant = "avx2";

// e^x for x <= 0 (x - the row's maximum) or NaN, as tg_exp computes it:
// below -104 the result is 0 (the lanes compute e^0 and are zeroed, so no
// multiply underflows into a denormal assist).
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);
  const __m256 xc = _mm256_andnot_ps(zero, x);
  const __m256 bias = _mm256_set1_ps(12582912.0f);  // 1.5 * 2^23: rounds to an integer
  const __m256 shifted = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), bias);
  const __m256 nf = _mm256_sub_ps(shifted, bias);
  __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fmadd_ps(nf, _mm256_set1_ps(2.12194440e-4f), r);
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 r4 = _mm256_mul_ps(r2, r2);
  const __m256 p01 = _mm256_add_ps(r, _mm256_set1_ps(1.0f));
  const __m256 p23 = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
  const __m256 p45 = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 120.0f), _mm256_set1_ps(1.0f / 24.0f));
  const __m256 p67 = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 5040.0f), _mm256_set1_ps(1.0f / 720.0f));
  const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(p67, r2, p45), r4, _mm256_fmadd_ps(p23, r2, p01));
  const __m256i n = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(0x4B400000));
  const __m256i half = _mm256_srai_epi32(n, 1);
  const __m256i exponent = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, exponent), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(n, half), exponent), 23));
  return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(p, s1), s2));
}

inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The lanes below `count` (0 < count < 8) set, for maskload/maskstore.
inline __m256i first_lanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// out[j] = exp(in[j] - max) / sum over j' of exp(in[j'] - max), j < N.
// `in` and `out` need no alignment and may not overlap.
template <int N>
inline void row(const float* in, float* out) {
  static_assert(N >= 1, "an empty row");
  constexpr int kFull = N / 8 * 8, kTail = N % 8;
  const __m256i tail = first_lanes(kTail);
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  __m256 m0 = minus_inf, m1 = minus_inf;
  int j = 0;
  for (; j + 16 <= kFull; j += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(in + j));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(in + j + 8));
  }
  if (j < kFull) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(in + j));
  if (kTail) {
    const __m256 x = _mm256_maskload_ps(in + kFull, tail);
    m1 = _mm256_max_ps(m1, _mm256_blendv_ps(minus_inf, x, _mm256_castsi256_ps(tail)));
  }
  const __m256 m = _mm256_set1_ps(horizontal_max(_mm256_max_ps(m0, m1)));
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  for (j = 0; j + 16 <= kFull; j += 16) {
    const __m256 e0 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(in + j), m));
    const __m256 e1 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(in + j + 8), m));
    _mm256_storeu_ps(out + j, e0);
    _mm256_storeu_ps(out + j + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  if (j < kFull) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(in + j), m));
    _mm256_storeu_ps(out + j, e);
    s0 = _mm256_add_ps(s0, e);
  }
  if (kTail) {
    const __m256 x = _mm256_maskload_ps(in + kFull, tail);
    const __m256 e = _mm256_and_ps(exp_nonpositive(_mm256_sub_ps(x, m)), _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(out + kFull, tail, e);
    s1 = _mm256_add_ps(s1, e);
  }
  const __m256 inverse = _mm256_set1_ps(1.0f / horizontal_sum(_mm256_add_ps(s0, s1)));
  for (j = 0; j < kFull; j += 8) _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_loadu_ps(out + j), inverse));
  if (kTail)
    _mm256_maskstore_ps(out + kFull, tail, _mm256_mul_ps(_mm256_maskload_ps(out + kFull, tail), inverse));
}

}  // namespace avx2
}  // namespace tg_softmax
