// Lowers a fused group (a scheduler::BlockPlan) to a block/thread kernel in
// Kernel IR: a kBlocks loop over the root's tiles; per block, one phase per
// op — reduce chunks staged into shared memory by cooperative loads, each
// thread computing a strided share of the phase's region, intermediate
// regions kept in shared buffers — with barriers between phases. Tails: the
// root's stores are guarded; intermediate regions past a tensor's end are
// computed at clamped coordinates (never read for real).
//
// The same kernel prints as CUDA (blocks and threads bound to the grid), as
// the CPU emulation of that launch, and — with one thread per block — as
// the host CPU's fused kernels.
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/block_plan.h"

namespace tilegraph::codegen {

Kernel lower_block_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                          const scheduler::BlockPlan& plan);

}  // namespace tilegraph::codegen
