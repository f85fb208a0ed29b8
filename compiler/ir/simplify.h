// Index-expression simplification with known variable ranges.
//
// Reshape/transpose chains inlined into consumers produce index arithmetic
// like floordiv(h*64 + d, 64) with d in [0, 64); simplify rewrites it to h.
// Rules (int64 only; floats are left alone so float semantics never change):
//   * sums are normalized to coef*term + constant, equal terms combined;
//   * floordiv/floormod of a sum by c > 0: terms whose coefficient c divides
//     move out of the division; if the rest is provably in [0, c) it vanishes
//     (div) or is the result (mod);
//   * a sum g * big + small with g | c and small provably in [0, g):
//     floordiv by c = floordiv(big, c/g), floormod by c = floormod(big, c/g)
//     * g + small (a flat index nb * 32 + j split by 256);
//   * q*c * floordiv(x, c) + q * floormod(x, c) = q * x (a split index
//     flattened again);
//   * floordiv(floordiv(x, a), b) = floordiv(x, a*b) for a, b > 0;
//   * comparisons, min and max decided by interval bounds become constants.
#pragma once
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/ir/interval.h"

namespace tilegraph {

// Returns e itself (same pointer) when nothing simplifies.
Expr simplify(const Expr& e, const std::vector<Interval>& var_bounds);

}  // namespace tilegraph
