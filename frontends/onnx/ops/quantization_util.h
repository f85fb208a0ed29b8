// Quantization arithmetic shared by the QDQ / QOperator lowerings
// (ops/quantization.cpp, ops/quantization_contrib.cpp): the int8 / uint8
// ranges, onnxruntime's rounding and saturation, float products that the C
// compiler may not fuse, and the canonical integer matmul that the scheduler's
// int8 micro-kernels match (scheduler/int_gemm.h).
//
// Rounding follows onnxruntime (MLAS): scale in float (x / scale when
// quantizing, acc * multiplier when requantizing), round half to even, add the
// zero point, saturate to the quantized type.
#pragma once
#include <vector>

#include "compiler/ir/quantized_values.h"
#include "frontends/onnx/lower_util.h"

namespace tilegraph::onnx_frontend {

// is_quantized_type, lowest_of, highest_of, saturate_to and quantize_value:
// compiler/ir/quantized_values.h (the quantize micro-kernel's matcher uses them too).
// scale * f32(i32(x) - i32(zp)): a quantized value as a float.
Expr dequantize_value(Expr x, Expr scale, Expr zp);
// saturate(round(f32(acc) * multiplier) + zp): an int32 accumulator
// requantized as MlasRequantizeOutput does.
Expr requantize_value(DType t, Expr acc, Expr multiplier, Expr zp);

// Float arithmetic with onnxruntime's roundings whatever the C compiler does.
// Generated code is built with GCC's default -ffp-contract=fast on FMA
// targets, which fuses a float `a * b + c` into one rounding, and GCC narrows
// (float)((double)x * (double)y) of floats x, y back to a float multiply; an
// integer operand, widened straight to double, defeats both.
//   mul_rounded(i, f): integer i times float f, rounded to float before
//   anything is added to it (exact in double while |i| < 2^29).
Expr mul_rounded(Expr integer, Expr f);
//   fused_mul_add(i, f, c): fma(i, f, c) rounded once to float, for kernels
//   that use FMA instructions; i an integer (or a float), f and c floats.
//   Computed in double, so exact while i * f + c spans at most 53 bits: i an
//   8-bit integer and f, c within about 2^20 of each other in magnitude.
Expr fused_mul_add(Expr i, Expr f, Expr c);

// A scale or zero point input that must hold one value, as a rank-0 tensor.
TensorId scalar_input(LoweringContext& ctx, int input, const char* what);
// The same for a scale, which must also be float32.
TensorId scale_input(LoweringContext& ctx, int input, const char* what);
// The same for an optional zero point: a constant 0 of `type` when absent.
TensorId scalar_zero_point(LoweringContext& ctx, int input, DType type, const char* what);

// sum_k (i32(a) - za) * (i32(b) - zb) in int32, the canonical integer matmul:
// numpy matmul shapes, a and b int8 / uint8; zero points are tensor ids (-1
// for 0) holding one value, or one per row of a / column of b.
TensorId integer_matmul(LoweringContext& ctx, TensorId a, TensorId b, TensorId za, TensorId zb);

// ConvInteger's lowering (ops/conv_pool.cpp), for QLinearConv to reuse on a
// context whose inputs are [x, w, x_zero_point, w_zero_point].
std::vector<TensorId> lower_conv_integer(LoweringContext& ctx);

}  // namespace tilegraph::onnx_frontend
