// Gather, GatherElements, GatherND and OneHot: reads at positions given by an
// index tensor. A runtime index tensor makes the op data-dependent (a Load in
// another Load's index, non-affine for the scheduler); constant indices that
// form a single value or an arithmetic progression become affine index maps.
#include "frontends/onnx/ops/layout_ops.h"

namespace tilegraph::onnx_frontend::layout {

namespace {

// Reads index tensor `slot` at `idx` as an index into data axis `axis` of
// size `dim`: negatives wrapped, out-of-range values fail the run.
Expr runtime_index(LoweringContext& ctx, int slot, std::vector<Expr> idx, int64_t dim, int axis) {
  return checked_index(ctx, load(slot, ctx.dtype(slot), std::move(idx)), dim, axis);
}

// For constant 0-/1-D indices: the affine expression `first + step * v` that
// produces them along `v`, or nullptr if they are not an arithmetic progression.
Expr affine_constant_indices(const LoweringContext& ctx, int64_t dim, const Expr& v) {
  const std::vector<int64_t> raw = ctx.const_ints(1, "indices");
  std::vector<int64_t> values;
  for (int64_t x : raw) values.push_back(wrap_constant_index(ctx, x, dim, "indices"));
  if (values.size() == 1) return int_imm(values[0]);
  if (ctx.rank(1) != 1 || values.empty()) return nullptr;
  const int64_t step = values[1] - values[0];
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i] - values[i - 1] != step) return nullptr;
  return v * step + values[0];
}

std::vector<TensorId> lower_gather(LoweringContext& ctx) {
  const Shape data = ctx.shape(0), indices = ctx.shape(1);
  const int r = ctx.rank(0), q = ctx.rank(1);
  if (r < 1) ctx.fail("data must have rank >= 1");
  check_index_type(ctx, 1);
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  check_shape(ctx, out, "the gathered shape");
  const auto v = axis_vars(static_cast<int>(out.size()));
  std::vector<Expr> idx(v.begin(), v.begin() + axis);
  Expr position;
  if (ctx.is_constant(1) && num_elements(indices) > 0 && q <= 1)
    position = affine_constant_indices(ctx, data[axis], q == 1 ? v[axis] : nullptr);
  std::vector<TensorId> inputs{ctx.input(0)};
  if (!position) {
    check_constant_indices(ctx, 1, {data[axis]});
    inputs.push_back(ctx.input(1));
    position = runtime_index(ctx, 1, std::vector<Expr>(v.begin() + axis, v.begin() + axis + q),
                             data[axis], axis);
  }
  idx.push_back(position);
  idx.insert(idx.end(), v.begin() + axis + q, v.end());
  return {ctx.emit("gather", out, ctx.dtype(0), inputs, load(0, ctx.dtype(0), idx))};
}

std::vector<TensorId> lower_gather_elements(LoweringContext& ctx) {
  const Shape data = ctx.shape(0), indices = ctx.shape(1);
  const int r = ctx.rank(0);
  if (r < 1 || ctx.rank(1) != r)
    ctx.fail(str_cat("data (", shape_to_string(data), ") and indices (", shape_to_string(indices),
                     ") must have the same rank >= 1"));
  check_index_type(ctx, 1);
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  for (int d = 0; d < r; ++d)
    if (d != axis && indices[d] > data[d])
      ctx.fail(str_cat("indices (", shape_to_string(indices), ") exceed data (", shape_to_string(data),
                       ") along axis ", d));
  check_constant_indices(ctx, 1, {data[axis]});
  const auto v = axis_vars(r);
  std::vector<Expr> idx = v;
  idx[axis] = runtime_index(ctx, 1, v, data[axis], axis);
  return {ctx.emit("gather_elements", indices, ctx.dtype(0), {ctx.input(0), ctx.input(1)},
                   load(0, ctx.dtype(0), idx))};
}

