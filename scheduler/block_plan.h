// BlockPlan: everything about a block kernel that the cost model and code
// generation must agree on — its phases, their tiles, which inputs are
// staged through shared memory in reduce chunks, the shared buffers and
// their offsets, and the work each thread does. The scheduler estimates a
// config from its plan; codegen lowers the chosen config from the same plan.
//
// A block computes one tile of the root op. Phases run in topological order,
// separated by barriers: each computes its op's region (tile propagation)
// into a shared buffer, the root into global memory. A reduction phase with
// a reduce step walks its first reduce axis in chunks; per chunk, the inputs
// it reuses are first copied cooperatively into shared memory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/arch_spec.h"
#include "scheduler/cost_model.h"
#include "scheduler/mma_plan.h"
#include "scheduler/schedule.h"
#include "scheduler/tile_propagation.h"

namespace tilegraph::scheduler {

struct StagedInput {
  int slot = -1;                   // input slot of the phase op
  Region region;                   // per chunk (base over block and chunk vars)
  int buffer = -1;                 // index into BlockPlan::buffers
};

struct PhasePlan {
  int64_t elements = 0;            // region volume
  int64_t per_thread = 0;          // ceil(elements / threads)
  int buffer = -1;                 // output buffer (BlockPlan::buffers), -1 for the root
  bool writes_global = false;      // an extra output: the region also goes to DRAM
  // One thread per block (CPU): a reduction's accumulators for the whole
  // region live in the arena too (too many for registers or the stack).
  int accumulator = -1;
  // Reduce chunking (staged reductions only).
  int64_t step = 0;                // chunk of reduce axis 0; 0: not chunked
  int64_t chunks = 1;
  int chunk_var = -1;              // outer var: which chunk
  int chunk_local_var = -1;        // inner var over [0, step)
  std::vector<StagedInput> staged;
  // A matmul phase on tensor cores (mma_plan.h); its accumulators are the
  // warps' C fragments instead of per-thread strided elements.
  std::optional<MmaPlan> mma;
};

struct SharedBuffer {
  std::string name;
  DType dtype = DType::kF32;       // as computed (half is kept as float on chip)
  int64_t elements = 0;
  int first_phase = 0, last_phase = 0;
};

struct BlockPlan {
  std::vector<Op> phases;          // phase_ops(): root last
  GroupTiling tiling;              // over phases; vars also hold chunk vars
  TileConfig config;
  std::vector<PhasePlan> phase_plans;
  std::vector<SharedBuffer> buffers;
  SharedMemoryPlan shared;         // offsets of buffers
  KernelFeatures features;
  // How many times the busiest producer phase computes each of its elements
  // over the whole grid, relative to the root's own tail waste (1: tiles
  // align, nothing is recomputed; a conv halo or a row split into column
  // blocks recompute more).
  double recompute = 1;
  // Every extra output is written completely by the union of the blocks'
  // regions (each dim either whole in every block or tiled by its own block
  // var); else the config is unusable and this says why.
  std::string uncovered_output;
};

// Plans kernel k (ops, edges) under config. Cheap enough to call per
// candidate during the search.
BlockPlan plan_block_kernel(const Graph& g, const KernelSchedule& k, const TileConfig& config,
                            const ArchSpec& arch);

// The element size a value of dtype t occupies on chip.
int64_t on_chip_bytes(DType t);

}  // namespace tilegraph::scheduler
