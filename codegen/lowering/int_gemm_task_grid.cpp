#include "codegen/lowering/int_gemm_task_grid.h"

#include <algorithm>
#include <vector>

#include "compiler/ir/int_math.h"

namespace tilegraph::codegen {

namespace {

// libgomp's static schedule: the first (tasks % cores) cores take one task more.
double static_makespan(const std::vector<double>& task_costs, int cores) {
  const int64_t n = static_cast<int64_t>(task_costs.size());
  const int64_t q = n / cores, extra = n % cores;
  double worst = 0;
  int64_t next = 0;
  for (int c = 0; c < cores; ++c) {
    const int64_t count = q + (c < extra ? 1 : 0);
    double sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += task_costs[static_cast<size_t>(next++)];
    worst = std::max(worst, sum);
  }
  return worst;
}

}  // namespace

IntGemmTaskGrid balanced_int_gemm_grid(int64_t batches, int64_t row_panels_total, int64_t max_row_panels,
                                       int64_t col_panels, double b_panel_cost, int cores) {
  cores = std::max(1, cores);
  batches = std::max<int64_t>(batches, 1);
  row_panels_total = std::max<int64_t>(row_panels_total, 1);
  col_panels = std::max<int64_t>(col_panels, 1);
  const int64_t fewest_blocks = ceil_div(row_panels_total, std::max<int64_t>(max_row_panels, 1));
  IntGemmTaskGrid best;
  int64_t best_tasks = 0;
  for (int64_t blocks = fewest_blocks; blocks <= std::min(row_panels_total, fewest_blocks * 4); ++blocks) {
    const int64_t per_block = ceil_div(row_panels_total, blocks);
    const int64_t real_blocks = ceil_div(row_panels_total, per_block);
    for (int64_t chunks = 1; chunks <= std::min<int64_t>(col_panels, 4 * cores); ++chunks) {
      const int64_t per_chunk = ceil_div(col_panels, chunks);
      const int64_t real_chunks = ceil_div(col_panels, per_chunk);
      std::vector<double> costs;  // in the collapsed loop order (batch, chunk, row block)
      for (int64_t b = 0; b < batches; ++b)
        for (int64_t c = 0; c < real_chunks; ++c)
          for (int64_t r = 0; r < real_blocks; ++r) {
            const int64_t rows = std::min(per_block, row_panels_total - r * per_block);
            const int64_t cols = std::min(per_chunk, col_panels - c * per_chunk);
            costs.push_back(static_cast<double>(rows) * static_cast<double>(cols + 1) +
                            b_panel_cost * static_cast<double>(cols));
          }
      const double makespan = static_makespan(costs, cores);
      const int64_t tasks = static_cast<int64_t>(costs.size());
      if (best_tasks == 0 || makespan < best.makespan * 0.999 ||
          (makespan <= best.makespan * 1.001 && tasks < best_tasks)) {
        best = {real_blocks, per_block, real_chunks, per_chunk, makespan};
        best_tasks = tasks;
      }
    }
  }
  return best;
}

}  // namespace tilegraph::codegen