std::vector<TensorId> lower_gather_nd(LoweringContext& ctx) {
  const Shape data = ctx.shape(0), indices = ctx.shape(1);
  const int r = ctx.rank(0), q = ctx.rank(1);
  const int64_t b = ctx.opset() >= 12 ? ctx.attr_int("batch_dims", 0) : 0;
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  check_index_type(ctx, 1);
  if (b < 0 || b >= std::min(q, r))
    ctx.fail(str_cat("batch_dims ", b, " must be below both ranks (", r, " and ", q, ")"));
  const int64_t m = indices.back();
  if (m < 1 || m > r - b)
    ctx.fail(str_cat("the last dimension of indices (", m, ") must be in [1, ", r - b, "]"));
  for (int64_t d = 0; d < b; ++d)
    if (data[d] != indices[d])
      ctx.fail(str_cat("batch dimension ", d, " differs: data ", shape_to_string(data),
                       ", indices ", shape_to_string(indices)));
  // out = indices[:-1] + data[b+m:]
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + m, data.end());
  check_shape(ctx, out, "the gathered shape");
  check_constant_indices(ctx, 1, Shape(data.begin() + b, data.begin() + b + m));
  const auto v = axis_vars(static_cast<int>(out.size()));
  std::vector<Expr> idx(v.begin(), v.begin() + b);
  for (int64_t k = 0; k < m; ++k) {
    std::vector<Expr> at(v.begin(), v.begin() + (q - 1));
    at.push_back(int_imm(k));
    idx.push_back(runtime_index(ctx, 1, at, data[b + k], static_cast<int>(b + k)));
  }
  idx.insert(idx.end(), v.begin() + (q - 1), v.end());
  return {ctx.emit("gather_nd", out, ctx.dtype(0), {ctx.input(0), ctx.input(1)},
                   load(0, ctx.dtype(0), idx))};
}

std::vector<TensorId> lower_one_hot(LoweringContext& ctx) {
  const Shape indices = ctx.shape(0);
  const int r = ctx.rank(0);
  if (num_elements(ctx.shape(1)) != 1) ctx.fail("depth must be a scalar");
  const int64_t depth = ctx.const_ints(1, "depth")[0];
  if (depth < 1) ctx.fail(str_cat("depth must be positive, got ", depth));
  if (ctx.rank(2) != 1 || ctx.shape(2)[0] != 2) ctx.fail("values must be [off_value, on_value]");
  const int64_t axis_attr = ctx.attr_int("axis", -1);
  if (axis_attr < -r - 1 || axis_attr > r)
    ctx.fail(str_cat("axis ", axis_attr, " is out of range for output rank ", r + 1));
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + r + 1 : axis_attr);
  Shape out = indices;
  out.insert(out.begin() + axis, depth);
  check_shape(ctx, out, "the one-hot shape");
  const DType dtype = ctx.dtype(2);
  std::vector<TensorId> inputs{ctx.input(0)};
  Expr off, on;
  if (ctx.is_constant(2)) {
    off = constant_element(ctx.tensor(2), 0, dtype);
    on = constant_element(ctx.tensor(2), 1, dtype);
  } else {
    inputs.push_back(ctx.input(2));
    off = load(1, dtype, {int_imm(0)});
    on = load(1, dtype, {int_imm(1)});
  }
  const auto v = axis_vars(r + 1);
  std::vector<Expr> at(v.begin(), v.begin() + axis);
  at.insert(at.end(), v.begin() + axis + 1, v.end());
  // Float indices truncate to integers; out-of-range ones match no position.
  const Expr index = wrap_negative(index_value(load(0, ctx.dtype(0), at)), depth);
  return {ctx.emit("one_hot", out, dtype, inputs, select(eq(index, v[axis]), on, off))};
}

}  // namespace

void add_gather_ops(OpTable& t) {
  t.push_back({"Gather", 1, lower_gather});
  t.push_back({"GatherElements", 11, lower_gather_elements});
  t.push_back({"GatherND", 11, lower_gather_nd});
  t.push_back({"OneHot", 9, lower_one_hot});
}

}  // namespace tilegraph::onnx_frontend::layout
