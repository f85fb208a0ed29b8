// onnxruntime's contrib QOperator ops (domain com.microsoft), the ones
// quantize_static(..., quant_format=QOperator) writes: QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat,
// QLinearGlobalAveragePool and QGemm.
//
// Each follows the arithmetic of onnxruntime's CPU kernel on x86-64 with AVX2
// (MLAS picks kernels by instruction set; results were checked bit for bit
// against onnxruntime 1.23 over all input levels), with s = scale, z = zero
// point, sat(v) = v clamped to the type's range, round = half to even:
//   QLinearAdd     r_a = s_a / s_c, r_b = s_b / s_c in float; with p the operand
//                  that varies along the innermost output axis (A when both
//                  do) and q the other, MLAS's AVX2 kernel computes with FMAs
//                    F = f32(z_c) - fma(r_p, z_p, r_q * z_q)
//                    c = sat(round(fma(p, r_p, fma(q, r_q, F))))
//                  (SSE2-only and ARM builds of onnxruntime round differently.)
//   QLinearMul     c = sat(round(f32((a - z_a) * (b - z_b)) * (s_a * s_b / s_c) + z_c)),
//                  the product and the sum rounded separately.
//   QLinearSigmoid / QLinearLeakyRelu: onnxruntime looks the result up in a
//                  table of the 256 levels, y = quantize(f(dequantize(x)))
//                  with quantize(v) = sat(round(v / s_y) + z_y). LeakyRelu is
//                  computed per element (exact); Sigmoid reads a 256-entry table
//                  of the double-precision logistic rounded to float, which
//                  matches onnxruntime's MlasComputeLogistic on every table
//                  checked; a 1-ulp difference could move a level whose value
//                  falls within an ulp of a rounding boundary by one step.
//   QLinearConcat  each input requantized: quantize(dequantize(x)).
//   QLinearGlobalAveragePool: acc = sum x - z_x * n in int32 (n spatial
//                  elements), y = sat(round(f32(acc) * (s_x / (s_y * n))) + z_y).
//   QLinearSoftmax onnxruntime's table of exp over the 256 levels relative to
//                  the row max, in double, rounded to float:
//                    e(x) = f32(exp((x - max + shift / s_x) * s_x)),
//                    shift = max(0, log(FLT_MAX / D) - 5)
//                  (D the reduced size), summed in float, and
//                  y = sat(round(e(x) * floor(1 / s_y) / sum) + z_y). The sum
//                  runs in the scheduler's order rather than sequentially: the
//                  one place a result can differ, by one step, when a
//                  quotient lies within an ulp of a rounding boundary.
//   QGemm          the canonical integer matmul (scheduler/int_gemm.h) plus
//                  the int32 bias C, requantized with ((alpha * s_a) * s_b) / s_y,
//                  or scaled to float by (alpha * s_a) * s_b when y_scale is absent.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/ops/quantization_util.h"
#include "frontends/onnx/ops/reduction_util.h"

