// Float32 GEMM micro-kernel, AArch64 NEON variant (contract: README.md).
//
// Register blocking (kMR = 8, kNR = 12):
//   * One k step of A is 8 floats: two q registers (ldp-able, 32 bytes).
//   * One k step of B is 12 floats: three q registers.
//   * Accumulators: 8 rows x 3 q = 24 of the 32 vector registers; 5 operands
//     leave 3 spare. Per k step 24 FMLA (by element: row r's A value is lane
//     r % 4 of A's register r / 4, no broadcast instruction) against 5 q loads:
//     on Neoverse N2 (2 FMLA pipes, 4-cycle latency) 12 cycles of FMLA with 24
//     independent chains, and the loads fit the 3 load pipes easily.
// Needs only -march=armv8-a (AArch64 NEON).
#pragma once

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "sgemm_neon.h needs AArch64 NEON: compile for aarch64 (-march=armv8-a or later)"
#else

#include <arm_neon.h>

#include <cstdint>

namespace tg_sgemm {
// Own inline namespace per variant: see sgemm_scalar.h.
inline namespace neon {

constexpr const char* kVariant = "neon";
constexpr int kMR = 8;
constexpr int kNR = 12;
constexpr int kLanes = 4;  // floats per q register: tile<kCols>'s unit

// c[r * kNR + j] = (accumulate ? c[r * kNR + j] : 0) + sum over k' < k of A(r, k') * B(k', j).
//   a: A(r, k') at a[k' * kMR + r]
//   b: B(k', j) at b[k' * kNR + j]
// Not inlined: inside a big generated loop nest GCC shuffles the
// accumulators between registers every iteration; alone it keeps them put.
__attribute__((noinline)) inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                           const float* next = nullptr, int64_t next_floats = 0) {
  // Accumulator q register i (row i / 3, columns 4 * (i % 3)...) starts at
  // zero; continuing an earlier k block, c[4 * i...] is added at the store
  // (a blocked sum's rounding error, as on AVX-512: sgemm_avx512.h).
  const float32x4_t zero = vdupq_n_f32(0);
  float32x4_t c00 = zero, c01 = zero, c02 = zero, c10 = zero, c11 = zero, c12 = zero;
  float32x4_t c20 = zero, c21 = zero, c22 = zero, c30 = zero, c31 = zero, c32 = zero;
  float32x4_t c40 = zero, c41 = zero, c42 = zero, c50 = zero, c51 = zero, c52 = zero;
  float32x4_t c60 = zero, c61 = zero, c62 = zero, c70 = zero, c71 = zero, c72 = zero;
  // `next` (the next B block, README.md): a hint, all at the start here.
  for (int64_t i = 0; i < next_floats; i += 16) __builtin_prefetch(next + i, 0, 2);
  for (int64_t kk = 0; kk < k; ++kk) {
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
    c00 = vfmaq_laneq_f32(c00, b0, a0, 0); c01 = vfmaq_laneq_f32(c01, b1, a0, 0); c02 = vfmaq_laneq_f32(c02, b2, a0, 0);
    c10 = vfmaq_laneq_f32(c10, b0, a0, 1); c11 = vfmaq_laneq_f32(c11, b1, a0, 1); c12 = vfmaq_laneq_f32(c12, b2, a0, 1);
    c20 = vfmaq_laneq_f32(c20, b0, a0, 2); c21 = vfmaq_laneq_f32(c21, b1, a0, 2); c22 = vfmaq_laneq_f32(c22, b2, a0, 2);
    c30 = vfmaq_laneq_f32(c30, b0, a0, 3); c31 = vfmaq_laneq_f32(c31, b1, a0, 3); c32 = vfmaq_laneq_f32(c32, b2, a0, 3);
    c40 = vfmaq_laneq_f32(c40, b0, a1, 0); c41 = vfmaq_laneq_f32(c41, b1, a1, 0); c42 = vfmaq_laneq_f32(c42, b2, a1, 0);
    c50 = vfmaq_laneq_f32(c50, b0, a1, 1); c51 = vfmaq_laneq_f32(c51, b1, a1, 1); c52 = vfmaq_laneq_f32(c52, b2, a1, 1);
    c60 = vfmaq_laneq_f32(c60, b0, a1, 2); c61 = vfmaq_laneq_f32(c61, b1, a1, 2); c62 = vfmaq_laneq_f32(c62, b2, a1, 2);
    c70 = vfmaq_laneq_f32(c70, b0, a1, 3); c71 = vfmaq_laneq_f32(c71, b1, a1, 3); c72 = vfmaq_laneq_f32(c72, b2, a1, 3);
    a += kMR;
    b += kNR;
  }
  const float32x4_t rows[kMR][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32},
                                    {c40, c41, c42}, {c50, c51, c52}, {c60, c61, c62}, {c70, c71, c72}};
  for (int r = 0; r < kMR; ++r)
    for (int v = 0; v < 3; ++v) {
      float* at = c + r * kNR + 4 * v;
      vst1q_f32(at, accumulate ? vaddq_f32(vld1q_f32(at), rows[r][v]) : rows[r][v]);
    }
}

