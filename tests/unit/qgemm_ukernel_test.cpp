// Tests of the integer GEMM micro-kernels (codegen/ukernels/qgemm_*.h): every
// variant built into this binary, on panels packed with the layout README.md
// states, against a plain int64 reference; exactly, including the extreme
// values a saturating 16-bit sum would get wrong. A variant the CPU cannot run
// is skipped.
#include "codegen/ukernels/qgemm_scalar.h"
#include "tests/unit/qgemm_variants/qgemm_variant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

// gtest prints test parameters with this (it is found next to the struct).
void PrintTo(const QGemmVariantInfo& v, std::ostream* os) {
  *os << v.name << " (" << v.mr << "x" << v.nr << ", kKU " << v.ku << ", A "
      << (v.a_bytes == 2 ? "int16" : v.a_unsigned ? "uint8" : "int8") << ")";
}

namespace {

QGemmVariantInfo scalar_variant() {
  namespace v = tg_qgemm::scalar;
  return {v::kVariant, v::kMR, v::kNR, v::kKU, v::kAUnsigned, v::tile, [] { return true; }, v::tile_accumulate,
          0, v::kABytes};
}

std::vector<QGemmVariantInfo> linked_variants() {
  std::vector<QGemmVariantInfo> variants = {scalar_variant()};
  if (qgemm_avx2_variant) variants.push_back(qgemm_avx2_variant());
  if (qgemm_avx512vnni_variant) variants.push_back(qgemm_avx512vnni_variant());
  if (qgemm_amx_variant) variants.push_back(qgemm_amx_variant());
  return variants;
}

// A row-major matrix of small integers (int8 or uint8 values).
struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int> values;
  int at(int64_t r, int64_t c) const { return values[r * cols + c]; }
};

Matrix make_matrix(int64_t rows, int64_t cols, const std::function<int(int64_t, int64_t)>& value) {
  Matrix m{rows, cols, std::vector<int>(rows * cols)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m.values[r * cols + c] = value(r, c);
  return m;
}

Matrix random_matrix(int64_t rows, int64_t cols, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(lo, hi);
  return make_matrix(rows, cols, [&](int64_t, int64_t) { return dist(rng); });
}

// Bytes at a 64-byte aligned address, as the contract promises for panels.
class AlignedBytes {
 public:
  explicit AlignedBytes(size_t size) : storage_(size + 64) {
    void* p = storage_.data();
    size_t space = storage_.size();
    data_ = static_cast<uint8_t*>(std::align(64, size, p, space));
  }
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }

 private:
  std::vector<uint8_t> storage_;
  uint8_t* data_;
};

// A (mr x K, K a multiple of ku): A(r, k) at a[((k / ku) * mr + r) * ku + k % ku],
// elements of v.a_bytes bytes (bytes, or int16).
AlignedBytes pack_a(const Matrix& a, const QGemmVariantInfo& v) {
  AlignedBytes packed(a.rows * a.cols * v.a_bytes);
  auto* wide = reinterpret_cast<int16_t*>(packed.data());
  for (int64_t r = 0; r < v.mr; ++r)
    for (int64_t k = 0; k < a.cols; ++k) {
      const int64_t at = ((k / v.ku) * v.mr + r) * v.ku + k % v.ku;
      if (v.a_bytes == 2)
        wide[at] = static_cast<int16_t>(a.at(r, k));
      else
        packed.data()[at] = static_cast<uint8_t>(a.at(r, k));
    }
  return packed;
}

// B (K x nr, K a multiple of ku): B(k, j) at b[((k / ku) * nr + j) * ku + k % ku],
// or with runs of kb bytes per column (AMX):
// b[(k / ku) * nr * ku + ((k % ku) / kb * nr + j) * kb + k % kb].
AlignedBytes pack_b(const Matrix& b, int nr, int ku, int kb = 0) {
  if (kb <= 0) kb = ku;
  AlignedBytes packed(b.rows * b.cols);
  for (int64_t k = 0; k < b.rows; ++k)
    for (int64_t j = 0; j < nr; ++j)
      packed.data()[(k / ku) * nr * ku + ((k % ku) / kb * nr + j) * kb + k % kb] = static_cast<uint8_t>(b.at(k, j));
  return packed;
}

