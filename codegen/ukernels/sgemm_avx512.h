// Float32 GEMM micro-kernel, AVX-512 variant (contract: README.md).
//
// Register blocking (kMR = 8, kNR = 32):
//   * One k step of B is 32 floats: two zmm loads.
//   * One k step of A is 8 floats; each row's value is broadcast from memory
//     (vbroadcastss, a pure load, which GCC folds into the FMA as {1to16}).
//   * Accumulators: 8 rows x 2 zmm = 16 zmm (of 32). Per k step 16 FMAs
//     against 10 loads: two FMA ports stay busy for 8 cycles while the load
//     ports have room, and 16 independent chains cover the FMA latency
//     (4 cycles x 2 ports). B, the panel that streams from L2 when K is large,
//     is read once per 8 rows: 16 bytes per cycle at peak.
//   * B streams: a weight matrix is read once per inference, from L3 or
//     DRAM, and the hardware prefetchers alone leave the first row panel
//     that reads a block waiting on it (bert-base's FFN, 9.4 MB of B: 114
//     GFLOP/s against 169 with B in L1). So each call without a `next` hint
//     (README.md) also prefetches the
//     block after its own into the L2 (prefetcht1, which never faults, past
//     the end too): the next call that needs it finds it there (136
//     GFLOP/s; 8 row panels per block). Later calls on the same block
//     prefetch lines already cached: 12 loads per 16 FMAs, still under the
//     FMA bound. Into the L1 (prefetcht0) it evicts the A panels (slower).
//   * The accumulators start at zero or, to continue a sum over an earlier
//     k block, at c (loaded once); they are stored once, after the k loop.
// Same shape as the int8 qgemm_avx512vnni.h, so that a mixed model packs
// alike.
//
// Wide panels (tg_sgemm::wide, kMR 12): the same tile over A panels of 12
// rows, 24 accumulators. B, read once per 12 rows instead of 8, streams at
// two thirds of the rate: on a 48 KiB-L1 Xeon, ResNet-50's 1x1 and 3x3
// convs with K >= 128 ran 5-15% faster, BERT's projections 3-6%. It wastes
// more rows in M tails (a 7 x 7 feature map: 49 rows, 11 computed for
// nothing) and a K of a few dozen leaves the tile's setup and store a
// larger share: the generated code picks the panel height per GEMM
// (codegen/lowering/lower_float_gemm_kernel.cpp, wide_rows).
//
// Include with -mavx512f (or -march=skylake-avx512 or newer). A translation
// unit that enables the ISA for this header alone with `#pragma GCC target`
// (which in C++ does not define the feature macros) defines TG_SGEMM_FORCE.
#pragma once

#if !defined(__AVX512F__) && !defined(TG_SGEMM_FORCE)
#error "sgemm_avx512.h needs AVX-512F: compile with -mavx512f"
#endif

#include <cstdint>
#include <immintrin.h>