// tile()'s c for the columns j < kCols only (4 or 8: the last column panel
// of an N whose tail fits one or two q registers, at a third or two thirds
// of the FMLAs) and the rows r < kRows only (the last row panel of an M
// whose tail is kRows rows, M mod kMR); c's other columns and rows are not
// touched. Fewer rows multiply by each A value as a scalar (vfmaq_n_f32).
template <int kCols, int kRows = kMR>
__attribute__((noinline)) inline void tile(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                           const float* next = nullptr, int64_t next_floats = 0) {
  static_assert(kCols > 0 && kCols <= kNR && kCols % kLanes == 0 && (kCols < kNR || kRows < kMR),
                "tile<kCols, kRows>: whole q registers, fewer columns or rows than tile()'s");
  static_assert(kRows > 0 && kRows <= kMR, "tile<kCols, kRows>: rows of the A panel");
  constexpr int kVecs = kCols / kLanes;
  float32x4_t acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = vdupq_n_f32(0);
  for (int64_t i = 0; i < next_floats; i += 16) __builtin_prefetch(next + i, 0, 2);
  for (int64_t kk = 0; kk < k; ++kk) {
    float32x4_t bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = vld1q_f32(b + 4 * v);
    if constexpr (kRows == kMR) {
      const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
      for (int v = 0; v < kVecs; ++v) {
        acc[0][v] = vfmaq_laneq_f32(acc[0][v], bv[v], a0, 0);
        acc[1][v] = vfmaq_laneq_f32(acc[1][v], bv[v], a0, 1);
        acc[2][v] = vfmaq_laneq_f32(acc[2][v], bv[v], a0, 2);
        acc[3][v] = vfmaq_laneq_f32(acc[3][v], bv[v], a0, 3);
        acc[4][v] = vfmaq_laneq_f32(acc[4][v], bv[v], a1, 0);
        acc[5][v] = vfmaq_laneq_f32(acc[5][v], bv[v], a1, 1);
        acc[6][v] = vfmaq_laneq_f32(acc[6][v], bv[v], a1, 2);
        acc[7][v] = vfmaq_laneq_f32(acc[7][v], bv[v], a1, 3);
      }
    } else {
      for (int r = 0; r < kRows; ++r) {
        const float ar = a[r];
        for (int v = 0; v < kVecs; ++v) acc[r][v] = vfmaq_n_f32(acc[r][v], bv[v], ar);
      }
    }
    a += kMR;
    b += kNR;
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) {
      float* at = c + r * kNR + 4 * v;
      vst1q_f32(at, accumulate ? vaddq_f32(vld1q_f32(at), acc[r][v]) : acc[r][v]);
    }
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


namespace detail {
// out[k' * ld_out + i] = rows[i][k'] for k' < k, i < 4: four runs each
// contiguous along k, four k at a time as a 4 x 4 transpose (trn1/trn2 on
// 32- then 64-bit lanes): four loads and four contiguous stores.
__attribute__((always_inline)) inline void transpose_rows4(int64_t k, float* out, int64_t ld_out,
                                                           const float* const* rows) {
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
    float* o = out + kk * ld_out;
    const float32x4_t r0 = vld1q_f32(rows[0] + kk), r1 = vld1q_f32(rows[1] + kk);
    const float32x4_t r2 = vld1q_f32(rows[2] + kk), r3 = vld1q_f32(rows[3] + kk);
    const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)), t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
    const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)), t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    vst1q_f32(o + 0 * ld_out, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
    vst1q_f32(o + 1 * ld_out, vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
    vst1q_f32(o + 2 * ld_out, vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
    vst1q_f32(o + 3 * ld_out, vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
  }
  // The remaining columns, counted from 0 (see sgemm_avx512.h's pack).
  const int64_t tail = k - kk;
  for (int64_t t = 0; t < tail; ++t)
    for (int i = 0; i < 4; ++i) out[(kk + t) * ld_out + i] = rows[i][kk + t];
}
}  // namespace detail

// a[k' * kMR + r] = rows[r][k'] for k' < k: an A panel packed at run time
// from kMR rows that are each contiguous along k (README.md): two 4 x 4
// transposes per four k, where the generated loop stored each value kMR
// floats apart.
__attribute__((noinline)) inline void pack_a_rows_from(int64_t k, float* a, const float* const* rows) {
  static_assert(kMR == 8, "two 4 x 4 transposes per four k");
  detail::transpose_rows4(k, a, kMR, rows);
  detail::transpose_rows4(k, a + 4, kMR, rows + 4);
}

// b[k' * kNR + j] = first[j * ld + k'] for k' < k: a B panel packed at run
// time from kNR columns each contiguous along k (README.md; sgemm_avx512.h).
// Columns from `cols` on repeat column cols - 1.
__attribute__((noinline)) inline void pack_b_columns(int64_t k, float* b, const float* first, int64_t ld,
                                                     int64_t cols) {
  static_assert(kNR % 4 == 0, "groups of 4 columns");
  for (int g = 0; g < kNR; g += 4) {
    const float* rows[4];
    for (int i = 0; i < 4; ++i) rows[i] = first + (g + i < cols ? g + i : cols - 1) * ld;
    detail::transpose_rows4(k, b + g, kNR, rows);
  }
}

// The generated code's form: the kMR row pointers as arguments.
template <class... Rows>
inline void pack_a_rows(int64_t k, float* a, Rows... rows) {
  static_assert(sizeof...(Rows) == kMR, "pack_a_rows: one pointer per row of the panel");
  const float* const r[kMR] = {rows...};
  pack_a_rows_from(k, a, r);
}

}  // namespace neon
}  // namespace tg_sgemm

#endif
