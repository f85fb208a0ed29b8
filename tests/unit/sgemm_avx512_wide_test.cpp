// The AVX-512 float micro-kernel over wide A panels (tg_sgemm::wide::,
// 12 rows: codegen/ukernels/sgemm_avx512.h), against a sum in double over
// the same operands: the full tile and every row tail (1-11 rows, a
// 16-column tail too), odd k (1, 7, 37), an accumulating call, C's rows
// outside a tail left alone; B read in place (tile_ldb); the fused bias and
// clamp; the transposed C tile (c[j * 12 + r]); and pack_a_rows, whose 12
// rows go through an 8-row and a 4-row transpose (k below, at and past
// eight). Compiled under an avx512f target pragma like
// sgemm_avx512_layouts_test.cpp; skipped on CPUs without AVX-512F.
#include <gtest/gtest.h>

#include "tests/unit/avx512_test_support.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "tests/unit/avx512_target_begin.h"
#define TG_SGEMM_FORCE 1
#include "codegen/ukernels/sgemm_avx512.h"
#undef TG_SGEMM_FORCE

namespace {
// wide::tile<kCols, kRows> for the rows and columns given at run time.
template <int kCols, int kRows>
void tile_rows(int rows, int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  if constexpr (kRows > 0) {
    if (rows == kRows) return tg_sgemm::wide::tile<kCols, kRows>(k, a, b, c, accumulate);
    tile_rows<kCols, kRows - 1>(rows, k, a, b, c, accumulate);
  }
}
void wide_tile(int cols, int rows, int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  if (cols == 16) return tile_rows<16, 12>(rows, k, a, b, c, accumulate);
  tile_rows<32, 12>(rows, k, a, b, c, accumulate);
}
void wide_tile_ldb_tail(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::wide::tile_ldb<tg_sgemm::kNR, 7>(k, a, b, ldb, c, accumulate);
}
void wide_tile_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::wide::tile_ldb(k, a, b, ldb, c, accumulate);
}
void wide_transposed(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::wide::tile_ct(k, a, b, c, accumulate);
}
void wide_bias_clamp(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias, float lo,
                     float hi) {
  tg_sgemm::wide::tile_bias_clamp(k, a, b, c, ldc, bias, lo, hi);
}
void wide_bias_clamp_ldb(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                         const float* bias, float lo, float hi) {
  tg_sgemm::wide::tile_bias_clamp_ldb(k, a, b, ldb, c, ldc, bias, lo, hi);
}
void wide_pack(int64_t k, float* a, const float* const* r) {
  tg_sgemm::wide::pack_a_rows(k, a, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]);
}
}  // namespace

#include "tests/unit/avx512_target_end.h"

namespace {

constexpr int64_t kWide = 12, kNR = 32;

using tilegraph::testing::random_values;

// A packed wide A panel (12 x k: a[k' * 12 + r]) and a B of k rows, ldb
// floats apart, whose panel starts `col` floats into each row.
struct Operands : tilegraph::testing::PanelOperands {
  Operands(int64_t k, int64_t ldb, int64_t col) : PanelOperands(kWide, k, ldb, col, 11) {}
};

TEST(SgemmAvx512Wide, HeaderHasTwelveRowPanels) {
  EXPECT_EQ(tg_sgemm::wide::kMR, 12);
  EXPECT_EQ(tg_sgemm::kMR, 8);  // the default panels are unchanged
}

TEST(SgemmAvx512Wide, EveryRowAndColumnTailComputesItsRowsAlone) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  for (int64_t k : {1, 7, 37}) {
    const Operands o(k, kNR, 0);
    for (int cols : {16, 32})
      for (int rows = 1; rows <= 12; ++rows) {
        std::vector<float> c(size_t(kWide * kNR), -7.0f);
        wide_tile(cols, rows, k, o.a.data(), o.panel(), c.data(), false);
        for (int64_t r = 0; r < kWide; ++r)
          for (int64_t j = 0; j < kNR; ++j) {
            const double want = r < rows && j < cols ? o.sum(r, j) : -7.0;
            ASSERT_NEAR(c[size_t(r * kNR + j)], want, 1e-4) << "k " << k << " tile<" << cols << ", " << rows << "> ("
                                                            << r << ", " << j << ")";
          }
      }
  }
}

TEST(SgemmAvx512Wide, AccumulatingAddsToTheTile) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(29, kNR, 0);
  std::vector<float> c(size_t(kWide * kNR), 0.0f);
  wide_tile(32, 12, o.k, o.a.data(), o.panel(), c.data(), false);
  wide_tile(32, 12, o.k, o.a.data(), o.panel(), c.data(), true);
  for (int64_t r = 0; r < kWide; ++r)
    for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(r * kNR + j)], 2 * o.sum(r, j), 2e-4) << r << " " << j;
}

