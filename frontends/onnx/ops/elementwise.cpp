// Elementwise ONNX ops: arithmetic, math functions, activations, comparisons,
// logic, casts. All broadcast numpy-style (lower_util.h: elementwise).
#include <cmath>
#include <limits>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"

namespace tilegraph::onnx_frontend {

namespace {

using Values = std::vector<Expr>;

LowerFn unary_fn(UnaryOp op) {
  return [op](LoweringContext& ctx) -> std::vector<TensorId> {
    return {elementwise_node(ctx, unary_op_name(op), [op](const Values& v) { return unary(op, v[0]); })};
  };
}

LowerFn binary_fn(BinaryOp op) {
  return [op](LoweringContext& ctx) -> std::vector<TensorId> {
    if (ctx.dtype(0) != ctx.dtype(1))
      ctx.fail(str_cat("input types differ: ", dtype_name(ctx.dtype(0)), " and ", dtype_name(ctx.dtype(1))));
    return {elementwise_node(ctx, binary_op_name(op), [op](const Values& v) { return binary(op, v[0], v[1]); }, 2)};
  };
}

// Variadic Min/Max/Sum/Mean fold their inputs left to right.
LowerFn variadic_fn(const char* kind, BinaryOp op, bool mean) {
  return [=](LoweringContext& ctx) -> std::vector<TensorId> {
    return {elementwise_node(ctx, kind, [&](const Values& v) {
      Expr acc = v[0];
      for (size_t i = 1; i < v.size(); ++i) acc = binary(op, acc, v[i]);
      if (mean) acc = acc / scalar(static_cast<double>(v.size()), acc->dtype);
      return acc;
    })};
  };
}

std::vector<TensorId> lower_pow(LoweringContext& ctx) {
  const DType t = ctx.dtype(0);
  // Pow(x, 2) from decomposed LayerNorm / GELU: multiply, it is exact and fast.
  if (ctx.is_constant(1) && num_elements(ctx.shape(1)) == 1) {
    const double e = ctx.const_floats(1, "exponent")[0];
    if (e == 2.0 || e == 1.0 || e == 0.5 || e == 3.0) {
      return {elementwise_node(ctx, "pow", [&](const Values& v) {
        if (e == 1.0) return v[0];
        if (e == 0.5) return unary(UnaryOp::kSqrt, v[0]);
        if (e == 3.0) return v[0] * v[0] * v[0];
        return v[0] * v[0];
      }, 1)};
    }
  }
  return {elementwise_node(ctx, "pow", [&](const Values& v) {
    return binary(BinaryOp::kPow, v[0], cast(t, v[1]));
  })};
}

std::vector<TensorId> lower_div(LoweringContext& ctx) {
  return {elementwise_node(ctx, "div", [](const Values& v) { return v[0] / v[1]; })};
}

std::vector<TensorId> lower_mod(LoweringContext& ctx) {
  const bool fmod = ctx.attr_int("fmod", 0) != 0;
  if (is_float(ctx.dtype(0)) && !fmod) ctx.fail("fmod must be 1 for floating-point inputs");
  const BinaryOp op = fmod ? BinaryOp::kRem : BinaryOp::kFloorMod;
  return {elementwise_node(ctx, "mod", [op](const Values& v) { return binary(op, v[0], v[1]); })};
}

std::vector<TensorId> lower_relu(LoweringContext& ctx) {
  return {elementwise_node(ctx, "relu", [](const Values& v) { return max(v[0], scalar(0, v[0]->dtype)); })};
}

std::vector<TensorId> lower_leaky_relu(LoweringContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 0.01f);
  return {elementwise_node(ctx, "leaky_relu", [&](const Values& v) {
    const Expr zero = scalar(0, v[0]->dtype);
    return select(lt(v[0], zero), v[0] * scalar(alpha, v[0]->dtype), v[0]);
  })};
}

std::vector<TensorId> lower_prelu(LoweringContext& ctx) {
  return {elementwise_node(ctx, "prelu", [](const Values& v) {
    return select(lt(v[0], scalar(0, v[0]->dtype)), v[0] * v[1], v[0]);
  })};
}

std::vector<TensorId> lower_elu(LoweringContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  return {elementwise_node(ctx, "elu", [&](const Values& v) {
    const DType t = v[0]->dtype;
    return select(lt(v[0], scalar(0, t)), scalar(alpha, t) * (unary(UnaryOp::kExp, v[0]) - scalar(1, t)), v[0]);
  })};
}

std::vector<TensorId> lower_selu(LoweringContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = ctx.attr_float("gamma", 1.05070102214813232421875f);
  return {elementwise_node(ctx, "selu", [&](const Values& v) {
    const DType t = v[0]->dtype;
    Expr neg = scalar(alpha, t) * (unary(UnaryOp::kExp, v[0]) - scalar(1, t));
    return scalar(gamma, t) * select(lt(v[0], scalar(0, t)) , neg, v[0]);
  })};
}

std::vector<TensorId> lower_clip(LoweringContext& ctx) {
  const DType t = ctx.dtype(0);
  std::vector<TensorId> inputs{ctx.input(0)};
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  bool has_lo = false, has_hi = false;
  int lo_slot = -1, hi_slot = -1;
  if (ctx.opset() < 11) {
    lo = ctx.attr_float("min", -std::numeric_limits<float>::infinity());
    hi = ctx.attr_float("max", std::numeric_limits<float>::infinity());
    has_lo = has_hi = true;
  } else {
    // min/max are inputs; constants become immediates, others are loaded.
    for (int i : {1, 2}) {
      if (!ctx.has_input(i)) continue;
      if (ctx.is_constant(i)) {
        (i == 1 ? lo : hi) = ctx.const_floats(i, i == 1 ? "min" : "max")[0];
        (i == 1 ? has_lo : has_hi) = true;
      } else {
        (i == 1 ? lo_slot : hi_slot) = static_cast<int>(inputs.size());
        inputs.push_back(ctx.input(i));
      }
    }
  }
  return {elementwise(ctx, "clip", inputs, t, [&](const Values& v) {
    Expr x = v[0];
    if (lo_slot >= 0) x = max(x, v[lo_slot]);
    else if (has_lo && !(is_float(t) && std::isinf(lo))) x = max(x, scalar(lo, t));
    if (hi_slot >= 0) x = min(x, v[hi_slot]);
    else if (has_hi && !(is_float(t) && std::isinf(hi))) x = min(x, scalar(hi, t));
    return x;
  })};
}

std::vector<TensorId> lower_reciprocal(LoweringContext& ctx) {
  return {elementwise_node(ctx, "reciprocal", [](const Values& v) { return scalar(1, v[0]->dtype) / v[0]; })};
}

std::vector<TensorId> lower_hard_sigmoid(LoweringContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 0.2f), beta = ctx.attr_float("beta", 0.5f);
  return {elementwise_node(ctx, "hard_sigmoid", [&](const Values& v) {
    const DType t = v[0]->dtype;
    return max(scalar(0, t), min(scalar(1, t), scalar(alpha, t) * v[0] + scalar(beta, t)));
  })};
}

