// SubGraphTiling (Welder §4.2): for one fused group, a best-first search
// over the root's output tile, ranked by the cost model. It starts from a
// base tile (one element per leading dim, a warp's worth along the last),
// repeatedly expands the cheapest unexplored config by growing one dim
// (doubling, or jumping to the whole dim), and keeps the top-k feasible
// configs. On a GPU each tile is tried with a few block sizes and reduce
// steps (the steps that make staged loads coalesce: multiples of a
// transaction). Deterministic: ties break by the config's text.
#pragma once
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/block_plan.h"
#include "scheduler/schedule.h"

namespace tilegraph::scheduler {

struct TilingResult {
  bool feasible = false;            // some config fits the arch's limits
  std::vector<TileConfig> top;      // best first, at most topk
  std::vector<CostEstimate> estimates;  // parallel to top
  std::vector<KernelFeatures> features;  // parallel to top
  int evaluated = 0;                // configs estimated
  std::string infeasible_reason;    // when !feasible: why the base tile was rejected
};

// Searches configs of kernel k (ops and edges set). Evaluates at most
// `budget` configs.
TilingResult tile_subgraph(const Graph& g, const KernelSchedule& k, const ArchSpec& arch, int topk,
                           int budget = 48);

}  // namespace tilegraph::scheduler
