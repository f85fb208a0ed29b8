#include "frontends/onnx/lower_util.h"

#include <algorithm>

#include "compiler/ir/reshape.h"

namespace tilegraph::onnx_frontend {

std::vector<Expr> axis_vars(int rank) {
  std::vector<Expr> vars;
  for (int i = 0; i < rank; ++i) vars.push_back(var(i));
  return vars;
}

int normalize_axis(const LoweringContext& ctx, int64_t axis, int rank) {
  if (axis < -rank || axis >= std::max(rank, 1))
    ctx.fail(str_cat("axis ", axis, " is out of range for rank ", rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape broadcast_shapes(const LoweringContext& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes) all += (all.empty() ? "" : ", ") + shape_to_string(t);
      ctx.fail("shapes cannot be broadcast together: " + all);
    }
  }
  return out;
}

std::vector<Expr> broadcast_indices(const Shape& in, const std::vector<Expr>& vars) {
  std::vector<Expr> idx;
  const size_t offset = vars.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) idx.push_back(in[i] == 1 ? int_imm(0) : vars[offset + i]);
  return idx;
}

TensorId elementwise(LoweringContext& ctx, const std::string& kind,
                     const std::vector<TensorId>& inputs, DType out_dtype, const ElementFn& fn) {
  Graph& g = ctx.graph();
  std::vector<Shape> shapes;
  for (TensorId t : inputs) shapes.push_back(g.tensor(t).shape);
  const Shape out = broadcast_shapes(ctx, shapes);
  const auto vars = axis_vars(static_cast<int>(out.size()));
  std::vector<Expr> values;
  for (size_t s = 0; s < inputs.size(); ++s) {
    const Tensor& t = g.tensor(inputs[s]);
    values.push_back(load(static_cast<int>(s), t.dtype, broadcast_indices(t.shape, vars)));
  }
  return ctx.emit(kind, out, out_dtype, inputs, fn(values));
}

TensorId elementwise_node(LoweringContext& ctx, const std::string& kind, const ElementFn& fn,
                          int n) {
  std::vector<TensorId> inputs;
  const int count = n < 0 ? ctx.num_inputs() : n;
  if (count == 0) ctx.fail("needs at least one input");
  for (int i = 0; i < count; ++i) inputs.push_back(ctx.input(i));
  std::vector<Expr> probe_values;
  // The output dtype is whatever fn produces; probe it with symbolic loads.
  for (int i = 0; i < count; ++i) probe_values.push_back(load(i, ctx.dtype(i), {}));
  const DType out_dtype = fn(probe_values)->dtype;
  return elementwise(ctx, kind, inputs, out_dtype, fn);
}

TensorId index_map(LoweringContext& ctx, const std::string& kind, TensorId in,
                   const Shape& out_shape, const IndexFn& index_fn) {
  const Tensor& t = ctx.graph().tensor(in);
  auto indices = index_fn(axis_vars(static_cast<int>(out_shape.size())));
  return ctx.emit(kind, out_shape, t.dtype, {in}, load(0, t.dtype, std::move(indices)));
}

TensorId reshape(LoweringContext& ctx, TensorId in, const Shape& out_shape) {
  const Shape in_shape = ctx.graph().tensor(in).shape;
  if (num_elements(in_shape) != num_elements(out_shape))
    ctx.fail(str_cat("cannot reshape ", shape_to_string(in_shape), " to ",
                     shape_to_string(out_shape)));
  if (in_shape == out_shape) return in;
  return index_map(ctx, "reshape", in, out_shape, [&](const std::vector<Expr>& vars) {
    return reshape_indices(in_shape, out_shape, vars);
  });
}

TensorId transpose(LoweringContext& ctx, TensorId in, const std::vector<int>& perm) {
  const Shape in_shape = ctx.graph().tensor(in).shape;
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = in_shape[perm[i]];
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int>(i);
  if (identity) return in;
  return index_map(ctx, "transpose", in, out, [&](const std::vector<Expr>& vars) {
    std::vector<Expr> idx(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) idx[perm[i]] = vars[i];
    return idx;
  });
}

