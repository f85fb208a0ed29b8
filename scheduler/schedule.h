// Schedules: the decisions that turn a Graph into kernels, as data (STYLE.md
// §8) so they can be dumped, replayed and tested without re-running a search.
//
// This is the Foundation's trivial scheduler: one op per kernel, CPU loop
// decisions by simple rules. The tile-graph scheduler (fused subgraphs, tile
// propagation, cost model) replaces schedule_one_op_per_kernel later and
// fills the same structure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"

namespace tilegraph::scheduler {

struct KernelSchedule {
  std::vector<int> ops;        // indices into Graph::ops computed by this kernel (in order)
  int parallel_depth = 0;      // leading output loops collapsed into one parallel loop
  // Register tile for reductions: out[..., i, j] is accumulated in a
  // tile_rows x tile_cols block while the reduce loops run outside it, so the
  // innermost loop walks j (contiguous, vectorized) with loads reused across rows.
  int row_axis = -1;           // output axis tiled by tile_rows (-1: none)
  int64_t tile_rows = 1;       // along row_axis
  int64_t tile_cols = 1;       // along the last output axis
  // Reduction loop nest, outermost first: every output axis but row_axis and
  // the last, then the row-block loop, then the column-block loop; inside,
  // the reduce loops, then the tile loops.
};

struct Schedule {
  std::string arch;
  std::vector<KernelSchedule> kernels;
};

Schedule schedule_one_op_per_kernel(const Graph& g, const ArchSpec& arch);

}  // namespace tilegraph::scheduler