std::vector<TensorId> lower_hard_swish(LoweringContext& ctx) {
  return {elementwise_node(ctx, "hard_swish", [](const Values& v) {
    const DType t = v[0]->dtype;
    Expr hs = max(scalar(0, t), min(scalar(1, t), v[0] * scalar(1.0 / 6.0, t) + scalar(0.5, t)));
    return v[0] * hs;
  })};
}

std::vector<TensorId> lower_gelu(LoweringContext& ctx) {
  const std::string approx = ctx.attr_string("approximate", "none");
  return {elementwise_node(ctx, "gelu", [&](const Values& v) {
    const DType t = v[0]->dtype;
    const Expr x = v[0];
    if (approx == "tanh") {
      Expr inner = scalar(std::sqrt(2.0 / M_PI), t) * (x + scalar(0.044715, t) * x * x * x);
      return scalar(0.5, t) * x * (scalar(1, t) + unary(UnaryOp::kTanh, inner));
    }
    return scalar(0.5, t) * x * (scalar(1, t) + unary(UnaryOp::kErf, x * scalar(M_SQRT1_2, t)));
  })};
}

std::vector<TensorId> lower_softsign(LoweringContext& ctx) {
  return {elementwise_node(ctx, "softsign", [](const Values& v) {
    return v[0] / (scalar(1, v[0]->dtype) + unary(UnaryOp::kAbs, v[0]));
  })};
}

