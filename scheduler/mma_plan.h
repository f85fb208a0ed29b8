// Tensor-core tiles for a matmul phase of a block kernel: which phases can
// run on mma.sync m16n8k16 (half operands, float accumulators; sm_80 and
// later) and how their region is dealt to the block's warps. The scheduler
// prices such a phase at the arch's fp16 tensor rate; codegen lowers it to
// fragment loads and Kernel IR WarpMma steps (codegen/kernel_ir/kernel_ir.h).
#pragma once
#include <optional>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/tile_propagation.h"

namespace tilegraph::scheduler {

// The MMA shape.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16, kWarpLanes = 32;

// The phase as a GEMM (implicit for convolutions): out[rows, cols] =
// sum_k a[rows, k] * b[k, cols], where `a` and `b` are the two factors of
// the body (half values, possibly each widened to float), the rows are the
// output axes only `a` reads, the columns those only `b` reads, and k runs
// over all reduce axes flattened (axis 0 outermost). Output axes both or
// neither factor read must be 1 in the block's region. A matmul [.., M, N]
// has rows {M} and columns {N}; a convolution [n, f, oh, ow] with the
// activation as `a` has rows {n, oh, ow} and columns {f}.
struct MmaPlan {
  Expr a, b;                         // over the op's vars
  std::vector<int> row_axes, col_axes;  // output axes, in order
  int64_t rows = 0, cols = 0;        // the region's extent over each set
  int64_t tiles_m = 0, tiles_n = 0;  // 16 x 8 tiles of rows x columns
  // Tiles are dealt in order, tiles_per_warp to each warp; the last warp's
  // run may overhang (it recomputes the last tile and stores nothing extra).
  int64_t tiles_per_warp = 0;
};

// Does the arch run mma.sync m16n8k16 with half inputs (CUDA sm_80+)?
bool has_mma_m16n8k16(const ArchSpec& arch);

// The tensor-core plan of phase op `op` whose block region is `region`,
// run by `threads` threads with reduce chunks of `step` (0: none); nullopt
// when the phase does not fit: not a sum of a product of two half factors
// with the roles above, fewer than 16 reduce points, rows not a multiple of
// 16, columns not of 8, or more warps than runs of tiles. Of the two
// ways to cast the factors as a and b, the first that fits.
std::optional<MmaPlan> plan_mma(const Graph& g, const Op& op, const Region& region, int threads, int64_t step,
                                const ArchSpec& arch);

}  // namespace tilegraph::scheduler
