// The expressions of quantization to int8 / uint8 as the ONNX frontend writes
// them (QuantizeLinear, DynamicQuantizeLinear, requantization: onnxruntime's
// rounding, frontends/onnx/ops/quantization_util.h) and as the quantize
// micro-kernel's matcher recognizes them (codegen/lowering/lower_quantize_kernel):
// one definition, so the two cannot drift apart.
#pragma once
#include "compiler/ir/expr.h"

namespace tilegraph {

bool is_quantized_type(DType t);  // int8 or uint8
double lowest_of(DType t);        // -128 or 0
double highest_of(DType t);       // 127 or 255

// v (float, already rounded) clamped to t's range and converted to t.
Expr saturate_to(DType t, Expr v);
// saturate(round(v / scale) + zp): QuantizeLinear as MlasQuantizeLinear computes it.
Expr quantize_value(DType t, Expr v, Expr scale, Expr zp);

}  // namespace tilegraph
