// Lowers an integer GEMM kernel (scheduler/int_gemm.h) to Kernel IR around
// the int8 micro-kernel: per (batch, block of rows) in parallel, A's rows are
// packed into the micro-kernel's panel layout (a fused quantize producer is
// evaluated right there) with their row sums; per column panel, B comes
// prepacked from the weights or is packed on the fly; each tile() call
// leaves an int32 tile in registers/L1, where the zero-point correction
//   sum (a - za)(b - zb) = sum a*b - zb*rowsum(a) - za*colsum(b) + K*za*zb
// and the fused epilogue (requantize, scale, bias ...) turn it into the
// output. The int32 accumulators never reach memory.
#pragma once
#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// B's panels packed at compile time (constant B), as graph constants.
struct PackedWeights {
  TensorId panels = -1;   // int8 [batches][col panels][panel bytes, padded to 64]
  TensorId colsums = -1;  // int32 [batches][col panels * NR]: column sums of the packed values
};

// When the kernel's B operand reads only constants: packs it for `variant`
// and adds the panels and column sums to g as constants. Otherwise returns
// an empty PackedWeights and B is packed at run time.
PackedWeights prepack_int_gemm_weights(Graph& g, const scheduler::KernelSchedule& schedule,
                                       const IntGemmVariant& variant);

// `arch`: its core count (how finely the work is split) and cache sizes (kc
// blocks, row blocks: scheduler::int_gemm_blocking).
Kernel lower_int_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                             const IntGemmVariant& variant, const PackedWeights& packed,
                             const scheduler::ArchSpec& arch);

}  // namespace tilegraph::codegen
