// Depthwise convolution micro-kernel, AVX-512: one stride-1 K x K plane with
// 'same' zero padding (K / 2 on every side), as one flat vector loop over the
// plane. Contract (README.md, "Depthwise contract"):
//
//   result[q] for q < H * W (result holds plane_vectors<H, W>() * 16 floats;
//   the lanes past H * W are 0):
//     sum over taps t = r * K + s, in t order, of
//       in[q + (r - K / 2) * W + (s - K / 2)] * w[t]
//     where that tap's input row q / W + r - K / 2 and column q % W + s - K / 2
//     lie inside the plane (the padding reads 0).
//
// Every tap is a masked unaligned load of the plane itself (the mask, known at
// compile time, drops the lanes whose tap falls in the padding or past the
// plane; masked lanes never fault), so nothing is copied into a padded plane.
// The generated loops this replaces copied the plane into a zeroed padded
// one and read it back at unaligned offsets, which the store-to-load
// forwarding cannot serve (MobileNetV2's 7 x 7 depthwise convs, 960
// channels: 49 -> 18 us alone).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace tg_dwconv {
// Own inline namespace per variant, as tg_sgemm's: a test binary holds both.
inline namespace avx512 {

constexpr const char* kVariant = "avx512";
constexpr int kLanes = 16;

template <int H, int W>
constexpr int plane_vectors() {
  return (H * W + kLanes - 1) / kLanes;
}

// The lanes of vector v whose tap t reads inside the plane.
template <int H, int W, int K>
struct TapMasks {
  uint16_t mask[plane_vectors<H, W>()][K * K] = {};
  constexpr TapMasks() {
    for (int v = 0; v < plane_vectors<H, W>(); ++v)
      for (int t = 0; t < K * K; ++t)
        for (int l = 0; l < kLanes; ++l) {
          const int q = v * kLanes + l, row = q / W + t / K - K / 2, col = q % W + t % K - K / 2;
          if (q < H * W && row >= 0 && row < H && col >= 0 && col < W) mask[v][t] |= uint16_t(1u << l);
        }
  }
};
template <int H, int W, int K>
inline constexpr TapMasks<H, W, K> kTapMasks{};

// Vectors [v0, v0 + kGroup) of the plane: independent accumulators, so that
// the taps' FMA chains overlap.
template <int H, int W, int K, int kGroup>
inline void plane_group(const float* in, const __m512* w, float* result, int v0) {
  __m512 acc[kGroup];
#pragma GCC unroll 64
  for (int t = 0; t < K * K; ++t) {
    const int offset = (t / K - K / 2) * W + t % K - K / 2;
#pragma GCC unroll 8
    for (int g = 0; g < kGroup; ++g) {
      const __m512 x = _mm512_maskz_loadu_ps(kTapMasks<H, W, K>.mask[v0 + g][t], in + (v0 + g) * kLanes + offset);
      acc[g] = t == 0 ? _mm512_mul_ps(x, w[0]) : _mm512_fmadd_ps(x, w[t], acc[g]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < kGroup; ++g) _mm512_storeu_ps(result + (v0 + g) * kLanes, acc[g]);
}

template <int H, int W, int K>
inline void plane_same(const float* in, const float* w, float* result) {
  static_assert(K % 2 == 1, "'same' padding needs an odd kernel");
  constexpr int kVectors = plane_vectors<H, W>(), kGroup = 4;
  __m512 weights[K * K];
  for (int t = 0; t < K * K; ++t) weights[t] = _mm512_set1_ps(w[t]);
  int v = 0;
  for (; v + kGroup <= kVectors; v += kGroup) plane_group<H, W, K, kGroup>(in, weights, result, v);
  if constexpr (kVectors % kGroup >= 2) {
    plane_group<H, W, K, kVectors % kGroup>(in, weights, result, v);
  } else if constexpr (kVectors % kGroup == 1) {
    plane_group<H, W, K, 1>(in, weights, result, v);
  }
}

// The stride-2 3 x 3 form, padding 1 at the top and left (MobileNet's
// downsampling depthwise convs): an H x W plane to OH x OW outputs,
// OH = (H - 1) / 2 + 1, OW = (W - 1) / 2 + 1.
//
//   result[oh * OW + ow] for oh < OH, ow < OW (result holds
//   plane_vectors<OH, OW>() * 16 floats; the lanes past OH * OW are left as
//   they are): sum over taps t = r * 3 + s, in t order, of
//     in[(2 * oh + r - 1) * W + 2 * ow + s - 1] * w[t]
//   over the taps whose input row and column lie inside the plane.
//
// Per output row, 16 outputs at a time: each input row's 33 values from
// column 2 * ow0 - 1 come in as two masked loads and a one-lane one; its even
// columns (tap s = 0), odd ones (s = 1) and the even ones one further (s = 2)
// are two permutes and an align, so no lane is gathered.
template <int W>
struct Stride2Masks {
  static constexpr int kOutCols = (W - 1) / 2 + 1, kChunks = (kOutCols + kLanes - 1) / kLanes;
  // Per chunk: the columns of the two 16-wide loads and of the one-lane one
  // that lie inside the row, and the outputs the chunk stores.
  uint16_t low[kChunks] = {}, high[kChunks] = {}, last[kChunks] = {}, store[kChunks] = {};
  constexpr Stride2Masks() {
    for (int c = 0; c < kChunks; ++c) {
      const int first = 2 * c * kLanes - 1;
      for (int l = 0; l < kLanes; ++l) {
        if (first + l >= 0 && first + l < W) low[c] |= uint16_t(1u << l);
        if (first + kLanes + l >= 0 && first + kLanes + l < W) high[c] |= uint16_t(1u << l);
        if (c * kLanes + l < kOutCols) store[c] |= uint16_t(1u << l);
      }
      last[c] = first + 2 * kLanes < W ? 1 : 0;
    }
  }
};
template <int W>
inline constexpr Stride2Masks<W> kStride2Masks{};

template <int H, int W>
inline void plane_stride2(const float* in, const float* w, float* result) {
  constexpr int kOutRows = (H - 1) / 2 + 1;
  constexpr Stride2Masks<W> m = kStride2Masks<W>;
  __m512 weights[9];
  for (int t = 0; t < 9; ++t) weights[t] = _mm512_set1_ps(w[t]);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (int oh = 0; oh < kOutRows; ++oh) {
    for (int c = 0; c < m.kChunks; ++c) {
      __m512 acc = _mm512_setzero_ps();
      bool first = true;
      for (int r = 0; r < 3; ++r) {
        const int ih = 2 * oh + r - 1;
        if (ih < 0 || ih >= H) continue;  // the padding rows: every term 0
        const float* row = in + ih * W + 2 * c * kLanes - 1;
        const __m512 a = _mm512_maskz_loadu_ps(m.low[c], row);
        const __m512 b = _mm512_maskz_loadu_ps(m.high[c], row + kLanes);
        const __m512 x0 = _mm512_permutex2var_ps(a, even, b);
        const __m512 x1 = _mm512_permutex2var_ps(a, odd, b);
        const __m512 tail = _mm512_maskz_loadu_ps(m.last[c], row + 2 * kLanes);
        const __m512 x2 = _mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(tail), _mm512_castps_si512(x0), 1));
        acc = first ? _mm512_mul_ps(x0, weights[3 * r]) : _mm512_fmadd_ps(x0, weights[3 * r], acc);
        acc = _mm512_fmadd_ps(x1, weights[3 * r + 1], acc);
        acc = _mm512_fmadd_ps(x2, weights[3 * r + 2], acc);
        first = false;
      }
      _mm512_mask_storeu_ps(result + oh * m.kOutCols + c * kLanes, m.store[c], acc);
    }
  }
}

}  // namespace avx512
}  // namespace tg_dwconv
