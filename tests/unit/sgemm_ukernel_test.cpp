// Tests of the float32 GEMM micro-kernels (codegen/ukernels/sgemm_*.h): every
// variant built into this binary, on panels packed with the layout README.md
// states, against a double-precision reference GEMM. A driver packs odd shapes
// the way the generated code does (rows past M repeat the last row, columns
// past N are zero), so tails in M, N and K, k = 1 and large K are covered, and
// K split into kc blocks that accumulate onto the tile (tails, K < kc). A
// variant the CPU cannot run is skipped.
#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/ukernels/sgemm_scalar.h"
#include "tests/unit/sgemm_variants/sgemm_variant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

void PrintTo(const SGemmVariantInfo& v, std::ostream* os) { *os << v.name << " (" << v.mr << "x" << v.nr << ")"; }

namespace {

SGemmVariantInfo scalar_variant() {
  namespace v = tg_sgemm::scalar;
  return {v::kVariant, v::kMR, v::kNR, v::tile, v::tile_bias_clamp, [] { return true; }, v::kLanes, v::tile<v::kLanes>,
          v::tile<v::kNR, 1>, v::tile<v::kNR, v::kMR - 1>, v::pack_a_rows_from, v::pack_b_columns};
}

std::vector<SGemmVariantInfo> linked_variants() {
  std::vector<SGemmVariantInfo> variants = {scalar_variant()};
  if (sgemm_avx2_variant) variants.push_back(sgemm_avx2_variant());
  if (sgemm_avx512_variant) variants.push_back(sgemm_avx512_variant());
  return variants;
}

// Floats at a 64-byte aligned address, as the contract promises for panels.
class AlignedFloats {
 public:
  explicit AlignedFloats(size_t n) : storage_(n + 16) {
    void* p = storage_.data();
    size_t space = storage_.size() * sizeof(float);
    data_ = static_cast<float*>(std::align(64, n * sizeof(float), p, space));
  }
  float* data() { return data_; }

 private:
  std::vector<float> storage_;
  float* data_;
};

struct Problem {
  int64_t m, n, k;
  std::vector<float> a;  // m x k, row-major
  std::vector<float> b;  // k x n, row-major
};

Problem random_problem(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Problem p{m, n, k, std::vector<float>(m * k), std::vector<float>(k * n)};
  for (float& x : p.a) x = dist(rng);
  for (float& x : p.b) x = dist(rng);
  return p;
}

// C = A * B through the micro-kernel, blocked and padded as the generated code
// does it: K in blocks of kc (0: one block), the first block starting the
// tile, the later ones accumulating onto it.
std::vector<float> ukernel_gemm(const SGemmVariantInfo& v, const Problem& p, int64_t kc = 0) {
  std::vector<float> c(p.m * p.n, 0.0f);
  AlignedFloats a_panel(static_cast<size_t>(std::max<int64_t>(p.k, 1) * v.mr));
  AlignedFloats b_panel(static_cast<size_t>(std::max<int64_t>(p.k, 1) * v.nr));
  std::vector<float> tile(v.mr * v.nr, NAN);
  for (int64_t n0 = 0; n0 < p.n; n0 += v.nr) {
    for (int64_t kk = 0; kk < p.k; ++kk)
      for (int j = 0; j < v.nr; ++j) b_panel.data()[kk * v.nr + j] = n0 + j < p.n ? p.b[kk * p.n + n0 + j] : 0.0f;
    for (int64_t m0 = 0; m0 < p.m; m0 += v.mr) {
      for (int64_t kk = 0; kk < p.k; ++kk)
        for (int r = 0; r < v.mr; ++r)
          a_panel.data()[kk * v.mr + r] = p.a[std::min(m0 + r, p.m - 1) * p.k + kk];
      if (kc <= 0 || p.k == 0) {
        v.tile(p.k, a_panel.data(), b_panel.data(), tile.data(), false, nullptr, 0);
      } else {
        for (int64_t k0 = 0; k0 < p.k; k0 += kc)
          v.tile(std::min(kc, p.k - k0), a_panel.data() + k0 * v.mr, b_panel.data() + k0 * v.nr, tile.data(), k0 > 0,
                 nullptr, 0);
      }
      for (int r = 0; r < v.mr && m0 + r < p.m; ++r)
        for (int j = 0; j < v.nr && n0 + j < p.n; ++j) c[(m0 + r) * p.n + n0 + j] = tile[r * v.nr + j];
    }
  }
  return c;
}

// Every element within float rounding of the double-precision sum: a bound
// of K roundings of the largest partial sum (|a||b| summed).
void expect_matches_reference(const SGemmVariantInfo& v, const Problem& p, int64_t kc = 0) {
  const std::vector<float> c = ukernel_gemm(v, p, kc);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double exact = 0, magnitude = 0;
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const double prod = static_cast<double>(p.a[i * p.k + kk]) * p.b[kk * p.n + j];
        exact += prod;
        magnitude += std::fabs(prod);
      }
      const double tolerance = 1e-6 + magnitude * 2e-7 * static_cast<double>(p.k + 1);
      ASSERT_NEAR(c[i * p.n + j], exact, tolerance)
          << v.name << " m=" << p.m << " n=" << p.n << " k=" << p.k << " kc=" << kc << " at (" << i << ", " << j << ")";
    }
}

