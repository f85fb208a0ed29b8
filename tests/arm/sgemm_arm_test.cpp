// The AArch64 float32 GEMM micro-kernel (codegen/ukernels/sgemm_neon.h)
// against a double-precision reference GEMM, through a driver that packs odd
// shapes as the generated code does (rows past M repeat the last row, columns
// past N are zero): tails in M, N and K, k = 0 and 1, a large K, and integer
// values where the result must be exact; K split into kc blocks, each
// block's sum from zero added onto the tile (tails, K < kc), must give the
// blocks' one-block results summed in order, bit for bit; tile<4> and tile<8> are tile()'s first columns, tile<12, R> its
// first rows; pack_a_rows (pack_b_columns) is the transpose of its rows
// (columns) and writes nothing past k * kMR (k * kNR). Cross-compiled and run under qemu-aarch64 by run_sgemm_arm_test.sh.
// Prints one line per failure and a summary; exits non-zero on any failure.
#include "sgemm_neon.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int kMR = tg_sgemm::neon::kMR, kNR = tg_sgemm::neon::kNR;
int failures = 0, checks = 0;

struct Problem {
  int64_t m, n, k;
  std::vector<float> a, b;  // m x k, k x n, row-major
};

Problem random_problem(int64_t m, int64_t n, int64_t k, uint32_t seed, bool integers) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Problem p{m, n, k, std::vector<float>(m * k), std::vector<float>(k * n)};
  for (float& x : p.a) x = integers ? std::round(dist(rng) * 8) : dist(rng);
  for (float& x : p.b) x = integers ? std::round(dist(rng) * 8) : dist(rng);
  return p;
}

// Through the kernel in blocks of kc k values (0: one block), the later
// blocks accumulating; every result is checked against the reference and,
// when `whole` is given and not empty, must equal it bit for bit (an empty
// one receives the results).
void check(const Problem& p, bool exact, int64_t kc = 0, std::vector<float>* whole = nullptr) {
  alignas(64) static float a_panel[4096 * kMR], b_panel[4096 * kNR];
  float tile[kMR * kNR];
  const bool compare = whole != nullptr && !whole->empty();
  size_t at = 0;
  for (int64_t n0 = 0; n0 < p.n; n0 += kNR) {
    for (int64_t kk = 0; kk < p.k; ++kk)
      for (int j = 0; j < kNR; ++j) b_panel[kk * kNR + j] = n0 + j < p.n ? p.b[kk * p.n + n0 + j] : 0.0f;
    for (int64_t m0 = 0; m0 < p.m; m0 += kMR) {
      for (int64_t kk = 0; kk < p.k; ++kk)
        for (int r = 0; r < kMR; ++r) a_panel[kk * kMR + r] = p.a[std::min<int64_t>(m0 + r, p.m - 1) * p.k + kk];
      if (kc <= 0 || p.k == 0) {
        tg_sgemm::neon::tile(p.k, a_panel, b_panel, tile, false);
      } else {
        for (int64_t k0 = 0; k0 < p.k; k0 += kc)
          tg_sgemm::neon::tile(std::min(kc, p.k - k0), a_panel + k0 * kMR, b_panel + k0 * kNR, tile, k0 > 0);
      }
      for (int r = 0; r < kMR && m0 + r < p.m; ++r)
        for (int j = 0; j < kNR && n0 + j < p.n; ++j) {
          double want = 0, magnitude = 0;
          for (int64_t kk = 0; kk < p.k; ++kk) {
            const double prod = static_cast<double>(p.a[(m0 + r) * p.k + kk]) * p.b[kk * p.n + n0 + j];
            want += prod;
            magnitude += std::fabs(prod);
          }
          const double got = tile[r * kNR + j];
          if (whole != nullptr) {
            if (!compare) {
              whole->push_back(tile[r * kNR + j]);
            } else if ((*whole)[at++] != tile[r * kNR + j] && failures++ < 10) {
              std::printf("FAIL m=%lld n=%lld k=%lld kc=%lld at (%lld, %lld): %.9g, the blocks summed %.9g\n",
                          (long long)p.m, (long long)p.n, (long long)p.k, (long long)kc, (long long)(m0 + r),
                          (long long)(n0 + j), got, (double)(*whole)[at - 1]);
            }
          }
          const double tolerance = exact ? 0.0 : 1e-6 + magnitude * 2e-7 * static_cast<double>(p.k + 1);
          ++checks;
          if (std::fabs(got - want) > tolerance && failures++ < 10)
            std::printf("FAIL m=%lld n=%lld k=%lld at (%lld, %lld): %.9g, want %.9g\n", (long long)p.m,
                        (long long)p.n, (long long)p.k, (long long)(m0 + r), (long long)(n0 + j), got, want);
        }
    }
  }
}

// The problem's k rows [k0, k0 + count).
Problem k_rows(const Problem& p, int64_t k0, int64_t count) {
  Problem q{p.m, p.n, count, std::vector<float>(p.m * count),
            std::vector<float>(p.b.begin() + k0 * p.n, p.b.begin() + (k0 + count) * p.n)};
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t kk = 0; kk < count; ++kk) q.a[i * count + kk] = p.a[i * p.k + k0 + kk];
  return q;
}