std::vector<int64_t> reference_product(const Matrix& a, const Matrix& b) {
  std::vector<int64_t> c(a.rows * b.cols, 0);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t k = 0; k < a.cols; ++k)
      for (int64_t j = 0; j < b.cols; ++j) c[r * b.cols + j] += int64_t{a.at(r, k)} * b.at(k, j);
  return c;
}

// The A values a variant takes: int8, or uint8 where kAUnsigned; both where A
// is int16.
int a_min(const QGemmVariantInfo& v) { return v.a_unsigned && v.a_bytes == 1 ? 0 : -128; }
int a_max(const QGemmVariantInfo& v) { return v.a_unsigned || v.a_bytes == 2 ? 255 : 127; }
// The largest-magnitude product with B's -128: uint8's 255 where A takes it.
int a_big(const QGemmVariantInfo& v) { return a_max(v) == 255 ? 255 : -128; }

constexpr int32_t kUnwritten = 0x5a5a5a5a;  // c before the call, and its guards
constexpr int kGuard = 16;                  // int32 checked on each side of c

// Runs v.tile on a (mr x K) and b (K x nr) with c at `c_offset` int32 past a
// 64-byte boundary, checks that nothing around c changed, and returns c.
std::vector<int32_t> run_tile(const QGemmVariantInfo& v, const Matrix& a, const Matrix& b,
                              int c_offset = 0) {
  const AlignedBytes pa = pack_a(a, v);
  const AlignedBytes pb = pack_b(b, v.nr, v.ku, v.kb);
  const int64_t tile_size = int64_t{v.mr} * v.nr;
  AlignedBytes c_bytes((kGuard + c_offset + tile_size + kGuard) * sizeof(int32_t));
  int32_t* buffer = reinterpret_cast<int32_t*>(c_bytes.data());
  const int64_t buffer_size = kGuard + c_offset + tile_size + kGuard;
  for (int64_t i = 0; i < buffer_size; ++i) buffer[i] = kUnwritten;
  int32_t* c = buffer + kGuard + c_offset;

  v.tile(a.cols / v.ku, pa.data(), reinterpret_cast<const int8_t*>(pb.data()), c);

  for (int64_t i = 0; i < kGuard + c_offset; ++i)
    EXPECT_EQ(buffer[i], kUnwritten) << "tile wrote " << (kGuard + c_offset - i) << " int32 before c";
  for (int64_t i = 0; i < kGuard; ++i)
    EXPECT_EQ(c[tile_size + i], kUnwritten) << "tile wrote c[" << tile_size + i << "]";
  return std::vector<int32_t>(c, c + tile_size);
}

// Every element of c equals the int64 reference (which must fit in int32).
void expect_exact(const QGemmVariantInfo& v, const Matrix& a, const Matrix& b,
                  const std::vector<int32_t>& c) {
  const std::vector<int64_t> expected = reference_product(a, b);
  int mismatches = 0;
  for (int r = 0; r < v.mr; ++r)
    for (int j = 0; j < v.nr; ++j) {
      const int64_t want = expected[r * v.nr + j];
      ASSERT_GE(want, INT32_MIN) << "test bug: reference overflows int32";
      ASSERT_LE(want, INT32_MAX) << "test bug: reference overflows int32";
      if (c[r * v.nr + j] != want && ++mismatches <= 8)
        ADD_FAILURE() << v.name << " K=" << a.cols << ": c[" << r << "][" << j
                      << "] = " << c[r * v.nr + j] << ", expected " << want;
    }
  EXPECT_EQ(mismatches, 0) << v.name << " K=" << a.cols;
}

class QGemmTileTest : public ::testing::TestWithParam<QGemmVariantInfo> {
 protected:
  void SetUp() override {
    if (!GetParam().supported())
      GTEST_SKIP() << GetParam().name << ": this CPU lacks the instructions it needs";
  }
};

TEST_P(QGemmTileTest, ParametersAreUsable) {
  const QGemmVariantInfo& v = GetParam();
  EXPECT_GT(v.mr, 0);
  EXPECT_GT(v.nr, 0);
  EXPECT_GT(v.ku, 0);
}