class SGemmVariantTest : public testing::TestWithParam<SGemmVariantInfo> {
 protected:
  void SetUp() override {
    if (!GetParam().supported()) GTEST_SKIP() << GetParam().name << " is not supported by this CPU";
  }
};

TEST_P(SGemmVariantTest, OneTileEveryK) {
  const SGemmVariantInfo& v = GetParam();
  for (int64_t k : {1, 2, 3, 7, 8, 16, 17, 100, 769})
    expect_matches_reference(v, random_problem(v.mr, v.nr, k, static_cast<uint32_t>(k)));
}

TEST_P(SGemmVariantTest, TailsInMAndN) {
  const SGemmVariantInfo& v = GetParam();
  for (int64_t m : {1, v.mr - 1, v.mr + 1, 2 * v.mr + 3})
    for (int64_t n : {1, v.nr - 1, v.nr + 5, 3 * v.nr - 1})
      expect_matches_reference(v, random_problem(m, n, 13, static_cast<uint32_t>(m * 1000 + n)));
}

TEST_P(SGemmVariantTest, LargeOddShape) {
  const SGemmVariantInfo& v = GetParam();
  expect_matches_reference(v, random_problem(67, 99, 1153, 7));
  expect_matches_reference(v, random_problem(67, 99, 1153, 7), 192);
}

TEST_P(SGemmVariantTest, KZeroGivesZeros) {
  const SGemmVariantInfo& v = GetParam();
  std::vector<float> tile(v.mr * v.nr, NAN);
  AlignedFloats panel(16);
  v.tile(0, panel.data(), panel.data(), tile.data(), false, nullptr, 0);
  for (float x : tile) EXPECT_EQ(x, 0.0f);
}

TEST_P(SGemmVariantTest, AccumulateAddsOntoC) {
  // accumulate: the tile starts at c's values (here i + 0.5); with k = 0 it
  // keeps them.
  const SGemmVariantInfo& v = GetParam();
  const Problem p = random_problem(v.mr, v.nr, 5, 11);
  AlignedFloats a(static_cast<size_t>(5 * v.mr)), b(static_cast<size_t>(5 * v.nr));
  for (int64_t kk = 0; kk < 5; ++kk) {
    for (int r = 0; r < v.mr; ++r) a.data()[kk * v.mr + r] = p.a[r * 5 + kk];
    for (int j = 0; j < v.nr; ++j) b.data()[kk * v.nr + j] = p.b[kk * v.nr + j];
  }
  std::vector<float> tile(v.mr * v.nr), start(v.mr * v.nr);
  for (size_t i = 0; i < start.size(); ++i) start[i] = static_cast<float>(i) + 0.5f;
  tile = start;
  v.tile(0, a.data(), b.data(), tile.data(), true, nullptr, 0);
  EXPECT_EQ(tile, start);
  v.tile(5, a.data(), b.data(), tile.data(), true, nullptr, 0);
  for (int r = 0; r < v.mr; ++r)
    for (int j = 0; j < v.nr; ++j) {
      double want = start[r * v.nr + j];
      for (int64_t kk = 0; kk < 5; ++kk) want += static_cast<double>(p.a[r * 5 + kk]) * p.b[kk * v.nr + j];
      EXPECT_NEAR(tile[r * v.nr + j], want, 1e-4) << v.name << " at (" << r << ", " << j << ")";
    }
}

