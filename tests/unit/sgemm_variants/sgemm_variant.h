// One float32 GEMM micro-kernel variant (codegen/ukernels/sgemm_*.h) as data,
// so that tests can run every variant built into one binary. Like
// qgemm_variants/: each SIMD variant is compiled in its own translation unit
// with a target pragma, and called only where supported() says the CPU has it.
#pragma once

#include <cstdint>

struct SGemmVariantInfo {
  const char* name;  // the header's kVariant
  int mr;            // kMR
  int nr;            // kNR
  void (*tile)(int64_t k, const float* a, const float* b, float* c, bool accumulate, const float* next,
               int64_t next_floats);
  void (*tile_bias_clamp)(int64_t k, const float* a, const float* b, float* c, int64_t ldc, const float* bias,
                          float lo, float hi);
  bool (*supported)();  // whether this CPU can run tile
  int lanes;            // kLanes
  // tile<kLanes>: the first kLanes columns of tile's c only
  void (*tile_lanes)(int64_t k, const float* a, const float* b, float* c, bool accumulate, const float* next,
                     int64_t next_floats);
  // tile<kNR, 1> and tile<kNR, kMR - 1>: the first rows of tile's c only
  void (*tile_one_row)(int64_t k, const float* a, const float* b, float* c, bool accumulate, const float* next,
                       int64_t next_floats);
  void (*tile_all_rows_but_one)(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                const float* next, int64_t next_floats);
  // pack_a_rows_from: a[k' * mr + r] = rows[r][k'] for k' < k
  void (*pack_a_rows)(int64_t k, float* a, const float* const* rows);
  // pack_b_columns: b[k' * nr + j] = first[min(j, cols - 1) * ld + k'] for k' < k
  void (*pack_b_columns)(int64_t k, float* b, const float* first, int64_t ld, int64_t cols);
};

// Defined in sgemm_avx2_variant.cpp and sgemm_avx512_variant.cpp, which
// compile to nothing except on x86-64. Weak: the address of a missing one is
// null (the unit tests check that on x86-64 both are present).
[[gnu::weak]] SGemmVariantInfo sgemm_avx2_variant();
[[gnu::weak]] SGemmVariantInfo sgemm_avx512_variant();
