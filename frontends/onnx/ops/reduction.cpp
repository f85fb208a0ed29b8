// Reductions: Reduce*, ArgMax / ArgMin, CumSum. Each is one or a few
// reduction ops (graph.h); composite ones (mean, L2, log-sum-exp, arg-extremes)
// chain a reduction with elementwise or further reductions that the scheduler
// fuses later.
#include <algorithm>
#include <optional>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/ops/reduction_util.h"

namespace tilegraph::onnx_frontend {

namespace {

using Values = std::vector<Expr>;

enum class ReduceFamily { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

struct ReduceSpec {
  const char* op_type;
  const char* kind;      // op name prefix in the graph
  ReduceFamily family;
  int axes_input_since;  // from this opset on, axes is input 1 instead of an attribute
};

// The axes a Reduce* node reduces (normalized), or nullopt when the node is
// an identity (empty axes with noop_with_empty_axes). Empty axes otherwise
// mean all axes.
std::optional<std::vector<int>> reduce_axes(const LoweringContext& ctx, bool axes_is_input) {
  const int rank = ctx.rank(0);
  std::vector<int64_t> given;
  if (axes_is_input) {
    if (ctx.has_attr("axes"))
      ctx.fail("'axes' is an input from this opset on, not an attribute");
    // An axes input with no elements is empty whether or not it is constant.
    if (ctx.has_input(1) && num_elements(ctx.shape(1)) > 0) {
      // The output shape depends on the axes, so they must be known now.
      if (!ctx.is_constant(1))
        ctx.fail(str_cat("axes ('", ctx.tensor(1).name, "') must be a constant: the output shape "
                         "depends on it and tilegraph compiles static shapes"));
      given = ctx.const_ints(1, "axes");
    }
  } else {
    given = ctx.attr_ints("axes");
  }
  if (given.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
    return trailing_axes(0, rank);
  }
  std::vector<int> axes;
  for (int64_t a : given) {
    const int axis = normalize_axis(ctx, a, rank);
    for (int seen : axes)
      if (seen == axis) ctx.fail(str_cat("axes lists axis ", a, " twice"));
    axes.push_back(axis);
  }
  return axes;
}

// The shape of a reduction's result without kept dims.
Shape drop_axes(const Shape& shape, const std::vector<int>& axes) {
  Shape out;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(shape[d]);
  return out;
}

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m = max(x), so
// exp never overflows. An infinite m (all -inf, or a +inf element) is replaced
// by 0 in the shift: the unshifted sum then gives the right -inf / +inf
// instead of inf - inf = NaN.
TensorId log_sum_exp(LoweringContext& ctx, TensorId x, const std::vector<int>& axes,
                     bool keepdims) {
  const DType out_dtype = ctx.graph().tensor(x).dtype;
  // Integer inputs: exp of a difference is fractional; compute in float64.
  if (!is_float(out_dtype)) x = cast_tensor(ctx, x, DType::kF64);
  const Shape shape = ctx.graph().tensor(x).shape;
  const DType t = ctx.graph().tensor(x).dtype;
  auto shift = [t](const Expr& m) { return select(unary(UnaryOp::kIsInf, m), scalar(0, t), m); };
  TensorId m = reduce(ctx, "reduce_log_sum_exp_max", x, axes, /*keepdims=*/true, Reduction::kMax);
  TensorId s = reduce_over(ctx, "reduce_log_sum_exp_sum", {x, m}, shape, axes, true,
                           Reduction::kSum, t, [&](const Values& v, const Values&) {
                             return unary(UnaryOp::kExp, v[0] - shift(v[1]));
                           });
  TensorId y = elementwise(ctx, "reduce_log_sum_exp", {s, m}, t, [&](const Values& v) {
    return unary(UnaryOp::kLog, v[0]) + shift(v[1]);
  });
  if (!keepdims) y = reshape(ctx, y, drop_axes(shape, axes));
  return cast_tensor(ctx, y, out_dtype);
}

std::vector<TensorId> lower_reduce(LoweringContext& ctx, const ReduceSpec& spec, bool axes_is_input) {
  const std::optional<std::vector<int>> maybe_axes = reduce_axes(ctx, axes_is_input);
  if (!maybe_axes) return {ctx.input(0)};
  const std::vector<int>& axes = *maybe_axes;
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const TensorId x = ctx.input(0);
  const DType t = ctx.dtype(0);
  const std::string kind = spec.kind;
  auto sum_of = [&](const std::function<Expr(Expr)>& pre) {
    return reduce(ctx, kind + "_sum", x, axes, keepdims, Reduction::kSum, pre);
  };
  auto finish = [&](TensorId in, const std::function<Expr(Expr)>& post) {
    return elementwise(ctx, kind, {in}, t, [&](const Values& v) { return post(v[0]); });
  };
  switch (spec.family) {
    case ReduceFamily::kSum: return {reduce(ctx, kind, x, axes, keepdims, Reduction::kSum)};
    case ReduceFamily::kMax: return {reduce(ctx, kind, x, axes, keepdims, Reduction::kMax)};
    case ReduceFamily::kMin: return {reduce(ctx, kind, x, axes, keepdims, Reduction::kMin)};
    case ReduceFamily::kProd: return {reduce(ctx, kind, x, axes, keepdims, Reduction::kProd)};
    case ReduceFamily::kSumSquare:
      return {reduce(ctx, kind, x, axes, keepdims, Reduction::kSum, [](Expr v) { return v * v; })};
    case ReduceFamily::kL1:
      return {reduce(ctx, kind, x, axes, keepdims, Reduction::kSum,
                     [](Expr v) { return unary(UnaryOp::kAbs, v); })};
    case ReduceFamily::kL2:
      return {finish(sum_of([](Expr v) { return v * v; }),
                     [](Expr s) { return float_math(UnaryOp::kSqrt, s); })};
    case ReduceFamily::kLogSum:
      return {finish(sum_of(nullptr), [](Expr s) { return float_math(UnaryOp::kLog, s); })};
    case ReduceFamily::kLogSumExp: return {log_sum_exp(ctx, x, axes, keepdims)};
    case ReduceFamily::kMean: {
      const int64_t n = reduced_count(ctx.shape(0), axes);
      return {finish(sum_of(nullptr), [&](Expr s) {
        // Integers: ONNX truncates the mean to the input type.
        if (!is_float(t)) return s / scalar(static_cast<double>(n), t);
        return s * scalar(1.0 / static_cast<double>(n), t);
      })};
    }
  }
  internal_error(__FILE__, __LINE__, str_cat("unhandled reduce family of ", spec.op_type));
}

// ArgMax / ArgMin: the extreme value e = max(x) (or min) over the axis, then
// the smallest (select_last_index: largest) index k with x[k] == e, as a
// min-reduce over select(x == e, k, extent) (max-reduce over select(.., k, -1)).
// Exact compare is right: e is one of the x values, not a recomputed one.
std::vector<TensorId> lower_arg_extreme(LoweringContext& ctx, bool is_max) {
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.opset() >= 12 && ctx.attr_int("select_last_index", 0) != 0;
  const TensorId x = ctx.input(0);
  const std::string kind = is_max ? "argmax" : "argmin";
  const int64_t extent = ctx.shape(0)[axis];
  const TensorId extreme = reduce(ctx, kind + "_value", x, {axis}, /*keepdims=*/true,
                                  is_max ? Reduction::kMax : Reduction::kMin);
  return {reduce_over(ctx, kind, {x, extreme}, ctx.shape(0), {axis}, keepdims,
                      last ? Reduction::kMax : Reduction::kMin, DType::kI64,
                      [&](const Values& v, const Values& point) {
                        return select(binary(BinaryOp::kEq, v[0], v[1]), point[axis],
                                      int_imm(last ? -1 : extent));
                      })};
}

// CumSum: out[.., i, ..] = sum over k of select(k in prefix(i), x[.., k, ..], 0),
// a reduction over a triangular domain. The axis is normally a constant; a
// model input is accepted too (the ONNX backend tests feed it that way): for
// rank 1 the axis is necessarily 0, otherwise every candidate axis is guarded
// by a select on the axis value read at run time, over the longest dimension.
std::vector<TensorId> lower_cumsum(LoweringContext& ctx) {
  const Shape shape = ctx.shape(0);
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  if (num_elements(ctx.shape(1)) != 1)
    ctx.fail(str_cat("axis must be a scalar, got shape ", shape_to_string(ctx.shape(1))));
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.attr_int("reverse", 0) != 0;
  const DType t = ctx.dtype(0);
  int fixed_axis = -1;
  if (ctx.is_constant(1)) fixed_axis = normalize_axis(ctx, ctx.const_ints(1, "axis")[0], rank);
  else if (rank == 1) fixed_axis = 0;

  const std::vector<Expr> vars = axis_vars(rank);
  const Expr k = var(rank);
  auto term = [&](int a) {
    std::vector<Expr> idx = vars;
    idx[a] = k;
    const Expr i = vars[a];
    Expr in_prefix = reverse ? (exclusive ? binary(BinaryOp::kGt, k, i) : ge(k, i))
                             : (exclusive ? lt(k, i) : binary(BinaryOp::kLe, k, i));
    // With a run-time axis k spans the longest dimension; stay inside this one.
    if (fixed_axis < 0) in_prefix = logical_and(in_prefix, lt(k, int_imm(shape[a])));
    return select(in_prefix, load(0, t, idx), scalar(0, t));
  };
  if (fixed_axis >= 0)
    return {ctx.emit("cumsum", shape, t, {ctx.input(0)}, term(fixed_axis), Reduction::kSum,
                     {shape[fixed_axis]})};

  const Expr axis_value =
      cast(DType::kI64, load(1, ctx.dtype(1), std::vector<Expr>(ctx.rank(1), int_imm(0))));
  Expr body = scalar(0, t);
  int64_t longest = 0;
  for (int a = rank - 1; a >= 0; --a) {
    longest = std::max(longest, shape[a]);
    const Expr chosen = binary(BinaryOp::kOr, binary(BinaryOp::kEq, axis_value, int_imm(a)),
                               binary(BinaryOp::kEq, axis_value, int_imm(a - rank)));
    body = select(chosen, term(a), body);
  }
  return {ctx.emit("cumsum", shape, t, {ctx.input(0), ctx.input(1)}, body, Reduction::kSum,
                   {longest})};
}

}  // namespace

void add_reduction_ops(OpTable& t) {
  static const ReduceSpec specs[] = {
      {"ReduceSum", "reduce_sum", ReduceFamily::kSum, 13},
      {"ReduceMean", "reduce_mean", ReduceFamily::kMean, 18},
      {"ReduceMax", "reduce_max", ReduceFamily::kMax, 18},
      {"ReduceMin", "reduce_min", ReduceFamily::kMin, 18},
      {"ReduceProd", "reduce_prod", ReduceFamily::kProd, 18},
      {"ReduceL1", "reduce_l1", ReduceFamily::kL1, 18},
      {"ReduceL2", "reduce_l2", ReduceFamily::kL2, 18},
      {"ReduceSumSquare", "reduce_sum_square", ReduceFamily::kSumSquare, 18},
      {"ReduceLogSum", "reduce_log_sum", ReduceFamily::kLogSum, 18},
      {"ReduceLogSumExp", "reduce_log_sum_exp", ReduceFamily::kLogSumExp, 18},
  };
  for (const ReduceSpec& spec : specs) {
    const ReduceSpec* s = &spec;
    t.push_back({spec.op_type, 1, [s](LoweringContext& ctx) { return lower_reduce(ctx, *s, false); }});
    t.push_back({spec.op_type, spec.axes_input_since,
                 [s](LoweringContext& ctx) { return lower_reduce(ctx, *s, true); }});
  }
  t.push_back({"ArgMax", 1, [](LoweringContext& ctx) { return lower_arg_extreme(ctx, true); }});
  t.push_back({"ArgMin", 1, [](LoweringContext& ctx) { return lower_arg_extreme(ctx, false); }});
  t.push_back({"CumSum", 11, lower_cumsum});
}

}  // namespace tilegraph::onnx_frontend
