// Depthwise convolution micro-kernel, AVX2 + FMA: plane_stride2<H, W> of
// dwconv_avx512.h's contract (README.md, "Depthwise contract"; 3 x 3,
// stride 2, padding 1 at the top and left) on 8-lane vectors, each product
// summed in tap order (the first a multiply, then one fused multiply-add
// per tap). The generated loops gather every tap of a stride-2 window (a
// strided load per lane): MobileNetV2's four such convs took 2.2 ms of a
// 24 ms inference on a Zen 1 core, 1.6x onnxruntime's time.
//
// No plane_same here: the stride-1 planes keep the generated flat and
// padded forms (lower_direct_conv_kernel.h), which on AVX2 need no masks in
// the interior. A masked micro-kernel was slower in the model (56 x 56 x
// 144: 0.80 -> 1.0 ms) though faster alone: AVX2 has no mask registers, and
// vmaskmovps, the load that does not fault on a dropped lane, costs several
// times a plain load on a Zen 1 core (8 cycles per tap against 2 with a load
// and an and), so the masks must be vectors in memory, loaded per tap.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace tg_dwconv {
inline namespace avx2 {

constexpr const char* kVariant = "avx2";
constexpr int kLanes = 8;

namespace detail {

inline __m256i mask_at(const int32_t* lanes) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes));
}

// 8 floats from p, the lanes mask drops 0: a load and an and where all 8
// lie inside the plane [plane, plane_end), vmaskmovps (which does not fault
// on a dropped lane) only where some do not: the first column of the first
// row, the last ones of the last row.
inline __m256 masked_load(const float* p, __m256i mask, const float* plane, const float* plane_end) {
  if (p >= plane && p + kLanes <= plane_end) return _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(mask));
  return _mm256_maskload_ps(p, mask);
}

// The even (or odd) lanes of the 16 floats a, b in the order
// a0 a2 b0 b2 | a4 a6 b4 b6: vshufps stays inside the 128-bit halves, and
// all taps' terms come in that order, so one lane-crossing vpermpd per
// output vector (in_output_order) restores it. One per tap and row (nine
// per vector) cost a third of the kernel's time on a Zen 1 core.
inline __m256 evens(__m256 a, __m256 b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
inline __m256 odds(__m256 a, __m256 b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
inline __m256 in_output_order(__m256 x) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(x), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Per chunk of 8 output columns (first input column 2 * 8 c): the lanes of
// its four 8-wide loads of an input row (from columns 2 * 8 c - 1, + 7,
// 2 * 8 c, + 8) that lie inside the row; edge[c] where some do not.
template <int W>
struct Stride2Masks {
  static constexpr int kOutCols = (W - 1) / 2 + 1, kChunks = (kOutCols + kLanes - 1) / kLanes;
  int32_t load[kChunks][4][kLanes] = {};
  int32_t store[kLanes] = {};  // the last chunk's lanes that are outputs
  bool edge[kChunks] = {};
  constexpr Stride2Masks() {
    constexpr int kStart[4] = {-1, kLanes - 1, 0, kLanes};
    for (int c = 0; c < kChunks; ++c)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < kLanes; ++l) {
          const int col = 2 * kLanes * c + kStart[j] + l;
          load[c][j][l] = col >= 0 && col < W ? -1 : 0;
          edge[c] = edge[c] || load[c][j][l] == 0;
        }
    for (int l = 0; l < kLanes; ++l) store[l] = (kChunks - 1) * kLanes + l < kOutCols ? -1 : 0;
  }
};
template <int W>
inline constexpr Stride2Masks<W> kStride2Masks{};

// The three taps of the input row at p (chunk c's first column) for chunk
// c: acc (+)= x0 * w[0] + x1 * w[1] + x2 * w[2], in that order, in
// evens()' lane order.
template <int H, int W, bool kEdge>
__attribute__((always_inline)) inline void stride2_row(const float* p, const float* plane, int c, const __m256* w,
                                                       __m256& acc, bool first) {
  __m256 l0, h0, l1, h1;
  if constexpr (kEdge) {
    const Stride2Masks<W>& m = kStride2Masks<W>;
    const float* end = plane + H * W;
    l0 = masked_load(p - 1, mask_at(m.load[c][0]), plane, end);
    h0 = masked_load(p + kLanes - 1, mask_at(m.load[c][1]), plane, end);
    l1 = masked_load(p, mask_at(m.load[c][2]), plane, end);
    h1 = masked_load(p + kLanes, mask_at(m.load[c][3]), plane, end);
  } else {
    l0 = _mm256_loadu_ps(p - 1);
    h0 = _mm256_loadu_ps(p + kLanes - 1);
    l1 = _mm256_loadu_ps(p);
    h1 = _mm256_loadu_ps(p + kLanes);
  }
  const __m256 x0 = evens(l0, h0), x1 = evens(l1, h1), x2 = odds(l1, h1);
  acc = first ? _mm256_mul_ps(x0, w[0]) : _mm256_fmadd_ps(x0, w[0], acc);
  acc = _mm256_fmadd_ps(x1, w[1], acc);
  acc = _mm256_fmadd_ps(x2, w[2], acc);
}

}  // namespace detail

//   result[oh * OW + ow] for oh < OH = (H - 1) / 2 + 1, ow < OW = (W - 1) / 2 + 1
//   (result holds OH * OW floats rounded up to 8; the lanes past OH * OW are
//   left as they are): sum over taps t = r * 3 + s, in t order, of
//   in[(2 * oh + r - 1) * W + 2 * ow + s - 1] * w[t] over the taps whose
//   input row and column lie inside the plane.
// Per output row, 8 outputs at a time: the 17 input columns from 2 * ow0 - 1
// come in as four 8-wide loads, whose even and odd lanes are the three
// taps' columns (a shuffle each, detail::evens), so no lane is gathered. A
// row's last chunk may store past the row into the next one's first
// outputs, which that row then stores again; the plane's last chunk stores
// its outputs alone.
template <int H, int W>
inline void plane_stride2(const float* in, const float* w, float* result) {
  using M = detail::Stride2Masks<W>;
  const M& m = detail::kStride2Masks<W>;
  constexpr int kOutRows = (H - 1) / 2 + 1;
  __m256 weights[9];
  for (int t = 0; t < 9; ++t) weights[t] = _mm256_set1_ps(w[t]);
  for (int oh = 0; oh < kOutRows; ++oh) {
    for (int c = 0; c < M::kChunks; ++c) {
      __m256 acc = _mm256_setzero_ps();
      bool first = true;
      for (int r = 0; r < 3; ++r) {
        const int ih = 2 * oh + r - 1;
        if (ih < 0 || ih >= H) continue;  // the padding rows: every term 0
        const float* p = in + ih * W + 2 * kLanes * c;
        if (m.edge[c])
          detail::stride2_row<H, W, true>(p, in, c, weights + 3 * r, acc, first);
        else
          detail::stride2_row<H, W, false>(p, in, c, weights + 3 * r, acc, first);
        first = false;
      }
      acc = detail::in_output_order(acc);
      float* out = result + oh * M::kOutCols + c * kLanes;
      if (oh + 1 == kOutRows && c + 1 == M::kChunks)
        _mm256_maskstore_ps(out, detail::mask_at(m.store), acc);
      else
        _mm256_storeu_ps(out, acc);
    }
  }
}

}  // namespace avx2
}  // namespace tg_dwconv
