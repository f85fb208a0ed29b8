// One Winograd F(2x2, 3x3) transform variant (codegen/ukernels/
// winograd_f23_<isa>.h) as data, so that winograd_f23_test runs every one built
// into the binary: like sgemm_variants/, each is compiled in its own
// translation unit under a target pragma and called only where supported()
// says the CPU has it. The entry points are fixed instantiations on the
// test's maps, 40 channels each.
#pragma once

#include <cstdint>

struct WinogradVariantInfo {
  const char* name;  // the float micro-kernel's kVariant
  int mr, nr;        // tg_sgemm::kMR, kNR
  int64_t plane_pad;  // tg_winograd::kPlanePad
  int64_t v_floats;   // V of 40 channels: 16 * plane_floats<40>()
  bool (*supported)();
  // An 11 x 13 map (6 x 7 = 42 tiles) from two sources of 24 and 16
  // channels: input_tiles<24, 11, 13, false, 40> and <16, ...> at channel 24.
  void (*odd_map_inputs)(const float* x0, const float* x1, float* v, int64_t first);
  // A 6 x 6 map (9 tiles) in half panels: input_tiles<40, 6, 6, true>.
  void (*half_map_inputs)(const float* x, float* v, int64_t first);
  // row_panel<40, false, kMR, rows> for rows == kMR or tail_rows.
  void (*panel)(int64_t rows, const float* u, const float* v, float* m, float* y);
  int tail_rows;
  // row_panel<40, true>: a half panel of kMR filters.
  void (*half_panel)(const float* u, const float* v, float* m, float* y);
  // row_panel<40, false, wide_rows, rows> for rows == wide_rows, 8 or 4; 0
  // and null where the micro-kernel has no wide panels.
  int wide_rows;
  void (*wide_panel)(int64_t rows, const float* u, const float* v, float* m, float* y);
};

// Defined in winograd_avx2_variant.cpp and winograd_avx512_variant.cpp, which
// compile to nothing except on x86-64 (weak: a missing one's address is null).
[[gnu::weak]] WinogradVariantInfo winograd_avx2_variant();
[[gnu::weak]] WinogradVariantInfo winograd_avx512_variant();
