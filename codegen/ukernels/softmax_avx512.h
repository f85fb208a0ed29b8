// Softmax micro-kernel, AVX-512: one row of N contiguous floats (ONNX Softmax
// over the last axis), as softmax_avx2.h (which says why and how) on sixteen
// lanes, the last N % 16 values under a k-mask.
//
// Include with -mavx512f (or -march=skylake-avx512, -march=znver4 or newer).
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace tg_softmax {
inline namespace avx512 {

constexpr const char* kVariant = "avx512";

// e^x for x <= 0 or NaN: tg_exp's reduction and polynomial (softmax_avx2.h),
// scaled by 2^n in one vscalefps instead of exponent arithmetic and two
// multiplies (Zen 4, one core, ViT-B/16's 2364 rows of 197: 0.197 -> 0.171 ms).
inline __m512 exp_nonpositive(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_NLT_UQ);
  const __m512 xc = _mm512_maskz_mov_ps(keep, x);
  const __m512 bias = _mm512_set1_ps(12582912.0f);  // 1.5 * 2^23: rounds to an integer
  const __m512 shifted = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), bias);
  const __m512 nf = _mm512_sub_ps(shifted, bias);
  __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fmadd_ps(nf, _mm512_set1_ps(2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 r4 = _mm512_mul_ps(r2, r2);
  const __m512 p01 = _mm512_add_ps(r, _mm512_set1_ps(1.0f));
  const __m512 p23 = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
  const __m512 p45 = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 120.0f), _mm512_set1_ps(1.0f / 24.0f));
  const __m512 p67 = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 5040.0f), _mm512_set1_ps(1.0f / 720.0f));
  const __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(p67, r2, p45), r4, _mm512_fmadd_ps(p23, r2, p01));
  return _mm512_maskz_scalef_ps(keep, p, nf);
}

// out[j] = exp(in[j] - max) / sum over j' of exp(in[j'] - max), j < N.
// `in` and `out` need no alignment and may not overlap.
template <int N>
inline void row(const float* in, float* out) {
  static_assert(N >= 1, "an empty row");
  constexpr int kFull = N / 16 * 16, kTail = N % 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << kTail) - 1u);
  const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
  __m512 m0 = minus_inf, m1 = minus_inf;
  int j = 0;
  for (; j + 32 <= kFull; j += 32) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(in + j));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(in + j + 16));
  }
  if (j < kFull) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(in + j));
  if (kTail) m1 = _mm512_max_ps(m1, _mm512_mask_loadu_ps(minus_inf, tail, in + kFull));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  for (j = 0; j + 32 <= kFull; j += 32) {
    const __m512 e0 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(in + j), m));
    const __m512 e1 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(in + j + 16), m));
    _mm512_storeu_ps(out + j, e0);
    _mm512_storeu_ps(out + j + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  if (j < kFull) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(in + j), m));
    _mm512_storeu_ps(out + j, e);
    s0 = _mm512_add_ps(s0, e);
  }
  if (kTail) {
    const __m512 x = _mm512_maskz_loadu_ps(tail, in + kFull);
    const __m512 e = _mm512_maskz_mov_ps(tail, exp_nonpositive(_mm512_sub_ps(x, m)));
    _mm512_mask_storeu_ps(out + kFull, tail, e);
    s1 = _mm512_add_ps(s1, e);
  }
  const __m512 inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
  for (j = 0; j < kFull; j += 16) _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_loadu_ps(out + j), inverse));
  if (kTail)
    _mm512_mask_storeu_ps(out + kFull, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, out + kFull), inverse));
}

}  // namespace avx512
}  // namespace tg_softmax