TEST_P(SGemmVariantTest, PrefetchHintLeavesTheTileUnchanged) {
  // `next` is a hint: with fewer 64-byte lines than k steps, more (spread
  // one per step, the rest after the loop), a partial line or none, the
  // tile is bit for bit the one without it.
  const SGemmVariantInfo& v = GetParam();
  const int64_t k = 37;
  const Problem p = random_problem(v.mr, v.nr, k, 13);
  AlignedFloats a(static_cast<size_t>(k * v.mr)), b(static_cast<size_t>(k * v.nr)), next(100 * 16);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int r = 0; r < v.mr; ++r) a.data()[kk * v.mr + r] = p.a[r * k + kk];
    for (int j = 0; j < v.nr; ++j) b.data()[kk * v.nr + j] = p.b[kk * v.nr + j];
  }
  std::vector<float> want(v.mr * v.nr), tile(v.mr * v.nr);
  v.tile(k, a.data(), b.data(), want.data(), false, nullptr, 0);
  EXPECT_NE(want, std::vector<float>(v.mr * v.nr, 0.0f));
  for (const int64_t floats : {int64_t{16}, int64_t{5 * 16}, int64_t{100 * 16}, int64_t{7}, int64_t{0}}) {
    std::fill(tile.begin(), tile.end(), NAN);
    v.tile(k, a.data(), b.data(), tile.data(), false, next.data(), floats);
    EXPECT_EQ(tile, want) << v.name << ", " << floats << " floats to prefetch";
  }
}

// The problem's k rows [k0, k0 + count).
Problem k_rows(const Problem& p, int64_t k0, int64_t count) {
  Problem q{p.m, p.n, count, std::vector<float>(p.m * count), std::vector<float>(p.b.begin() + k0 * p.n,
                                                                                  p.b.begin() + (k0 + count) * p.n)};
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t kk = 0; kk < count; ++kk) q.a[i * count + kk] = p.a[i * p.k + k0 + kk];
  return q;
}

TEST_P(SGemmVariantTest, KBlocksAddEachBlocksSumOntoC) {
  // A later block of kc sums its k rows from zero and adds that sum to the
  // stored float: any split of K (tails, K < kc, kc = 1) gives, bit for bit,
  // c = ((block 1) + block 2) + ..., each block the kernel's one-block sum.
  const SGemmVariantInfo& v = GetParam();
  for (int64_t k : {1, 13, 100, 769}) {
    const Problem p = random_problem(v.mr + 3, 2 * v.nr + 1, k, static_cast<uint32_t>(100 + k));
    for (int64_t kc : {1, 3, 7, 64, 192, 1000}) {
      std::vector<float> want(p.m * p.n, 0.0f);
      for (int64_t k0 = 0; k0 < k; k0 += kc) {
        const std::vector<float> block = ukernel_gemm(v, k_rows(p, k0, std::min(kc, k - k0)));
        for (size_t i = 0; i < want.size(); ++i) want[i] = k0 == 0 ? block[i] : want[i] + block[i];
      }
      ASSERT_EQ(ukernel_gemm(v, p, kc), want) << v.name << " k=" << k << " kc=" << kc;
    }
    expect_matches_reference(v, p);
  }
}