TEST_P(QGemmTileTest, RandomFullRangeMatchesReference) {
  const QGemmVariantInfo& v = GetParam();
  std::mt19937 rng(1234);
  for (int64_t k_groups : {1, 2, 7, 192, 256}) {
    const int64_t k = k_groups * v.ku;
    const Matrix a = random_matrix(v.mr, k, a_min(v), a_max(v), rng);
    const Matrix b = random_matrix(k, v.nr, -128, 127, rng);
    expect_exact(v, a, b, run_tile(v, a, b));
  }
}

// K cut into kc blocks as the generated code does (lower_int_gemm_kernel.cpp):
// tile on the first block, tile_accumulate on the others at their offsets in
// the same packed panels, with a short last block; the sum is exact.
TEST_P(QGemmTileTest, KcBlocksAccumulateToTheWholeK) {
  const QGemmVariantInfo& v = GetParam();
  ASSERT_NE(v.tile_accumulate, nullptr);
  std::mt19937 rng(4321);
  const int64_t k_groups = 37;
  const Matrix a = random_matrix(v.mr, k_groups * v.ku, a_min(v), a_max(v), rng);
  const Matrix b = random_matrix(k_groups * v.ku, v.nr, -128, 127, rng);
  const AlignedBytes pa = pack_a(a, v);
  const AlignedBytes pb = pack_b(b, v.nr, v.ku, v.kb);
  for (int64_t kc : {1, 5, 16, 36}) {
    std::vector<int32_t> c(static_cast<size_t>(v.mr * v.nr), kUnwritten);
    for (int64_t g0 = 0; g0 < k_groups; g0 += kc) {
      const int64_t groups = std::min(kc, k_groups - g0);
      const uint8_t* a_block = pa.data() + g0 * v.mr * v.ku * v.a_bytes;
      const int8_t* b_block = reinterpret_cast<const int8_t*>(pb.data()) + g0 * v.nr * v.ku;
      (g0 == 0 ? v.tile : v.tile_accumulate)(groups, a_block, b_block, c.data());
    }
    SCOPED_TRACE("kc = " + std::to_string(kc));
    expect_exact(v, a, b, c);
  }
}

// tile_accumulate adds to what c holds (here not a previous block's sums).
TEST_P(QGemmTileTest, TileAccumulateAddsToC) {
  const QGemmVariantInfo& v = GetParam();
  std::mt19937 rng(77);
  const int64_t k = 9 * v.ku;
  const Matrix a = random_matrix(v.mr, k, a_min(v), a_max(v), rng);
  const Matrix b = random_matrix(k, v.nr, -128, 127, rng);
  const AlignedBytes pa = pack_a(a, v);
  const AlignedBytes pb = pack_b(b, v.nr, v.ku, v.kb);
  std::vector<int32_t> c(static_cast<size_t>(v.mr * v.nr));
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<int32_t>(i * 1000) - 70000;
  v.tile_accumulate(k / v.ku, pa.data(), reinterpret_cast<const int8_t*>(pb.data()), c.data());
  const std::vector<int64_t> product = reference_product(a, b);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(c[i], product[i] + static_cast<int64_t>(i * 1000) - 70000) << v.name << " c[" << i << "]";
}

TEST_P(QGemmTileTest, CNeedsNoAlignment) {
  const QGemmVariantInfo& v = GetParam();
  std::mt19937 rng(99);
  const int64_t k = 24 * v.ku;
  const Matrix a = random_matrix(v.mr, k, a_min(v), a_max(v), rng);
  const Matrix b = random_matrix(k, v.nr, -128, 127, rng);
  for (int offset : {1, 3, 5}) expect_exact(v, a, b, run_tile(v, a, b, offset));
}