// tile<kCols, kRows> (the last column panel of an N whose tail fits kCols / 4
// q registers; the last row panel of an M tail of kRows rows) against tile():
// its first kCols columns of its first kRows rows bit for bit, from zero and
// accumulating, c's other columns and rows untouched.
template <int kCols, int kRows = kMR>
void check_narrow() {
  alignas(64) static float a[100 * kMR], b[100 * kNR];
  std::mt19937 rng(kCols);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  for (int64_t k : {0, 1, 13, 100})
    for (bool accumulate : {false, true}) {
      float start[kMR * kNR], want[kMR * kNR], got[kMR * kNR];
      for (int i = 0; i < kMR * kNR; ++i) start[i] = want[i] = got[i] = static_cast<float>(i % 7) - 2.5f;
      tg_sgemm::neon::tile(k, a, b, want, accumulate);
      tg_sgemm::neon::tile<kCols, kRows>(k, a, b, got, accumulate);
      for (int i = 0; i < kMR * kNR; ++i) {
        const float expect = i % kNR < kCols && i / kNR < kRows ? want[i] : start[i];
        ++checks;
        if (got[i] != expect && failures++ < 10)
          std::printf("FAIL tile<%d, %d> k=%lld accumulate=%d at (%d, %d): %.9g, want %.9g\n", kCols, kRows, (long long)k,
                      accumulate ? 1 : 0, i / kNR, i % kNR, got[i], expect);
      }
    }
}

// pack_a_rows on kMR rows (unaligned, the last repeated as a panel's
// padding rows are): a[k' * kMR + r] = rows[r][k'], nothing written past
// a[k * kMR], for k below, at and above its blocks of 4.
void check_pack_a_rows() {
  constexpr float kGuard = -7.25f;
  for (int64_t k : {0, 1, 3, 4, 5, 8, 37, 259}) {
    const int64_t ld = k + 3;
    std::vector<float> source(ld * kMR + 1);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i) * 0.5f - 100.0f;
    const float* rows[kMR];
    for (int r = 0; r < kMR; ++r) rows[r] = source.data() + 1 + std::min(r, kMR - 2) * ld;
    std::vector<float> a((k + 4) * kMR, kGuard);
    tg_sgemm::neon::pack_a_rows(k, a.data(), rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6],
                                rows[7]);
    for (int64_t i = 0; i < static_cast<int64_t>(a.size()); ++i) {
      const float expect = i < k * kMR ? rows[i % kMR][i / kMR] : kGuard;
      ++checks;
      if (a[i] != expect && failures++ < 10)
        std::printf("FAIL pack_a_rows k=%lld at %lld: %.9g, want %.9g\n", (long long)k, (long long)i, a[i], expect);
    }
  }
}

// pack_b_columns on kNR columns ld floats apart (unaligned; N's tail panel:
// the columns from cols on repeat column cols - 1): b[k' * kNR + j], nothing
// written past b[k * kNR], for k below, at and above its blocks of 4.
void check_pack_b_columns() {
  constexpr float kGuard = -7.25f;
  for (int64_t k : {1, 3, 4, 5, 8, 37, 259})
    for (int64_t cols : {int64_t{kNR}, int64_t{1}, int64_t{kNR - 3}}) {
      const int64_t ld = k + 5;
      std::vector<float> source(ld * kNR + 1);
      for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i) * 0.25f - 300.0f;
      const float* first = source.data() + 1;
      std::vector<float> b((k + 4) * kNR, kGuard);
      tg_sgemm::neon::pack_b_columns(k, b.data(), first, ld, cols);
      for (int64_t i = 0; i < static_cast<int64_t>(b.size()); ++i) {
        const int64_t j = std::min(i % kNR, cols - 1);
        const float expect = i < k * kNR ? first[j * ld + i / kNR] : kGuard;
        ++checks;
        if (b[i] != expect && failures++ < 10)
          std::printf("FAIL pack_b_columns k=%lld cols=%lld at %lld: %.9g, want %.9g\n", (long long)k,
                      (long long)cols, (long long)i, b[i], expect);
      }
    }
}

}  // namespace

int main() {
  check_pack_a_rows();
  check_pack_b_columns();
  check_narrow<4>();
  check_narrow<8>();
  check_narrow<kNR, 1>();
  check_narrow<kNR, kMR - 1>();
  check_narrow<4, 3>();
  for (int64_t k : {0, 1, 2, 3, 7, 16, 17, 100, 769}) check(random_problem(kMR, kNR, k, 1 + k, false), false);
  for (int64_t m : {1, kMR - 1, kMR + 1, 2 * kMR + 3})
    for (int64_t n : {1, kNR - 1, kNR + 5, 3 * kNR - 1})
      check(random_problem(m, n, 13, static_cast<uint32_t>(m * 1000 + n), false), false);
  check(random_problem(67, 99, 1153, 7, false), false);
  check(random_problem(kMR + 2, kNR + 3, 41, 3, true), true);
  for (int64_t k : {1, 13, 100, 769}) {
    const Problem p = random_problem(kMR + 3, 2 * kNR + 1, k, static_cast<uint32_t>(100 + k), false);
    for (int64_t kc : {1, 3, 7, 64, 192, 1000}) {
      std::vector<float> blocks;
      for (int64_t k0 = 0; k0 < k; k0 += kc) {
        std::vector<float> block;
        check(k_rows(p, k0, std::min(kc, k - k0)), false, 0, &block);
        for (size_t i = 0; i < block.size(); ++i) block[i] = k0 == 0 ? block[i] : blocks[i] + block[i];
        blocks = block;
      }
      check(p, false, kc, &blocks);
    }
  }
  std::printf("sgemm %s %dx%d: %d checks, %d failures\n", tg_sgemm::neon::kVariant, kMR, kNR, checks, failures);
  return failures == 0 ? 0 : 1;
}