TEST_P(SGemmVariantTest, KBlocksRoundLessThanOneChain) {
  // Blocked, a chain of FMAs is kc long, not K: over 2048 products of
  // [-1, 1) values, blocks of 128 leave a smaller RMS error against the
  // double sum than one chain (about 2.5x smaller on this data).
  const SGemmVariantInfo& v = GetParam();
  const Problem p = random_problem(2 * v.mr, 2 * v.nr, 2048, 77);
  auto rms_error = [&](const std::vector<float>& c) {
    double sum = 0;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double exact = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) exact += static_cast<double>(p.a[i * p.k + kk]) * p.b[kk * p.n + j];
        sum += (c[i * p.n + j] - exact) * (c[i * p.n + j] - exact);
      }
    return std::sqrt(sum / static_cast<double>(p.m * p.n));
  };
  const double chain = rms_error(ukernel_gemm(v, p)), blocked = rms_error(ukernel_gemm(v, p, 128));
  EXPECT_LT(blocked, 0.6 * chain) << v.name << ": one chain " << chain << ", blocks of 128 " << blocked;
}

TEST_P(SGemmVariantTest, ExactOnSmallIntegers) {
  // Integer values: every product and partial sum is exact in float32, so
  // the kernel must agree with the reference bit for bit.
  const SGemmVariantInfo& v = GetParam();
  Problem p = random_problem(v.mr + 2, v.nr + 3, 41, 3);
  for (float& x : p.a) x = std::round(x * 8);
  for (float& x : p.b) x = std::round(x * 8);
  const std::vector<float> c = ukernel_gemm(v, p);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      float exact = 0;
      for (int64_t kk = 0; kk < p.k; ++kk) exact += p.a[i * p.k + kk] * p.b[kk * p.n + j];
      ASSERT_EQ(c[i * p.n + j], exact) << v.name << " at (" << i << ", " << j << ")";
    }
}

using TileFn = void (*)(int64_t k, const float* a, const float* b, float* c, bool accumulate, const float* next,
                       int64_t next_floats);

// `partial` (a tile<...> on part of the C tile) against tile(): bit for bit
// where computes(r, j), elsewhere c as it was; from zero and accumulating,
// k = 0 (keeps c) to 100, with a prefetch hint.
void expect_part_of_the_tile(const SGemmVariantInfo& v, TileFn partial, const std::function<bool(int, int)>& computes,
                             uint32_t seed, const std::string& what) {
  for (const int64_t k : {int64_t{0}, int64_t{1}, int64_t{13}, int64_t{100}}) {
    for (const bool accumulate : {false, true}) {
      const Problem p = random_problem(v.mr, v.nr, std::max<int64_t>(k, 1), static_cast<uint32_t>(seed + k));
      AlignedFloats a(static_cast<size_t>(std::max<int64_t>(k, 1) * v.mr)),
          b(static_cast<size_t>(std::max<int64_t>(k, 1) * v.nr));
      for (int64_t kk = 0; kk < k; ++kk) {
        for (int r = 0; r < v.mr; ++r) a.data()[kk * v.mr + r] = p.a[r * k + kk];
        for (int j = 0; j < v.nr; ++j) b.data()[kk * v.nr + j] = p.b[kk * v.nr + j];
      }
      std::vector<float> start(static_cast<size_t>(v.mr * v.nr));
      for (size_t i = 0; i < start.size(); ++i) start[i] = static_cast<float>(i % 7) - 2.5f;
      std::vector<float> want = start, got = start;
      v.tile(k, a.data(), b.data(), want.data(), accumulate, nullptr, 0);
      partial(k, a.data(), b.data(), got.data(), accumulate, b.data(), 16);
      for (int r = 0; r < v.mr; ++r)
        for (int j = 0; j < v.nr; ++j) {
          const size_t at = static_cast<size_t>(r * v.nr + j);
          ASSERT_EQ(got[at], computes(r, j) ? want[at] : start[at])
              << v.name << " " << what << " k=" << k << " accumulate=" << accumulate << " at (" << r << ", " << j << ")";
        }
    }
  }
}