TEST(SgemmAvx512Wide, TileLdbReadsBRowsLdbApart) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(37, 100, 64);  // rows of 100 floats, the panel at column 64
  std::vector<float> c(size_t(kWide * kNR), -7.0f);
  wide_tile_ldb(o.k, o.a.data(), o.panel(), o.ldb, c.data(), false);
  for (int64_t r = 0; r < kWide; ++r)
    for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(r * kNR + j)], o.sum(r, j), 1e-4) << r << " " << j;
  std::vector<float> tail(size_t(kWide * kNR), -7.0f);
  wide_tile_ldb_tail(o.k, o.a.data(), o.panel(), o.ldb, tail.data(), false);  // rows < 7
  for (int64_t r = 0; r < kWide; ++r)
    for (int64_t j = 0; j < kNR; ++j)
      ASSERT_NEAR(tail[size_t(r * kNR + j)], r < 7 ? o.sum(r, j) : -7.0, 1e-4) << r << " " << j;
}

TEST(SgemmAvx512Wide, TileCtStoresTheTileTransposedTwelveApart) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(23, kNR, 0);
  std::vector<float> c(size_t(kWide * kNR), -7.0f);
  wide_transposed(o.k, o.a.data(), o.panel(), c.data(), false);
  for (int64_t r = 0; r < kWide; ++r)
    for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(j * kWide + r)], o.sum(r, j), 1e-4) << r << " " << j;
  wide_transposed(o.k, o.a.data(), o.panel(), c.data(), true);
  for (int64_t r = 0; r < kWide; ++r)
    for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(j * kWide + r)], 2 * o.sum(r, j), 2e-4) << r << " " << j;
}

// Both forms of the fused bias + clamp: every row's bias, output rows ldc
// floats apart, columns past the tile untouched, some values clamped.
TEST(SgemmAvx512Wide, BiasClampStoresTwelveOutputRows) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  for (bool in_place : {false, true}) {
    const Operands o(19, in_place ? 96 : kNR, in_place ? 32 : 0);
    const int64_t ldc = 40 + kNR;
    const std::vector<float> bias = random_values(kWide, 13);
    std::vector<float> out(size_t(kWide * ldc), 9.0f);
    if (in_place)
      wide_bias_clamp_ldb(o.k, o.a.data(), o.panel(), o.ldb, out.data(), ldc, bias.data(), -0.5f, 0.75f);
    else
      wide_bias_clamp(o.k, o.a.data(), o.panel(), out.data(), ldc, bias.data(), -0.5f, 0.75f);
    int clamped = 0;
    for (int64_t r = 0; r < kWide; ++r)
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = out[size_t(r * ldc + j)];
        if (j >= kNR) {
          ASSERT_EQ(got, 9.0f) << "past the tile's columns";
          continue;
        }
        const double x = o.sum(r, j) + bias[size_t(r)];
        const double want = std::fmin(std::fmax(x, -0.5), 0.75);
        clamped += want != x;
        ASSERT_NEAR(got, want, 1e-4) << (in_place ? "ldb " : "") << r << " " << j;
      }
    EXPECT_GT(clamped, 0) << "some values should reach a bound";
  }
}

// a[k' * 12 + r] = rows[r][k'], the rows anywhere in memory (here one
// matrix's rows, one of them repeated as for M's last panel).
TEST(SgemmAvx512Wide, PackARowsTransposesTwelveRows) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  for (int64_t k : {1, 5, 8, 19}) {
    const int64_t ld = k + 3;
    const std::vector<float> m = random_values(size_t(12 * ld), 14);
    const float* rows[12];
    for (int r = 0; r < 12; ++r) rows[r] = m.data() + (r < 11 ? r : 10) * ld;  // row 11 repeats row 10
    std::vector<float> a(size_t(k * kWide + 16), -7.0f);
    wide_pack(k, a.data(), rows);
    for (int64_t kk = 0; kk < k; ++kk)
      for (int r = 0; r < 12; ++r)
        ASSERT_EQ(a[size_t(kk * kWide + r)], rows[r][kk]) << "k " << k << " " << kk << " " << r;
    for (size_t i = size_t(k * kWide); i < a.size(); ++i) ASSERT_EQ(a[i], -7.0f) << "past the panel";
  }
}

}  // namespace

#endif  // defined(__x86_64__)
