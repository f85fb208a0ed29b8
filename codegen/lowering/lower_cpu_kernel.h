// Lowers one scheduled op to a CPU kernel (Kernel IR): OpenMP-parallel outer
// loops, a vectorized innermost loop, and for reductions a register tile
// (KernelSchedule::tile_rows x tile_cols) accumulated while the reduce loops
// run outside it. Tails are handled by clamping the tile's indices (the
// inner loops keep constant trip counts, so they unroll and vectorize) and
// guarding the stores.
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

Kernel lower_cpu_kernel(const Graph& g, const scheduler::KernelSchedule& schedule);

}  // namespace tilegraph::codegen
