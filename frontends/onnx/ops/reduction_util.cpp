#include "frontends/onnx/ops/reduction_util.h"

#include <algorithm>

namespace tilegraph::onnx_frontend {

TensorId reduce_over(LoweringContext& ctx, const std::string& kind,
                     const std::vector<TensorId>& inputs, const Shape& domain,
                     std::vector<int> axes, bool keepdims, Reduction reduction, DType dtype,
                     const DomainFn& fn) {
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const int rank = static_cast<int>(domain.size());
  auto is_reduced = [&](int d) { return std::binary_search(axes.begin(), axes.end(), d); };
  Shape out;
  std::vector<int64_t> extents;
  for (int d = 0; d < rank; ++d) {
    if (is_reduced(d)) {
      extents.push_back(domain[d]);
      if (keepdims) out.push_back(1);
    } else {
      out.push_back(domain[d]);
    }
  }
  // Var ids: spatial 0..out_rank-1 (a kept reduced axis still owns one, always
  // 0), then one reduce var per reduced axis in axis order.
  const int out_rank = static_cast<int>(out.size());
  std::vector<Expr> point;
  int spatial = 0, reduced = 0;
  for (int d = 0; d < rank; ++d) {
    if (is_reduced(d)) {
      point.push_back(var(out_rank + reduced++));
      if (keepdims) ++spatial;
    } else {
      point.push_back(var(spatial++));
    }
  }
  std::vector<Expr> values;
  for (size_t s = 0; s < inputs.size(); ++s) {
    const Tensor& t = ctx.graph().tensor(inputs[s]);
    TG_CHECK(t.shape.size() <= domain.size(), "input ", s, " of ", kind,
             " has a higher rank than its domain");
    values.push_back(load(static_cast<int>(s), t.dtype, broadcast_indices(t.shape, point)));
  }
  Expr body = fn(values, point);
  if (extents.empty()) return ctx.emit(kind, out, dtype, inputs, body);
  return ctx.emit(kind, out, dtype, inputs, body, reduction, extents);
}

int64_t reduced_count(const Shape& shape, const std::vector<int>& axes) {
  std::vector<int> unique = axes;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  int64_t n = 1;
  for (int a : unique) n *= shape[a];
  return n;
}

std::vector<int> trailing_axes(int first, int rank) {
  std::vector<int> axes;
  for (int d = first; d < rank; ++d) axes.push_back(d);
  return axes;
}

TensorId mean_over(LoweringContext& ctx, const std::string& kind, TensorId x,
                   const std::vector<int>& axes) {
  const Tensor& t = ctx.graph().tensor(x);
  const DType dtype = t.dtype;
  const int64_t n = reduced_count(t.shape, axes);
  TensorId sum = reduce(ctx, kind + "_sum", x, axes, /*keepdims=*/true, Reduction::kSum);
  if (n == 1) return sum;
  return elementwise(ctx, kind, {sum}, dtype, [&](const std::vector<Expr>& v) {
    if (!is_float(dtype)) return v[0] / scalar(static_cast<double>(n), dtype);
    return v[0] * scalar(1.0 / static_cast<double>(n), dtype);
  });
}

TensorId centered_sum_squares(LoweringContext& ctx, const std::string& kind, TensorId x,
                              TensorId mean, const std::vector<int>& axes) {
  const Tensor& t = ctx.graph().tensor(x);
  return reduce_over(ctx, kind, {x, mean}, t.shape, axes, /*keepdims=*/true, Reduction::kSum,
                     t.dtype, [](const std::vector<Expr>& v, const std::vector<Expr>&) {
                       Expr d = v[0] - v[1];
                       return d * d;
                     });
}

Expr float_math(UnaryOp op, const Expr& x) {
  if (is_float(x->dtype)) return unary(op, x);
  return cast(x->dtype, unary(op, cast(DType::kF64, x)));
}

}  // namespace tilegraph::onnx_frontend
