#include "compiler/ir/quantized_values.h"

namespace tilegraph {

bool is_quantized_type(DType t) { return t == DType::kI8 || t == DType::kU8; }

double lowest_of(DType t) { return t == DType::kI8 ? -128.0 : 0.0; }
double highest_of(DType t) { return t == DType::kI8 ? 127.0 : 255.0; }

Expr saturate_to(DType t, Expr v) {
  const DType f = v->dtype;
  return cast(t, max(min(v, const_of(highest_of(t), f)), const_of(lowest_of(t), f)));
}

Expr quantize_value(DType t, Expr v, Expr scale, Expr zp) {
  const DType f = v->dtype;
  return saturate_to(t, unary(UnaryOp::kRound, v / scale) + cast(f, zp));
}

}  // namespace tilegraph
