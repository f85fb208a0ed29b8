// tg_vector_math.h — float exp, erf, tanh and sigmoid for generated CPU
// kernels, written branch-free so GCC vectorizes them inside `#pragma omp
// simd` loops. std::exp/erf/tanh are scalar libm calls there (std::erf ~17 ns
// per element against ~0.4 ns here), and GELU, softmax and sigmoid spend most
// of their time in them. Relative error below 2e-7 over the float range
// (exp, tanh) and 4e-7 (erf) (tests/unit/vector_math_test.cpp); results
// saturate to 0/inf like libm's and NaN propagates. The compiler pastes this
// file into every CPU kernel source (codegen/printing/vector_math_prelude.h).
#ifndef TG_VECTOR_MATH_H
#define TG_VECTOR_MATH_H
#include <cstdint>
#include <cstring>

// Always inlined: a call left inside an `omp simd` loop keeps GCC from
// vectorizing it, and in a kernel source holding many kernels GCC stops
// inlining functions this size once the unit has grown past its limit
// (--param inline-unit-growth): mobilevit's depthwise conv + SiLU kernels
// then ran scalar, about 10x slower, while the same kernel alone in a file
// vectorized.
#if defined(__GNUC__)
#define TG_VECTOR_MATH_INLINE static inline __attribute__((always_inline))
#else
#define TG_VECTOR_MATH_INLINE static inline
#endif

TG_VECTOR_MATH_INLINE float tg_bits_to_float(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
// e^x = 2^n * e^r with n = round(x / ln2), |r| <= ln2/2 (ln2 split in a
// part exact in float and a remainder); e^r by its degree-7 Taylor polynomial
// (truncation < 6e-9). Returns e^r and sets *n, for |x| <= 89 or NaN.
TG_VECTOR_MATH_INLINE float tg_exp_reduced(float x, int32_t* n) {
  // Round to nearest by adding 1.5 * 2^23: the sum's low mantissa bits then
  // hold n as an integer, read from its bits below. A float-to-int conversion
  // of n instead needed NaN replaced first (converting NaN is undefined):
  // that compare, blend and conversion made the whole function ~1.5x slower
  // (mobilevit's SiLU kernels). A NaN x gives some integer n, never an
  // overflow (|bits - 0x4B400000| < 2^31), and the NaN travels through r.
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float nf = shifted - 12582912.0f;
  float r = x - nf * 0.693359375f;
  r = r + nf * 2.12194440e-4f;
  // Estrin's scheme: pairs of terms, then r^2 and r^4 combine them; Horner's
  // chain of seven dependent FMAs made SiLU and softmax loops wait on
  // latency (Zen 1, one core, in L1: SiLU 2.2 -> 1.85 ns per output, exp
  // 1.83 -> 1.67).
  const float r2 = r * r;
  const float r4 = r2 * r2;
  const float p01 = r + 1.0f;
  const float p23 = r * (1.0f / 6.0f) + 0.5f;
  const float p45 = r * (1.0f / 120.0f) + 1.0f / 24.0f;
  const float p67 = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
  const float p = (p67 * r2 + p45) * r4 + (p23 * r2 + p01);
  uint32_t shifted_bits;
  std::memcpy(&shifted_bits, &shifted, 4);
  *n = static_cast<int32_t>(shifted_bits - 0x4B400000u);  // bits of 1.5 * 2^23
  return p;
}
// 2^n is applied in two halves, so n from -150 (denormal results) to 129
// (overflow to inf) needs no special case.
// Below -104 (e^x rounds to 0) the lanes compute e^0 and select 0: clamped
// to -104 they multiplied down to a denormal and then 0, and on x86 every
// vector multiply that underflows takes a microcode assist (~150 cycles)
// where denormals are not flushed: softmax over bert's masked positions
// (-10000) spent 2/3 of its time there.
TG_VECTOR_MATH_INLINE float tg_exp(float x) {
  const bool zero = x < -104.0f;
  float xc = zero ? 0.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;  // e^89 overflows to inf
  int32_t n;
  const float p = tg_exp_reduced(xc, &n);
  const int32_t half = n >> 1;
  float s1 = tg_bits_to_float(static_cast<uint32_t>(half + 127) << 23);
  float s2 = tg_bits_to_float(static_cast<uint32_t>(n - half + 127) << 23);
  const float e = p * s1 * s2;
  return zero ? 0.0f : e;
}
// erf(x) = x P(x^2) / Q(x^2), P of degree 6 and Q of degree 4 in x^2, for
// |x| <= 3.92, and +-1 beyond (where float erf rounds to +-1). The
// coefficients are a fit of the relative error on [0, 3.92] with P(0) =
// 2/sqrt(pi) (fit_erf.py beside this file: 5.4e-8 in exact arithmetic, below
// 4e-7 in float). Both polynomials by Estrin's scheme (x^2, x^4, x^8 shared):
// what bounded a GELU loop on a Zen 1 core was the chain of dependent
// operations, not their number. The Taylor series below 0.5 and a rational
// approximation beyond, both computed and one selected, chained about 50
// cycles of latency per vector before the division; a GELU loop took 33
// vector instructions per vector and 2.7 ns per output, now 28 and 1.8 (one
// core, data in L1 or streamed from DRAM alike).
// NaN propagates (every compare is false); a huge |x| makes P / Q inf / inf,
// a NaN the selects replace.
TG_VECTOR_MATH_INLINE float tg_erf(float x) {
  const float t = x * x;
  const float t2 = t * t;
  const float t4 = t2 * t2;
  const float p01 = 1.985100955e-01f * t + 1.128379226e+00f;
  const float p23 = 3.639874281e-03f * t + 5.038432404e-02f;
  const float p45 = -1.950099431e-06f * t + 1.402524213e-04f;
  const float p46 = 1.993237575e-08f * t2 + p45;
  const float p = p46 * t4 + (p23 * t2 + p01);
  const float q01 = 5.092571974e-01f * t + 1.0f;
  const float q23 = 1.423058286e-02f * t + 1.144115552e-01f;
  const float q = 9.406441241e-04f * t4 + (q23 * t2 + q01);
  const float r = x * p / q;
  return x > 3.92f ? 1.0f : (x < -3.92f ? -1.0f : r);
}
// tanh: for |x| < 0.4 its Taylor series up to x^13 (truncation < 4e-9
// relative); beyond, 1 - 2/(e^(2|x|) + 1), which has no cancellation there.
TG_VECTOR_MATH_INLINE float tg_tanh(float x) {
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
// 1 / (1 + e^-x) with e^-x needing only n in [-29, 128]: -x clamped to
// [-20, 89], so 2^n is one normal power of two (n = 128 gives inf and
// sigmoid 0) and no lane selects a zero. Above x = 20, 1 + e^-x rounds to 1
// either way, and the multiplies by 2^n are exact, so the results are
// bitwise those of 1 / (1 + tg_exp(-x)) except below x = -88.37, where the
// true sigmoid is a denormal under 5e-39 and this gives 0. About 25% faster
// than through tg_exp: SiLU (x * sigmoid(x)) after every mobilevit conv.
TG_VECTOR_MATH_INLINE float tg_sigmoid_vec(float x) {
  float t = -x;
  t = t < -20.0f ? -20.0f : t;  // NaN stays NaN through both clamps
  t = t > 89.0f ? 89.0f : t;
  int32_t n;
  const float p = tg_exp_reduced(t, &n);
  return 1.0f / (1.0f + p * tg_bits_to_float(static_cast<uint32_t>(n + 127) << 23));
}
#endif  // TG_VECTOR_MATH_H
