// The AVX2 Winograd transforms (codegen/ukernels/winograd_f23_avx2.h) on
// winograd_variant.h's maps, for a binary built without AVX2.
#include "tests/unit/winograd_variants/winograd_variant.h"

#if defined(__x86_64__)
#include <algorithm>
#include <cstdint>
#include <immintrin.h>

#include "tests/unit/avx2_target_begin.h"
#define TG_SGEMM_FORCE 1
#include "codegen/ukernels/sgemm_avx2.h"
#include "codegen/ukernels/winograd_f23_avx2.h"
#undef TG_SGEMM_FORCE

namespace {

// ResNet-50's 64 filters are 10 panels of 6 and one of 4.
constexpr int kTailRows = 4;
#include "tests/unit/winograd_variants/winograd_entry_points.h"

}  // namespace

#include "tests/unit/avx2_target_end.h"

static bool supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

WinogradVariantInfo winograd_avx2_variant() {
  return {tg_sgemm::kVariant, tg_sgemm::kMR, tg_sgemm::kNR, tg_winograd::kPlanePad,
          16 * tg_winograd::plane_floats<40>(), supported, odd_map_inputs, half_map_inputs, panel, kTailRows,
          half_panel, 0, nullptr};
}

#endif  // defined(__x86_64__)
