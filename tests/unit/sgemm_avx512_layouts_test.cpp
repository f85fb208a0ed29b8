// The AVX-512 float micro-kernel's operand layouts (codegen/ukernels/
// sgemm_avx512.h; the _ldb ones also of sgemm_avx2.h), against a sum in
// double over the same operands:
// tile_ldb and tile_bias_clamp_ldb (B read where it lies, rows ldb floats
// apart: odd k (1, 7, 37), a row tail (tile_ldb<32, 3>), an accumulating
// call, a C tile left alone outside its rows) and tile_ct (the C tile
// transposed, c[j * kMR + r]: a row tail, a narrow column tail, accumulating
// from a transposed tile; AVX2's too). Compiled
// under an avx512f target pragma like tests/unit/sgemm_variants/; skipped
// on CPUs without AVX-512F.
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
void full_tile(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::avx512::tile_ldb(k, a, b, ldb, c, accumulate);
}
void three_rows(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::avx512::tile_ldb<tg_sgemm::avx512::kNR, 3>(k, a, b, ldb, c, accumulate);
}
void transposed(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::avx512::tile_ct(k, a, b, c, accumulate);
}
void transposed_tail(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::avx512::tile_ct<16, 5>(k, a, b, c, accumulate);
}
void bias_clamp(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, const float* bias,
                float lo, float hi) {
  tg_sgemm::avx512::tile_bias_clamp_ldb(k, a, b, ldb, c, ldc, bias, lo, hi);
}
}  // namespace

#include "tests/unit/avx512_target_end.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define TG_SGEMM_FORCE 1
#include "codegen/ukernels/sgemm_avx2.h"
#undef TG_SGEMM_FORCE
namespace {
void avx2_full_tile(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::avx2::tile_ldb(k, a, b, ldb, c, accumulate);
}
void avx2_three_rows(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::avx2::tile_ldb<tg_sgemm::avx2::kNR, 3>(k, a, b, ldb, c, accumulate);
}
void avx2_bias_clamp(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, const float* bias,
                     float lo, float hi) {
  tg_sgemm::avx2::tile_bias_clamp_ldb(k, a, b, ldb, c, ldc, bias, lo, hi);
}
void avx2_transposed(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::avx2::tile_ct(k, a, b, c, accumulate);
}
void avx2_transposed_tail(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::avx2::tile_ct<8, 5>(k, a, b, c, accumulate);
}
}  // namespace
#pragma GCC pop_options

namespace {

constexpr int64_t kMR = 8, kNR = 32;

using tilegraph::testing::random_values;

// The _ldb functions of one variant: its panel size and entry points.
struct LdbVariant {
  int64_t mr, nr;
  bool (*supported)();
  void (*full_tile)(int64_t, const float*, const float*, int64_t, float*, bool);
  void (*three_rows)(int64_t, const float*, const float*, int64_t, float*, bool);
  void (*bias_clamp)(int64_t, const float*, const float*, int64_t, float*, int64_t, const float*, float, float);
};

bool avx2_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

const LdbVariant kAvx512{kMR, kNR, tilegraph::testing::avx512f_supported, full_tile, three_rows, bias_clamp};
const LdbVariant kAvx2{tg_sgemm::avx2::kMR, tg_sgemm::avx2::kNR, avx2_supported, avx2_full_tile, avx2_three_rows,
                       avx2_bias_clamp};

void expect_tile_reads_b_rows_ldb_apart(const LdbVariant& v) {
  for (int64_t k : {1, 7, 37}) {
    const tilegraph::testing::PanelOperands o(v.mr, k, 100, 64, 1);  // rows of 100 floats, the panel at column 64
    std::vector<float> c(size_t(v.mr * v.nr), -7.0f);
    v.full_tile(k, o.a.data(), o.panel(), o.ldb, c.data(), false);
    for (int64_t r = 0; r < v.mr; ++r)
      for (int64_t j = 0; j < v.nr; ++j) ASSERT_NEAR(c[size_t(r * v.nr + j)], o.sum(r, j), 1e-4) << k << " " << r << " " << j;
    // Accumulating adds the same sum again.
    v.full_tile(k, o.a.data(), o.panel(), o.ldb, c.data(), true);
    for (int64_t r = 0; r < v.mr; ++r)
      for (int64_t j = 0; j < v.nr; ++j) ASSERT_NEAR(c[size_t(r * v.nr + j)], 2 * o.sum(r, j), 2e-4) << k;
  }
}

void expect_row_tail_leaves_the_other_rows(const LdbVariant& v) {
  const tilegraph::testing::PanelOperands o(v.mr, 13, 3136, 32, 1);
  std::vector<float> c(size_t(v.mr * v.nr), -7.0f);
  v.three_rows(o.k, o.a.data(), o.panel(), o.ldb, c.data(), false);
  for (int64_t r = 0; r < v.mr; ++r)
    for (int64_t j = 0; j < v.nr; ++j) {
      const double want = r < 3 ? o.sum(r, j) : -7.0;
      ASSERT_NEAR(c[size_t(r * v.nr + j)], want, 1e-4) << r << " " << j;
    }
}

void expect_bias_clamp_stores_output_rows_ldc_apart(const LdbVariant& v) {
  const tilegraph::testing::PanelOperands o(v.mr, 19, 96, 32, 1);
  const int64_t ldc = 40 + v.nr;
  const std::vector<float> bias = random_values(size_t(v.mr), 3);
  std::vector<float> out(size_t(v.mr * ldc), 9.0f);
  v.bias_clamp(o.k, o.a.data(), o.panel(), o.ldb, out.data(), ldc, bias.data(), -0.5f, 0.75f);
  int clamped = 0;
  for (int64_t r = 0; r < v.mr; ++r)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = out[size_t(r * ldc + j)];
      if (j >= v.nr) {
        ASSERT_EQ(got, 9.0f) << "past the tile's columns";
        continue;
      }
      const double x = o.sum(r, j) + bias[size_t(r)];
      const double want = std::fmin(std::fmax(x, -0.5), 0.75);
      clamped += want != x;
      ASSERT_NEAR(got, want, 1e-4) << r << " " << j;
    }
  EXPECT_GT(clamped, 0) << "some values should reach a bound";
}