namespace tg_sgemm {
// Own inline namespace per variant: see sgemm_scalar.h.
inline namespace avx512 {

constexpr const char* kVariant = "avx512";
constexpr int kMR = 8;
constexpr int kNR = 32;
constexpr int kLanes = 16;  // floats per zmm: tile<kCols>'s unit

namespace detail {
// acc[r][v] += A(r, k') * B(k', 16 v + lane) for one k step: the outer
// product of kRows A values (a[r]) and kVecs zmm of B (at b).
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void fma_step(__m512 (&acc)[kRows][kVecs], const float* a, const float* b) {
  __m512 bv[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    const __m512 ar = _mm512_set1_ps(a[r]);
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
  }
}

// Accumulating (a later k block of the same C tile), the sum starts at
// zero and c is added once, after the block's k steps: c + (block sum), as
// a blocked GEMM sums, instead of continuing one chain of FMAs from c
// through every block. The chain's rounding error grows with K; blocked, a
// chain is one block long (a 1x1 conv over 1024 channels in blocks of 128:
// RMS error against float64 5.7e-7 -> 2.1e-7, onnxruntime's).
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void zero_tile(__m512 (&acc)[kRows][kVecs]) {
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
}

// c's tile (rows kNR apart) = the accumulators, plus c where accumulating.
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void store_tile(const __m512 (&acc)[kRows][kVecs], float* c, bool accumulate) {
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      float* at = c + r * kNR + 16 * v;
      _mm512_storeu_ps(at, accumulate ? _mm512_add_ps(_mm512_loadu_ps(at), acc[r][v]) : acc[r][v]);
    }
}

// The next column panel's part of B's row at b (B read in place: tile_ldb,
// tile_bias_clamp_ldb), into the L1; past the row's end a prefetch is
// harmless (it never faults).
__attribute__((always_inline)) inline void prefetch_next_columns(const float* b) {
  __builtin_prefetch(b + kNR, 0, 3);
  __builtin_prefetch(b + kNR + 16, 0, 3);
}

// The tile transposed: c[j * kPanel + r] (tile_ct), plus c where
// accumulating. Through a row-major copy on the stack, once per call
// (against k steps of 2 x kRows FMAs).
template <int kRows, int kVecs, int kPanel>
__attribute__((always_inline)) inline void store_tile_transposed(const __m512 (&acc)[kRows][kVecs], float* c,
                                                                 bool accumulate) {
  alignas(64) float rows[kRows][kVecs * 16];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) _mm512_store_ps(rows[r] + 16 * v, acc[r][v]);
  for (int j = 0; j < kVecs * 16; ++j)
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) c[j * kPanel + r] = accumulate ? c[j * kPanel + r] + rows[r][j] : rows[r][j];
}

}  // namespace detail

// c[r * kNR + j] = (accumulate ? c[r * kNR + j] : 0) + sum over k' < k of A(r, k') * B(k', j),
// for the columns j < kCols (tile<16>: the last column panel of an N whose
// tail fits one zmm, at half the FMAs; c's other columns are not touched).
//   a: A(r, k') at a[k' * kMR + r]
//   b: B(k', j) at b[k' * kNR + j]
// Rows r < kRows only (tile<kCols, kRows>: the last row panel of an M
// whose tail is kRows rows, M mod kMR; c's other rows are not touched).
// kPanel: the A panel's rows (its k steps kPanel floats apart): kMR, or
// wide::kMR through the wide:: functions.
// Not inlined: inside a big generated loop nest GCC 12 shuffles the
// accumulators between registers every iteration; alone it keeps them put.
// kTransposedC: tile_ct.
template <int kCols = kNR, int kRows = kMR, bool kTransposedC = false, int kPanel = kMR>
__attribute__((noinline)) inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                           const float* next = nullptr, int64_t next_floats = 0) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0, "tile<kCols>: whole zmm of a B panel's row");
  static_assert(kRows > 0 && kRows <= kPanel, "tile<kCols, kRows>: rows of the A panel");
  constexpr int kVecs = kCols / 16;  // zmm per row
  __m512 acc[kRows][kVecs];
  detail::zero_tile(acc);

  // One k step: the outer product of MR A values and NR B values.
  auto step = [&]() __attribute__((always_inline)) {
    detail::fma_step(acc, a, b);
    a += kPanel;
    b += kNR;
  };
  // `next` (the next B block, README.md) one 64-byte line every `every` k
  // steps: spread over the loop, the prefetches stay few in flight, where a
  // burst of them before the call would wait for the fill buffers.
  const int64_t lines = (next_floats + 15) / 16;
  const int64_t every = lines == 0 ? k : (k / lines > 0 ? k / lines : 1);
  int64_t kk = 0;
  for (int64_t line = 0; line < lines; ++line) {
    __builtin_prefetch(next + line * 16, 0, 2);
    for (const int64_t stop = kk + every < k ? kk + every : k; kk < stop; ++kk) step();
  }
  // Without `next`: the packed B block after this one (the next k block of
  // the panel, or the next panel) is the one the generated loops use next:
  // fetch it into the L2 at the pace of this block, two lines (one k step
  // of it) per k step.
  if (lines == 0) {
    const float* b_next = b + k * kNR;
    for (; kk < k; ++kk) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v)
        _mm_prefetch(reinterpret_cast<const char*>(b_next + kk * kNR + 16 * v), _MM_HINT_T1);
      step();
    }
  }
  for (; kk < k; ++kk) step();
  if constexpr (kTransposedC)
    detail::store_tile_transposed<kRows, kVecs, kPanel>(acc, c, accumulate);
  else
    detail::store_tile(acc, c, accumulate);
}

