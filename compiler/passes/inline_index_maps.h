// Layout ops vanish into their consumers (DESIGN.md: "Layout ops are index
// maps and vanish into their consumers").
//
// An op is inlinable when it computes no values of its own: no reduction and a
// body of loads, index arithmetic, comparisons, selects and casts only
// (Reshape, Transpose, Slice, Concat, Pad, Expand, Gather, Cast ...). Each Load
// of such an op's output in a consumer is replaced by the op's body with its
// axes bound to the consumer's indices. Producers left without consumers are
// removed (unless they are graph outputs).
//
// A wide index map (more than 4 loads: an 8-way Concat) would put all its
// loads into every consumer's inner loop, so it stays an op, except where
// InlineIndexMapOptions::wide_into_contractions lets it into a sum reduction
// that picks its branch by reduce axes only: a 1x1 conv over a channel
// Concat, whose GEMM packs each K row of its operand from the one input
// that row's channel lives in (codegen/lowering/lower_float_gemm_kernel.h),
// so the concatenated tensor is never written.
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

bool is_index_map(const Op& op);

struct InlineIndexMapOptions {
  // Set where contractions pack their operands once per row block (the CPU's
  // float GEMM micro-kernels), not on GPUs or with --no-float-ukernels, whose
  // loop nests would load every branch per reduce step.
  bool wide_into_contractions = false;
};

// Returns g unchanged (same ops) when nothing is inlinable.
Graph inline_index_maps(const Graph& g, const InlineIndexMapOptions& options);
inline Graph inline_index_maps(const Graph& g) { return inline_index_maps(g, {}); }

}  // namespace tilegraph::passes
