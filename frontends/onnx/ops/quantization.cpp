// Quantization ops, QDQ form (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear) and QOperator form (MatMulInteger, QLinearMatMul,
// QLinearConv). onnxruntime's contrib QOperator ops are in
// ops/quantization_contrib.cpp; the arithmetic both share is in
// ops/quantization_util.h.
//
// Integer products come out in one canonical form, which the scheduler
// matches to the int8 GEMM micro-kernels (scheduler/int_gemm.h):
//   out[.., m, n] = sum_k (i32(A[.., m, k]) - za) * (i32(B[.., k, n]) - zb)   (int32)
// Float products of dequantized operands (QDQ) are brought to that form by
// compiler/passes/quantize_matmul. Rounding follows onnxruntime: x / scale
// (or acc * multiplier) in float, round half to even, add the zero point,
// saturate to the quantized type.
#include <algorithm>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/ops/quantization_util.h"

namespace tilegraph::onnx_frontend {

namespace {

// A scale or zero point: one value, or one per slice along `axis` of x
// (reshaped so it broadcasts against x).
TensorId per_axis_param(LoweringContext& ctx, int input, const Shape& x_shape, int axis,
                        const char* what) {
  const Shape s = ctx.shape(input);
  if (num_elements(s) == 1) return s.empty() ? ctx.input(input) : reshape(ctx, ctx.input(input), {});
  if (s.size() != 1 || x_shape.empty() || s[0] != x_shape[static_cast<size_t>(axis)])
    ctx.fail(str_cat(what, " has shape ", shape_to_string(s), "; expected one value or ",
                     x_shape.empty() ? 0 : x_shape[static_cast<size_t>(axis)], " (axis ", axis,
                     " of the input ", shape_to_string(x_shape), ")"));
  Shape target(x_shape.size(), 1);
  target[static_cast<size_t>(axis)] = s[0];
  return reshape(ctx, ctx.input(input), target);
}

// The axis of per-axis scales; per-tensor ones (one value) ignore it.
int quant_axis(LoweringContext& ctx) {
  const int rank = ctx.rank(0);
  if (rank == 0 || num_elements(ctx.shape(1)) == 1) return 0;
  return normalize_axis(ctx, ctx.attr_int("axis", 1), rank);
}

// The zero point input, or a constant 0 of `type` when it is absent.
TensorId zero_point_or_zero(LoweringContext& ctx, int input, const Shape& x_shape, int axis,
                            DType type) {
  if (ctx.has_input(input)) return per_axis_param(ctx, input, x_shape, axis, "the zero point");
  return ctx.constant_scalar(0, type);
}

std::vector<TensorId> lower_dequantize_linear(LoweringContext& ctx) {
  const DType xt = ctx.dtype(0);
  if (!is_quantized_type(xt) && xt != DType::kI32)
    ctx.fail(str_cat("input x is ", dtype_name(xt), "; expected int8, uint8 or int32"));
  const Shape xs = ctx.shape(0);
  const int axis = quant_axis(ctx);
  const DType ft = ctx.dtype(1);
  const TensorId scale = per_axis_param(ctx, 1, xs, axis, "x_scale");
  const TensorId zp = zero_point_or_zero(ctx, 2, xs, axis, xt);
  ctx.set_folding(false);  // int8 weights stay visible to quantize_matmul
  return {elementwise(ctx, "dequantize", {ctx.input(0), scale, zp}, ft,
                      [&](const std::vector<Expr>& v) {
                        return (cast(ft, v[0]) - cast(ft, v[2])) * v[1];
                      })};
}

std::vector<TensorId> lower_quantize_linear(LoweringContext& ctx) {
  const DType qt = ctx.has_input(2) ? ctx.dtype(2) : DType::kU8;
  if (!is_quantized_type(qt))
    ctx.fail(str_cat("y_zero_point is ", dtype_name(qt), "; int8 and uint8 are supported"));
  const Shape xs = ctx.shape(0);
  const int axis = quant_axis(ctx);
  const TensorId scale = per_axis_param(ctx, 1, xs, axis, "y_scale");
  const TensorId zp = zero_point_or_zero(ctx, 2, xs, axis, qt);
  return {elementwise(ctx, "quantize", {ctx.input(0), scale, zp}, qt,
                      [&](const std::vector<Expr>& v) { return quantize_value(qt, v[0], v[1], v[2]); })};
}

// y = saturate(round(x / scale) + zp) with scale and zp from x's range
// (extended to include 0) mapped onto [0, 255], as onnxruntime computes them.
// The range is one reduction, extremes[j] = max(x * (j == 0 ? 1 : -1)), so min
// and max come from one pass over x (min(x) = -max(-x) exactly) and stay one
// kernel when split_reductions spreads the pass over cores. The sign is a
// factor, not a select of x or -x: GCC keeps the select's -x reduction
// scalar (5x slower over a 197x3072 activation) but hoists the factor and
// vectorizes; x * -1 is -x exactly.
std::vector<TensorId> lower_dynamic_quantize_linear(LoweringContext& ctx) {
  const DType ft = DType::kF32;
  if (ctx.dtype(0) != ft) ctx.fail("input x must be float32");
  const Shape xs = ctx.shape(0);
  const int rank = static_cast<int>(xs.size());
  std::vector<Expr> x_index;
  for (int d = 0; d < rank; ++d) x_index.push_back(var(1 + d));  // var 0: which extreme
  const Expr x = load(0, ft, x_index);
  const Expr sign = select(binary(BinaryOp::kEq, var(0), int_imm(0)), scalar(1, ft), scalar(-1, ft));
  const Expr signed_x = x * sign;
  const TensorId extremes = rank == 0 ? ctx.emit("dql_extremes", {2}, ft, {ctx.input(0)}, signed_x)
                                      : ctx.emit("dql_extremes", {2}, ft, {ctx.input(0)}, signed_x,
                                                 Reduction::kMax, xs);
  const Expr zero = scalar(0, ft);
  const Expr hi = load(0, ft, {int_imm(0)});
  const Expr lo = unary(UnaryOp::kNeg, load(0, ft, {int_imm(1)}));
  const Expr range = max(hi, zero) - min(lo, zero);
  const TensorId scale = ctx.emit("dql_scale", {}, ft, {extremes},
                                  select(binary(BinaryOp::kEq, range, zero), scalar(1, ft), range / scalar(255, ft)));
  const Expr z = zero - min(lo, zero) / load(1, ft, {});
  const TensorId zp = ctx.emit("dql_zero_point", {}, DType::kU8, {extremes, scale},
                               cast(DType::kU8, unary(UnaryOp::kRound, max(min(z, scalar(255, ft)), zero))));
  const TensorId y = elementwise(ctx, "dql_quantize", {ctx.input(0), scale, zp}, DType::kU8,
                                 [&](const std::vector<Expr>& v) {
                                   return quantize_value(DType::kU8, v[0], v[1], v[2]);
                                 });
  return {y, scale, zp};
}

std::vector<TensorId> lower_matmul_integer(LoweringContext& ctx) {
  return {integer_matmul(ctx, ctx.input(0), ctx.input(1), ctx.has_input(2) ? ctx.input(2) : -1,
                         ctx.has_input(3) ? ctx.input(3) : -1)};
}

// y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zp): the
// multiplier in float, as onnxruntime's requantization computes it.
std::vector<TensorId> lower_qlinear_matmul(LoweringContext& ctx) {
  const TensorId acc = integer_matmul(ctx, ctx.input(0), ctx.input(3), ctx.input(2), ctx.input(5));
  const DType qt = ctx.dtype(7);
  if (!is_quantized_type(qt)) ctx.fail("y_zero_point must be int8 or uint8");
  for (int i : {1, 6, 7})
    if (num_elements(ctx.shape(i)) != 1)
      ctx.fail(str_cat("input ", i, " ('", ctx.node().input(i), "') must hold one value"));
  const Shape b_scale = ctx.shape(4);
  if (num_elements(b_scale) != 1 && b_scale.size() != 1)
    ctx.fail("b_scale must hold one value or one per column");
  auto scalar_param = [&](int i) { return ctx.shape(i).empty() ? ctx.input(i) : reshape(ctx, ctx.input(i), {}); };
  const TensorId sa = scalar_param(1), sy = scalar_param(6), zy = scalar_param(7);
  const TensorId sb = num_elements(b_scale) == 1 ? scalar_param(4) : ctx.input(4);
  return {elementwise(ctx, "requantize", {acc, sa, sb, sy, zy}, qt, [&](const std::vector<Expr>& v) {
    return requantize_value(qt, v[0], v[1] * v[2] / v[3], v[4]);
  })};
}

// The integer conv (ConvInteger's lowering: padding holds x_zero_point),
// then per output channel m
//   y = saturate(round(f32(acc + B[m]) * (x_scale * w_scale[m] / y_scale)) + y_zp)
// as onnxruntime's QLinearConv requantizes (MlasRequantizeOutput).
std::vector<TensorId> lower_qlinear_conv(LoweringContext& ctx) {
  const DType qt = ctx.dtype(7);
  const Shape ws = ctx.shape(3);
  if (ws.size() < 3) ctx.fail(str_cat("w must be M x C/group x k1 x ..., got ", shape_to_string(ws)));
  const int64_t filters = ws[0];
  const int out_rank = ctx.rank(0);
  // A per-channel parameter ([M]) reshaped to broadcast along axis 1 of y.
  auto per_channel = [&](int input, const char* what) {
    const Shape s = ctx.shape(input);
    if (num_elements(s) == 1) return scalar_input(ctx, input, what);
    if (s != Shape{filters})
      ctx.fail(str_cat(what, " has shape ", shape_to_string(s), "; expected one value or ", filters));
    Shape target(static_cast<size_t>(out_rank), 1);
    target[1] = filters;
    return reshape(ctx, ctx.input(input), target);
  };
  const TensorId sx = scale_input(ctx, 1, "x_scale"), sw = per_channel(4, "w_scale");
  const TensorId sy = scale_input(ctx, 6, "y_scale"), zy = scalar_input(ctx, 7, "y_zero_point");
  const TensorId bias = ctx.has_input(8) ? per_channel(8, "B") : ctx.constant_scalar(0, DType::kI32);
  LoweringContext conv(ctx.graph(), ctx.node(), ctx.opset(),
                       {ctx.input(0), ctx.input(3), ctx.input(2), ctx.has_input(5) ? ctx.input(5) : -1});
  const TensorId acc = lower_conv_integer(conv).front();
  return {elementwise(ctx, "requantize", {acc, bias, sx, sw, sy, zy}, qt,
                      [&](const std::vector<Expr>& v) {
                        return requantize_value(qt, v[0] + v[1], v[2] * v[3] / v[4], v[5]);
                      })};
}

}  // namespace

void add_quantization_ops(OpTable& t) {
  t.push_back({"DequantizeLinear", 10, lower_dequantize_linear});
  t.push_back({"QuantizeLinear", 10, lower_quantize_linear});
  t.push_back({"DynamicQuantizeLinear", 11, lower_dynamic_quantize_linear});
  t.push_back({"MatMulInteger", 10, lower_matmul_integer});
  t.push_back({"QLinearMatMul", 10, lower_qlinear_matmul});
  t.push_back({"QLinearConv", 10, lower_qlinear_conv});
}

}  // namespace tilegraph::onnx_frontend
