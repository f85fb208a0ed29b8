// Lowers a Winograd conv kernel (KernelKind::kWinogradConv: a stride-1, pad-1
// 3x3 conv, scheduler/winograd_conv.h, with its fused elementwise epilogue
// if any) to calls of codegen/ukernels/winograd_f23_<variant>.h around the float
// micro-kernel:
//   * the filters are transformed (U = G g G^T) and packed at compile time
//     into A panels of MR filters, one per transformed position:
//     u[((p * 16 + t) * C + c) * MR + r] = U_t[p * MR + r][c];
//   * one task per (image, column panel of NR tiles, group of row panels):
//     input_tiles writes the panel's 16 transformed input planes to scratch,
//     then for each row panel of the group row_panel runs the 16 GEMMs and
//     the output transform into a local 4 x MR x NR result, which a loop
//     stores through the epilogue (each output once, so a residual is fine);
//   * row panels are grouped only to make enough tasks for the cores (a
//     7 x 7 map has one column panel): each group's task transforms its
//     column panel's inputs again.
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"
#include "codegen/lowering/int_gemm_variant.h"
#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// Floats past C x NR between two of V's 16 transformed planes: the ukernel's
// tg_winograd::kPlanePad (codegen/ukernels/winograd_f23_layout.h, which says why),
// with which the lowering sizes V's scratch.
constexpr int64_t kWinogradPlanePad = 16;

// The transformed filters as a new float32 graph constant (the layout above).
TensorId prepack_winograd_filters(Graph& g, const scheduler::KernelSchedule& schedule, const FloatGemmVariant& variant);

// u: what prepack_winograd_filters returned for this kernel.
Kernel lower_winograd_conv_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                                  const FloatGemmVariant& variant, TensorId u, const scheduler::ArchSpec& arch);

}  // namespace tilegraph::codegen
