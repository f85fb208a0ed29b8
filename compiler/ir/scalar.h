// Scalar semantics of Expr operators, shared by constant folding in the
// expression constructors and by the reference interpreter (evaluate.h), so
// that both agree with each other and with Expr's documented semantics.
#pragma once
#include <cstdint>

#include "compiler/ir/dtype.h"
#include "compiler/ir/expr.h"

namespace tilegraph {

// A value of some DType: floats live in f (as double), everything else
// (integers, bool as 0/1) in i.
struct Scalar {
  double f = 0.0;
  int64_t i = 0;
};

Scalar scalar_of(double v, DType t);
double scalar_as_double(Scalar s, DType t);
// Rounds/wraps a value to what dtype t can hold (float32 rounding, int8 wrap...).
Scalar scalar_cast(Scalar s, DType from, DType to);
Scalar scalar_unary(UnaryOp op, DType t, Scalar x);
// a and b have dtype t; comparisons return bool in .i.
Scalar scalar_binary(BinaryOp op, DType t, Scalar a, Scalar b);
// Integer division and modulo of int64 values, total as expr.h defines them:
// floor_* round toward -inf (Python), trunc_* toward zero (C); a divisor of 0
// gives 0 for both quotient and remainder, and INT64_MIN / -1 wraps to
// INT64_MIN (remainder 0). Never undefined behaviour, never a trap.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);
int64_t trunc_div(int64_t a, int64_t b);
int64_t trunc_rem(int64_t a, int64_t b);

}  // namespace tilegraph