// tile<kLanes> (the last column panel of an N whose tail fits one vector)
// gives tile()'s first kLanes columns bit for bit, from zero and
// accumulating (k = 0 keeps c), with the same panel layout and c stride,
// and leaves c's other columns as they were.
TEST_P(SGemmVariantTest, NarrowTileIsTheTilesFirstColumns) {
  const SGemmVariantInfo& v = GetParam();
  ASSERT_GT(v.lanes, 0);
  ASSERT_LT(v.lanes, v.nr);
  ASSERT_EQ(v.nr % v.lanes, 0);
  expect_part_of_the_tile(v, v.tile_lanes, [&](int, int j) { return j < v.lanes; }, 200, "tile<kLanes>");
}

// tile<kNR, kRows> (the last row panel of an M tail) gives tile()'s first
// kRows rows bit for bit, from zero and accumulating (k = 0 keeps c), and
// leaves c's other rows as they were: one row and all rows but one.
TEST_P(SGemmVariantTest, RowTailTileIsTheTilesFirstRows) {
  const SGemmVariantInfo& v = GetParam();
  ASSERT_NE(v.tile_one_row, nullptr);
  ASSERT_NE(v.tile_all_rows_but_one, nullptr);
  expect_part_of_the_tile(v, v.tile_one_row, [](int r, int) { return r < 1; }, 400, "tile<kNR, 1>");
  expect_part_of_the_tile(v, v.tile_all_rows_but_one, [&](int r, int) { return r < v.mr - 1; }, 500,
                          "tile<kNR, kMR - 1>");
}

// pack_a_rows_from packs kMR rows, each contiguous along k, into tile()'s A
// layout a[k' * kMR + r], for k below, at and above its 8 (4) k blocks, with
// rows that overlap and repeat (a panel's padding rows repeat M's last) and
// unaligned row starts; it writes nothing past a[k * kMR], and a tile() on
// what it packed equals a tile() on the reference packing bit for bit.
TEST_P(SGemmVariantTest, PackARowsIsTheTransposeOfItsRows) {
  const SGemmVariantInfo& v = GetParam();
  ASSERT_NE(v.pack_a_rows, nullptr);
  constexpr float kGuard = -7.25f;
  for (const int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{4}, int64_t{7}, int64_t{8}, int64_t{9},
                          int64_t{16}, int64_t{37}, int64_t{256}, int64_t{259}}) {
    const int64_t ld = k + 3;  // odd row stride: rows start unaligned
    std::vector<float> source(static_cast<size_t>(ld * v.mr + 1));
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i) * 0.5f - 100.0f;
    std::vector<const float*> rows;
    for (int r = 0; r < v.mr; ++r) rows.push_back(source.data() + 1 + std::min(r, v.mr - 2) * ld);  // last row repeats
    AlignedFloats a(static_cast<size_t>((k + 4) * v.mr + 16));
    std::fill(a.data(), a.data() + (k + 4) * v.mr + 16, kGuard);
    v.pack_a_rows(k, a.data(), rows.data());
    for (int64_t kk = 0; kk < k; ++kk)
      for (int r = 0; r < v.mr; ++r)
        ASSERT_EQ(a.data()[kk * v.mr + r], rows[static_cast<size_t>(r)][kk]) << v.name << " k=" << k << " at (" << r << ", " << kk << ")";
    for (int64_t i = k * v.mr; i < (k + 4) * v.mr + 16; ++i) ASSERT_EQ(a.data()[i], kGuard) << v.name << " k=" << k << " wrote " << i;
    if (k == 0) continue;
    const Problem p = random_problem(v.mr, v.nr, k, static_cast<uint32_t>(300 + k));
    AlignedFloats b(static_cast<size_t>(k * v.nr));
    std::copy(p.b.begin(), p.b.end(), b.data());
    std::vector<float> got(static_cast<size_t>(v.mr * v.nr)), want(got.size());
    v.tile(k, a.data(), b.data(), got.data(), false, nullptr, 0);
    AlignedFloats reference(static_cast<size_t>(k * v.mr));
    for (int64_t kk = 0; kk < k; ++kk)
      for (int r = 0; r < v.mr; ++r) reference.data()[kk * v.mr + r] = rows[static_cast<size_t>(r)][kk];
    v.tile(k, reference.data(), b.data(), want.data(), false, nullptr, 0);
    ASSERT_EQ(got, want) << v.name << " k=" << k;
  }
}

