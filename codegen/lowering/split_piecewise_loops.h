// Splits CPU loops whose body switches on which piece of its range the loop var is in.
//
// A Concat read along a vectorized or reduce loop `for v < E` is a chain of
// selects, `v < 96 ? a[v] : v < 192 ? b[v - 96] : ...`, each piece's index
// clamped into its own tensor with min/max. Every lane then evaluates every
// branch: it loads from all pieces through clamped (gathered) indices and
// blends. Swin's patch merging reads its 4 x 96 columns so, and its layer
// norm's mean took 1 ms for 300K values. The loop becomes one loop per
// piece, [c_i, c_i+1) with v = v' + c_i, where the cut points c_i are the
// values of v at which a comparison, min or max of `v + constant` against a
// constant changes its outcome. The simplifier then decides each of them
// from v''s bounds: a piece reads one tensor, contiguously. The iteration
// order is the same: elementwise results and min/max are the same bits; a
// simd sum was reassociated before and still is (piece by piece).
#pragma once

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// Loops with a piece shorter than this stay whole (a vector's lanes, AVX2 floats).
inline constexpr int64_t kMinPieceRun = 8;
// Loops cut into more pieces than this stay whole.
inline constexpr int64_t kMaxPieces = 16;

// k with every such loop split (k itself when there is none).
Kernel split_piecewise_loops(Kernel k);

}  // namespace tilegraph::codegen