TensorId cast_tensor(LoweringContext& ctx, TensorId in, DType to) {
  if (ctx.graph().tensor(in).dtype == to) return in;
  return elementwise(ctx, "cast", {in}, to, [&](const std::vector<Expr>& v) { return cast(to, v[0]); });
}

TensorId reduce(LoweringContext& ctx, const std::string& kind, TensorId in, std::vector<int> axes,
                bool keepdims, Reduction reduction, const std::function<Expr(Expr)>& pre) {
  const Tensor& t = ctx.graph().tensor(in);
  const Shape in_shape = t.shape;
  const DType dtype = t.dtype;
  const int rank = static_cast<int>(in_shape.size());
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Shape out;
  std::vector<int64_t> reduce_extents;
  for (int d = 0; d < rank; ++d) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (reduced) reduce_extents.push_back(in_shape[d]);
    if (!reduced) out.push_back(in_shape[d]);
    else if (keepdims) out.push_back(1);
  }
  // Var ids: spatial 0..out_rank-1, then one per reduced axis.
  const int out_rank = static_cast<int>(out.size());
  std::vector<Expr> idx;
  int spatial = 0, reduced_seen = 0;
  for (int d = 0; d < rank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) {
      idx.push_back(var(out_rank + reduced_seen++));
      if (keepdims) ++spatial;
    } else {
      idx.push_back(var(spatial++));
    }
  }
  Expr value = load(0, dtype, idx);
  if (pre) value = pre(value);
  if (reduce_extents.empty()) {  // nothing to reduce: ONNX keeps the data (noop_with_empty_axes)
    return ctx.emit(kind, out, dtype, {in}, value);
  }
  return ctx.emit(kind, out, value->dtype, {in}, value, reduction, reduce_extents);
}

TensorId matmul_with(LoweringContext& ctx, TensorId a, TensorId b, DType out_dtype,
                     const std::vector<TensorId>& extra, const ProductFn& product) {
  Shape sa = ctx.graph().tensor(a).shape, sb = ctx.graph().tensor(b).shape;
  const DType ta = ctx.graph().tensor(a).dtype, tb = ctx.graph().tensor(b).dtype;
  if (sa.empty() || sb.empty()) ctx.fail("matmul of a scalar");
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    ctx.fail(str_cat("matmul inner dimensions differ: ", shape_to_string(ctx.graph().tensor(a).shape),
                     " x ", shape_to_string(ctx.graph().tensor(b).shape)));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shapes(ctx, {batch_a, batch_b});
  Shape out = batch;
  out.push_back(m);
  out.push_back(n);
  const int rank = static_cast<int>(out.size());
  const auto vars = axis_vars(rank);
  const std::vector<Expr> batch_vars(vars.begin(), vars.end() - 2);
  const Expr kv = var(rank);
  auto a_idx = broadcast_indices(batch_a, batch_vars);
  if (!a_vec) a_idx.push_back(vars[rank - 2]);
  a_idx.push_back(kv);
  auto b_idx = broadcast_indices(batch_b, batch_vars);
  b_idx.push_back(kv);
  if (!b_vec) b_idx.push_back(vars[rank - 1]);
  std::vector<TensorId> inputs{a, b};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  const Expr row = a_vec ? int_imm(0) : vars[rank - 2], col = b_vec ? int_imm(0) : vars[rank - 1];
  Expr body = product(load(0, ta, a_idx), load(1, tb, b_idx), row, col);
  TensorId result = ctx.emit("matmul", out, out_dtype, inputs, body, Reduction::kSum, {k});
  if (a_vec || b_vec) {
    Shape final_shape = batch;
    if (!a_vec) final_shape.push_back(m);
    if (!b_vec) final_shape.push_back(n);
    result = reshape(ctx, result, final_shape);
  }
  return result;
}

TensorId matmul(LoweringContext& ctx, TensorId a, TensorId b) {
  return matmul_with(ctx, a, b, ctx.graph().tensor(a).dtype, {},
                     [](Expr x, Expr y, const Expr&, const Expr&) { return x * y; });
}

Expr scalar(double v, DType t) { return const_of(v, t); }

}  // namespace tilegraph::onnx_frontend
