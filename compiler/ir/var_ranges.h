// The ranges of a variable over which an expression reads one thing: a
// Concat inlined along a reduce axis reads as a chain of selects on that
// axis, select(k < c1, v1, select(k < c2, v2, ... vn)). Code that packs or
// transforms the operand per input (the float GEMM's B panel, the Winograd
// conv's input transform) splits it here and handles each range's value,
// which reads one input, on its own.
#pragma once
#include <cstdint>
#include <vector>

#include "compiler/ir/expr.h"

namespace tilegraph {

// A range [begin, end) of a variable and the expression's value there.
struct VarRange {
  int64_t begin = 0, end = 0;
  Expr value;
};

// Splits e = select(v < c1, e1, select(v < c2, e2, ... en)), with the c
// increasing inside (0, extent), into the ranges [0, c1), [c1, c2) ...
// [c_{n-1}, extent) and their values; a single range of e otherwise. Under
// a select that does not depend on v (a column tail's select(col < N, b, 0),
// a padding guard), each range keeps it around its value.
std::vector<VarRange> split_var_ranges(const Expr& e, int v, int64_t extent);

}  // namespace tilegraph
