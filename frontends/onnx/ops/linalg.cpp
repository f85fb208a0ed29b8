// MatMul and Gemm: sum-reductions over the shared dimension.
#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"

namespace tilegraph::onnx_frontend {

namespace {

std::vector<TensorId> lower_matmul(LoweringContext& ctx) {
  if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("MatMul inputs have different types");
  return {matmul(ctx, ctx.input(0), ctx.input(1))};
}

std::vector<TensorId> lower_gemm(LoweringContext& ctx) {
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2)
    ctx.fail(str_cat("A and B must be 2-D, got ", shape_to_string(ctx.shape(0)), " and ",
                     shape_to_string(ctx.shape(1))));
  const DType t = ctx.dtype(0);
  const double alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  // Transposes are index maps; on constant weights they fold away at import.
  TensorId a = ctx.attr_int("transA", 0) ? transpose(ctx, ctx.input(0), {1, 0}) : ctx.input(0);
  TensorId b = ctx.attr_int("transB", 0) ? transpose(ctx, ctx.input(1), {1, 0}) : ctx.input(1);
  TensorId y = matmul(ctx, a, b);
  if (alpha != 1.0)
    y = elementwise(ctx, "gemm_alpha", {y}, t, [&](const std::vector<Expr>& v) { return v[0] * scalar(alpha, t); });
  if (ctx.has_input(2) && beta != 0.0) {
    y = elementwise(ctx, "gemm_bias", {y, ctx.input(2)}, t, [&](const std::vector<Expr>& v) {
      return v[0] + (beta == 1.0 ? v[1] : v[1] * scalar(beta, t));
    });
  }
  return {y};
}

}  // namespace

void add_linalg_ops(OpTable& t) {
  t.push_back({"MatMul", 1, lower_matmul});
  t.push_back({"Gemm", 1, lower_gemm});
}

}  // namespace tilegraph::onnx_frontend
