// The AVX-512 float micro-kernel's operand layouts (codegen/ukernels/
// sgemm_avx512.h), against a sum in double over the same operands:
// tile_ldb and tile_bias_clamp_ldb (B read where it lies, rows ldb floats
// apart: odd k (1, 7, 37), a row tail (tile_ldb<32, 3>), an accumulating
// call, a C tile left alone outside its rows) and tile_ct (the C tile
// transposed, c[j * kMR + r]: a row tail, a narrow column tail, accumulating
// from a transposed tile). Compiled
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
  tg_sgemm::tile_ldb(k, a, b, ldb, c, accumulate);
}
void three_rows(int64_t k, const float* a, const float* b, int64_t ldb, float* c, bool accumulate) {
  tg_sgemm::tile_ldb<tg_sgemm::kNR, 3>(k, a, b, ldb, c, accumulate);
}
void transposed(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::tile_ct(k, a, b, c, accumulate);
}
void transposed_tail(int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  tg_sgemm::tile_ct<16, 5>(k, a, b, c, accumulate);
}
void bias_clamp(int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, const float* bias,
                float lo, float hi) {
  tg_sgemm::tile_bias_clamp_ldb(k, a, b, ldb, c, ldc, bias, lo, hi);
}
}  // namespace

#include "tests/unit/avx512_target_end.h"

namespace {

constexpr int64_t kMR = 8, kNR = 32;

using tilegraph::testing::random_values;

// A packed A panel (kMR x k) and a B of k rows, ldb floats apart.
struct Operands : tilegraph::testing::PanelOperands {
  Operands(int64_t k, int64_t ldb, int64_t col) : PanelOperands(kMR, k, ldb, col, 1) {}
};

TEST(SgemmAvx512Ldb, TileReadsBRowsLdbApart) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  for (int64_t k : {1, 7, 37}) {
    const Operands o(k, 100, 64);  // rows of 100 floats, the panel at column 64
    std::vector<float> c(size_t(kMR * kNR), -7.0f);
    full_tile(k, o.a.data(), o.panel(), o.ldb, c.data(), false);
    for (int64_t r = 0; r < kMR; ++r)
      for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(r * kNR + j)], o.sum(r, j), 1e-4) << k << " " << r << " " << j;
    // Accumulating adds the same sum again.
    full_tile(k, o.a.data(), o.panel(), o.ldb, c.data(), true);
    for (int64_t r = 0; r < kMR; ++r)
      for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(r * kNR + j)], 2 * o.sum(r, j), 2e-4) << k;
  }
}

TEST(SgemmAvx512Ldb, RowTailLeavesTheOtherRows) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(13, 3136, 32);
  std::vector<float> c(size_t(kMR * kNR), -7.0f);
  three_rows(o.k, o.a.data(), o.panel(), o.ldb, c.data(), false);
  for (int64_t r = 0; r < kMR; ++r)
    for (int64_t j = 0; j < kNR; ++j) {
      const double want = r < 3 ? o.sum(r, j) : -7.0;
      ASSERT_NEAR(c[size_t(r * kNR + j)], want, 1e-4) << r << " " << j;
    }
}

TEST(SgemmAvx512Ldb, BiasClampStoresOutputRowsLdcApart) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(19, 96, 32);
  const int64_t ldc = 40 + kNR;
  const std::vector<float> bias = random_values(kMR, 3);
  std::vector<float> out(size_t(kMR * ldc), 9.0f);
  bias_clamp(o.k, o.a.data(), o.panel(), o.ldb, out.data(), ldc, bias.data(), -0.5f, 0.75f);
  int clamped = 0;
  for (int64_t r = 0; r < kMR; ++r)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = out[size_t(r * ldc + j)];
      if (j >= kNR) {
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

// tile_ct on a packed B panel (b[k' * kNR + j]): Operands with ldb = kNR.
TEST(SgemmAvx512Ct, TileStoresTheTileTransposed) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(23, kNR, 0);
  std::vector<float> c(size_t(kMR * kNR), -7.0f);
  transposed(o.k, o.a.data(), o.panel(), c.data(), false);
  for (int64_t r = 0; r < kMR; ++r)
    for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(j * kMR + r)], o.sum(r, j), 1e-4) << r << " " << j;
  transposed(o.k, o.a.data(), o.panel(), c.data(), true);  // adds to the transposed tile
  for (int64_t r = 0; r < kMR; ++r)
    for (int64_t j = 0; j < kNR; ++j) ASSERT_NEAR(c[size_t(j * kMR + r)], 2 * o.sum(r, j), 2e-4) << r << " " << j;
}

TEST(SgemmAvx512Ct, TailsLeaveTheOtherRowsAndColumns) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Operands o(9, kNR, 0);
  std::vector<float> c(size_t(kMR * kNR), -7.0f);
  transposed_tail(o.k, o.a.data(), o.panel(), c.data(), false);  // rows < 5, columns < 16
  for (int64_t r = 0; r < kMR; ++r)
    for (int64_t j = 0; j < kNR; ++j) {
      const double want = r < 5 && j < 16 ? o.sum(r, j) : -7.0;
      ASSERT_NEAR(c[size_t(j * kMR + r)], want, 1e-4) << r << " " << j;
    }
}

}  // namespace

#endif  // defined(__x86_64__)