std::vector<TensorId> lower_mish(LoweringContext& ctx) {
  return {elementwise_node(ctx, "mish", [](const Values& v) {
    return v[0] * unary(UnaryOp::kTanh, unary(UnaryOp::kSoftplus, v[0]));
  })};
}

std::vector<TensorId> lower_thresholded_relu(LoweringContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  return {elementwise_node(ctx, "thresholded_relu", [&](const Values& v) {
    const DType t = v[0]->dtype;
    return select(binary(BinaryOp::kGt, v[0], scalar(alpha, t)), v[0], scalar(0, t));
  })};
}

std::vector<TensorId> lower_celu(LoweringContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  return {elementwise_node(ctx, "celu", [&](const Values& v) {
    const DType t = v[0]->dtype;
    Expr neg = scalar(alpha, t) * (unary(UnaryOp::kExp, v[0] / scalar(alpha, t)) - scalar(1, t));
    return max(scalar(0, t), v[0]) + min(scalar(0, t), neg);
  })};
}

std::vector<TensorId> lower_where(LoweringContext& ctx) {
  if (ctx.dtype(1) != ctx.dtype(2)) ctx.fail("Where branches have different types");
  return {elementwise_node(ctx, "where", [](const Values& v) {
    Expr cond = v[0]->dtype == DType::kBool ? v[0] : cast(DType::kBool, v[0]);
    return select(cond, v[1], v[2]);
  })};
}

std::vector<TensorId> lower_not(LoweringContext& ctx) {
  return {elementwise_node(ctx, "not", [](const Values& v) { return unary(UnaryOp::kNot, v[0]); })};
}

std::vector<TensorId> lower_cast(LoweringContext& ctx) {
  DType to;
  if (!dtype_from_onnx(static_cast<int>(ctx.attr_int("to", 0)), &to))
    ctx.fail(str_cat("unsupported target type ", ctx.attr_int("to", 0)));
  return {cast_tensor(ctx, ctx.input(0), to)};
}

std::vector<TensorId> lower_cast_like(LoweringContext& ctx) {
  return {cast_tensor(ctx, ctx.input(0), ctx.dtype(1))};
}

std::vector<TensorId> lower_identity(LoweringContext& ctx) { return {ctx.input(0)}; }

std::vector<TensorId> lower_dropout(LoweringContext& ctx) {
  // Inference: output = input; the optional mask is all true. So is training
  // mode with ratio 0, which exports carry: torchvision 0.14's swin_t calls
  // F.dropout(attn, p=0.0) without training=False.
  if (ctx.has_input(2) && !ctx.is_constant(2)) ctx.fail("training_mode must be a constant");
  if (ctx.opset() >= 12 && ctx.is_constant(2) && ctx.const_ints(2, "training_mode")[0] != 0) {
    if (!ctx.has_input(1) || !ctx.is_constant(1))
      ctx.fail("training_mode=true is not supported (inference compiler) unless the ratio is a constant 0");
    const double ratio = ctx.const_floats(1, "ratio")[0];
    if (ratio != 0.0)
      ctx.fail(str_cat("training_mode=true with ratio ", ratio,
                       " is not supported (inference compiler; only ratio 0 is the identity)"));
  }
  const Shape shape = ctx.shape(0);
  TensorId mask = ctx.emit("dropout_mask", shape, DType::kBool, {}, int_imm(1, DType::kBool));
  return {ctx.input(0), mask};
}

std::vector<TensorId> lower_bitshift(LoweringContext& ctx) {
  const BinaryOp op = ctx.attr_string("direction", "") == "LEFT" ? BinaryOp::kShl : BinaryOp::kShr;
  return {elementwise_node(ctx, "bitshift", [op](const Values& v) { return binary(op, v[0], v[1]); })};
}

}  // namespace

