#include "scheduler/schedule.h"

#include <algorithm>

namespace tilegraph::scheduler {

namespace {

KernelSchedule schedule_op(const Graph& g, int index, const ArchSpec& arch) {
  const Op& op = g.ops[index];
  const Shape& shape = g.tensor(op.output).shape;
  const int rank = static_cast<int>(shape.size());
  KernelSchedule k;
  k.ops = {index};
  const int vector_lanes = std::max(1, arch.vector_bytes / 4);
  if (op.reduction != Reduction::kNone && rank >= 1) {
    const int64_t cols = shape[rank - 1];
    k.tile_cols = std::min<int64_t>(cols, 2 * vector_lanes);
    if (rank >= 2 && cols > 1 && shape[rank - 2] >= 4) k.tile_rows = 4;
  }
  // Parallelize the fewest leading loops that give every core several chunks;
  // the last loop stays serial for vectorization unless it is the only one.
  const int64_t wanted = 4 * static_cast<int64_t>(arch.cores);
  int64_t product = 1;
  int depth = 0;
  const int max_depth = std::max(rank - 1, rank == 1 ? 1 : 0);
  while (depth < max_depth && product < wanted) {
    int64_t extent = shape[depth];
    if (depth == rank - 2) extent = (extent + k.tile_rows - 1) / k.tile_rows;
    product *= extent;
    ++depth;
  }
  // Starting a parallel region costs microseconds: small kernels run serially.
  int64_t work = num_elements(shape);
  for (int64_t r : op.reduce_extents) work *= r;
  k.parallel_depth = work >= (int64_t{1} << 15) ? depth : 0;
  return k;
}

}  // namespace

Schedule schedule_one_op_per_kernel(const Graph& g, const ArchSpec& arch) {
  Schedule s;
  s.arch = arch.name;
  for (size_t i = 0; i < g.ops.size(); ++i) s.kernels.push_back(schedule_op(g, static_cast<int>(i), arch));
  return s;
}

}  // namespace tilegraph::scheduler
