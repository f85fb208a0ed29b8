// Winograd F(2x2, 3x3) for a stride-1, pad-1 3x3 convolution on the AVX2
// float GEMM micro-kernel (sgemm_avx2.h, included before this header): the
// transforms around tg_sgemm::tile, with the AVX-512 variant's interface
// (winograd_f23_avx512.h; the scheme and V's layout: winograd_f23_layout.h).
//
// Where the AVX-512 variant gathers the 4 x 4 patches of 16 tiles, this one
// loads rows: on a Zen 1 core a vgatherdps of 8 floats costs ~16 cycles, and
// 32 of them per channel of a 16-tile panel cost more than the panel's 16
// GEMMs of 64 filters. The tiles of a tile row read consecutive pairs of
// columns, so one input row of 8 tiles is two (masked) loads of 8 floats,
// and vshufps picks its even and odd columns. vshufps works within each
// 128-bit half, so the 8 tiles come out in lane order kLaneTiles: the V
// columns, and with them the GEMMs' result columns, are in that order, and
// the output transform's vunpcklps / vunpckhps, also by halves, undo it.
#pragma once

#if !(defined(__AVX2__) && defined(__FMA__)) && !defined(TG_SGEMM_FORCE)
#error "winograd_f23_avx2.h needs AVX2 and FMA: compile with -mavx2 -mfma (or -march=haswell or newer)"
#endif

#include <algorithm>
#include <cstdint>
#include <immintrin.h>

#include "winograd_f23_layout.h"

