// ScatterND, ScatterElements (and the deprecated Scatter): the output is the
// data with some positions replaced by (or combined with) updates.
//
// Tensor-expression ops compute each output point from its inputs, so a
// scatter is turned around into a gather: "which update lands here?".
//  * Few constant indices: a Select chain per update, later updates outermost
//    (the last write wins), with only affine loads — an index map.
//  * Otherwise, reduction = none: a "source" op finds, per output point, the
//    last update index that targets it (a Max reduction over the updates of
//    k+1, 0 for none), and the output reads updates at that source or data.
//    With constant indices the source op folds into a constant at import.
//  * add / mul / max / min: a reduction over the updates of the matching ones
//    (identity elsewhere), combined elementwise with the data.
#include <limits>

#include "frontends/onnx/ops/layout_ops.h"

namespace tilegraph::onnx_frontend::layout {

namespace {

// Above this many updates, a Select chain costs more than the source lookup.
constexpr int64_t kMaxSelectChain = 16;

enum class Combine { kNone, kAdd, kMul, kMax, kMin };

Combine parse_reduction(const LoweringContext& ctx) {
  const std::string r = ctx.opset() >= 16 ? ctx.attr_string("reduction", "none") : "none";
  Combine c;
  if (r == "none") c = Combine::kNone;
  else if (r == "add") c = Combine::kAdd;
  else if (r == "mul") c = Combine::kMul;
  else if (r == "max" && ctx.opset() >= 18) c = Combine::kMax;
  else if (r == "min" && ctx.opset() >= 18) c = Combine::kMin;
  else ctx.fail(str_cat("unsupported reduction '", r, "'"));
  if (c != Combine::kNone && ctx.dtype(0) == DType::kBool)
    ctx.fail(str_cat("reduction '", r, "' on a bool tensor"));
  return c;
}

Expr combine(Combine c, Expr old_value, Expr update) {
  switch (c) {
    case Combine::kNone: return update;
    case Combine::kAdd: return old_value + update;
    case Combine::kMul: return old_value * update;
    case Combine::kMax: return max(old_value, update);
    case Combine::kMin: return min(old_value, update);
  }
  return update;
}

Reduction reduction_of(Combine c) {
  switch (c) {
    case Combine::kAdd: return Reduction::kSum;
    case Combine::kMul: return Reduction::kProd;
    case Combine::kMax: return Reduction::kMax;
    case Combine::kMin: return Reduction::kMin;
    case Combine::kNone: break;
  }
  return Reduction::kNone;
}

// out = data combined with the reduction `contribution` (data + sum, ...).
TensorId combine_with_data(LoweringContext& ctx, Combine c, TensorId contribution) {
  return elementwise(ctx, "scatter_combine", {ctx.input(0), contribution}, ctx.dtype(0),
                     [c](const std::vector<Expr>& v) { return combine(c, v[0], v[1]); });
}

// The source map stores update number + 1 (0: no update); int32 halves its
// traffic and suffices for any realistic number of updates.
DType source_dtype(int64_t updates) {
  return updates < std::numeric_limits<int32_t>::max() ? DType::kI32 : DType::kI64;
}

// Shared checks: data, indices, updates dtypes.
void check_types(const LoweringContext& ctx) {
  check_index_type(ctx, 1);
  if (ctx.dtype(2) != ctx.dtype(0))
    ctx.fail(str_cat("updates (", dtype_name(ctx.dtype(2)), ") and data (", dtype_name(ctx.dtype(0)),
                     ") have different types"));
}

std::vector<TensorId> lower_scatter_nd(LoweringContext& ctx) {
  check_types(ctx);
  const Shape data = ctx.shape(0), indices = ctx.shape(1), updates = ctx.shape(2);
  const int r = ctx.rank(0), q = ctx.rank(1);
  const DType dtype = ctx.dtype(0);
  const Combine how = parse_reduction(ctx);
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  const int64_t m = indices.back();
  if (m < 1 || m > r)
    ctx.fail(str_cat("the last dimension of indices (", m, ") must be in [1, ", r, "]"));
  // The update slices are indexed by indices[:-1]; each is a data[m:] block.
  const Shape slots(indices.begin(), indices.end() - 1);
  Shape expected = slots;
  expected.insert(expected.end(), data.begin() + m, data.end());
  if (updates != expected)
    ctx.fail(str_cat("updates has shape ", shape_to_string(updates), "; indices ",
                     shape_to_string(indices), " and data ", shape_to_string(data), " need ",
                     shape_to_string(expected)));
  const int64_t count = num_elements(slots);
  if (count == 0) return {ctx.input(0)};
  const auto v = axis_vars(r);
  const std::vector<Expr> block_vars(v.begin() + m, v.end());

  if (ctx.is_constant(1) && count <= kMaxSelectChain) {
    const std::vector<int64_t> raw = ctx.const_ints(1, "indices");
    Expr body = load(0, dtype, v);
    for (int64_t k = 0; k < count; ++k) {
      Expr match;
      for (int64_t d = 0; d < m; ++d) {
        const int64_t target = wrap_constant_index(ctx, raw[k * m + d], data[d], "indices");
        const Expr c = eq(v[d], int_imm(target));
        match = match ? logical_and(match, c) : c;
      }
      std::vector<Expr> at;
      for (int64_t c : coords_of(k, slots)) at.push_back(int_imm(c));
      at.insert(at.end(), block_vars.begin(), block_vars.end());
      body = select(match, combine(how, body, load(1, dtype, at)), body);
    }
    return {ctx.emit("scatter_nd", data, dtype, {ctx.input(0), ctx.input(2)}, body)};
  }

  check_constant_indices(ctx, 1, Shape(data.begin(), data.begin() + m));
  // Reduce over the update slots (a single dummy axis when indices is 1-D).
  const Shape reduce_extents = slots.empty() ? Shape{1} : slots;
  auto matches = [&](int out_rank) {
    std::vector<Expr> slot_vars;
    for (size_t j = 0; j < slots.size(); ++j) slot_vars.push_back(var(out_rank + static_cast<int>(j)));
    Expr match;
    for (int64_t d = 0; d < m; ++d) {
      std::vector<Expr> at = slot_vars;
      at.push_back(int_imm(d));
      const Expr index = checked_index(ctx, load(0, ctx.dtype(1), at), data[d], static_cast<int>(d));
      const Expr c = eq(index, var(static_cast<int>(d)));
      match = match ? logical_and(match, c) : c;
    }
    return std::make_pair(match, slot_vars);
  };
  if (how == Combine::kNone) {
    const Shape target(data.begin(), data.begin() + m);
    auto [match, slot_vars] = matches(static_cast<int>(m));
    const DType src_t = source_dtype(count);
    const Expr slot_plus_one = cast(src_t, flatten_index(slot_vars, slots) + 1);
    const TensorId source = ctx.emit("scatter_nd_source", target, src_t, {ctx.input(1)},
                                     select(match, slot_plus_one, int_imm(0, src_t)),
                                     Reduction::kMax, reduce_extents);
    const Expr src =
        index_value(load(2, src_t, std::vector<Expr>(v.begin(), v.begin() + m)));
    std::vector<Expr> at = unflatten_index(src - 1, slots);
    at.insert(at.end(), block_vars.begin(), block_vars.end());
    const Expr body =
        select(binary(BinaryOp::kGt, src, int_imm(0)), load(1, dtype, at), load(0, dtype, v));
    return {ctx.emit("scatter_nd", data, dtype, {ctx.input(0), ctx.input(2), source}, body)};
  }
  auto [match, slot_vars] = matches(r);
  std::vector<Expr> at = slot_vars;
  at.insert(at.end(), block_vars.begin(), block_vars.end());
  const Reduction reduction = reduction_of(how);
  const TensorId contribution =
      ctx.emit("scatter_nd_reduce", data, dtype, {ctx.input(1), ctx.input(2)},
               select(match, load(1, dtype, at), reduction_init(reduction, dtype)), reduction,
               reduce_extents);
  return {combine_with_data(ctx, how, contribution)};
}

std::vector<TensorId> lower_scatter_elements(LoweringContext& ctx) {
  check_types(ctx);
  const Shape data = ctx.shape(0), indices = ctx.shape(1);
  const int r = ctx.rank(0);
  const DType dtype = ctx.dtype(0);
  const Combine how = parse_reduction(ctx);
  if (r < 1 || ctx.rank(1) != r || ctx.shape(2) != indices)
    ctx.fail(str_cat("data (", shape_to_string(data), "), indices (", shape_to_string(indices),
                     ") and updates (", shape_to_string(ctx.shape(2)),
                     ") must have the same rank >= 1, indices and updates the same shape"));
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  for (int d = 0; d < r; ++d)
    if (d != axis && indices[d] > data[d])
      ctx.fail(str_cat("indices (", shape_to_string(indices), ") exceed data (",
                       shape_to_string(data), ") along axis ", d));
  const int64_t count = num_elements(indices);
  if (count == 0) return {ctx.input(0)};
  const auto v = axis_vars(r);

  if (ctx.is_constant(1) && count <= kMaxSelectChain) {
    const std::vector<int64_t> raw = ctx.const_ints(1, "indices");
    Expr body = load(0, dtype, v);
    for (int64_t j = 0; j < count; ++j) {
      std::vector<Expr> at;
      Expr match;
      const std::vector<int64_t> coords = coords_of(j, indices);
      for (int d = 0; d < r; ++d) {
        at.push_back(int_imm(coords[d]));
        const int64_t target =
            d == axis ? wrap_constant_index(ctx, raw[j], data[d], "indices") : coords[d];
        const Expr c = eq(v[d], int_imm(target));
        match = match ? logical_and(match, c) : c;
      }
      body = select(match, combine(how, body, load(1, dtype, at)), body);
    }
    return {ctx.emit("scatter_elements", data, dtype, {ctx.input(0), ctx.input(2)}, body)};
  }

  check_constant_indices(ctx, 1, {data[axis]});
  // Only the updates in this point's line along `axis` can land here: reduce
  // over that line (axis var id r), guarded where indices is smaller than data.
  const Expr line = var(r);
  std::vector<Expr> at = v;
  at[axis] = line;
  Expr inside;
  for (int d = 0; d < r; ++d) {
    if (d == axis || indices[d] == data[d]) continue;
    const Expr c = lt(v[d], int_imm(indices[d]));
    inside = inside ? logical_and(inside, c) : c;
  }
  Expr match = eq(checked_index(ctx, load(0, ctx.dtype(1), at), data[axis], axis), v[axis]);
  if (inside) match = select(inside, match, int_imm(0, DType::kBool));
  if (how == Combine::kNone) {
    const DType src_t = source_dtype(indices[axis]);
    const TensorId source =
        ctx.emit("scatter_elements_source", data, src_t, {ctx.input(1)},
                 select(match, cast(src_t, line + 1), int_imm(0, src_t)), Reduction::kMax,
                 {indices[axis]});
    const Expr src = index_value(load(2, src_t, v));
    std::vector<Expr> from = v;
    from[axis] = src - 1;
    const Expr body =
        select(binary(BinaryOp::kGt, src, int_imm(0)), load(1, dtype, from), load(0, dtype, v));
    return {ctx.emit("scatter_elements", data, dtype, {ctx.input(0), ctx.input(2), source}, body)};
  }
  const Reduction reduction = reduction_of(how);
  const TensorId contribution = ctx.emit(
      "scatter_elements_reduce", data, dtype, {ctx.input(1), ctx.input(2)},
      select(match, load(1, dtype, at), reduction_init(reduction, dtype)), reduction, {indices[axis]});
  return {combine_with_data(ctx, how, contribution)};
}

}  // namespace

void add_scatter_ops(OpTable& t) {
  t.push_back({"ScatterND", 11, lower_scatter_nd});
  t.push_back({"ScatterElements", 11, lower_scatter_elements});
  // Scatter (opsets 9-10) is ScatterElements under its old name.
  t.push_back({"Scatter", 9, lower_scatter_elements});
}

}  // namespace tilegraph::onnx_frontend::layout
