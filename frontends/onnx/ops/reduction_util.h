// Helpers shared by the reduction and normalization lowerings (ops/reduction.cpp,
// ops/normalization.cpp): reductions whose body reads several tensors and the
// index of the point it visits, means, centered sums of squares.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "frontends/onnx/lower_util.h"

namespace tilegraph::onnx_frontend {

// The body of a reduction at one point of its domain: `values` are the loads of
// each input (numpy-broadcast to the domain, right-aligned), `point` the index
// of the point in every domain axis (a reduce var on reduced axes, a spatial
// var elsewhere).
using DomainFn =
    std::function<Expr(const std::vector<Expr>& values, const std::vector<Expr>& point)>;

// out = combine over `axes` of fn(...) across a domain of shape `domain`.
// keepdims keeps reduced axes as size 1. With no axes this is an elementwise
// op over the domain (Reduction::kNone) that can still see its indices.
TensorId reduce_over(LoweringContext& ctx, const std::string& kind,
                     const std::vector<TensorId>& inputs, const Shape& domain,
                     std::vector<int> axes, bool keepdims, Reduction reduction, DType dtype,
                     const DomainFn& fn);

// Number of elements a reduction over `axes` of `shape` combines.
int64_t reduced_count(const Shape& shape, const std::vector<int>& axes);

// Axes [first, rank) — the trailing axes LayerNorm, Softmax-before-13 and
// friends reduce over.
std::vector<int> trailing_axes(int first, int rank);

// The mean of x over axes (keepdims), as a sum then one multiply by 1/N so
// that the rounding is one multiply rather than N divides (integers divide).
TensorId mean_over(LoweringContext& ctx, const std::string& kind, TensorId x,
                   const std::vector<int>& axes);

// sum over axes of (x - mean)^2 (keepdims), mean shaped like mean_over's result.
// Two passes over x keep the variance of large-offset data accurate, where
// E[x^2] - E[x]^2 cancels catastrophically.
TensorId centered_sum_squares(LoweringContext& ctx, const std::string& kind, TensorId x,
                              TensorId mean, const std::vector<int>& axes);

// unary(op, x) for float x; integer x goes through float64 and back
// (ONNX allows ReduceL2 / ReduceLogSum on integers).
Expr float_math(UnaryOp op, const Expr& x);

}  // namespace tilegraph::onnx_frontend
