// How an integer GEMM's work is cut into parallel tasks.
#pragma once
#include <cstdint>

namespace tilegraph::codegen {

// The GEMM runs as tasks (batch, column chunk, row block) under a static
// OpenMP split: each core gets a contiguous run of tasks. A row block packs
// its A panels once per task, so more tasks cost packing; fewer tasks than
// a multiple of the cores leave cores idle (ViT-B/16 fc1: 5 row blocks of
// 197 rows on 2 cores ran 3 + 2).
struct IntGemmTaskGrid {
  int64_t row_blocks = 1;    // row blocks per batch
  int64_t row_panels = 1;    // A panels (MR rows) per row block
  int64_t chunks = 1;        // column chunks
  int64_t chunk_panels = 1;  // B panels (NR columns) per chunk
  double makespan = 0;       // of the busiest core, in panel-tile units
};

// The grid with the smallest makespan: a task costs (its row panels) x (its
// column panels + one for packing A), plus b_panel_cost per column panel when
// B is packed at run time (each task packs its chunk's panels); row blocks
// hold at most max_row_panels panels (their packed A must stay
// cache-resident). Ties go to fewer tasks.
IntGemmTaskGrid balanced_int_gemm_grid(int64_t batches, int64_t row_panels_total, int64_t max_row_panels,
                                       int64_t col_panels, double b_panel_cost, int cores);

}  // namespace tilegraph::codegen
