// The index map of a row-major reshape, kept small: dimensions are matched in
// groups whose element counts agree ([B,S,768] → [B,S,12,64] maps B→B, S→S and
// 768 → (12,64)), so only a split or merged group pays for div/mod.
#pragma once
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/ir/graph.h"

namespace tilegraph {

// Input indices for reading `in_shape` as `out_shape`, given the output's
// index expressions `out_vars` (one per output dimension).
std::vector<Expr> reshape_indices(const Shape& in_shape, const Shape& out_shape,
                                  const std::vector<Expr>& out_vars);

}  // namespace tilegraph
