// Winograd F(2x2, 3x3) for a stride-1, pad-1 3x3 convolution on the AVX-512
// float GEMM micro-kernel (sgemm_avx512.h, included before this header): the
// transforms around tg_sgemm::tile (the scheme and V's layout:
// winograd_f23_layout.h; the AVX2 variant: winograd_f23_avx2.h). The
// lowering that calls them: codegen/lowering/lower_winograd_conv_kernel.h.
//
// row_panel runs the 16 GEMMs of kMR (or 12) filters and the output
// transform. V stays in L2 and the 16 accumulator tiles in L1: measured
// against the implicit GEMM on ResNet-50's stride-1 3x3 convs, 32-39% less
// time (benchmarks/winograd_f23_probe.cpp).
#pragma once

#if !defined(__AVX512F__) && !defined(TG_SGEMM_FORCE)
#error "winograd_f23_avx512.h needs AVX-512F: compile with -mavx512f"
#endif

#include <algorithm>
#include <cstdint>
#include <immintrin.h>

#include "winograd_f23_layout.h"

namespace tg_winograd {
// Own inline namespace per variant, as tg_sgemm's (sgemm_scalar.h).
inline namespace avx512 {

// v[t * plane_floats<kVChannels>() + c * kNR + j] = (B^T d B)[t] for the 4 x 4 input patch d of
// tile `first + j` of an H x W plane (tiles of 2 x 2 outputs, row-major,
// ceil(W / 2) per row), channel c of x (C planes of H x W). The patch starts
// one row and one column before its outputs (pad 1); positions outside the
// plane read 0. A panel past the last tile repeats the last tile (its
// outputs are never stored).
//
// Written with AVX-512 intrinsics, 16 tiles per zmm: each of the patch's 16
// positions is one masked gather (the mask drops the padding), for every
// channel. The same loop left to GCC 12's vectorizer (`omp simd` over the
// tiles) vectorized or not depending on the surrounding code, and ran
// scalar in a generated kernel source, at 2x the whole conv's time.
// kHalf: only the panel's first kNR / 2 tiles (row_panel<C, true> reads no more).
// kVChannels: the channels of v, where x holds C of them (one input of a
// Concat along the channels; the caller offsets v to its first).
template <int64_t C, int64_t H, int64_t W, bool kHalf, int64_t kVChannels = C>
inline void input_tiles(const float* x, float* v, int64_t first) {
  static_assert(tg_sgemm::kNR % 32 == 0, "tiles go 16 to a zmm, in halves of the panel");
  constexpr int kH = static_cast<int>(H), kW = static_cast<int>(W), kTilesW = (kW + 1) / 2;
  constexpr int kTiles = ((kH + 1) / 2) * kTilesW;
  constexpr int64_t kPlane = plane_floats<kVChannels>();  // from one V_t to the next
  for (int half = 0; half < (kHalf ? tg_sgemm::kNR / 2 : tg_sgemm::kNR) / 16; ++half) {
    // Per position (i, l) of the patch: the 16 tiles' input offsets and
    // which of them lie inside the plane.
    __m512i offset[4][4];
    __mmask16 inside[4][4];
    alignas(64) int32_t base[16];
    __mmask16 row_ok[4] = {0, 0, 0, 0}, col_ok[4] = {0, 0, 0, 0};
    for (int j = 0; j < 16; ++j) {
      const int tile = std::min(static_cast<int>(first) + half * 16 + j, kTiles - 1);
      const int y0 = 2 * (tile / kTilesW) - 1, z0 = 2 * (tile % kTilesW) - 1;
      base[j] = y0 * kW + z0;
      for (int i = 0; i < 4; ++i) {
        if (y0 + i >= 0 && y0 + i < kH) row_ok[i] = static_cast<__mmask16>(row_ok[i] | (1u << j));
        if (z0 + i >= 0 && z0 + i < kW) col_ok[i] = static_cast<__mmask16>(col_ok[i] | (1u << j));
      }
    }
    const __m512i base_v = _mm512_load_si512(base);
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 4; ++l) {
        offset[i][l] = _mm512_add_epi32(base_v, _mm512_set1_epi32(i * kW + l));
        inside[i][l] = static_cast<__mmask16>(row_ok[i] & col_ok[l]);
      }
    for (int64_t c = 0; c < C; ++c) {
      const float* xc = x + c * H * W;
      __m512 d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int l = 0; l < 4; ++l)
          d[i][l] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), inside[i][l], offset[i][l], xc, 4);
      __m512 e[4][4];  // B^T d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
      for (int l = 0; l < 4; ++l) {
        e[0][l] = _mm512_sub_ps(d[0][l], d[2][l]);
        e[1][l] = _mm512_add_ps(d[1][l], d[2][l]);
        e[2][l] = _mm512_sub_ps(d[2][l], d[1][l]);
        e[3][l] = _mm512_sub_ps(d[1][l], d[3][l]);
      }
      for (int i = 0; i < 4; ++i) {  // (B^T d) B
        float* vi = v + i * 4 * kPlane + c * tg_sgemm::kNR + half * 16;
        _mm512_storeu_ps(vi + 0 * kPlane, _mm512_sub_ps(e[i][0], e[i][2]));
        _mm512_storeu_ps(vi + 1 * kPlane, _mm512_add_ps(e[i][1], e[i][2]));
        _mm512_storeu_ps(vi + 2 * kPlane, _mm512_sub_ps(e[i][2], e[i][1]));
        _mm512_storeu_ps(vi + 3 * kPlane, _mm512_sub_ps(e[i][1], e[i][3]));
      }
    }
  }
}

