// Layout ops vanish into their consumers (DESIGN.md: "Layout ops are index
// maps and vanish into their consumers").
//
// An op is inlinable when it computes no values of its own: no reduction and a
// body of loads, index arithmetic, comparisons, selects and casts only
// (Reshape, Transpose, Slice, Concat, Pad, Expand, Gather, Cast ...). Each Load
// of such an op's output in a consumer is replaced by the op's body with its
// axes bound to the consumer's indices. Producers left without consumers are
// removed (unless they are graph outputs).
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

bool is_index_map(const Op& op);

// Returns g unchanged (same ops) when nothing is inlinable.
Graph inline_index_maps(const Graph& g);

}  // namespace tilegraph::passes