TEST(SgemmAvx512Ldb, TileReadsBRowsLdbApart) {
  if (!kAvx512.supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  expect_tile_reads_b_rows_ldb_apart(kAvx512);
}

TEST(SgemmAvx512Ldb, RowTailLeavesTheOtherRows) {
  if (!kAvx512.supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  expect_row_tail_leaves_the_other_rows(kAvx512);
}

TEST(SgemmAvx512Ldb, BiasClampStoresOutputRowsLdcApart) {
  if (!kAvx512.supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  expect_bias_clamp_stores_output_rows_ldc_apart(kAvx512);
}

TEST(SgemmAvx2Ldb, TileReadsBRowsLdbApart) {
  if (!kAvx2.supported()) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_tile_reads_b_rows_ldb_apart(kAvx2);
}

TEST(SgemmAvx2Ldb, RowTailLeavesTheOtherRows) {
  if (!kAvx2.supported()) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_row_tail_leaves_the_other_rows(kAvx2);
}

TEST(SgemmAvx2Ldb, BiasClampStoresOutputRowsLdcApart) {
  if (!kAvx2.supported()) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_bias_clamp_stores_output_rows_ldc_apart(kAvx2);
}

// tile_ct of one variant: its panel size and entry points, the tail's rows
// and columns.
struct CtVariant {
  int64_t mr, nr;
  bool (*supported)();
  void (*full)(int64_t, const float*, const float*, float*, bool);
  void (*tail)(int64_t, const float*, const float*, float*, bool);
  int64_t tail_rows, tail_cols;
};

const CtVariant kAvx512Ct{kMR, kNR, tilegraph::testing::avx512f_supported, transposed, transposed_tail, 5, 16};
const CtVariant kAvx2Ct{tg_sgemm::avx2::kMR, tg_sgemm::avx2::kNR, avx2_supported, avx2_transposed, avx2_transposed_tail,
                        5, 8};

// tile_ct on a packed B panel (b[k' * kNR + j]): operands with ldb = kNR.
void expect_tile_stored_transposed(const CtVariant& v) {
  const tilegraph::testing::PanelOperands o(v.mr, 23, v.nr, 0, 1);
  std::vector<float> c(size_t(v.mr * v.nr), -7.0f);
  v.full(o.k, o.a.data(), o.panel(), c.data(), false);
  for (int64_t r = 0; r < v.mr; ++r)
    for (int64_t j = 0; j < v.nr; ++j) ASSERT_NEAR(c[size_t(j * v.mr + r)], o.sum(r, j), 1e-4) << r << " " << j;
  v.full(o.k, o.a.data(), o.panel(), c.data(), true);  // adds to the transposed tile
  for (int64_t r = 0; r < v.mr; ++r)
    for (int64_t j = 0; j < v.nr; ++j) ASSERT_NEAR(c[size_t(j * v.mr + r)], 2 * o.sum(r, j), 2e-4) << r << " " << j;
}

void expect_tails_leave_the_other_rows_and_columns(const CtVariant& v) {
  const tilegraph::testing::PanelOperands o(v.mr, 9, v.nr, 0, 1);
  std::vector<float> c(size_t(v.mr * v.nr), -7.0f);
  for (bool accumulate : {false, true}) {
    v.tail(o.k, o.a.data(), o.panel(), c.data(), accumulate);
    for (int64_t r = 0; r < v.mr; ++r)
      for (int64_t j = 0; j < v.nr; ++j) {
        const double want = r < v.tail_rows && j < v.tail_cols ? (accumulate ? 2 : 1) * o.sum(r, j) : -7.0;
        ASSERT_NEAR(c[size_t(j * v.mr + r)], want, 2e-4) << accumulate << " " << r << " " << j;
      }
  }
}

TEST(SgemmAvx512Ct, TileStoresTheTileTransposed) {
  if (!kAvx512Ct.supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  expect_tile_stored_transposed(kAvx512Ct);
}

TEST(SgemmAvx512Ct, TailsLeaveTheOtherRowsAndColumns) {
  if (!kAvx512Ct.supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  expect_tails_leave_the_other_rows_and_columns(kAvx512Ct);
}

TEST(SgemmAvx2Ct, TileStoresTheTileTransposed) {
  if (!kAvx2Ct.supported()) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_tile_stored_transposed(kAvx2Ct);
}

TEST(SgemmAvx2Ct, TailsLeaveTheOtherRowsAndColumns) {
  if (!kAvx2Ct.supported()) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_tails_leave_the_other_rows_and_columns(kAvx2Ct);
}

}  // namespace

#endif  // defined(__x86_64__)
