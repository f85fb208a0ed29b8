// A GEMM (scheduler/int_gemm.h) in the flat terms its micro-kernel lowering
// works in: batch b, row r, column c, reduce index k, each a flattening of
// the op's axes of that role; and the store of an accumulator through the
// fused epilogue. Shared by the int8 and float32 lowerings.
#pragma once
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/interval.h"
#include "scheduler/int_gemm.h"

namespace tilegraph::codegen {

// Output coordinates (= the op's vars 0..rank-1) for flat batch b, row r, column c.
std::vector<Expr> gemm_coords(const scheduler::Gemm& m, const Expr& b, const Expr& r, const Expr& c);

// The op's vars for an operand value at (b, r, c) and flat reduce index k.
std::vector<Expr> gemm_op_vars(const scheduler::Gemm& m, const Expr& b, const Expr& r, const Expr& c,
                               const Expr& k);
// The same with one expression per reduce axis (keeps a conv window affine).
std::vector<Expr> gemm_op_vars(const scheduler::Gemm& m, const Expr& b, const Expr& r, const Expr& c,
                               const std::vector<Expr>& ks);

// The store of accumulator value `acc` for output element (b, row, col):
// out = epilogue(acc) when the kernel has an epilogue phase (phases[1]),
// else acc. epilogue_buffers maps the epilogue's input slots to kernel
// buffers (-1: the accumulator); output is the kernel's output buffer.
Stmt gemm_output_store(const Graph& g, const std::vector<Op>& phases, const scheduler::Gemm& m,
                       const std::vector<int>& epilogue_buffers, int output, const std::vector<Interval>& bounds,
                       const Expr& b, const Expr& row, const Expr& col, const Expr& acc);

// The same for the output element at `coords` (one per axis of phases[0]'s
// output, of shape out_shape): also the store of the direct convolution
// kernel (lower_direct_conv_kernel.h).
Stmt epilogue_output_store(const Graph& g, const std::vector<Op>& phases, const Shape& out_shape,
                           const std::vector<int>& epilogue_buffers, int output, const std::vector<Interval>& bounds,
                           const std::vector<Expr>& coords, const Expr& acc);

}  // namespace tilegraph::codegen