// tile with the C tile transposed: c[j * kMR + r] (rows r < kRows, columns
// j < kCols). A convolution whose pixels are the GEMM's rows stores each
// filter's kMR pixels contiguously in the output: its epilogue then runs
// over the kMR rows of one column at a time, one vector each, where over
// the row-major tile it stored every value H x W floats from the last
// (GCC left those stores scalar: the epilogue was a quarter of ResNet-50's
// 14 x 14 conv3 + Add + Relu kernels).
template <int kCols = kNR, int kRows = kMR, int kPanel = kMR>
inline void tile_ct(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                    const float* next = nullptr, int64_t next_floats = 0) {
  tile<kCols, kRows, true, kPanel>(k, a, b, c, accumulate, next, next_floats);
}

// B read where it lies (codegen/ukernels/README.md): B(k', j) at
// b[k' * ldb + j], each row's kNR columns contiguous, the rows ldb floats
// apart: a stride-1 1x1 convolution's activation, the next kNR pixels of
// every input channel. The generated code then packs no B panel; its copy
// cost as much as a fifth of the micro-kernel's time where few row panels
// share each panel (ResNet-50's 56 x 56 conv1s, M = 64: 1.04 -> 0.90 ms).
// Each k step also brings that row's next kNR floats (the next column
// panel: prefetch_next_columns) into the L1: rows H x W floats apart are more streams than the hardware prefetchers
// follow, and the next panel's first call would wait on every row.
template <int kCols = kNR, int kRows = kMR, int kPanel = kMR>
__attribute__((noinline)) inline void tile_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c,
                                               bool accumulate) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0, "tile_ldb<kCols>: whole zmm of a B row");
  static_assert(kRows > 0 && kRows <= kPanel, "tile_ldb<kCols, kRows>: rows of the A panel");
  __m512 acc[kRows][kCols / 16];
  detail::zero_tile(acc);
  for (int64_t kk = 0; kk < k; ++kk) {
    detail::prefetch_next_columns(b);
    detail::fma_step(acc, a, b);
    a += kPanel;
    b += ldb;
  }
  detail::store_tile(acc, c, accumulate);
}

namespace detail {
// tile_bias_clamp (B packed, ldb = kNR) and tile_bias_clamp_ldb (B in
// place, prefetching as tile_ldb): one body, the loop's stride and the
// prefetch apart.
template <bool kInPlace, int kPanel>
__attribute__((noinline)) inline void bias_clamp_tile(int64_t k, const float* a, const float* b, int64_t ldb, float* c,
                                                      int64_t ldc, const float* bias, float lo, float hi) {
  constexpr int kVecs = kNR / 16;
  __m512 acc[kPanel][kVecs];
  zero_tile(acc);
  for (int64_t kk = 0; kk < k; ++kk) {
    if constexpr (kInPlace) prefetch_next_columns(b);
    fma_step(acc, a, b);
    a += kPanel;
    b += ldb;
  }
  const __m512 low = _mm512_set1_ps(lo), high = _mm512_set1_ps(hi);
#pragma GCC unroll 16
  for (int r = 0; r < kPanel; ++r) {
    const __m512 bias_r = _mm512_set1_ps(bias[r]);
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const __m512 x = _mm512_max_ps(low, _mm512_add_ps(acc[r][v], bias_r));
      _mm512_storeu_ps(c + r * ldc + 16 * v, _mm512_min_ps(high, x));
    }
  }
}
}  // namespace detail

