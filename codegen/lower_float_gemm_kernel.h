// Lowers a float32 GEMM kernel (scheduler/int_gemm.h, element kF32) to
// Kernel IR around the float micro-kernel (codegen/ukernels/sgemm_*.h), the
// same design as the int8 path (lower_int_gemm_kernel.h):
//   * B, when it reads only constants (weights), is packed at compile time
//     into NR-column panels; otherwise (q @ k^T, attn @ V) each task packs
//     its column panels through B's index map at run time.
//   * Per task (batch, column chunk, row block), A's rows are packed into
//     MR-row panels by evaluating the operand expression: a Transpose or
//     Reshape index map, an inlined elementwise producer, or a convolution
//     window with its padding select (an implicit GEMM: no im2col buffer,
//     only the row block's panels).
//   * Each tile() call leaves an MR x NR tile in L1, which the fused epilogue
//     (bias, activation, residual add) turns into the output.
// Panels hold all of K: the row block is sized so its A panels fit in half
// of the arch's L2 (ArchSpec::l2_bytes), and a B panel (K x NR) streams
// from L2 while MR rows reuse each of its loads.
#pragma once
#include "codegen/int_gemm_variant.h"
#include "codegen/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// When the kernel's B operand reads only constants: packs it for `variant`
// into a float32 graph constant [batches][col panels][K * NR, padded to 16]
// and returns its id; otherwise -1 (B is packed at run time).
TensorId prepack_float_gemm_weights(Graph& g, const scheduler::KernelSchedule& schedule,
                                    const FloatGemmVariant& variant);

Kernel lower_float_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                               const FloatGemmVariant& variant, TensorId packed_b, const scheduler::ArchSpec& arch);

}  // namespace tilegraph::codegen
