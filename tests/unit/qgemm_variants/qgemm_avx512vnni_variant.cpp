// The AVX-512 VNNI micro-kernel (codegen/ukernels/qgemm_avx512vnni.h) for a
// binary built without -mavx512*: only the code between the target pragmas may
// use AVX-512, and callers check supported() before calling tile.
#include "tests/unit/qgemm_variants/qgemm_variant.h"

#if defined(__x86_64__)

// Everything the kernel header includes comes first, outside the pragmas, so
// that no standard-library inline function is compiled for AVX-512 (the
// linker could pick that copy for callers elsewhere in the binary).
#include <cstdint>
#include <cstring>
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vnni"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vnni")
#endif
// In C++ the pragma does not define the feature macros; tell the header.
#define TG_QGEMM_FORCE 1
#include "codegen/ukernels/qgemm_avx512vnni.h"
#undef TG_QGEMM_FORCE

void qgemm_tile_avx512vnni(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  tg_qgemm::avx512vnni::tile(k_groups, a, b, c);
}

void qgemm_tile_accumulate_avx512vnni(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  tg_qgemm::avx512vnni::tile_accumulate(k_groups, a, b, c);
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

static bool avx512vnni_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}

QGemmVariantInfo qgemm_avx512vnni_variant() {
  namespace v = tg_qgemm::avx512vnni;
  return {v::kVariant, v::kMR, v::kNR, v::kKU, v::kAUnsigned, qgemm_tile_avx512vnni,
          avx512vnni_supported, qgemm_tile_accumulate_avx512vnni, 0, v::kABytes};
}

#endif  // defined(__x86_64__)
