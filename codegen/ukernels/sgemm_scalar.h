// Float32 GEMM micro-kernel, portable reference variant (contract: README.md).
//
// Register blocking: a 4 x 8 tile of float accumulators. Each k step is an
// outer product of 4 A values and 8 B values; the column loop is contiguous,
// so a compiler that vectorizes gets two 4-lane or one 8-lane FMA per row. No
// intrinsics: this is the variant every other one is tested against and the
// fallback for CPUs without a dedicated variant.
#pragma once

#include <cstdint>

namespace tg_sgemm {
// Each variant lives in its own inline namespace: callers still write
// tg_sgemm::tile, but two variants linked into one binary (the unit tests do
// that) get distinct symbols instead of violating the one-definition rule.
inline namespace scalar {

constexpr const char* kVariant = "scalar";
constexpr int kMR = 4;
constexpr int kNR = 8;
constexpr int kLanes = 4;  // tile<kCols>'s unit (a 4-lane vector, where the compiler vectorizes)

// c[r * kNR + j] = (accumulate ? c[r * kNR + j] : 0) + sum over k' < k of
// A(r, k') * B(k', j), the sum in k' order from zero, then added to c (a
// blocked sum: sgemm_avx512.h), for the columns j < kCols
// (tile<4>: a last column panel of at most 4 columns; c's other columns are
// not touched).
//   a: A(r, k') at a[k' * kMR + r]
//   b: B(k', j) at b[k' * kNR + j]
// Rows r < kRows only (tile<kCols, kRows>: the last row panel of an M
// whose tail is kRows rows, M mod kMR; c's other rows are not touched).
template <int kCols = kNR, int kRows = kMR>
inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                 const float* next = nullptr, int64_t next_floats = 0) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0, "tile<kCols>: whole vectors of a B panel's row");
  static_assert(kRows > 0 && kRows <= kMR, "tile<kCols, kRows>: rows of the A panel");
  float acc[kRows * kCols];
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kCols; ++j) acc[r * kCols + j] = 0.0f;
  // `next` (the next B block, README.md): a hint, all at the start here.
#if defined(__GNUC__)
  for (int64_t i = 0; i < next_floats; i += 16) __builtin_prefetch(next + i, 0, 2);
#else
  (void)next;
  (void)next_floats;
#endif
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int r = 0; r < kRows; ++r)
      for (int j = 0; j < kCols; ++j) acc[r * kCols + j] += a[r] * b[j];
    a += kMR;
    b += kNR;
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kCols; ++j) c[r * kNR + j] = accumulate ? c[r * kNR + j] + acc[r * kCols + j] : acc[r * kCols + j];
}

// c[r * ldc + j] = min(max(S(r, j) + bias[r], lo), hi), S the sum tile()
// computes (not accumulating): a conv's bias with ReLU (hi = INFINITY),
// Clip or none (lo = -INFINITY) as the generated epilogue computes it,
// NaN kept; c: row r of the output at c + r * ldc (README.md).
inline void tile_bias_clamp(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias,
                            float lo, float hi) {
  alignas(64) float t[kMR * kNR];
  tile(k, a, b, t, false);
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) {
      float x = t[r * kNR + j] + bias[r];
      x = x < lo ? lo : x;
      c[r * ldc + j] = hi < x ? hi : x;
    }
}

// Brings the kMR x kNR tile at p (row r at p + r * ld) toward the L1: a
// hint with no effect on results (README.md), for the generated epilogue's
// next read of an activation (a residual add).
inline void prefetch_tile(const float* p, int64_t ld) {
#if defined(__GNUC__)
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; j += 16) __builtin_prefetch(p + r * ld + j, 0, 3);
#else
  (void)p;
  (void)ld;
#endif
}


// a[k' * kMR + r] = rows[r][k'] for k' < k: an A panel packed at run time
// from kMR rows that are each contiguous along k (README.md).
inline void pack_a_rows_from(int64_t k, float* a, const float* const* rows) {
  for (int64_t kk = 0; kk < k; ++kk)
    for (int i = 0; i < kMR; ++i) a[kk * kMR + i] = rows[i][kk];
}

// b[k' * kNR + j] = first[j * ld + k'] for k' < k: a B panel packed at run
// time from kNR columns each contiguous along k (README.md). Columns from
// `cols` on repeat column cols - 1.
inline void pack_b_columns(int64_t k, float* b, const float* first, int64_t ld, int64_t cols) {
  for (int j = 0; j < kNR; ++j) {
    const float* column = first + (j < cols ? j : cols - 1) * ld;
    for (int64_t kk = 0; kk < k; ++kk) b[kk * kNR + j] = column[kk];
  }
}

// The generated code's form: the kMR row pointers as arguments.
template <class... Rows>
inline void pack_a_rows(int64_t k, float* a, Rows... rows) {
  static_assert(sizeof...(Rows) == kMR, "pack_a_rows: one pointer per row of the panel");
  const float* const r[kMR] = {rows...};
  pack_a_rows_from(k, a, r);
}

}  // namespace scalar
}  // namespace tg_sgemm
