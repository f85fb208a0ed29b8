// Private to the layout op family (ops/layout*.cpp): the sub-families that
// add_layout_ops pulls in, and the small helpers they share.
#pragma once
#include <cstdint>
#include <vector>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"

// A nested namespace keeps these names clear of other op families' helpers.
namespace tilegraph::onnx_frontend::layout {

void add_slice_pad_ops(OpTable& table);  // ops/layout_slice_pad.cpp: Slice, Split, Pad
void add_gather_ops(OpTable& table);     // ops/layout_gather.cpp: Gather*, OneHot
void add_scatter_ops(OpTable& table);    // ops/layout_scatter.cpp: Scatter*

// A runtime index read from an index tensor (int32/int64, or float for
// OneHot), as the int64 that Load indices need.
Expr index_value(Expr loaded);
// ONNX index semantics: a negative index counts from the end (idx + dim).
Expr wrap_negative(Expr index, int64_t dim);
// A runtime index (`loaded` from an index tensor) of the node's data along
// `axis` of size dim, wrapped and checked at run time (CheckIndex, expr.h):
// an index outside [-dim, dim) fails the run naming this node.
Expr checked_index(LoweringContext& ctx, Expr loaded, int64_t dim, int axis);
// A constant index checked against [-dim, dim) and made non-negative; fails
// naming the node (`what` says which input) when out of range.
int64_t wrap_constant_index(const LoweringContext& ctx, int64_t index, int64_t dim, const char* what);
// Index inputs of Gather*/Scatter* must be int32 or int64.
void check_index_type(const LoweringContext& ctx, int slot);
// If index input `slot` is a constant, checks element i against
// dims[i % dims.size()] (one dim, or the components of GatherND-style index
// tuples), so a bad constant index fails at compile time naming the node
// rather than reading out of bounds at run time.
void check_constant_indices(const LoweringContext& ctx, int slot, const std::vector<int64_t>& dims);

// Axes from an attribute or input, normalized against rank, no duplicates.
std::vector<int> normalize_axes(const LoweringContext& ctx, const std::vector<int64_t>& axes,
                                int rank);

// Fails naming the node unless `shape` has non-negative dimensions and fewer
// than 2^62 elements (expr.h's bound on index arithmetic), so shapes built
// from hostile attributes cannot overflow later. `what` names the result.
void check_shape(const LoweringContext& ctx, const Shape& shape, const char* what);

// Element i of a constant tensor as an immediate of dtype `to` (integers stay
// exact: int64 values are not routed through double).
Expr constant_element(const Tensor& t, int64_t i, DType to);

// The equality comparison of two index expressions (a bool Expr).
Expr eq(Expr a, Expr b);

// The row-major flat index of `vars` over `shape` (vars.size() == shape.size()).
Expr flatten_index(const std::vector<Expr>& vars, const Shape& shape);
// The inverse: the coordinates of flat index `flat` over `shape`.
std::vector<Expr> unflatten_index(Expr flat, const Shape& shape);

}  // namespace tilegraph::onnx_frontend::layout
