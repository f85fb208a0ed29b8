#include "frontends/onnx/ops/quantization_util.h"

namespace tilegraph::onnx_frontend {

namespace {

// The load of a matmul zero point: one value, or one per row (A) / column (B).
Expr zero_point_load(int slot, const Tensor& zp, const Expr& axis_var, int64_t extent,
                     const LoweringContext& ctx, const char* what) {
  const Expr value = [&] {
    if (num_elements(zp.shape) == 1)
      return load(slot, zp.dtype, std::vector<Expr>(zp.shape.size(), int_imm(0)));
    if (zp.shape.size() != 1 || zp.shape[0] != extent)
      ctx.fail(str_cat(what, " has shape ", shape_to_string(zp.shape), "; expected one value or ", extent));
    return load(slot, zp.dtype, {axis_var});
  }();
  return cast(DType::kI32, value);
}

}  // namespace

Expr dequantize_value(Expr x, Expr scale, Expr zp) {
  return scale * cast(scale->dtype, cast(DType::kI32, x) - cast(DType::kI32, zp));
}

Expr requantize_value(DType t, Expr acc, Expr multiplier, Expr zp) {
  const DType f = DType::kF32;
  return saturate_to(t, unary(UnaryOp::kRound, cast(f, acc) * multiplier) + cast(f, zp));
}

Expr mul_rounded(Expr integer, Expr f) {
  TG_CHECK(is_integer(integer->dtype), "mul_rounded needs an integer operand, got ",
           dtype_name(integer->dtype));
  const DType d = DType::kF64;
  return cast(DType::kF32, cast(d, std::move(integer)) * cast(d, std::move(f)));
}

Expr fused_mul_add(Expr i, Expr f, Expr c) {
  const DType d = DType::kF64;
  return cast(DType::kF32, cast(d, std::move(i)) * cast(d, std::move(f)) + cast(d, std::move(c)));
}

TensorId scalar_input(LoweringContext& ctx, int input, const char* what) {
  const Shape s = ctx.shape(input);
  if (num_elements(s) != 1)
    ctx.fail(str_cat(what, " (input ", input, ") has shape ", shape_to_string(s), "; expected one value"));
  return s.empty() ? ctx.input(input) : reshape(ctx, ctx.input(input), {});
}

TensorId scale_input(LoweringContext& ctx, int input, const char* what) {
  if (ctx.dtype(input) != DType::kF32)
    ctx.fail(str_cat(what, " (input ", input, ") is ", dtype_name(ctx.dtype(input)), "; expected float32"));
  return scalar_input(ctx, input, what);
}

TensorId scalar_zero_point(LoweringContext& ctx, int input, DType type, const char* what) {
  if (!ctx.has_input(input)) return ctx.constant_scalar(0, type);
  if (ctx.dtype(input) != type)
    ctx.fail(str_cat(what, " (input ", input, ") is ", dtype_name(ctx.dtype(input)), "; expected ",
                     dtype_name(type)));
  return scalar_input(ctx, input, what);
}

TensorId integer_matmul(LoweringContext& ctx, TensorId a, TensorId b, TensorId za, TensorId zb) {
  Graph& g = ctx.graph();
  for (TensorId t : {a, b})
    if (!is_quantized_type(g.tensor(t).dtype))
      ctx.fail(str_cat("matmul operand '", g.tensor(t).name, "' is ", dtype_name(g.tensor(t).dtype),
                       "; int8 and uint8 are supported"));
  if (za < 0) za = ctx.constant_scalar(0, g.tensor(a).dtype);
  if (zb < 0) zb = ctx.constant_scalar(0, g.tensor(b).dtype);
  const Shape sa = g.tensor(a).shape, sb = g.tensor(b).shape;
  const int64_t rows = sa.size() >= 2 ? sa[sa.size() - 2] : 1;
  const int64_t cols = sb.size() >= 2 ? sb.back() : 1;
  const Tensor za_t = g.tensor(za), zb_t = g.tensor(zb);
  return matmul_with(ctx, a, b, DType::kI32, {za, zb}, [&](Expr x, Expr y, const Expr& row, const Expr& col) {
    const Expr zx = zero_point_load(2, za_t, row, rows, ctx, "a_zero_point");
    const Expr zy = zero_point_load(3, zb_t, col, cols, ctx, "b_zero_point");
    return (cast(DType::kI32, x) - zx) * (cast(DType::kI32, y) - zy);
  });
}

}  // namespace tilegraph::onnx_frontend