void add_elementwise_ops(OpTable& t) {
  const std::pair<const char*, UnaryOp> unaries[] = {
      {"Neg", UnaryOp::kNeg},       {"Abs", UnaryOp::kAbs},     {"Exp", UnaryOp::kExp},
      {"Log", UnaryOp::kLog},       {"Sqrt", UnaryOp::kSqrt},   {"Erf", UnaryOp::kErf},
      {"Tanh", UnaryOp::kTanh},     {"Sigmoid", UnaryOp::kSigmoid}, {"Floor", UnaryOp::kFloor},
      {"Ceil", UnaryOp::kCeil},     {"Round", UnaryOp::kRound}, {"Sin", UnaryOp::kSin},
      {"Cos", UnaryOp::kCos},       {"Tan", UnaryOp::kTan},     {"Asin", UnaryOp::kAsin},
      {"Acos", UnaryOp::kAcos},     {"Atan", UnaryOp::kAtan},   {"Sinh", UnaryOp::kSinh},
      {"Cosh", UnaryOp::kCosh},     {"Asinh", UnaryOp::kAsinh}, {"Acosh", UnaryOp::kAcosh},
      {"Atanh", UnaryOp::kAtanh},   {"Sign", UnaryOp::kSign},   {"IsNaN", UnaryOp::kIsNaN},
      {"Softplus", UnaryOp::kSoftplus},
  };
  for (const auto& [name, op] : unaries) t.push_back({name, 1, unary_fn(op)});
  const std::pair<const char*, BinaryOp> binaries[] = {
      {"Add", BinaryOp::kAdd},   {"Sub", BinaryOp::kSub},     {"Mul", BinaryOp::kMul},
      {"Equal", BinaryOp::kEq},  {"Less", BinaryOp::kLt},     {"LessOrEqual", BinaryOp::kLe},
      {"Greater", BinaryOp::kGt}, {"GreaterOrEqual", BinaryOp::kGe}, {"And", BinaryOp::kAnd},
      {"Or", BinaryOp::kOr},     {"Xor", BinaryOp::kXor},     {"BitwiseAnd", BinaryOp::kBitAnd},
      {"BitwiseOr", BinaryOp::kBitOr}, {"BitwiseXor", BinaryOp::kBitXor},
  };
  for (const auto& [name, op] : binaries) t.push_back({name, 1, binary_fn(op)});
  t.push_back({"Div", 1, lower_div});
  t.push_back({"Pow", 1, lower_pow});
  t.push_back({"Mod", 10, lower_mod});
  t.push_back({"Max", 1, variadic_fn("max", BinaryOp::kMax, false)});
  t.push_back({"Min", 1, variadic_fn("min", BinaryOp::kMin, false)});
  t.push_back({"Sum", 1, variadic_fn("sum", BinaryOp::kAdd, false)});
  t.push_back({"Mean", 1, variadic_fn("mean", BinaryOp::kAdd, true)});
  t.push_back({"Relu", 1, lower_relu});
  t.push_back({"LeakyRelu", 1, lower_leaky_relu});
  t.push_back({"PRelu", 1, lower_prelu});
  t.push_back({"Elu", 1, lower_elu});
  t.push_back({"Selu", 1, lower_selu});
  t.push_back({"Celu", 12, lower_celu});
  t.push_back({"Clip", 1, lower_clip});
  t.push_back({"Reciprocal", 1, lower_reciprocal});
  t.push_back({"HardSigmoid", 1, lower_hard_sigmoid});
  t.push_back({"HardSwish", 14, lower_hard_swish});
  t.push_back({"Gelu", 1, lower_gelu});  // standard since opset 20; accepted earlier too
  t.push_back({"Softsign", 1, lower_softsign});
  t.push_back({"Mish", 18, lower_mish});
  t.push_back({"ThresholdedRelu", 10, lower_thresholded_relu});
  t.push_back({"Where", 9, lower_where});
  t.push_back({"Not", 1, lower_not});
  t.push_back({"Cast", 1, lower_cast});
  t.push_back({"CastLike", 15, lower_cast_like});
  t.push_back({"Identity", 1, lower_identity});
  t.push_back({"Dropout", 1, lower_dropout});
  t.push_back({"BitShift", 11, lower_bitshift});
}

}  // namespace tilegraph::onnx_frontend
