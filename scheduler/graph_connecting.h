// GraphConnecting (Welder §4.3): decides which producer→consumer edges stay
// on chip and so which ops share a kernel, then tiles every kernel
// (SubGraphTiling). Two steps, both greedy in topological order:
//
//  1. Register level: an elementwise producer read exactly once per point
//     of its single consumer (no recomputation) is inlined into it.
//     (Under --skip-dot nothing is inlined into a library GEMM.)
//  2. Shared level: a group whose output only one other group reads is
//     merged into it when the cost model says the merged kernel (its best
//     tile) is faster than the two apart. Several reductions, and any
//     number of ops up to a budget, may share a kernel.
//
// Scheduling results are cached by a content hash of the group and the arch
// (ScheduleCache), so re-tuning a model only re-runs the search for groups
// that changed.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"
#include "scheduler/subgraph_tiling.h"

namespace tilegraph::scheduler {

// How far GraphConnecting may fuse (tune --fusion-level; the paper's Fig. 13
// ablation): kNone, one op per kernel; kRegister, only step 1 (elementwise
// producers inlined, no edge kept in shared memory / a CPU tile buffer);
// kFull, both steps.
enum class FusionLevel { kNone, kRegister, kFull };

// "none", "register", "full".
const char* fusion_level_name(FusionLevel level);
// The level a --fusion-level value names; UserError naming the flag otherwise.
FusionLevel fusion_level_from_name(const std::string& name);

struct TileGraphOptions {
  int topk = 20;
  FusionLevel fusion = FusionLevel::kFull;  // kNone: one op per kernel (explain --no-fusion)
  // GPU, tune --skip-dot: every float GEMM (scheduler/library_gemm.h) is a
  // kernel of its own, a cuBLASLt call; nothing is fused into or with it.
  bool library_gemms = false;
  int max_group_ops = 48;      // budget of ops per fused kernel
  int search_budget = 48;      // configs per final tiling search
  int trial_budget = 16;       // configs per trial merge
  bool log_merges = false;     // print every shared-level merge decision to stderr (tune -v)
  // CPU: float contractions run on the GEMM micro-kernels, whose store
  // takes their elementwise consumers (tune --no-float-ukernels: false).
  bool float_gemm_epilogues = true;
};

// Content-addressed memo of tiling searches; load/save as JSON.
class ScheduleCache {
 public:
  void load(const std::string& path);   // missing or unreadable file: empty cache
  void save(const std::string& path) const;
  const TilingResult* find(uint64_t key) const;
  void insert(uint64_t key, const TilingResult& r);
  int hits = 0, misses = 0;

 private:
  std::map<uint64_t, TilingResult> entries_;
};

// The content key of kernel k's tiling problem on arch.
uint64_t tiling_key(const Graph& g, const KernelSchedule& k, const ArchSpec& arch, int topk, int budget);

Schedule schedule_tile_graph(const Graph& g, const ArchSpec& arch, const TileGraphOptions& options,
                             ScheduleCache* cache = nullptr);

}  // namespace tilegraph::scheduler