// c[r * ldc + j] = min(max(S(r, j) + bias[r], lo), hi), S the sum tile()
// computes (not accumulating): a conv's bias with ReLU (hi = INFINITY),
// Clip or none (lo = -INFINITY) as the generated epilogue computes it, from
// the accumulators, without the C tile's store and reload and the
// epilogue's loop (MobileNet-v2's 1x1 convs over 112 x 112: 10-15% faster).
// vmaxps / vminps return their second operand where one is NaN: with the
// bound first, max(x, lo) and min(x, hi) keep a NaN x like the epilogue's
// x < lo ? lo : x and hi < x ? hi : x.
template <int kPanel = kMR>
inline void tile_bias_clamp(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias,
                            float lo, float hi) {
  detail::bias_clamp_tile<false, kPanel>(k, a, b, kNR, c, ldc, bias, lo, hi);
}

// tile_bias_clamp with B read where it lies, as tile_ldb.
template <int kPanel = kMR>
inline void tile_bias_clamp_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                                const float* bias, float lo, float hi) {
  detail::bias_clamp_tile<true, kPanel>(k, a, b, ldb, c, ldc, bias, lo, hi);
}

// Brings the kMR x kNR tile at p (row r at p + r * ld) toward the L1: a
// hint with no effect on results (README.md), for the generated epilogue's
// next read of an activation (a residual add).
template <int kPanel = kMR>
inline void prefetch_tile(const float* p, int64_t ld) {
#if defined(__GNUC__)
  for (int r = 0; r < kPanel; ++r)
    for (int j = 0; j < kNR; j += 16) __builtin_prefetch(p + r * ld + j, 0, 3);
#else
  (void)p;
  (void)ld;
#endif
}


namespace detail {
// The transposes' last k - kk columns (k - kk < 8), one value at a time,
// counted from 0 to the remainder: with k a multiple of 8 known at the
// call, GCC warned that the dead `kk < k` loop's 2^62-th iteration
// overflows the index.
template <int kRows>
__attribute__((always_inline)) inline void transpose_tail(int64_t kk, int64_t k, float* out, int64_t ld_out,
                                                          const float* const* rows) {
  const int64_t tail = k - kk;
  for (int64_t t = 0; t < tail; ++t)
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) out[(kk + t) * ld_out + i] = rows[i][kk + t];
}

// out[k' * ld_out + i] = rows[i][k'] for k' < k, i < 8: eight runs that are
// each contiguous along k, transposed eight k at a time as 8 x 8 blocks in
// ymm registers (eight loads, eight contiguous stores). pack_a_rows_from's
// A panel (ld_out = kMR) and pack_b_columns' groups of 8 columns (kNR).
__attribute__((always_inline)) inline void transpose_rows8(int64_t k, float* out, int64_t ld_out,
                                                           const float* const* rows) {
  int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(rows[i] + kk);
    __m256 t[8], s[8];
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {  // pairs of rows interleaved
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {  // four rows of columns j and j + 4
      s[h] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
      s[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
      s[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
      s[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    float* o = out + kk * ld_out;
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // rows 0-3 from s[j], rows 4-7 from s[j + 4]
      _mm256_storeu_ps(o + j * ld_out, _mm256_permute2f128_ps(s[j], s[j + 4], 0x20));
      _mm256_storeu_ps(o + (j + 4) * ld_out, _mm256_permute2f128_ps(s[j], s[j + 4], 0x31));
    }
  }
  transpose_tail<8>(kk, k, out, ld_out, rows);
}

// transpose_rows8 for four rows (a wide panel's last four): out[k' * ld_out
// + i] = rows[i][k'] for i < 4, as 4 x 8 blocks, one 16-byte store per k.
__attribute__((always_inline)) inline void transpose_rows4(int64_t k, float* out, int64_t ld_out,
                                                           const float* const* rows) {
  int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 r[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_ps(rows[i] + kk);
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    // s[j]: the four rows at k' = j (low half) and j + 4 (high half)
    const __m256 s[4] = {_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                         _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2))};
    float* o = out + kk * ld_out;
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      _mm_storeu_ps(o + j * ld_out, _mm256_castps256_ps128(s[j]));
      _mm_storeu_ps(o + (j + 4) * ld_out, _mm256_extractf128_ps(s[j], 1));
    }
  }
  transpose_tail<4>(kk, k, out, ld_out, rows);
}
}  // namespace detail