namespace tg_winograd {
// Own inline namespace per variant, as tg_sgemm's (sgemm_scalar.h).
inline namespace avx2 {

// Which of 8 consecutive tiles each ymm lane of V (and of a GEMM result
// row) holds: shuffling tiles 0-3's and 4-7's column pairs by halves.
constexpr int kLaneTiles[8] = {0, 1, 4, 5, 2, 3, 6, 7};

namespace detail {

// A run of the 8 tiles that lie on one tile row: for every row i of their
// patches, the floats at index f < 16 of rows[i] + f (two ymm, then two
// more from 2 floats on) are columns 2 * p - 1 + f and 2 * p + 1 + f of
// tile p's patch row, for the run's tiles p (their pairs f = 2p, 2p + 1);
// the masks load only those, inside the plane (padding and other runs' lanes
// read 0), so runs add up.
struct Run {
  int64_t offset = 0;      // of float 0 of patch row 0 in the plane; rows W apart
  int first_row = 0;       // of patch row 0 in the plane
  __m256i mask[2][2];      // [from column 2p - 1 / 2p + 1][ymm]
};

// The runs of tiles first .. first + 7 of an H x W plane (tiles past the
// last are in none: their V is 0, their outputs never stored).
template <int kH, int kW>
inline int runs_of(int first, Run (&runs)[8]) {
  constexpr int kTilesW = (kW + 1) / 2, kTiles = ((kH + 1) / 2) * kTilesW;
  int count = 0;
  for (int p = 0; p < 8 && first + p < kTiles;) {
    const int tile = first + p, ty = tile / kTilesW, tx = tile % kTilesW;
    const int end = std::min({8, p + kTilesW - tx, kTiles - first});  // past the run's last tile
    Run& r = runs[count++];
    r.first_row = 2 * ty - 1;
    const int column0 = 2 * tx - 1 - 2 * p;  // of float 0
    r.offset = static_cast<int64_t>(r.first_row) * kW + column0;
    for (int from = 0; from < 2; ++from)
      for (int v = 0; v < 2; ++v) {
        alignas(32) int32_t lanes[8];
        for (int k = 0; k < 8; ++k) {
          const int f = 8 * v + k, column = column0 + 2 * from + f;
          lanes[k] = f >= 2 * p && f < 2 * end && column >= 0 && column < kW ? -1 : 0;
        }
        r.mask[from][v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
      }
    p = end;
  }
  return count;
}

}  // namespace detail

// v[t * plane_floats<kVChannels>() + c * kNR + 8 * h + lane] = (B^T d B)[t] for
// the 4 x 4 input patch d of tile `first + 8 * h + kLaneTiles[lane]` of an
// H x W plane (tiles of 2 x 2 outputs, row-major, ceil(W / 2) per row),
// channel c of x (C planes of H x W). The patch starts one row and one column
// before its outputs (pad 1); positions outside the plane read 0, and so
// does a panel's part past the last tile (its outputs are never stored).
// kHalf: only the panel's first kNR / 2 tiles (row_panel<C, true> reads no
// more). kVChannels: the channels of v, where x holds C of them (one input of
// a Concat along the channels; the caller offsets v to its first).
template <int64_t C, int64_t H, int64_t W, bool kHalf, int64_t kVChannels = C>
inline void input_tiles(const float* x, float* v, int64_t first) {
  static_assert(tg_sgemm::kNR == 16, "tiles go 8 to a ymm, two ymm to the panel");
  constexpr int kH = static_cast<int>(H), kW = static_cast<int>(W);
  constexpr int64_t kPlane = plane_floats<kVChannels>();  // from one V_t to the next
  for (int half = 0; half < (kHalf ? 1 : 2); ++half) {
    detail::Run runs[8];
    const int count = detail::runs_of<kH, kW>(static_cast<int>(first) + 8 * half, runs);
    for (int64_t c = 0; c < C; ++c) {
      const float* xc = x + c * H * W;
      __m256 d[4][4];  // [patch row][patch column]
      for (int i = 0; i < 4; ++i)
        for (int l = 0; l < 4; ++l) d[i][l] = _mm256_setzero_ps();
      for (int n = 0; n < count; ++n) {
        const detail::Run& r = runs[n];
        for (int i = 0; i < 4; ++i) {
          if (r.first_row + i < 0 || r.first_row + i >= kH) continue;
          const float* row = xc + r.offset + i * kW;
          const __m256 a0 = _mm256_maskload_ps(row, r.mask[0][0]), a1 = _mm256_maskload_ps(row + 8, r.mask[0][1]);
          const __m256 b0 = _mm256_maskload_ps(row + 2, r.mask[1][0]),
                       b1 = _mm256_maskload_ps(row + 10, r.mask[1][1]);
          d[i][0] = _mm256_or_ps(d[i][0], _mm256_shuffle_ps(a0, a1, 0x88));
          d[i][1] = _mm256_or_ps(d[i][1], _mm256_shuffle_ps(a0, a1, 0xDD));
          d[i][2] = _mm256_or_ps(d[i][2], _mm256_shuffle_ps(b0, b1, 0x88));
          d[i][3] = _mm256_or_ps(d[i][3], _mm256_shuffle_ps(b0, b1, 0xDD));
        }
      }
      __m256 e[4][4];  // B^T d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
      for (int l = 0; l < 4; ++l) {
        e[0][l] = _mm256_sub_ps(d[0][l], d[2][l]);
        e[1][l] = _mm256_add_ps(d[1][l], d[2][l]);
        e[2][l] = _mm256_sub_ps(d[2][l], d[1][l]);
        e[3][l] = _mm256_sub_ps(d[1][l], d[3][l]);
      }
      for (int i = 0; i < 4; ++i) {  // (B^T d) B
        float* vi = v + i * 4 * kPlane + c * tg_sgemm::kNR + 8 * half;
        _mm256_storeu_ps(vi + 0 * kPlane, _mm256_sub_ps(e[i][0], e[i][2]));
        _mm256_storeu_ps(vi + 1 * kPlane, _mm256_add_ps(e[i][1], e[i][2]));
        _mm256_storeu_ps(vi + 2 * kPlane, _mm256_sub_ps(e[i][2], e[i][1]));
        _mm256_storeu_ps(vi + 3 * kPlane, _mm256_sub_ps(e[i][1], e[i][3]));
      }
    }
  }
}

// One row panel of kMR filters over one column panel of tiles: the 16
// GEMMs m_t = U_t x V_t (u: the panel's 16 packed U_t, C * kMR floats each;
// v: input_tiles' output; m: 16 accumulator tiles of kMR x kNR), then the
// output transform A^T m A into y, by output row:
//   y[(dy * kMR + r) * 2 * kNR + 2 * j + dx] = output (dy, dx) of tile j, filter r,
// as winograd_f23_avx512.h's row_panel (tiles in their order again). kHalf:
// the panel holds at most kNR / 2 tiles, and only those columns are
// computed. kPanel: kMR (no wide panels here); kRows: the filters of a last,
// partial panel (its U rows past them are zeros, never computed). Each GEMM
// prefetches the next position's U, as on AVX-512 (which says why).
template <int64_t C, bool kHalf, int kPanel = tg_sgemm::kMR, int kRows = kPanel>
inline void row_panel(const float* u, const float* v, float* m, float* y) {
  static_assert(kPanel == tg_sgemm::kMR, "the AVX2 micro-kernel's A panels have kMR rows");
  constexpr int kTile = kPanel * tg_sgemm::kNR;
  constexpr int kCols = kHalf ? tg_sgemm::kNR / 2 : tg_sgemm::kNR;
  constexpr int64_t kUBlock = C * kPanel;  // floats of one position's U
  for (int t = 0; t < kPositions; ++t)
    tg_sgemm::tile<kCols, kRows>(C, u + t * kUBlock, v + t * plane_floats<C>(), m + t * kTile, false,
                                 u + (t + 1) * kUBlock, kUBlock);
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kCols / 8; ++h) {
      __m256 s[4][4];
      for (int t = 0; t < kPositions; ++t) s[t / 4][t % 4] = _mm256_loadu_ps(m + t * kTile + r * tg_sgemm::kNR + 8 * h);
      __m256 a[2][4];  // A^T s, A^T = [1 1 1 0; 0 1 -1 -1]
      for (int l = 0; l < 4; ++l) {
        a[0][l] = _mm256_add_ps(_mm256_add_ps(s[0][l], s[1][l]), s[2][l]);
        a[1][l] = _mm256_sub_ps(_mm256_sub_ps(s[1][l], s[2][l]), s[3][l]);
      }
      for (int dy = 0; dy < 2; ++dy) {  // (A^T s) A
        const __m256 left = _mm256_add_ps(_mm256_add_ps(a[dy][0], a[dy][1]), a[dy][2]);
        const __m256 right = _mm256_sub_ps(_mm256_sub_ps(a[dy][1], a[dy][2]), a[dy][3]);
        // Lanes in kLaneTiles order: each half's first two tiles are tiles
        // 0-3, its last two tiles 4-7.
        float* row = y + (dy * kPanel + r) * 2 * tg_sgemm::kNR + 16 * h;
        _mm256_storeu_ps(row, _mm256_unpacklo_ps(left, right));
        _mm256_storeu_ps(row + 8, _mm256_unpackhi_ps(left, right));
      }
    }
}

}  // namespace avx2
}  // namespace tg_winograd
