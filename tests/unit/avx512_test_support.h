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

}  // namespace tilegraph::testing
