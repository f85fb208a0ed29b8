// The AVX-512 Winograd transforms (codegen/ukernels/winograd_f23_avx512.h) on
// winograd_variant.h's maps, for a binary built without AVX-512.
#include "tests/unit/winograd_variants/winograd_variant.h"

#if defined(__x86_64__)
#include <algorithm>
#include <cstdint>
#include <immintrin.h>

#include "tests/unit/avx512_target_begin.h"
#define TG_SGEMM_FORCE 1
#include "codegen/ukernels/sgemm_avx512.h"
#include "codegen/ukernels/winograd_f23_avx512.h"
#undef TG_SGEMM_FORCE

namespace {

constexpr int kTailRows = 3;
#include "tests/unit/winograd_variants/winograd_entry_points.h"
// 12-filter panels (tg_sgemm::wide), a last one of 4 or 8 filters.
void wide_panel(int64_t rows, const float* u, const float* v, float* m, float* y) {
  if (rows == 12) tg_winograd::row_panel<40, false, 12>(u, v, m, y);
  else if (rows == 8) tg_winograd::row_panel<40, false, 12, 8>(u, v, m, y);
  else tg_winograd::row_panel<40, false, 12, 4>(u, v, m, y);
}

}  // namespace

#include "tests/unit/avx512_target_end.h"

static bool supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

WinogradVariantInfo winograd_avx512_variant() {
  return {tg_sgemm::kVariant, tg_sgemm::kMR, tg_sgemm::kNR, tg_winograd::kPlanePad,
          16 * tg_winograd::plane_floats<40>(), supported, odd_map_inputs, half_map_inputs, panel, kTailRows,
          half_panel, 12, wide_panel};
}

#endif  // defined(__x86_64__)