// pack_b_columns packs kNR columns, each contiguous along k and ld floats
// apart, into tile()'s B layout b[k' * kNR + j], for k below, at and above
// its transpose blocks, with unaligned columns, N's tail panel (cols < kNR:
// the columns from cols on repeat column cols - 1) and nothing written past
// b[k * kNR]; a tile() on what it packed equals one on the reference packing.
TEST_P(SGemmVariantTest, PackBColumnsIsTheTransposeOfItsColumns) {
  const SGemmVariantInfo& v = GetParam();
  ASSERT_NE(v.pack_b_columns, nullptr);
  constexpr float kGuard = -7.25f;
  for (const int64_t k : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{16},
                          int64_t{37}, int64_t{256}, int64_t{259}})
    for (const int64_t cols : {int64_t{v.nr}, int64_t{1}, int64_t{v.nr - 3}}) {
      const int64_t ld = k + 5;  // odd column stride: columns start unaligned
      std::vector<float> source(static_cast<size_t>(ld * v.nr + 1));
      for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i) * 0.25f - 300.0f;
      const float* first = source.data() + 1;
      AlignedFloats b(static_cast<size_t>((k + 4) * v.nr));
      std::fill(b.data(), b.data() + (k + 4) * v.nr, kGuard);
      v.pack_b_columns(k, b.data(), first, ld, cols);
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < v.nr; ++j)
          ASSERT_EQ(b.data()[kk * v.nr + j], first[std::min(j, cols - 1) * ld + kk])
              << v.name << " k=" << k << " cols=" << cols << " at (" << kk << ", " << j << ")";
      for (int64_t i = k * v.nr; i < (k + 4) * v.nr; ++i)
        ASSERT_EQ(b.data()[i], kGuard) << v.name << " k=" << k << " cols=" << cols << " wrote " << i;
      const Problem p = random_problem(v.mr, v.nr, k, static_cast<uint32_t>(700 + k));
      AlignedFloats a(static_cast<size_t>(k * v.mr));
      for (int64_t kk = 0; kk < k; ++kk)
        for (int r = 0; r < v.mr; ++r) a.data()[kk * v.mr + r] = p.a[static_cast<size_t>(r * k + kk)];
      AlignedFloats reference(static_cast<size_t>(k * v.nr));
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < v.nr; ++j) reference.data()[kk * v.nr + j] = first[std::min(j, cols - 1) * ld + kk];
      std::vector<float> got(static_cast<size_t>(v.mr * v.nr)), want(got.size());
      v.tile(k, a.data(), b.data(), got.data(), false, nullptr, 0);
      v.tile(k, a.data(), reference.data(), want.data(), false, nullptr, 0);
      ASSERT_EQ(got, want) << v.name << " k=" << k << " cols=" << cols;
    }
}

// The generated code calls pack_a_rows with the kMR row pointers as
// arguments; it is pack_a_rows_from on them.
TEST(SGemmPackARows, ArgumentFormIsTheArrayForm) {
  namespace v = tg_sgemm::scalar;
  const float r0[] = {1, 2, 3}, r1[] = {4, 5, 6}, r2[] = {7, 8, 9};
  float a[3 * v::kMR] = {};
  v::pack_a_rows(3, a, r0, r1, r2, r2);
  const std::vector<float> want = {1, 4, 7, 7, 2, 5, 8, 8, 3, 6, 9, 9};
  EXPECT_EQ(std::vector<float>(a, a + 12), want);
}

