// Narrowing an int64 index expression to int32 where its values fit.
//
// A conv's column table (lower_float_gemm_kernel.cpp) holds, per output
// pixel of a B panel and window position, an input offset and a padding
// test. Filled in int64 its div/mod by the output width stays scalar (x86
// has no vector 64-bit multiply-high), and its entries index the packing's
// loads as 8-lane 64-bit gathers; in int32 both vectorize 16 lanes wide
// (ResNet-50's 7x7 stem conv: 3.1 -> 1.8 ms per run, the table fill was
// over a third of it).
#pragma once
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/ir/interval.h"

namespace tilegraph::codegen {

// e (an int64 or bool expression of integer arithmetic, comparisons, And /
// Or / Not and Select over vars and constants) computed in int32: each var
// cast to int32, each int64 node of int32 type. Exact when every node's
// bounds (var_bounds for the vars) lie within int32, which it checks; null
// where one does not, or e holds anything else (loads, casts, floats).
// A bool e stays bool.
Expr narrow_index_to_i32(const Expr& e, const std::vector<Interval>& var_bounds);

}  // namespace tilegraph::codegen
