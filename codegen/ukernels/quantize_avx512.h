// Quantize micro-kernel, AVX-512: y[i] = saturate(round(x[i] / scale) +
// zero_point) over n contiguous floats (ONNX QuantizeLinear and
// DynamicQuantizeLinear with one scale), as quantize_avx2.h says in full:
// the same arithmetic on sixteen lanes, the last n % 16 values under a
// k-mask, so no lane reads or writes past the range; and `extremes`,
// DynamicQuantizeLinear's max(x) and max(-x) in one pass.
//
// Include with -mavx512f (or -march=skylake-avx512, -march=znver4 or newer).
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace tg_quantize {
inline namespace avx512 {

constexpr const char* kVariant = "avx512";

// Sixteen quotients x / scale, correctly rounded (see quantize_avx2.h): with
// the reciprocal, x * r corrected by one FMA step (2^20 clamps keep the
// residual finite where x / scale is far outside any integer type, whose
// values saturate either way); else a division.
template <bool kByReciprocal>
inline __m512 quotients(__m512 x, __m512 scale, __m512 r) {
  if (!kByReciprocal) return _mm512_div_ps(x, scale);
  __m512 q = _mm512_mul_ps(x, r);
  q = _mm512_max_ps(_mm512_set1_ps(-1048576.0f), _mm512_min_ps(_mm512_set1_ps(1048576.0f), q));  // NaN stays NaN
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(q, scale, x), r, q);
}

// The sixteen values of T (as int32) for sixteen quotients: rounded half to
// even (the default rounding mode, as the generated loops' nearbyint), plus
// the zero point, saturated; NaN gives 0. The quotient is clamped to
// [lowest - zp, highest - zp] first, so the int32 sum needs no clamp; for
// uint8 the lower clamp also turns NaN into -zp (vmaxps returns its second
// operand for a NaN), i.e. 0.
template <typename T>
inline __m512i saturated(__m512 q, int32_t zero_point) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::min() - zero_point));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::max() - zero_point));
  const __m512i zp = _mm512_set1_epi32(zero_point);
  if (std::numeric_limits<T>::is_signed) {
    const __mmask16 number = _mm512_cmp_ps_mask(q, q, _CMP_ORD_Q);
    q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);
    return _mm512_maskz_add_epi32(number, _mm512_cvtps_epi32(q), zp);
  }
  q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(q), zp);
}

template <typename T, bool kByReciprocal>
inline void linear_range(const float* x, int64_t n, float scale, int32_t zero_point, T* y) {
  const __m512 s = _mm512_set1_ps(scale), r = _mm512_set1_ps(1.0f / scale);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i a = saturated<T>(quotients<kByReciprocal>(_mm512_loadu_ps(x + i), s, r), zero_point);
    const __m512i b = saturated<T>(quotients<kByReciprocal>(_mm512_loadu_ps(x + i + 16), s, r), zero_point);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi32_epi8(a));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16), _mm512_cvtepi32_epi8(b));
  }
  for (; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512i v = saturated<T>(quotients<kByReciprocal>(_mm512_maskz_loadu_ps(m, x + i), s, r), zero_point);
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, v);
  }
}

// y[i] = saturate_T(nearbyint(x[i] / scale) + zero_point) for i < n; NaN
// gives 0. T: uint8_t or int8_t. x and y need no alignment.
template <typename T>
inline void linear(const float* x, int64_t n, float scale, int32_t zero_point, T* y) {
  static_assert(sizeof(T) == 1, "quantizes to 8-bit integers");
  if (std::isnormal(scale) && std::isnormal(1.0f / scale))
    linear_range<T, true>(x, n, scale, zero_point, y);
  else
    linear_range<T, false>(x, n, scale, zero_point, y);
}

// out[0] = the largest of x[0..n), out[1] = the largest of their negations
// (DynamicQuantizeLinear's max(x) and -min(x): the generated reduction
// extremes[j] = max(x * (j == 0 ? 1 : -1)) read x twice, once per j, with one
// accumulator each); NaNs are skipped, as the generated max(acc, v) = acc < v
// ? v : acc skips them; -inf where no value is a number. Four accumulators
// each hide the max/min latency.
inline void extremes(const float* x, int64_t n, float* out) {
  const __m512 lowest = _mm512_set1_ps(-INFINITY), highest = _mm512_set1_ps(INFINITY);
  __m512 hi[4] = {lowest, lowest, lowest, lowest}, lo[4] = {highest, highest, highest, highest};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int u = 0; u < 4; ++u) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * u);
      hi[u] = _mm512_max_ps(v, hi[u]);  // a NaN v keeps hi[u]
      lo[u] = _mm512_min_ps(v, lo[u]);
    }
  for (; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 v = _mm512_mask_loadu_ps(lowest, m, x + i);
    hi[0] = _mm512_max_ps(v, hi[0]);
    lo[0] = _mm512_min_ps(_mm512_mask_loadu_ps(highest, m, x + i), lo[0]);
  }
  out[0] = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(hi[0], hi[1]), _mm512_max_ps(hi[2], hi[3])));
  out[1] = -_mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(lo[0], lo[1]), _mm512_min_ps(lo[2], lo[3])));
}

}  // namespace avx512
}  // namespace tg_quantize