// tile_bias_clamp stores min(max(S + bias[r], lo), hi) into rows ldc apart,
// bit for bit what tile() and the generated epilogue (x < lo ? lo : x, then
// hi < x ? hi : x) give: with ReLU, Clip and no bounds, a NaN bias row
// staying NaN, a -0 bias, and the floats between the rows untouched.
TEST_P(SGemmVariantTest, BiasClampIsTheTileAndTheEpilogue) {
  const SGemmVariantInfo& v = GetParam();
  const int64_t k = 19, ldc = v.nr + 5;
  const Problem p = random_problem(v.mr, v.nr, k, 11);
  AlignedFloats a_panel(static_cast<size_t>(k * v.mr)), b_panel(static_cast<size_t>(k * v.nr));
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int r = 0; r < v.mr; ++r) a_panel.data()[kk * v.mr + r] = p.a[r * k + kk] * 4;
    for (int j = 0; j < v.nr; ++j) b_panel.data()[kk * v.nr + j] = p.b[kk * v.nr + j];
  }
  std::vector<float> tile(static_cast<size_t>(v.mr * v.nr));
  v.tile(k, a_panel.data(), b_panel.data(), tile.data(), false, nullptr, 0);
  std::vector<float> bias(static_cast<size_t>(v.mr));
  for (int r = 0; r < v.mr; ++r) bias[static_cast<size_t>(r)] = 0.25f * static_cast<float>(r - 3);
  bias[1] = NAN;
  bias[2] = -0.0f;
  const float bounds[][2] = {{0.0f, 6.0f}, {0.0f, INFINITY}, {-INFINITY, INFINITY}, {-1.5f, 0.5f}};
  for (const auto& [lo, hi] : bounds) {
    std::vector<float> out(static_cast<size_t>(v.mr * ldc), 42.0f);
    v.tile_bias_clamp(k, a_panel.data(), b_panel.data(), out.data(), ldc, bias.data(), lo, hi);
    int clamped = 0;
    for (int r = 0; r < v.mr; ++r)
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = out[static_cast<size_t>(r * ldc + j)];
        if (j >= v.nr) {
          ASSERT_EQ(got, 42.0f) << v.name << " wrote past its row at (" << r << ", " << j << ")";
          continue;
        }
        float x = tile[static_cast<size_t>(r * v.nr + j)] + bias[static_cast<size_t>(r)];
        x = x < lo ? lo : x;
        x = hi < x ? hi : x;
        if (std::isnan(x)) {
          ASSERT_TRUE(std::isnan(got)) << v.name << " lo=" << lo << " hi=" << hi << " at (" << r << ", " << j << ")";
          continue;
        }
        clamped += x == lo || x == hi;
        ASSERT_EQ(got, x) << v.name << " lo=" << lo << " hi=" << hi << " at (" << r << ", " << j << ")";
        ASSERT_EQ(std::signbit(got), std::signbit(x)) << v.name << " at (" << r << ", " << j << ")";
      }
    if (std::isfinite(lo)) EXPECT_GT(clamped, 0) << "the bounds " << lo << ", " << hi << " clamp nothing";
  }
}

TEST_P(SGemmVariantTest, CompilerTableAgreesWithTheHeader) {
  // The packing loops are generated for the compiler's tile shape
  // (int_gemm_variant.cpp); the header must have the same.
  const SGemmVariantInfo& v = GetParam();
  const tilegraph::codegen::FloatGemmVariant table = tilegraph::codegen::float_gemm_variant_named(v.name);
  EXPECT_EQ(table.mr, v.mr) << v.name;
  EXPECT_EQ(table.nr, v.nr) << v.name;
  EXPECT_EQ(table.lanes, v.lanes) << v.name;
}

INSTANTIATE_TEST_SUITE_P(Linked, SGemmVariantTest, testing::ValuesIn(linked_variants()),
                         [](const testing::TestParamInfo<SGemmVariantInfo>& info) { return std::string(info.param.name); });

#if defined(__x86_64__)
TEST(SGemmVariants, X86VariantsAreLinkedIn) {
  EXPECT_TRUE(sgemm_avx2_variant != nullptr) << "sgemm_variants/sgemm_avx2_variant.cpp is not linked in";
  EXPECT_TRUE(sgemm_avx512_variant != nullptr) << "sgemm_variants/sgemm_avx512_variant.cpp is not linked in";
}
#endif

}  // namespace
