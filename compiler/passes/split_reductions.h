// Large reductions into a handful of values become two reductions.
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// A reduction of many points into very few outputs (DynamicQuantizeLinear's
// min and max over a whole activation, a global sum) leaves no spatial axis
// to spread over cores or blocks: its kernel runs on one core while the rest
// idle. It is rewritten into
//   partial[k, v..] = combine_{other reduce axes} body
//   out[v..]        = combine_k partial[k, v..]
// where k is the outermost reduce axis of 16 to 4096 points that leaves at
// least 64 points to each partial. The partial reduction has k as its
// outermost spatial axis, so it tiles like any row reduction; the final one
// combines a few hundred values.
// A reduction over a single long axis is first split into (outer, inner)
// axes by a divisor of its extent. The combiners (sum, prod, min, max) are
// associative, so the result is the same up to floating-point reassociation,
// which the IR already allows. Rewritten: outputs of at most kMaxOutputs
// elements reducing at least kMinPoints points each. Returns g when nothing
// matched.
Graph split_reductions(const Graph& g);

}  // namespace tilegraph::passes