// One row panel of kPanel filters over one column panel of tiles: the 16
// GEMMs m_t = U_t x V_t (u: the panel's 16 packed U_t, C * kPanel floats
// each; v: input_tiles' output; m: 16 accumulator tiles of kPanel x kNR),
// then the output transform A^T m A into y, by output row:
//   y[(dy * kPanel + r) * 2 * kNR + 2 * j + dx] = output (dy, dx) of tile j, filter r,
// so a row of tiles' outputs lie in y in the order they lie in the plane,
// and the stores of a tile row are contiguous (the generated code's, through
// the fused epilogue). kHalf: the panel holds at most kNR / 2 tiles, and
// only those columns are computed. kPanel: tg_sgemm::kMR, or the 12 rows of
// tg_sgemm::wide (B read once per 12 filters); kRows: the filters of a
// last, partial panel (its U rows past them are zeros, never computed).
//
// U is the stream here: 16 / 9 of the filters' size (4.7 MB for ResNet-50's
// 256-channel 3x3 convs), read once per inference from the L3 or DRAM, where
// V was just written to the L2. So each GEMM passes the next position's U
// block (after the 16th: the next row panel's first) as the micro-kernel's
// `next`, fetched into the L2 during this one, instead of its default, the
// B block after this one (V: in the L2 already). ResNet-50 (two threads, in
// the model, alternated A/B): its 256-channel Winograd convs 0.73 -> 0.55 ms,
// the 128-channel ones 0.59 -> 0.52.
template <int64_t C, bool kHalf, int kPanel = tg_sgemm::kMR, int kRows = kPanel>
inline void row_panel(const float* u, const float* v, float* m, float* y) {
  constexpr int kTile = kPanel * tg_sgemm::kNR;
  constexpr int kCols = kHalf ? tg_sgemm::kNR / 2 : tg_sgemm::kNR;
  constexpr int64_t kUBlock = C * kPanel;  // floats of one position's U
  for (int t = 0; t < kPositions; ++t)
    tg_sgemm::tile<kCols, kRows, false, kPanel>(C, u + t * kUBlock, v + t * plane_floats<C>(), m + t * kTile, false,
                                                u + (t + 1) * kUBlock, kUBlock);
  // In intrinsics, 16 tiles per zmm, for the reason input_tiles is; the
  // permutes interleave a tile row's left (dx = 0) and right (dx = 1) outputs.
  const __m512i first8 = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i last8 = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  constexpr int kVecs = (kHalf ? tg_sgemm::kNR / 2 : tg_sgemm::kNR) / 16;
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kVecs; ++h) {
      __m512 s[4][4];
      for (int t = 0; t < kPositions; ++t) s[t / 4][t % 4] = _mm512_loadu_ps(m + t * kTile + r * tg_sgemm::kNR + 16 * h);
      __m512 a[2][4];  // A^T s, A^T = [1 1 1 0; 0 1 -1 -1]
      for (int l = 0; l < 4; ++l) {
        a[0][l] = _mm512_add_ps(_mm512_add_ps(s[0][l], s[1][l]), s[2][l]);
        a[1][l] = _mm512_sub_ps(_mm512_sub_ps(s[1][l], s[2][l]), s[3][l]);
      }
      for (int dy = 0; dy < 2; ++dy) {  // (A^T s) A
        const __m512 left = _mm512_add_ps(_mm512_add_ps(a[dy][0], a[dy][1]), a[dy][2]);
        const __m512 right = _mm512_sub_ps(_mm512_sub_ps(a[dy][1], a[dy][2]), a[dy][3]);
        float* row = y + (dy * kPanel + r) * 2 * tg_sgemm::kNR + 32 * h;
        _mm512_storeu_ps(row, _mm512_permutex2var_ps(left, first8, right));
        _mm512_storeu_ps(row + 16, _mm512_permutex2var_ps(left, last8, right));
      }
    }
}

}  // namespace avx512
}  // namespace tg_winograd
