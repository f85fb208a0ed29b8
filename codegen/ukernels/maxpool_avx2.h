// Max pooling micro-kernel, AVX2: ResNet's stem pool (ONNX MaxPool, 3 x 3
// window, strides 2, padding 1, dilation 1) over one channel plane. The
// generated loops read the window's stride-2 columns a lane at a time: on a
// Zen 3 core, one thread, ResNet-50's 64 x 112 x 112 pool took 0.6-1.0 ms
// that way, onnxruntime's (NCHWc, channels in the lanes) 0.24, this kernel
// 0.10 (a harness around the generated kernel, same input, same results).
//
// Per output row, first the column maxima of its three input rows (plain
// 8-wide loads, no stride), into a row buffer with the padding as -inf at
// both ends; then 8 outputs at a time from 16 + 2 consecutive column maxima,
// whose even and odd lanes are the window's three columns (a shuffle each,
// as in dwconv_avx2.h), so no lane is gathered. Rows outside the plane are
// left out (max is idempotent: the middle row stands in for them).
//
// Used on AVX2 and AVX-512 targets (codegen/lowering/lower_pool_kernel.h);
// elsewhere the generated loops remain.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace tg_maxpool {
inline namespace avx2 {

constexpr const char* kVariant = "avx2";

// out[oh * OW + ow] = max over r, s in [0, 3) of
//   in[(2 * oh + r - 1) * W + 2 * ow + s - 1]
// over the (r, s) whose input row and column lie inside the H x W plane,
// for OH = (H - 1) / 2 + 1 rows and OW = (W - 1) / 2 + 1 columns (the output
// of padding 1 at the top and left; padding at the bottom and right is never
// read by these rows). `in` and `out` need no alignment.
template <int H, int W>
inline void plane_3x3_s2(const float* in, float* out) {
  static_assert(H >= 1 && W >= 1, "an empty plane");
  constexpr int kOutRows = (H - 1) / 2 + 1, kOutCols = (W - 1) / 2 + 1;
  // columns[1 + x]: the max of the output row's input rows at column x;
  // columns[0] and columns[W + 1 ..] the padding. An 8-output chunk at j
  // reads columns[2j .. 2j + 17], the scalar tail up to columns[2 * kOutCols].
  constexpr int kColumns = (2 * kOutCols + 2 + 7) / 8 * 8;
  alignas(32) float columns[kColumns];
  for (int i = 0; i < kColumns; ++i) columns[i] = -INFINITY;
  for (int oh = 0; oh < kOutRows; ++oh) {
    const float* middle = in + 2 * oh * W;
    const float* top = oh > 0 ? middle - W : middle;
    const float* bottom = 2 * oh + 1 < H ? middle + W : middle;
    int x = 0;
    for (; x + 8 <= W; x += 8) {
      const __m256 m = _mm256_max_ps(_mm256_loadu_ps(top + x), _mm256_loadu_ps(middle + x));
      _mm256_storeu_ps(columns + 1 + x, _mm256_max_ps(m, _mm256_loadu_ps(bottom + x)));
    }
    for (; x < W; ++x) {
      const float m = top[x] > middle[x] ? top[x] : middle[x];
      columns[1 + x] = m > bottom[x] ? m : bottom[x];
    }
    float* row = out + oh * kOutCols;
    int j = 0;
    for (; j + 8 <= kOutCols; j += 8) {
      const float* p = columns + 2 * j;
      const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
      const __m256 a2 = _mm256_loadu_ps(p + 2), b2 = _mm256_loadu_ps(p + 10);
      // Lanes in the order 0 1 4 5 | 2 3 6 7 of the outputs (vshufps stays
      // inside 128-bit halves); one vpermpd restores it.
      const __m256 left = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 centre = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
      const __m256 right = _mm256_shuffle_ps(a2, b2, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 m = _mm256_max_ps(_mm256_max_ps(left, centre), right);
      _mm256_storeu_ps(row + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), _MM_SHUFFLE(3, 1, 2, 0))));
    }
    for (; j < kOutCols; ++j) {
      const float* p = columns + 2 * j;
      const float m = p[0] > p[1] ? p[0] : p[1];
      row[j] = m > p[2] ? m : p[2];
    }
  }
}

}  // namespace avx2
}  // namespace tg_maxpool
