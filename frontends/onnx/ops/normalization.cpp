// Normalizations: Softmax, LogSoftmax, Hardmax, LayerNormalization,
// BatchNormalization (inference), InstanceNormalization, GroupNormalization,
// LpNormalization, MeanVarianceNormalization.
//
// Each is a short chain of ops (statistics by reduction, then one elementwise
// op applying them) that the tile-graph scheduler fuses. Statistics use two
// passes (mean, then sum of squared deviations) rather than E[x^2] - E[x]^2,
// which cancels catastrophically for data far from zero.
#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/ops/reduction_util.h"

namespace tilegraph::onnx_frontend {

namespace {

using Values = std::vector<Expr>;

void require_float(const LoweringContext& ctx) {
  if (!is_float(ctx.dtype(0)))
    ctx.fail(str_cat("input must be floating-point, got ", dtype_name(ctx.dtype(0))));
}

// ---- Softmax family

// The axes Softmax / LogSoftmax / Hardmax normalize over. Before opset 13 the
// input is coerced to 2-D at `axis` (default 1): every axis from `axis` on.
// From 13 it is the single `axis` (default -1).
std::vector<int> softmax_axes(const LoweringContext& ctx, bool coerce_2d) {
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank >= 1");
  if (coerce_2d) return trailing_axes(normalize_axis(ctx, ctx.attr_int("axis", 1), rank), rank);
  return {normalize_axis(ctx, ctx.attr_int("axis", -1), rank)};
}

// exp(x - max) / sum(exp(x - max)): subtracting the max keeps exp <= 1, so
// large inputs cannot overflow.
std::vector<TensorId> lower_softmax(LoweringContext& ctx, bool coerce_2d) {
  require_float(ctx);
  const std::vector<int> axes = softmax_axes(ctx, coerce_2d);
  const TensorId x = ctx.input(0);
  const DType t = ctx.dtype(0);
  TensorId m = reduce(ctx, "softmax_max", x, axes, /*keepdims=*/true, Reduction::kMax);
  TensorId e = elementwise(ctx, "softmax_exp", {x, m}, t,
                           [](const Values& v) { return unary(UnaryOp::kExp, v[0] - v[1]); });
  TensorId s = reduce(ctx, "softmax_sum", e, axes, /*keepdims=*/true, Reduction::kSum);
  return {elementwise(ctx, "softmax", {e, s}, t, [](const Values& v) { return v[0] / v[1]; })};
}

// (x - max) - log(sum(exp(x - max))): never takes the log of an underflowed
// softmax, so very negative log-probabilities stay finite.
std::vector<TensorId> lower_log_softmax(LoweringContext& ctx, bool coerce_2d) {
  require_float(ctx);
  const std::vector<int> axes = softmax_axes(ctx, coerce_2d);
  const TensorId x = ctx.input(0);
  const DType t = ctx.dtype(0);
  TensorId m = reduce(ctx, "log_softmax_max", x, axes, /*keepdims=*/true, Reduction::kMax);
  TensorId d = elementwise(ctx, "log_softmax_shift", {x, m}, t,
                           [](const Values& v) { return v[0] - v[1]; });
  TensorId s = reduce(ctx, "log_softmax_sum", d, axes, /*keepdims=*/true, Reduction::kSum,
                      [](Expr v) { return unary(UnaryOp::kExp, v); });
  return {elementwise(ctx, "log_softmax", {d, s}, t,
                      [](const Values& v) { return v[0] - unary(UnaryOp::kLog, v[1]); })};
}

// 1 at the first maximum over the axes (row-major order when several), else 0:
// a max-reduce, a min-reduce of the flat index where x == max, then a compare.
std::vector<TensorId> lower_hardmax(LoweringContext& ctx, bool coerce_2d) {
  const std::vector<int> axes = softmax_axes(ctx, coerce_2d);
  const TensorId x = ctx.input(0);
  const Shape shape = ctx.shape(0);
  const DType t = ctx.dtype(0);
  const int64_t n = reduced_count(shape, axes);
  auto flat_index = [&](const Values& point) {
    Expr flat = int_imm(0);
    for (int a : axes) flat = flat * shape[a] + point[a];
    return flat;
  };
  TensorId m = reduce(ctx, "hardmax_max", x, axes, /*keepdims=*/true, Reduction::kMax);
  TensorId first = reduce_over(ctx, "hardmax_index", {x, m}, shape, axes, /*keepdims=*/true,
                               Reduction::kMin, DType::kI64, [&](const Values& v, const Values& p) {
                                 return select(binary(BinaryOp::kEq, v[0], v[1]), flat_index(p),
                                               int_imm(n));
                               });
  return {reduce_over(ctx, "hardmax", {first}, shape, {}, false, Reduction::kNone, t,
                      [&](const Values& v, const Values& p) {
                        return select(binary(BinaryOp::kEq, flat_index(p), v[0]), scalar(1, t),
                                      scalar(0, t));
                      })};
}

// ---- statistics-based normalizations

// The precision LayerNorm / GroupNorm standardize in (stash_type, default
// float32: float16 models keep accurate statistics).
DType stash_dtype(const LoweringContext& ctx) {
  const int64_t code = ctx.attr_int("stash_type", 1);
  DType t;
  if (!dtype_from_onnx(static_cast<int>(code), &t) || !is_float(t))
    ctx.fail(str_cat("stash_type ", code, " is not a supported floating-point type"));
  return t;
}

// 1 / sqrt(sum_squares / n + epsilon), keepdims-shaped like its input.
TensorId inv_std_dev(LoweringContext& ctx, const std::string& kind, TensorId sum_squares,
                     int64_t n, double epsilon) {
  const DType t = ctx.graph().tensor(sum_squares).dtype;
  return elementwise(ctx, kind, {sum_squares}, t, [&](const Values& v) {
    Expr var = v[0] * scalar(1.0 / static_cast<double>(n), t);
    return scalar(1, t) / unary(UnaryOp::kSqrt, var + scalar(epsilon, t));
  });
}

// A per-channel parameter of an N x C x D1 x ... input (shape [C], or
// [C, D1, ...] for BatchNormalization with spatial=0) padded with trailing
// 1s so that it broadcasts against the input; a user error if it does not fit.
TensorId channel_param(LoweringContext& ctx, int input, const char* what) {
  const Shape x = ctx.shape(0);
  Shape p = ctx.shape(input);
  const size_t rank = x.size();
  bool fits = !p.empty() && p.size() <= rank - 1;
  for (size_t i = 0; fits && i < p.size(); ++i) fits = p[i] == x[1 + i];
  if (!fits)
    ctx.fail(str_cat(what, " has shape ", shape_to_string(p), ", which does not match input ",
                     shape_to_string(x), " from the channel axis on"));
  p.resize(rank - 1, 1);
  return reshape(ctx, ctx.input(input), p);
}

// Requires `input`'s shape to broadcast to X's shape without growing it.
void require_broadcasts_to_x(const LoweringContext& ctx, int input, const char* what) {
  if (!ctx.has_input(input)) return;
  if (broadcast_shapes(ctx, {ctx.shape(0), ctx.shape(input)}) != ctx.shape(0))
    ctx.fail(str_cat(what, " shape ", shape_to_string(ctx.shape(input)),
                     " does not broadcast to input shape ", shape_to_string(ctx.shape(0))));
  if (ctx.dtype(input) != ctx.dtype(0))
    ctx.fail(str_cat(what, " is ", dtype_name(ctx.dtype(input)), " but the input is ",
                     dtype_name(ctx.dtype(0))));
}

// Y = cast(T, (x - mean) * inv_std) * scale + bias over axes [axis, rank);
// also returns Mean and InvStdDev (the stash type, reduced axes kept as 1).
std::vector<TensorId> lower_layer_norm(LoweringContext& ctx) {
  require_float(ctx);
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank);
  const double epsilon = ctx.attr_float("epsilon", 1e-5f);
  const DType t = ctx.dtype(0), st = stash_dtype(ctx);
  require_broadcasts_to_x(ctx, 1, "Scale");
  require_broadcasts_to_x(ctx, 2, "B");
  const std::vector<int> axes = trailing_axes(axis, rank);
  const TensorId x = cast_tensor(ctx, ctx.input(0), st);
  const TensorId mean = mean_over(ctx, "layer_norm_mean", x, axes);
  const TensorId sum_squares = centered_sum_squares(ctx, "layer_norm_var", x, mean, axes);
  const TensorId inv_std = inv_std_dev(ctx, "layer_norm_inv_std", sum_squares,
                                       reduced_count(ctx.shape(0), axes), epsilon);
  std::vector<TensorId> inputs{x, mean, inv_std, ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  const TensorId y = elementwise(ctx, "layer_norm", inputs, t, [&](const Values& v) {
    Expr out = cast(t, (v[0] - v[1]) * v[2]) * v[3];
    return v.size() > 4 ? out + v[4] : out;
  });
  return {y, mean, inv_std};
}

// Inference form: y = (x - mean) * (scale / sqrt(var + epsilon)) + bias with
// the running statistics; the per-channel factor folds when they are weights.
std::vector<TensorId> lower_batch_norm(LoweringContext& ctx) {
  require_float(ctx);
  if (ctx.opset() >= 14 && ctx.attr_int("training_mode", 0) != 0)
    ctx.fail("training_mode=1 is not supported: tilegraph compiles inference graphs "
             "(export the model in eval mode)");
  for (int o = 1; o < ctx.node().output_size(); ++o)
    if (!ctx.node().output(o).empty())
      ctx.fail(str_cat("output ", o, " ('", ctx.node().output(o),
                       "') is a training-mode statistic; only Y is supported"));
  if (ctx.rank(0) < 2) ctx.fail("input must be N x C x ...");
  // Opsets before 7 also carry is_test / consumed_inputs; the lowering is the
  // same (running statistics), as in other inference runtimes.
  const double epsilon = ctx.attr_float("epsilon", 1e-5f);
  const DType t = ctx.dtype(0);
  const TensorId scale = channel_param(ctx, 1, "scale");
  const TensorId bias = channel_param(ctx, 2, "B");
  const TensorId mean = channel_param(ctx, 3, "input_mean");
  const TensorId var = channel_param(ctx, 4, "input_var");
  // Opset 15 lets the parameters use other float types than X; the factor
  // is computed in the variance's type and converted where applied.
  const DType pt = ctx.dtype(4);
  const TensorId factor = elementwise(ctx, "batch_norm_factor", {scale, var}, pt, [&](const Values& v) {
    return cast(pt, v[0]) / unary(UnaryOp::kSqrt, v[1] + scalar(epsilon, pt));
  });
  return {elementwise(ctx, "batch_norm", {ctx.input(0), mean, factor, bias}, t, [&](const Values& v) {
    return (v[0] - cast(t, v[1])) * cast(t, v[2]) + cast(t, v[3]);
  })};
}

// Per (sample, channel) standardization over the spatial axes.
std::vector<TensorId> lower_instance_norm(LoweringContext& ctx) {
  require_float(ctx);
  const int rank = ctx.rank(0);
  if (rank < 3) ctx.fail(str_cat("input must be N x C x D1 x ..., got ", shape_to_string(ctx.shape(0))));
  const double epsilon = ctx.attr_float("epsilon", 1e-5f);
  const DType t = ctx.dtype(0);
  const TensorId x = ctx.input(0);
  const TensorId scale = channel_param(ctx, 1, "scale");
  const TensorId bias = channel_param(ctx, 2, "B");
  const std::vector<int> axes = trailing_axes(2, rank);
  const TensorId mean = mean_over(ctx, "instance_norm_mean", x, axes);
  const TensorId sum_squares = centered_sum_squares(ctx, "instance_norm_var", x, mean, axes);
  const TensorId inv_std = inv_std_dev(ctx, "instance_norm_inv_std", sum_squares,
                                       reduced_count(ctx.shape(0), axes), epsilon);
  return {elementwise(ctx, "instance_norm", {x, mean, inv_std, scale, bias}, t, [](const Values& v) {
    return (v[0] - v[1]) * v[2] * cast(v[0]->dtype, v[3]) + cast(v[0]->dtype, v[4]);
  })};
}

// Statistics over groups of C / num_groups channels and all spatial axes
// (viewing x as N x G x rest), then a per-channel (opset 21) or per-group
// (opset 18) scale and bias.
std::vector<TensorId> lower_group_norm(LoweringContext& ctx, bool per_channel_params) {
  require_float(ctx);
  const Shape shape = ctx.shape(0);
  const int rank = static_cast<int>(shape.size());
  if (rank < 2) ctx.fail(str_cat("input must be N x C x ..., got ", shape_to_string(shape)));
  if (!ctx.has_attr("num_groups")) ctx.fail("missing required attribute num_groups");
  const int64_t groups = ctx.attr_int("num_groups", 0);
  const int64_t channels = shape[1];
  if (groups <= 0 || channels % groups != 0)
    ctx.fail(str_cat("num_groups ", groups, " must be positive and divide the ", channels,
                     " channels"));
  const int64_t params = per_channel_params ? channels : groups;
  for (int i : {1, 2})
    if (ctx.shape(i) != Shape{params})
      ctx.fail(str_cat(i == 1 ? "scale" : "bias", " has shape ", shape_to_string(ctx.shape(i)),
                       ", expected [", params, "]"));
  const double epsilon = ctx.attr_float("epsilon", 1e-5f);
  const DType t = ctx.dtype(0), st = stash_dtype(ctx);
  const int64_t per_group = channels / groups;
  const TensorId x = cast_tensor(ctx, ctx.input(0), st);
  const TensorId grouped = reshape(ctx, x, {shape[0], groups, num_elements(shape) / (shape[0] * groups)});
  const TensorId mean = mean_over(ctx, "group_norm_mean", grouped, {2});
  const TensorId sum_squares = centered_sum_squares(ctx, "group_norm_var", grouped, mean, {2});
  const TensorId inv_std = inv_std_dev(ctx, "group_norm_inv_std", sum_squares,
                                       ctx.graph().tensor(grouped).shape[2], epsilon);
  // y[n, c, d...]: the statistics of group c / per_group of sample n.
  const std::vector<Expr> vars = axis_vars(rank);
  const Expr group = floordiv(vars[1], per_group);
  const Expr param = per_channel_params ? vars[1] : group;
  const Expr normalized = (load(0, st, vars) - load(1, st, {vars[0], group, int_imm(0)})) *
                          load(2, st, {vars[0], group, int_imm(0)});
  const Expr body = cast(t, normalized) * cast(t, load(3, ctx.dtype(1), {param})) +
                    cast(t, load(4, ctx.dtype(2), {param}));
  return {ctx.emit("group_norm", shape, t, {x, mean, inv_std, ctx.input(1), ctx.input(2)}, body)};
}

// x / ||x||_p along one axis, p in {1, 2}.
std::vector<TensorId> lower_lp_norm(LoweringContext& ctx) {
  require_float(ctx);
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank);
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail(str_cat("p must be 1 or 2, got ", p));
  const TensorId x = ctx.input(0);
  const TensorId sum = reduce(ctx, "lp_norm_sum", x, {axis}, /*keepdims=*/true, Reduction::kSum,
                              [p](Expr v) { return p == 1 ? unary(UnaryOp::kAbs, v) : v * v; });
  return {elementwise(ctx, "lp_norm", {x, sum}, ctx.dtype(0), [p](const Values& v) {
    return v[0] / (p == 1 ? v[1] : unary(UnaryOp::kSqrt, v[1]));
  })};
}

// (x - mean) / (sqrt(var) + 1e-9) over `axes` (default N, H, W), the
// epsilon of ONNX's function definition of the op.
std::vector<TensorId> lower_mvn(LoweringContext& ctx) {
  require_float(ctx);
  const int rank = ctx.rank(0);
  std::vector<int> axes;
  for (int64_t a : ctx.attr_ints("axes", {0, 2, 3})) {
    const int axis = normalize_axis(ctx, a, rank);
    for (int seen : axes)
      if (seen == axis) ctx.fail(str_cat("axes lists axis ", a, " twice"));
    axes.push_back(axis);
  }
  const DType t = ctx.dtype(0);
  const TensorId x = ctx.input(0);
  const int64_t n = reduced_count(ctx.shape(0), axes);
  const TensorId mean = mean_over(ctx, "mvn_mean", x, axes);
  const TensorId sum_squares = centered_sum_squares(ctx, "mvn_var", x, mean, axes);
  const TensorId denominator = elementwise(ctx, "mvn_std", {sum_squares}, t, [&](const Values& v) {
    return unary(UnaryOp::kSqrt, v[0] * scalar(1.0 / static_cast<double>(n), t)) + scalar(1e-9, t);
  });
  return {elementwise(ctx, "mvn", {x, mean, denominator}, t,
                      [](const Values& v) { return (v[0] - v[1]) / v[2]; })};
}

}  // namespace

