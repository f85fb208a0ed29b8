// Building blocks shared by the op lowerings: broadcasting, elementwise maps,
// index maps (layout ops), reductions, casts. Each returns the output tensor.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "frontends/onnx/lowering_context.h"

namespace tilegraph::onnx_frontend {

// Var(0..rank-1): the output's spatial axes.
std::vector<Expr> axis_vars(int rank);
// Normalizes a possibly negative axis against rank; fails naming the node.
int normalize_axis(const LoweringContext& ctx, int64_t axis, int rank);
// Numpy (multidirectional) broadcast of shapes; fails naming the node.
Shape broadcast_shapes(const LoweringContext& ctx, const std::vector<Shape>& shapes);
// Indices into a tensor of shape `in` broadcast to `out_rank` output axes `vars`.
std::vector<Expr> broadcast_indices(const Shape& in, const std::vector<Expr>& vars);

// out = fn(loads of each input, broadcast to a common shape).
using ElementFn = std::function<Expr(const std::vector<Expr>& values)>;
TensorId elementwise(LoweringContext& ctx, const std::string& kind,
                     const std::vector<TensorId>& inputs, DType out_dtype, const ElementFn& fn);
// Same, on the node's inputs [0, n) (all of them when n < 0), output dtype of input 0.
TensorId elementwise_node(LoweringContext& ctx, const std::string& kind, const ElementFn& fn,
                          int n = -1);

// A layout op: out[vars] = in[index_fn(vars)]. `index_fn` returns in's indices.
using IndexFn = std::function<std::vector<Expr>(const std::vector<Expr>& out_vars)>;
TensorId index_map(LoweringContext& ctx, const std::string& kind, TensorId in,
                   const Shape& out_shape, const IndexFn& index_fn);
TensorId reshape(LoweringContext& ctx, TensorId in, const Shape& out_shape);
TensorId transpose(LoweringContext& ctx, TensorId in, const std::vector<int>& perm);
TensorId cast_tensor(LoweringContext& ctx, TensorId in, DType to);

// Reduces `in` over `axes` (normalized, any order) with `reduction` of
// pre(value); keepdims keeps reduced axes as size 1.
TensorId reduce(LoweringContext& ctx, const std::string& kind, TensorId in,
                std::vector<int> axes, bool keepdims, Reduction reduction,
                const std::function<Expr(Expr)>& pre = nullptr);

// Numpy matmul (1-D promotion, batch broadcasting) of two tensors.
TensorId matmul(LoweringContext& ctx, TensorId a, TensorId b);
// The same iteration space with another product: body = product(load of a,
// load of b, row, col) summed over k into out_dtype, where row / col are the
// output's row and column vars (0 for a 1-D operand). `extra` tensors are
// input slots 2, 3, ... for the product to load (zero points).
using ProductFn = std::function<Expr(Expr a, Expr b, const Expr& row, const Expr& col)>;
TensorId matmul_with(LoweringContext& ctx, TensorId a, TensorId b, DType out_dtype,
                     const std::vector<TensorId>& extra, const ProductFn& product);

// A scalar constant expression in the dtype of `like`.
Expr scalar(double v, DType t);

}  // namespace tilegraph::onnx_frontend
