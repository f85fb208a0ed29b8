// Strip-mines CPU loops that read through a folded Reshape/Transpose.
//
// A vectorized or reduce loop `for v < E` whose body sees v only as v / c and
// v % c (c a constant dividing E) gathers: every lane computes its own
// division, and the loads are not one contiguous run (attention's heads
// merged back, [12, 197, 64] read as [197, 768]: a DynamicQuantizeLinear's
// range and quantize ran scalar, 4x slower than on a contiguous row). It
// becomes `for vo < E/c { for vi < c }` with v / c = vo and v % c = vi: the
// inner loop keeps the kind (simd or reduction) and runs over contiguous
// memory. Several divisors that are multiples of the smallest, c, split at
// c (Swin's patch merging reads [2, 2, C] as 4C columns: v / C % 2, v / 2C,
// v % C); v / (m c) is then vo / m and v % (m c) is vo % m * c + vi. The iteration order is the same: elementwise loops and min/max
// give the same bits; a simd sum was reassociated before and still is.
#pragma once

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// Inner runs shorter than this stay one loop (a vector's lanes, AVX2 floats).
inline constexpr int64_t kMinSplitRun = 8;

// k with every such loop split (k itself when there is none).
Kernel split_div_mod_loops(Kernel k);

}  // namespace tilegraph::codegen
