// Tensor-core tiles for a matmul phase of a block kernel: which phases can
// run on mma.sync m16n8k16 (half operands, float accumulators; sm_80 and
// later) and how their region is dealt to the block's warps. The scheduler
// prices such a phase at the arch's fp16 tensor rate; codegen lowers it to
// fragment loads and Kernel IR WarpMma steps (codegen/kernel_ir.h).
#pragma once
#include <optional>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/tile_propagation.h"

namespace tilegraph::scheduler {

// The MMA shape.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16, kWarpLanes = 32;

struct MmaPlan {
  // The body is a * b (half values, possibly each widened to float): `a`
  // reads the row axis (the output's
  // second to last) and not the column axis (the last), `b` the reverse;
  // both read the single reduce axis. Over the op's vars.
  Expr a, b;
  int64_t tiles_m = 0, tiles_n = 0;  // 16 x 8 tiles of the region's rows x columns
  int64_t tiles_per_warp = 0;        // tiles_m * tiles_n / warps, dealt in order
};

// Does the arch run mma.sync m16n8k16 with half inputs (CUDA sm_80+)?
bool has_mma_m16n8k16(const ArchSpec& arch);

// The tensor-core plan of phase op `op` whose block region is `region`,
// run by `threads` threads with reduce chunks of `step` (0: none); nullopt
// when the phase does not fit: not a single-axis sum of a product of two
// half factors of the roles above, region dims other than rows and columns
// not 1, rows not a multiple of 16, columns not of 8, a chunk not of 16, or
// tiles not shared evenly by the warps.
std::optional<MmaPlan> plan_mma(const Graph& g, const Op& op, const Region& region, int threads, int64_t step,
                                const ArchSpec& arch);

}  // namespace tilegraph::scheduler
