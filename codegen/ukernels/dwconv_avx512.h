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

}  // namespace tg_dwconv