TEST_P(QGemmTileTest, EachKAndEachPositionCounts) {
  // One nonzero product at a time: catches a swapped k within a group, a row
  // or column read from the wrong place, or a group skipped.
  const QGemmVariantInfo& v = GetParam();
  const int64_t k = 3 * v.ku;
  for (int64_t kk = 0; kk < k; ++kk) {
    const Matrix a =
        make_matrix(v.mr, k, [&](int64_t r, int64_t c) { return c == kk ? int(r) + 1 : 0; });
    const Matrix b =
        make_matrix(k, v.nr, [&](int64_t r, int64_t c) { return r == kk ? int(c % 100) - 50 : 0; });
    expect_exact(v, a, b, run_tile(v, a, b));
  }
}

// Extreme operands over a long K: every 4-product group and every pair sum is
// as large as it gets (-128 * -128 * 2 = 32768 does not fit int16; with
// unsigned A, 255 * 127 * 2 = 64770 neither), so any saturating shortcut
// shows up as a wrong result.
TEST_P(QGemmTileTest, ExtremeValuesDoNotSaturate) {
  const QGemmVariantInfo& v = GetParam();
  const int64_t k = 4096;
  const int lo = a_min(v);
  const int hi = a_max(v);
  const int big = a_big(v);
  // Rows: all a_big, all lo, all hi, alternating lo/hi along k, then repeat.
  const Matrix a = make_matrix(v.mr, k, [&](int64_t r, int64_t c) {
    switch (r % 4) {
      case 0: return big;
      case 1: return lo;
      case 2: return hi;
      default: return c % 2 == 0 ? lo : hi;
    }
  });
  // Columns: all -128, all 127, alternating along k, alternating in pairs.
  const Matrix b = make_matrix(k, v.nr, [&](int64_t r, int64_t c) {
    switch (c % 4) {
      case 0: return -128;
      case 1: return 127;
      case 2: return r % 2 == 0 ? -128 : 127;
      default: return (r / 2) % 2 == 0 ? 127 : -128;
    }
  });
  const std::vector<int32_t> c = run_tile(v, a, b);
  expect_exact(v, a, b, c);
  // Spelled out for row 0: big * -128 and big * 127, 4096 times.
  EXPECT_EQ(c[0], int32_t{big} * -128 * 4096);
  EXPECT_EQ(c[1], int32_t{big} * 127 * 4096);
}

TEST_P(QGemmTileTest, ExactAtTheContractsLargestK) {
  // K = 65536 with the largest-magnitude operands: 2^30 for int8 x int8 and
  // -255 * 128 * 65536 = -2139095040 for uint8 x int8, still inside int32.
  const QGemmVariantInfo& v = GetParam();
  const int64_t k = 65536;
  const int big = a_big(v);
  const Matrix a = make_matrix(v.mr, k, [&](int64_t r, int64_t) { return r % 2 == 0 ? big : a_min(v); });
  const Matrix b = make_matrix(k, v.nr, [&](int64_t, int64_t c) { return c % 2 == 0 ? -128 : 127; });
  const std::vector<int32_t> c = run_tile(v, a, b);
  expect_exact(v, a, b, c);
  EXPECT_EQ(c[0], big == 255 ? -2139095040 : 1073741824);
}

std::string variant_name(const ::testing::TestParamInfo<QGemmVariantInfo>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Variants, QGemmTileTest, ::testing::ValuesIn(linked_variants()),
                         variant_name);

TEST(QGemmUkernel, ScalarVariantMatchesItsSpec) {
  EXPECT_STREQ(tg_qgemm::kVariant, "scalar");
  EXPECT_EQ(tg_qgemm::kMR, 4);
  EXPECT_EQ(tg_qgemm::kNR, 4);
  EXPECT_EQ(tg_qgemm::kKU, 4);
  EXPECT_FALSE(tg_qgemm::kAUnsigned);
}

TEST(QGemmUkernel, X86VariantsAreLinkedIn) {
#if defined(__x86_64__)
  // tests/CMakeLists.txt must compile tests/unit/qgemm_variants/*.cpp into this binary.
  EXPECT_TRUE(qgemm_avx2_variant != nullptr) << "qgemm_variants/qgemm_avx2_variant.cpp is not linked in";
  EXPECT_TRUE(qgemm_avx512vnni_variant != nullptr)
      << "qgemm_variants/qgemm_avx512vnni_variant.cpp is not linked in";
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

}  // namespace
