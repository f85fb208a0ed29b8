// The AVX2 micro-kernel (codegen/ukernels/qgemm_avx2.h) for a binary built
// without -mavx2: only the code between the target pragmas may use AVX2, and
// callers check supported() before calling tile.
#include "tests/unit/qgemm_variants/qgemm_variant.h"

#if defined(__x86_64__)

// Everything the kernel header includes comes first, outside the pragmas, so
// that no standard-library inline function is compiled for AVX2 (the linker
// could pick that copy for callers elsewhere in the binary).
#include <cstdint>
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
// In C++ the pragma does not define __AVX2__; tell the header it is enabled.
#define TG_QGEMM_FORCE 1
#include "codegen/ukernels/qgemm_avx2.h"
#undef TG_QGEMM_FORCE

void qgemm_tile_avx2(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  tg_qgemm::avx2::tile(k_groups, a, b, c);
}

void qgemm_tile_accumulate_avx2(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  tg_qgemm::avx2::tile_accumulate(k_groups, a, b, c);
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

static bool avx2_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

QGemmVariantInfo qgemm_avx2_variant() {
  namespace v = tg_qgemm::avx2;
  return {v::kVariant, v::kMR, v::kNR, v::kKU, v::kAUnsigned, qgemm_tile_avx2, avx2_supported,
          qgemm_tile_accumulate_avx2, 0, v::kABytes};
}

#endif  // defined(__x86_64__)
