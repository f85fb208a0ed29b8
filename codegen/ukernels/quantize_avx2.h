// Quantize micro-kernel, AVX2 + FMA: y[i] = saturate(round(x[i] / scale) +
// zero_point) over n contiguous floats, T = uint8_t or int8_t (ONNX
// QuantizeLinear and DynamicQuantizeLinear with one scale and zero point:
// codegen/lowering/lower_quantize_kernel.h). The generated loop computes the
// same values, but GCC turns its clamps, NaN test and float-to-byte
// conversion into a dozen compares, mask merges and byte blends per vector:
// on a Zen 4 core an INT8 ViT-B/16's 197 x 3072 activation took 0.127 ms that
// way, 0.074 here with the division, 0.04 without it.
//
// The division: where the scale and its reciprocal r = 1 / scale (correctly
// rounded) are normal floats, q = x * r is within an ulp of x / scale, the
// residual x - q * scale is exact in one FMA, and q + residual * r rounds to
// the correctly rounded quotient (Markstein's theorem; checked against
// division over every float of several binades in
// tests/unit/quantize_ukernel_test.cpp). So the result is the division's,
// bit for bit, at the cost of three multiplies instead of a division
// (a 512-bit division issues once per ~6 cycles). Quotients below 2^-126,
// where the residual could underflow, round to 0 either way; q is clamped to
// +-2^20 first so that x = +-inf or a quotient past the float range keeps a
// saturating value instead of inf - inf. A subnormal or huge scale divides.
//
// Then: round half to even (cvtps2dq under the default rounding mode, as the
// generated loops' nearbyint), add the zero point in int32, saturate to T;
// NaN gives 0 (the generated code's tg_float_to_int). The last n % 8 values
// are computed one at a time as the generated loops do.
//
// `extremes` is DynamicQuantizeLinear's range before that: max(x) and
// max(-x) in one pass (codegen/lowering/lower_quantize_kernel.h).
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace tg_quantize {
inline namespace avx2 {

constexpr const char* kVariant = "avx2";

template <bool kByReciprocal>
inline __m256 quotients(__m256 x, __m256 scale, __m256 r) {
  if (!kByReciprocal) return _mm256_div_ps(x, scale);
  __m256 q = _mm256_mul_ps(x, r);
  q = _mm256_max_ps(_mm256_set1_ps(-1048576.0f), _mm256_min_ps(_mm256_set1_ps(1048576.0f), q));  // NaN stays NaN
  return _mm256_fmadd_ps(_mm256_fnmadd_ps(q, scale, x), r, q);
}

// Eight values of T (as int32) for eight quotients: clamped to
// [lowest - zp, highest - zp] (for uint8 the lower clamp also turns NaN into
// -zp: vmaxps returns its second operand for a NaN), rounded, plus the zero
// point; a signed T zeroes NaN lanes by a mask.
template <typename T>
inline __m256i saturated(__m256 q, int32_t zero_point) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::min() - zero_point));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::max() - zero_point));
  const __m256i zp = _mm256_set1_epi32(zero_point);
  if (std::numeric_limits<T>::is_signed) {
    const __m256i number = _mm256_castps_si256(_mm256_cmp_ps(q, q, _CMP_ORD_Q));
    q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);
    return _mm256_and_si256(_mm256_add_epi32(_mm256_cvtps_epi32(q), zp), number);
  }
  q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(q), zp);
}

// Sixteen int32 values of T's range (a: the first eight) as sixteen bytes.
template <typename T>
inline __m128i narrowed(__m256i a, __m256i b) {
  const __m256i words = _mm256_packs_epi32(a, b);  // a0-3 b0-3 | a4-7 b4-7
  const __m256i bytes = std::numeric_limits<T>::is_signed ? _mm256_packs_epi16(words, words)
                                                          : _mm256_packus_epi16(words, words);
  // dwords: a0-3 b0-3 a0-3 b0-3 | a4-7 b4-7 a4-7 b4-7
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5)));
}

// One value the way the generated loops compute it (the tail).
template <typename T>
inline T one(float x, float scale, int32_t zero_point) {
  const float v = std::nearbyint(x / scale) + static_cast<float>(zero_point);
  if (std::isnan(v)) return T(0);
  const float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
}

template <typename T, bool kByReciprocal>
inline void linear_range(const float* x, int64_t n, float scale, int32_t zero_point, T* y) {
  const __m256 s = _mm256_set1_ps(scale), r = _mm256_set1_ps(1.0f / scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = saturated<T>(quotients<kByReciprocal>(_mm256_loadu_ps(x + i), s, r), zero_point);
    const __m256i b = saturated<T>(quotients<kByReciprocal>(_mm256_loadu_ps(x + i + 8), s, r), zero_point);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), narrowed<T>(a, b));
  }
  for (; i < n; ++i) y[i] = one<T>(x[i], scale, zero_point);
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
// each hide the max/min latency; the last n % 8 values one at a time.
inline void extremes(const float* x, int64_t n, float* out) {
  const __m256 lowest = _mm256_set1_ps(-INFINITY), highest = _mm256_set1_ps(INFINITY);
  __m256 hi[4] = {lowest, lowest, lowest, lowest}, lo[4] = {highest, highest, highest, highest};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int u = 0; u < 4; ++u) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * u);
      hi[u] = _mm256_max_ps(v, hi[u]);  // a NaN v keeps hi[u]
      lo[u] = _mm256_min_ps(v, lo[u]);
    }
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    hi[0] = _mm256_max_ps(v, hi[0]);
    lo[0] = _mm256_min_ps(v, lo[0]);
  }
  alignas(32) float h[8], l[8];
  _mm256_store_ps(h, _mm256_max_ps(_mm256_max_ps(hi[0], hi[1]), _mm256_max_ps(hi[2], hi[3])));
  _mm256_store_ps(l, _mm256_min_ps(_mm256_min_ps(lo[0], lo[1]), _mm256_min_ps(lo[2], lo[3])));
  float top = h[0], bottom = l[0];
  for (int u = 1; u < 8; ++u) {
    top = top < h[u] ? h[u] : top;
    bottom = l[u] < bottom ? l[u] : bottom;
  }
  for (; i < n; ++i) {
    top = top < x[i] ? x[i] : top;
    bottom = x[i] < bottom ? x[i] : bottom;
  }
  out[0] = top;
  out[1] = -bottom;
}

}  // namespace avx2
}  // namespace tg_quantize