// a[k' * kMR + r] = rows[r][k'] for k' < k: an A panel packed at run time
// from kMR rows that are each contiguous along k (a row-major activation
// times the weights: every x @ W, attention's attn @ V), where the generated
// loop stored each value kMR floats apart (README.md). Rows may repeat (M's
// last row for the panel's padding rows).
// kPanel: 8 (kMR) or 12 (wide::kMR, a 4-row transpose after the 8).
template <int kPanel = kMR>
__attribute__((noinline)) inline void pack_a_rows_from(int64_t k, float* a, const float* const* rows) {
  static_assert(kPanel == 8 || kPanel == 12, "8 or 8 + 4 rows per eight k");
  detail::transpose_rows8(k, a, kPanel, rows);
  if constexpr (kPanel == 12) detail::transpose_rows4(k, a + 8, kPanel, rows + 8);
}

// b[k' * kNR + j] = B(k', j) = first[j * ld + k'] for k' < k: a B panel
// packed at run time from kNR columns that are each contiguous along k,
// ld floats apart (README.md): attention's k^T in q @ k^T, Restormer's over
// 65536 pixels. The columns from `cols` on (N's tail panel) repeat column
// cols - 1; their results are never stored. The generated loop read each
// k step's kNR values ld floats apart, a gather per value (on 65536-float
// columns every one in its own page).
__attribute__((noinline)) inline void pack_b_columns(int64_t k, float* b, const float* first, int64_t ld,
                                                     int64_t cols) {
  static_assert(kNR % 8 == 0, "groups of 8 columns");
#pragma GCC unroll 1
  for (int g = 0; g < kNR; g += 8) {
    const float* rows[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) rows[i] = first + (g + i < cols ? g + i : cols - 1) * ld;
    detail::transpose_rows8(k, b + g, kNR, rows);
  }
}

// The generated code's form: the kMR row pointers as arguments.
namespace detail {
// pack_a_rows_from<kPanel> with the row pointers as arguments.
template <int kPanel, class... Rows>
inline void pack_a_row_pointers(int64_t k, float* a, Rows... rows) {
  static_assert(sizeof...(Rows) == kPanel, "pack_a_rows: one pointer per row of the panel");
  const float* const r[kPanel] = {rows...};
  pack_a_rows_from<kPanel>(k, a, r);
}
}  // namespace detail

template <class... Rows>
inline void pack_a_rows(int64_t k, float* a, Rows... rows) {
  detail::pack_a_row_pointers<kMR>(k, a, rows...);
}

// The micro-kernel over wide A panels (12 rows, see the top): the same
// calls as above under tg_sgemm::wide::, for the GEMMs the generated code
// packs in 12-row panels. B panels and C tiles (kNR columns) are as above.
namespace wide {
constexpr int kMR = 12;

template <int kCols = kNR, int kRows = kMR>
inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate, const float* next = nullptr,
                 int64_t next_floats = 0) {
  avx512::tile<kCols, kRows, false, kMR>(k, a, b, c, accumulate, next, next_floats);
}

template <int kCols = kNR, int kRows = kMR>
inline void tile_ct(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                    const float* next = nullptr, int64_t next_floats = 0) {
  avx512::tile<kCols, kRows, true, kMR>(k, a, b, c, accumulate, next, next_floats);
}

template <int kCols = kNR, int kRows = kMR>
inline void tile_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  avx512::tile_ldb<kCols, kRows, kMR>(k, a, b, ldb, c, accumulate);
}

inline void tile_bias_clamp(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias,
                            float lo, float hi) {
  avx512::tile_bias_clamp<kMR>(k, a, b, c, ldc, bias, lo, hi);
}

inline void tile_bias_clamp_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                                const float* bias, float lo, float hi) {
  avx512::tile_bias_clamp_ldb<kMR>(k, a, b, ldb, c, ldc, bias, lo, hi);
}

inline void prefetch_tile(const float* p, int64_t ld) { avx512::prefetch_tile<kMR>(p, ld); }

template <class... Rows>
inline void pack_a_rows(int64_t k, float* a, Rows... rows) {
  detail::pack_a_row_pointers<kMR>(k, a, rows...);
}
}  // namespace wide

}  // namespace avx512
}  // namespace tg_sgemm
