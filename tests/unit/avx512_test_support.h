// What the tests of the AVX-512 micro-kernel headers share: whether this CPU
// runs them, and seeded operands in [-1, 1).
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tilegraph::testing {

inline bool avx512f_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A packed A panel of `rows` rows (a[k' * rows + r]) and a B of k rows,
// ldb floats apart, whose panel starts `col` floats into each row (the rest
// of each row: other panels' columns); sum(r, j): C(r, j) in double.
struct PanelOperands {
  int64_t rows, k, ldb, col;
  std::vector<float> a, b;
  PanelOperands(int64_t rows_, int64_t k_, int64_t ldb_, int64_t col_, uint32_t seed)
      : rows(rows_), k(k_), ldb(ldb_), col(col_), a(random_values(size_t(k * rows), seed)),
        b(random_values(size_t(k * ldb), seed + 1)) {}
  const float* panel() const { return b.data() + col; }
  double sum(int64_t r, int64_t j) const {
    double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += double(a[size_t(kk * rows + r)]) * b[size_t(kk * ldb + col + j)];
    return s;
  }
};

}  // namespace tilegraph::testing
