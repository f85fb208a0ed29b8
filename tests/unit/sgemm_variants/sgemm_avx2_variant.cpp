// The avx2 float micro-kernel (codegen/ukernels/sgemm_avx2.h) for a binary
// built without those ISA flags: only the code between the target pragmas may
// use them, and callers check supported() before calling tile.
#include "tests/unit/sgemm_variants/sgemm_variant.h"

#if defined(__x86_64__)

// What the kernel header includes comes first, outside the pragmas, so that no
// standard-library inline function is compiled for the wider ISA.
#include <cstdint>
#include <immintrin.h>

#include "tests/unit/avx2_target_begin.h"
// In C++ the pragma does not define the feature macros; tell the header.
#define TG_SGEMM_FORCE 1
#include "codegen/ukernels/sgemm_avx2.h"
#undef TG_SGEMM_FORCE

static void sgemm_tile_avx2(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                            const float* next, int64_t next_floats) {
  tg_sgemm::avx2::tile(k, a, b, c, accumulate, next, next_floats);
}

static void sgemm_tile_lanes_avx2(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                            const float* next, int64_t next_floats) {
  tg_sgemm::avx2::tile<tg_sgemm::avx2::kLanes>(k, a, b, c, accumulate, next, next_floats);
}

static void sgemm_tile_bias_clamp_avx2(int64_t k, const float* a, const float* b, float* c, int64_t ldc,
                                     const float* bias, float lo, float hi) {
  tg_sgemm::avx2::tile_bias_clamp(k, a, b, c, ldc, bias, lo, hi);
}

static void sgemm_tile_one_row_avx2(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                  const float* next, int64_t next_floats) {
  tg_sgemm::avx2::tile<tg_sgemm::avx2::kNR, 1>(k, a, b, c, accumulate, next, next_floats);
}

static void sgemm_tile_all_rows_but_one_avx2(int64_t k, const float* a, const float* b, float* c, bool accumulate,
                                           const float* next, int64_t next_floats) {
  tg_sgemm::avx2::tile<tg_sgemm::avx2::kNR, tg_sgemm::avx2::kMR - 1>(k, a, b, c, accumulate, next, next_floats);
}

static void sgemm_pack_a_rows_avx2(int64_t k, float* a, const float* const* rows) {
  tg_sgemm::avx2::pack_a_rows_from(k, a, rows);
}

static void sgemm_pack_b_columns_avx2(int64_t k, float* b, const float* first, int64_t ld, int64_t cols) {
  tg_sgemm::avx2::pack_b_columns(k, b, first, ld, cols);
}

#include "tests/unit/avx2_target_end.h"

static bool avx2_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

SGemmVariantInfo sgemm_avx2_variant() {
  namespace v = tg_sgemm::avx2;
  return {v::kVariant,  v::kMR,    v::kNR, sgemm_tile_avx2, sgemm_tile_bias_clamp_avx2, avx2_supported,
          v::kLanes, sgemm_tile_lanes_avx2, sgemm_tile_one_row_avx2,
          sgemm_tile_all_rows_but_one_avx2, sgemm_pack_a_rows_avx2,
          sgemm_pack_b_columns_avx2};
}

#endif  // defined(__x86_64__)
