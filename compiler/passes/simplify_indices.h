// Simplifies every op's index arithmetic with the op's axis ranges
// (compiler/ir/simplify.h). Run after inlining, which creates the clutter.
#pragma once
#include "compiler/ir/graph.h"
#include "compiler/ir/interval.h"

namespace tilegraph::passes {

// Axis ranges of op's Vars: spatial axes, then reduce axes.
std::vector<Interval> axis_bounds(const Graph& g, const Op& op);

Graph simplify_indices(const Graph& g);

}  // namespace tilegraph::passes
