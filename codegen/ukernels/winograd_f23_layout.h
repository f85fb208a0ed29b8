// Winograd F(2x2, 3x3) around the float GEMM micro-kernel: what the ISA
// variants (winograd_f23_avx512.h, winograd_f23_avx2.h) share, the layout of
// the transformed input V that the lowering
// (codegen/lowering/lower_winograd_conv_kernel.h) allocates. Include after the
// float micro-kernel's header (tg_sgemm::kNR).
//
// A 2 x 2 output tile comes from a 4 x 4 input tile: Y = A^T [U . V] A with
// V = B^T d B (input) and U = G g G^T (filters, transformed and packed at
// compile time), 16 products per (input, output) channel pair where the
// direct form needs 36. For each of the 16 positions t of the 4 x 4
// transformed tile, the sum over input channels is one GEMM: U_t (filters x
// channels) times V_t (channels x tiles). Tiles go in column panels of kNR
// (a B panel's width): input_tiles writes a panel's 16 V_t in the B-panel
// layout, row_panel runs the 16 GEMMs of a row panel of filters and the
// output transform.
#pragma once

#include <cstdint>

namespace tg_winograd {

constexpr int kPositions = 16;  // of the 4 x 4 transformed tile

// V's 16 planes (one per position t, C x kNR floats each) lie plane_floats<C>()
// apart: kPlanePad floats (one 64-byte line) past C x kNR, so that input_tiles'
// 16 stores of a channel, one per plane, fall in 16 L1 sets. Planes C x kNR
// apart (8 KiB for C = 64 on AVX-512) all map to one set: ResNet-50's
// 64 x 56 x 56 input, all 25 panels, one core: 0.18 ms, 0.16 padded. The
// lowering allocates V with the same pad (codegen::kWinogradPlanePad, which
// winograd_f23_test checks).
constexpr int64_t kPlanePad = 16;
// kNR: a template argument (not tg_sgemm::kNR inside) so that the variants'
// differing widths make different functions in one binary.
template <int64_t C, int kNR = tg_sgemm::kNR>
constexpr int64_t plane_floats() {
  return C * kNR + kPlanePad;
}

}  // namespace tg_winograd
