// The cost model behind a narrow interface (STYLE.md §9): features of one
// fused kernel under one tile configuration in, an estimated time out. The
// search (SubGraphTiling, GraphConnecting) only sees estimate_cost().
//
// Latency = max over memory levels of bytes / bandwidth and flops / peak,
// scaled by wave quantization and by how much of the machine the kernel's
// occupancy lets it use, plus the launch overhead. Traffic is in bytes
// moved (whole transactions), not elements. On a CPU also: vector tails,
// scratch that spills out of L1, the parallel region and per-tile overhead,
// and for the micro-kernel kinds their measured rates and operand packing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"
#include "scheduler/arch_spec.h"

namespace tilegraph::scheduler {

struct KernelFeatures {
  int64_t blocks = 1;                  // grid size (CPU: parallel tiles)
  int threads_per_block = 1;           // CPU: 1
  int64_t shared_bytes_per_block = 0;  // after buffer reuse (CPU: cache-resident scratch)
  int registers_per_thread = 32;
  int64_t dram_bytes = 0;              // loads + stores, whole transactions
  // Of dram_bytes, the first read of each constant (weights). A CPU reads a
  // weight once per inference, after the rest of the model has passed
  // through the caches: it streams from DRAM however small the kernel's
  // other traffic (the CPU's activations come from the L2s or the L3).
  int64_t constant_bytes = 0;
  int64_t l2_bytes = 0;                // every block's input footprints (reuse across blocks hits L2)
  int64_t shared_bytes_moved = 0;      // loads + stores through shared memory / L1
  double flops = 0;                    // arithmetic of all ops in the kernel
  DType compute_dtype = DType::kF32;   // picks the peak rate
  // Elements the blocks compute / elements of the output (>= 1): tiles that
  // overhang the tensor (128 rows of 197 in two tiles) compute clamped
  // duplicates. A CPU core spends time on every one of them.
  double padding = 1;
  // CPU: the extent of the root tile's innermost axis, the loop the compiler
  // vectorizes (0: unknown). A tile of 17 floats runs 3 AVX2 vectors, the
  // last one 1/8 used.
  int64_t inner_extent = 0;
  // CPU block kernels (two or more phases) whose root tile overhangs the
  // output along its innermost axis: the last tile's guard and clamped
  // indices sit inside the vectorized loop, which then runs about a lane
  // at a time (vit's patch-embedding add, 1x50x256 tiles of 50x384:
  // 3.5-4x the time of 1x50x384 or 1x50x64 tiles, measured on Zen 3).
  bool scalar_inner = false;
  // CPU micro-kernel kinds (scheduler/ukernel_features.h): the operations
  // the GEMM micro-kernel runs (at its achieved rate, not the vector peak;
  // not in `flops`) and the panel bytes the kernel packs at run time.
  double ukernel_flops = 0;
  int64_t packed_bytes = 0;
  // CPU block kernels: the bytes one tile reads from its inputs and writes
  // to its outputs, which share the L1 with its scratch (cache blocking:
  // a tile whose scratch and footprints do not fit streams them from the
  // L2), and the input bytes the tile's later phases read again after an
  // earlier phase loaded them (a layer norm reads x for its statistics and
  // again to normalize), all tiles together.
  int64_t tile_footprint_bytes = 0;
  int64_t reread_bytes = 0;
  // CPU block kernels: the points per output element of a tile's reductions
  // whose result a later, wider phase of the tile waits for (a layer norm's
  // mean and variance over 768 features: 1536). Each sums its row through
  // one vector accumulator, a chain of dependent adds; the rows of a tile
  // overlap their chains, while a one-row tile waits for each in full.
  int64_t gated_reduction_points = 0;
};

struct CostEstimate {
  bool feasible = true;                // false: exceeds a per-block / per-thread limit
  std::string infeasible_reason;       // which limit, with numbers
  double seconds = 0;                  // the estimate
  double dram_seconds = 0;             // bytes / bandwidth at the achieved occupancy
  double l2_seconds = 0;
  double shared_seconds = 0;
  double compute_seconds = 0;           // CPU: includes ukernel_seconds
  double ukernel_seconds = 0;           // CPU: the GEMM micro-kernel's operations at its rate
  double pack_seconds = 0;              // CPU: run-time packing, before the micro-kernel's compute
  int blocks_per_unit = 0;             // resident blocks per SM / CU / core (occupancy)
  double occupancy = 0;                // resident threads / max resident threads, 0..1
  double waves = 0;                    // blocks / (units * blocks_per_unit)
};

CostEstimate estimate_cost(const KernelFeatures& f, const ArchSpec& arch);

// CPU: the estimated time below which a kernel's parallel loop runs on the
// calling thread. Spreading a kernel over c cores saves the caller about
// (c - 1) / c of its time and costs a parallel region, so the split pays
// above parallel_region_seconds * c / (c - 1) (c at least 2: the project
// may run more threads than the spec's cores).
double min_parallel_seconds(const ArchSpec& arch);

// Bytes moved to read (or write) the box [lo, lo + extent) of a row-major
// tensor of `shape` with `element_bytes` per element, in whole transactions
// of `transaction_bytes` aligned to the tensor's start (coalescing: a
// contiguous run of elements costs the transactions it touches; runs merge
// across dimensions the box covers completely). Parts of the box outside
// the tensor are not counted.
int64_t box_traffic_bytes(const std::vector<int64_t>& shape, int element_bytes,
                          const std::vector<int64_t>& lo, const std::vector<int64_t>& extent,
                          int transaction_bytes);

// Shared-memory planning with buffer reuse: buffers live over an inclusive
// range of phases; two buffers whose ranges overlap never share bytes.
// Best-fit: each buffer (largest first) takes the smallest free gap that
// holds it at every phase of its life.
struct SharedBufferUse {
  int64_t bytes = 0;
  int first_phase = 0;
  int last_phase = 0;
};
struct SharedMemoryPlan {
  std::vector<int64_t> offsets;        // parallel to the buffers, multiples of alignment
  int64_t peak_bytes = 0;
};
SharedMemoryPlan plan_shared_memory(const std::vector<SharedBufferUse>& buffers, int64_t alignment = 16);

}  // namespace tilegraph::scheduler
