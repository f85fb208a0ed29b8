// tg_vector_math.h — float exp, erf, tanh and sigmoid for generated CPU
// kernels, written branch-free so GCC vectorizes them inside `#pragma omp
// simd` loops. std::exp/erf/tanh are scalar libm calls there (std::erf ~17 ns
// per element against ~1.4 ns here), and GELU, softmax and sigmoid spend most
// of their time in them. Relative error below 2e-7 over the float range
// (tests/unit/vector_math_test.cpp); results saturate to 0/inf like libm's
// and NaN propagates. The compiler pastes this file into every CPU kernel
// source (codegen/vector_math_prelude.h).
#ifndef TG_VECTOR_MATH_H
#define TG_VECTOR_MATH_H
#include <cstdint>
#include <cstring>

static inline float tg_bits_to_float(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
// e^x = 2^n * e^r with n = round(x / ln2), |r| <= ln2/2 (ln2 split in a
// part exact in float and a remainder); e^r by its degree-7 Taylor polynomial
// (truncation < 6e-9). 2^n is applied in two halves, so n from -150
// (denormal results) to 129 (overflow to inf) needs no special case.
static inline float tg_exp(float x) {
  float xc = x < -104.0f ? -104.0f : x;  // e^-104 rounds to 0
  xc = xc > 89.0f ? 89.0f : xc;          // e^89 overflows to inf
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  n = n == n ? n : 0.0f;  // NaN: any finite n; the NaN travels through r
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t ni = static_cast<int32_t>(n);
  int32_t half = ni >> 1;
  float s1 = tg_bits_to_float(static_cast<uint32_t>(half + 127) << 23);
  float s2 = tg_bits_to_float(static_cast<uint32_t>(ni - half + 127) << 23);
  return p * s1 * s2;
}
// erf: for |x| < 1 the odd Taylor series up to x^21 (alternating, so the
// truncation is below the next term, 1.1e-9); beyond, 1 - erfc(|x|) with
// erfc(z) = t e^(-z^2 + Q(t)), t = 1/(1 + z/2), Q the degree-9 Chebyshev
// fit of Press et al., Numerical Recipes 6.2 (relative error < 1.2e-7).
static inline float tg_erf(float x) {
  float z = x < 0 ? -x : x;
  float z2 = x * x;
  float s = 1.0f / (3628800.0f * 21.0f);
  s = s * z2 - 1.0f / (362880.0f * 19.0f);
  s = s * z2 + 1.0f / (40320.0f * 17.0f);
  s = s * z2 - 1.0f / (5040.0f * 15.0f);
  s = s * z2 + 1.0f / (720.0f * 13.0f);
  s = s * z2 - 1.0f / (120.0f * 11.0f);
  s = s * z2 + 1.0f / (24.0f * 9.0f);
  s = s * z2 - 1.0f / (6.0f * 7.0f);
  s = s * z2 + 1.0f / (2.0f * 5.0f);
  s = s * z2 - 1.0f / 3.0f;
  s = s * z2 + 1.0f;
  float small = 1.12837916709551257f * x * s;  // 2/sqrt(pi)
  float t = 1.0f / (1.0f + 0.5f * z);
  float q = 0.17087277f;
  q = q * t - 0.82215223f;
  q = q * t + 1.48851587f;
  q = q * t - 1.13520398f;
  q = q * t + 0.27886807f;
  q = q * t - 0.18628806f;
  q = q * t + 0.09678418f;
  q = q * t + 0.37409196f;
  q = q * t + 1.00002368f;
  q = q * t - 1.26551223f;
  float big = 1.0f - t * tg_exp(q - z2);
  big = x < 0 ? -big : big;
  return z < 1.0f ? small : big;
}
// tanh: for |x| < 0.4 its Taylor series up to x^13 (truncation < 4e-9
// relative); beyond, 1 - 2/(e^(2|x|) + 1), which has no cancellation there.
static inline float tg_tanh(float x) {
  float z = x < 0 ? -x : x;
  float z2 = x * x;
  float s = 21844.0f / 6081075.0f;
  s = s * z2 - 1382.0f / 155925.0f;
  s = s * z2 + 62.0f / 2835.0f;
  s = s * z2 - 17.0f / 315.0f;
  s = s * z2 + 2.0f / 15.0f;
  s = s * z2 - 1.0f / 3.0f;
  float small = x + x * z2 * s;
  float big = 1.0f - 2.0f / (tg_exp(2.0f * z) + 1.0f);
  big = x < 0 ? -big : big;
  return z < 0.4f ? small : big;
}
static inline float tg_sigmoid_vec(float x) { return 1.0f / (1.0f + tg_exp(-x)); }
#endif  // TG_VECTOR_MATH_H
