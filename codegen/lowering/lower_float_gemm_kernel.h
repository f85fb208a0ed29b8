// Lowers a float32 GEMM kernel (scheduler/int_gemm.h, element kF32) to
// Kernel IR around the float micro-kernel (codegen/ukernels/sgemm_*.h), the
// same design as the int8 path (lower_int_gemm_kernel.h):
//   * An operand that reads only constants (weights: B of x @ W, A of a
//     convolution, whose rows are filters and columns output pixels) is
//     packed at compile time into its panels (NR columns of B, MR rows of A).
//   * Otherwise each task (batch, column chunk, row block) packs A's rows
//     into MR-row panels once, and B's columns into one NR-column panel at a
//     time, by evaluating the operand expression: a Transpose or Reshape
//     index map, an inlined elementwise producer, or a convolution window
//     with its padding select (an implicit GEMM: no im2col buffer, only the
//     panels; a 1x1 conv's B panel reads NR contiguous pixels per channel).
//     Over a Concat along K (a conv over a channel Concat) B is packed by
//     the Concat's ranges of K, one loop per input, so each value reads one
//     input instead of evaluating every input's load and selecting.
//   * Where N's tail (N mod NR) fits W < NR columns in whole vectors, the
//     last column panel calls tile<W> (the first W columns; the panel's
//     layout stays NR wide): MobileViT's 36-wide heads compute 48 columns
//     instead of 64 on AVX-512.
//   * Each tile() call leaves an MR x NR tile in L1, which the fused epilogue
//     (bias, activation, residual add) turns into the output. Where the
//     whole K is one block and a full tile's epilogue is only a bias and
//     bounds (ReLU, Clip), tile_bias_clamp applies it to the accumulators
//     and stores the output rows itself (fused_bias_clamp).
// The cache blocking comes from scheduler/float_gemm_blocking.h: a row
// block's A panels (all of K) fit in half of the arch's L2, and where a B
// panel (K x NR) would overflow half the L1, K runs in blocks of kc: per
// column panel, each block's B rows (packed at run time, or the prepacked
// weights' rows) stay in L1 while every row panel's A block streams past
// them into that row panel's C tile (the first block starts it, the later
// ones accumulate: tile(..., accumulate)); the epilogue runs on the tiles
// after the last block. Where the filters' A panels overflow a row block
// (B packed at run time), the k-block loop goes outside the column panels
// instead ("k outer"), so that fewer row blocks pack the same B panels.
// Where B is packed at run time as one block, a task packs its column panels
// in groups (FloatGemmBlocking::b_group) and runs each row panel over the whole group
// (column_group), so the input's rows and the output's are read and written
// a group of panels at a time.
#pragma once
#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// The operands packed at compile time (graph constants), -1 where packed at run time.
struct FloatGemmPacks {
  TensorId a = -1;  // [batches][row panels][K * MR, padded to 16]
  TensorId b = -1;  // [batches][col panels][K * NR, padded to 16]
};

// Packs each of the kernel's GEMM operands that reads only constants for
// `variant` into a new float32 graph constant. `arch`: the one the kernel
// is lowered for (it decides, with the packs, an A panel's rows).
FloatGemmPacks prepack_float_gemm_operands(Graph& g, const scheduler::KernelSchedule& schedule,
                                           const FloatGemmVariant& variant, const scheduler::ArchSpec& arch);

Kernel lower_float_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                               const FloatGemmVariant& variant, const FloatGemmPacks& packed,
                               const scheduler::ArchSpec& arch);

}  // namespace tilegraph::codegen