void add_normalization_ops(OpTable& t) {
  for (bool coerce_2d : {true, false}) {
    const int since = coerce_2d ? 1 : 13;
    t.push_back({"Softmax", since, [=](LoweringContext& ctx) { return lower_softmax(ctx, coerce_2d); }});
    t.push_back({"LogSoftmax", since,
                 [=](LoweringContext& ctx) { return lower_log_softmax(ctx, coerce_2d); }});
    t.push_back({"Hardmax", since, [=](LoweringContext& ctx) { return lower_hardmax(ctx, coerce_2d); }});
  }
  t.push_back({"LayerNormalization", 17, lower_layer_norm});
  t.push_back({"BatchNormalization", 1, lower_batch_norm});
  t.push_back({"InstanceNormalization", 1, lower_instance_norm});
  // Opset 18 scales per group; 21 fixed the spec to scale per channel.
  t.push_back({"GroupNormalization", 18,
               [](LoweringContext& ctx) { return lower_group_norm(ctx, /*per_channel_params=*/false); }});
  t.push_back({"GroupNormalization", 21,
               [](LoweringContext& ctx) { return lower_group_norm(ctx, /*per_channel_params=*/true); }});
  t.push_back({"LpNormalization", 1, lower_lp_norm});
  t.push_back({"MeanVarianceNormalization", 9, lower_mvn});
}

}  // namespace tilegraph::onnx_frontend