namespace tilegraph::onnx_frontend {

namespace {

constexpr DType kF32 = DType::kF32;

DType quantized_input(const LoweringContext& ctx, int input, const char* what) {
  const DType t = ctx.dtype(input);
  if (!is_quantized_type(t))
    ctx.fail(str_cat(what, " (input ", input, ") is ", dtype_name(t), "; int8 and uint8 are supported"));
  return t;
}

// ---- QLinearAdd, QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp.

struct BinaryOperands {
  DType type;
  std::vector<TensorId> inputs;  // a, s_a, z_a, b, s_b, z_b, s_c, z_c
};

BinaryOperands binary_operands(LoweringContext& ctx) {
  const DType t = quantized_input(ctx, 0, "A");
  if (ctx.dtype(3) != t) ctx.fail(str_cat("B is ", dtype_name(ctx.dtype(3)), "; A is ", dtype_name(t)));
  return {t,
          {ctx.input(0), scale_input(ctx, 1, "A_scale"), scalar_zero_point(ctx, 2, t, "A_zero_point"),
           ctx.input(3), scale_input(ctx, 4, "B_scale"), scalar_zero_point(ctx, 5, t, "B_zero_point"),
           scale_input(ctx, 6, "C_scale"), scalar_zero_point(ctx, 7, t, "C_zero_point")}};
}

// Is A the operand onnxruntime's broadcaster hands to MLAS as one value per
// span? It walks the right-aligned axes from the innermost, skipping those
// where both extents are 1 (except the outermost shared one), and A is the
// scalar when its extent is 1 on the first axis it stops at, or A is rank 0.
bool a_is_span_scalar(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return a.empty();
  const size_t shared = std::min(a.size(), b.size());
  for (size_t i = 0; i < shared; ++i) {
    const int64_t da = a[a.size() - 1 - i], db = b[b.size() - 1 - i];
    if (std::max(da, db) == 1 && i + 1 < shared) continue;
    return da == 1;
  }
  return false;
}

std::vector<TensorId> lower_qlinear_add(LoweringContext& ctx) {
  const BinaryOperands ops = binary_operands(ctx);
  // MLAS's operand order: the per-span scalar goes second.
  const bool swap = a_is_span_scalar(ctx.shape(0), ctx.shape(3));
  return {elementwise(ctx, "qlinear_add", ops.inputs, ops.type, [&](const std::vector<Expr>& v) {
    const int p = swap ? 3 : 0, q = swap ? 0 : 3;  // value, scale, zero point at p, p+1, p+2
    const Expr rp = v[p + 1] / v[6], rq = v[q + 1] / v[6];
    const Expr fixed = cast(kF32, v[7]) - fused_mul_add(v[p + 2], rp, mul_rounded(v[q + 2], rq));
    const Expr sum = fused_mul_add(v[p], rp, fused_mul_add(v[q], rq, fixed));
    return saturate_to(ops.type, unary(UnaryOp::kRound, sum));
  })};
}

std::vector<TensorId> lower_qlinear_mul(LoweringContext& ctx) {
  const BinaryOperands ops = binary_operands(ctx);
  return {elementwise(ctx, "qlinear_mul", ops.inputs, ops.type, [&](const std::vector<Expr>& v) {
    const auto centered = [](const Expr& x, const Expr& z) {
      return cast(DType::kI32, x) - cast(DType::kI32, z);
    };
    const Expr product = centered(v[0], v[2]) * centered(v[3], v[5]);
    const Expr scaled = mul_rounded(product, v[1] * v[4] / v[6]);
    return saturate_to(ops.type, unary(UnaryOp::kRound, scaled + cast(kF32, v[7])));
  })};
}

// ---- QLinearSigmoid, QLinearLeakyRelu: X, X_scale, X_zp, Y_scale, Y_zp.

// [s_x, z_x, s_y, z_y] as rank-0 tensors.
std::vector<TensorId> unary_params(LoweringContext& ctx, DType t) {
  return {scale_input(ctx, 1, "X_scale"), scalar_zero_point(ctx, 2, t, "X_zero_point"),
          scale_input(ctx, 3, "Y_scale"), scalar_zero_point(ctx, 4, t, "Y_zero_point")};
}

std::vector<TensorId> lower_qlinear_leaky_relu(LoweringContext& ctx) {
  const DType t = quantized_input(ctx, 0, "X");
  std::vector<TensorId> inputs{ctx.input(0)};
  for (TensorId p : unary_params(ctx, t)) inputs.push_back(p);
  const Expr alpha = scalar(ctx.attr_float("alpha", 0.01f), kF32);
  return {elementwise(ctx, "qlinear_leaky_relu", inputs, t, [&](const std::vector<Expr>& v) {
    const Expr x = dequantize_value(v[0], v[1], v[2]);
    const Expr y = select(ge(x, scalar(0, kF32)), x, alpha * x);
    return quantize_value(t, y, v[3], v[4]);
  })};
}

// The 256-level table: entry i holds quantize(sigmoid(dequantize(i + lowest))),
// the logistic in double. It folds to a constant when the parameters are.
std::vector<TensorId> lower_qlinear_sigmoid(LoweringContext& ctx) {
  const DType t = quantized_input(ctx, 0, "X");
  const std::vector<TensorId> params = unary_params(ctx, t);
  const DType f64 = DType::kF64;
  const auto param = [&](int slot) { return load(slot, ctx.graph().tensor(params[slot]).dtype, {}); };
  const Expr level = var(0) + static_cast<int64_t>(lowest_of(t));
  const Expr x = cast(f64, dequantize_value(level, param(0), param(1)));
  const Expr logistic = scalar(1, f64) / (scalar(1, f64) + unary(UnaryOp::kExp, unary(UnaryOp::kNeg, x)));
  const TensorId table = ctx.emit("qlinear_sigmoid_table", {256}, t, params,
                                  quantize_value(t, cast(kF32, logistic), param(2), param(3)));
  const auto vars = axis_vars(ctx.rank(0));
  const Expr index = cast(DType::kI64, load(0, t, vars)) - static_cast<int64_t>(lowest_of(t));
  return {ctx.emit("qlinear_sigmoid", ctx.shape(0), t, {ctx.input(0), table}, load(1, t, {index}))};
}

// ---- QLinearConcat: Y_scale, Y_zp, then (X, X_scale, X_zp) per input.

// Are two rank-0 parameters the same tensor or equal constants?
bool same_value(const Graph& g, TensorId a, TensorId b) {
  if (a == b) return true;
  const Tensor &ta = g.tensor(a), &tb = g.tensor(b);
  return ta.data && tb.data && ta.dtype == tb.dtype && ta.value_as_double(0) == tb.value_as_double(0);
}

std::vector<TensorId> lower_qlinear_concat(LoweringContext& ctx) {
  const int count = (ctx.num_inputs() - 2) / 3;
  if (count < 1 || (ctx.num_inputs() - 2) % 3 != 0)
    ctx.fail("expects Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input");
  const DType t = quantized_input(ctx, 1, "Y_zero_point");
  const int rank = ctx.rank(2);
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  if (!ctx.has_attr("axis")) ctx.fail("attribute axis is required");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank);
  // Op inputs: s_y, z_y, then X, s_x, z_x of every non-empty input.
  std::vector<TensorId> inputs{scale_input(ctx, 0, "Y_scale"), scalar_input(ctx, 1, "Y_zero_point")};
  std::vector<int64_t> offsets;
  std::vector<bool> copies;  // the input's parameters equal the output's
  Shape out = ctx.shape(2);
  out[axis] = 0;
  for (int k = 0; k < count; ++k) {
    const int x = 2 + 3 * k;
    const Shape s = ctx.shape(x);
    if (ctx.dtype(x) != t)
      ctx.fail(str_cat("input ", x, " is ", dtype_name(ctx.dtype(x)), "; Y_zero_point is ", dtype_name(t)));
    bool compatible = static_cast<int>(s.size()) == rank;
    for (int d = 0; compatible && d < rank; ++d) compatible = d == axis || s[d] == out[d];
    if (!compatible)
      ctx.fail(str_cat("input ", x, " (", shape_to_string(s), ") does not match input 2 (",
                       shape_to_string(ctx.shape(2)), ") outside axis ", axis));
    const TensorId scale = scale_input(ctx, x + 1, "X_scale");
    const TensorId zero_point = scalar_zero_point(ctx, x + 2, t, "X_zero_point");
    if (s[axis] == 0) continue;
    copies.push_back(same_value(ctx.graph(), scale, inputs[0]) &&
                     same_value(ctx.graph(), zero_point, inputs[1]));
    inputs.insert(inputs.end(), {ctx.input(x), scale, zero_point});
    offsets.push_back(out[axis]);
    out[axis] += s[axis];
  }
  if (offsets.empty()) ctx.fail("every input is empty along the axis");
  // Nested Selects from the last part inwards, as Concat builds them.
  const auto vars = axis_vars(rank);
  const Expr sy = load(0, kF32, {}), zy = load(1, t, {});
  Expr body;
  for (size_t p = offsets.size(); p-- > 0;) {
    const int slot = 2 + 3 * static_cast<int>(p);
    std::vector<Expr> idx = vars;
    idx[axis] = vars[axis] - offsets[p];
    Expr part = load(slot, t, idx);
    if (!copies[p])
      part =
          quantize_value(t, dequantize_value(part, load(slot + 1, kF32, {}), load(slot + 2, t, {})), sy, zy);
    body = body ? select(lt(vars[axis], int_imm(offsets[p + 1])), part, body) : part;
  }
  return {ctx.emit("qlinear_concat", out, t, inputs, body)};
}

// ---- QLinearGlobalAveragePool: X, X_scale, X_zp, Y_scale, Y_zp; channels_last.

std::vector<TensorId> lower_qlinear_global_average_pool(LoweringContext& ctx) {
  const DType t = quantized_input(ctx, 0, "X");
  const int rank = ctx.rank(0);
  if (rank < 3) ctx.fail(str_cat("X must have rank >= 3, got ", shape_to_string(ctx.shape(0))));
  const int64_t channels_last = ctx.attr_int("channels_last", 0);
  if (channels_last != 0 && channels_last != 1)
    ctx.fail(str_cat("channels_last must be 0 or 1, got ", channels_last));
  const std::vector<int> axes = channels_last ? trailing_axes(1, rank - 1) : trailing_axes(2, rank);
  const int64_t n = reduced_count(ctx.shape(0), axes);
  std::vector<TensorId> inputs{reduce(ctx, "qlinear_gap_sum", ctx.input(0), axes, true, Reduction::kSum,
                                      [](Expr x) { return cast(DType::kI32, x); })};
  for (TensorId p : unary_params(ctx, t)) inputs.push_back(p);
  return {elementwise(ctx, "qlinear_gap", inputs, t, [&](const std::vector<Expr>& v) {
    const Expr acc = v[0] - cast(DType::kI32, v[2]) * scalar(static_cast<double>(n), DType::kI32);
    const Expr multiplier = v[1] / (v[3] * scalar(static_cast<double>(n), kF32));
    return requantize_value(t, acc, multiplier, v[4]);
  })};
}

// ---- QLinearSoftmax: X, X_scale, X_zp, Y_scale, Y_zp; axis, opset.

std::vector<TensorId> lower_qlinear_softmax(LoweringContext& ctx) {
  const DType t = quantized_input(ctx, 0, "X");
  if (!ctx.has_attr("opset")) ctx.fail("attribute opset (the Softmax opset it replaces) is required");
  const bool flattened = ctx.attr_int("opset", 13) < 13;  // Softmax before opset 13
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("X must have rank >= 1");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", flattened ? 1 : -1), rank);
  const std::vector<int> axes = flattened ? trailing_axes(axis, rank) : std::vector<int>{axis};
  const int64_t reduced = reduced_count(ctx.shape(0), axes);
  // x_zero_point does not matter: softmax ignores a common shift.
  const TensorId sx = scale_input(ctx, 1, "X_scale");
  const TensorId sy = scale_input(ctx, 3, "Y_scale");
  const TensorId zy = scalar_zero_point(ctx, 4, t, "Y_zero_point");

  // exp((i - 255 + shift / s_x) * s_x) for i = x - max + 255, in double as
  // onnxruntime builds it; `shift` keeps the row sum (float) finite.
  const double log_range =
      std::log(static_cast<double>(std::numeric_limits<float>::max() / static_cast<float>(reduced)));
  const DType f64 = DType::kF64;
  const Expr scale = cast(f64, load(0, kF32, {}));
  const Expr shift = scalar(std::max(0.0, log_range - 5.0), f64) / scale;
  const Expr exponent = (cast(f64, var(0)) - scalar(255, f64) + shift) * scale;
  const TensorId table =
      ctx.emit("qlinear_softmax_table", {256}, kF32, {sx}, cast(kF32, unary(UnaryOp::kExp, exponent)));

  const TensorId row_max = reduce(ctx, "qlinear_softmax_max", ctx.input(0), axes, true, Reduction::kMax);
  const Shape shape = ctx.shape(0);
  const auto vars = axis_vars(rank);
  const Expr level =
      cast(DType::kI64, load(0, t, vars)) -
      cast(DType::kI64, load(1, t, broadcast_indices(ctx.graph().tensor(row_max).shape, vars)));
  const TensorId exps = ctx.emit("qlinear_softmax_exp", shape, kF32, {ctx.input(0), row_max, table},
                                 load(2, kF32, {level + 255}));
  const TensorId sum = reduce(ctx, "qlinear_softmax_sum", exps, axes, true, Reduction::kSum);
  return {elementwise(ctx, "qlinear_softmax", {exps, sum, sy, zy}, t, [&](const std::vector<Expr>& v) {
    const Expr levels = unary(UnaryOp::kFloor, scalar(1, kF32) / v[2]);  // floor(1 / y_scale)
    return saturate_to(t, unary(UnaryOp::kRound, v[0] * levels / v[1]) + cast(kF32, v[3]));
  })};
}

// ---- QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp; transA, transB, alpha.

std::vector<TensorId> lower_qgemm(LoweringContext& ctx) {
  const DType ta = quantized_input(ctx, 0, "A");
  const DType tb = quantized_input(ctx, 3, "B");
  if (ctx.rank(0) != 2 || ctx.rank(3) != 2)
    ctx.fail(str_cat("A and B must be matrices, got ", shape_to_string(ctx.shape(0)), " and ",
                     shape_to_string(ctx.shape(3))));
  const TensorId a = ctx.attr_int("transA", 0) ? transpose(ctx, ctx.input(0), {1, 0}) : ctx.input(0);
  const TensorId b = ctx.attr_int("transB", 0) ? transpose(ctx, ctx.input(3), {1, 0}) : ctx.input(3);
  const int64_t cols = ctx.graph().tensor(b).shape[1];
  const TensorId za = scalar_zero_point(ctx, 2, ta, "a_zero_point");
  TensorId zb = -1;
  if (ctx.has_input(5)) {
    if (ctx.dtype(5) != tb) ctx.fail("b_zero_point must have B's type");
    zb = ctx.input(5);
  }
  const TensorId acc = integer_matmul(ctx, a, b, za, zb);

  std::vector<TensorId> inputs{acc};
  if (ctx.has_input(6)) {
    if (ctx.dtype(6) != DType::kI32) ctx.fail(str_cat("C is ", dtype_name(ctx.dtype(6)), "; expected int32"));
    inputs.push_back(ctx.input(6));
  }
  const bool has_bias = inputs.size() > 1;
  inputs.push_back(scale_input(ctx, 1, "a_scale"));
  const Shape sb = ctx.shape(4);
  if (ctx.dtype(4) != kF32) ctx.fail("b_scale must be float32");
  if (num_elements(sb) == 1)
    inputs.push_back(scalar_input(ctx, 4, "b_scale"));
  else if (sb == Shape{cols})
    inputs.push_back(ctx.input(4));
  else
    ctx.fail(str_cat("b_scale has shape ", shape_to_string(sb), "; expected one value or ", cols));
  const bool has_y_scale = ctx.has_input(7), quantized = ctx.has_input(8);
  if (has_y_scale) inputs.push_back(scale_input(ctx, 7, "y_scale"));
  if (quantized) inputs.push_back(scalar_input(ctx, 8, "y_zero_point"));
  const DType out = quantized ? quantized_input(ctx, 8, "y_zero_point") : kF32;
  const Expr alpha = scalar(ctx.attr_float("alpha", 1.0f), kF32);
  return {elementwise(ctx, "qgemm_output", inputs, out, [&](const std::vector<Expr>& v) {
    size_t next = 1;
    const Expr total = has_bias ? v[0] + v[next++] : v[0];
    const Expr sa = v[next++], sbv = v[next++];
    Expr multiplier = alpha * sa * sbv;
    if (has_y_scale) multiplier = multiplier / v[next++];
    if (!quantized) return cast(kF32, total) * multiplier;
    return requantize_value(out, total, multiplier, v[next]);
  })};
}

}  // namespace

void add_quantization_contrib_ops(OpTable& t) {
  t.push_back({"QLinearAdd", 1, lower_qlinear_add, kMsDomain});
  t.push_back({"QLinearMul", 1, lower_qlinear_mul, kMsDomain});
  t.push_back({"QLinearSigmoid", 1, lower_qlinear_sigmoid, kMsDomain});
  t.push_back({"QLinearLeakyRelu", 1, lower_qlinear_leaky_relu, kMsDomain});
  t.push_back({"QLinearSoftmax", 1, lower_qlinear_softmax, kMsDomain});
  t.push_back({"QLinearConcat", 1, lower_qlinear_concat, kMsDomain});
  t.push_back({"QLinearGlobalAveragePool", 1, lower_qlinear_global_average_pool, kMsDomain});
  t.push_back({"QGemm", 1, lower_qgemm, kMsDomain});
}

}  // namespace tilegraph::onnx_frontend
