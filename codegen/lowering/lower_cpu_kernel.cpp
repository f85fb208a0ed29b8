#include "codegen/lowering/lower_cpu_kernel.h"

#include <algorithm>

#include "codegen/lowering/kernel_builder.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

class LoopNestBuilder : KernelBuilder {
 public:
  LoopNestBuilder(const Graph& g, const Op& op, const scheduler::KernelSchedule& schedule)
      : KernelBuilder(g), op_(op) {
    start_single_op_kernel(op, schedule);
    for (size_t s = 0; s < op.inputs.size(); ++s) add_global(op.inputs[s], false);
    output_buffer_ = add_global(op.output, true);
  }

  Kernel build() {
    const Shape& shape = g_.tensor(op_.output).shape;
    kernel_.flops = arithmetic_per_point(op_, FlopRule::kFloatArithmetic) * num_elements(shape) * reduce_points(op_);
    kernel_.body = op_.reduction == Reduction::kNone ? build_map(shape) : build_reduction(shape);
    return std::move(kernel_);
  }

 private:
  // The input slot whose only load has the output's last axis in an outer
  // index and the (single) reduce axis in its last index — the column-strided
  // operand of A @ B^T — or -1.
  int transposed_operand(int rank) const {
    if (op_.reduce_extents.size() != 1 || rank < 1) return -1;
    const int col = rank - 1, k = rank;
    const std::vector<int> loads = count_loads_by_slot(op_.body, op_.inputs.size());
    for (size_t s = 0; s < op_.inputs.size(); ++s) {
      if (loads[s] != 1) continue;
      bool col_outer = false, k_last = false;
      visit(op_.body, [&](const Expr& e) {
        if (e->kind != ExprKind::kLoad || e->int_value != static_cast<int64_t>(s) || e->args.empty()) return;
        for (size_t d = 0; d < e->args.size(); ++d) {
          const bool last = d + 1 == e->args.size();
          if (!last && uses_var(e->args[d], col)) col_outer = true;
          if (last && uses_var(e->args[d], k) && !uses_var(e->args[d], col)) k_last = true;
        }
      });
      if (col_outer && k_last) return static_cast<int>(s);
    }
    return -1;
  }

  // The op's body at the given op-axis values, with loads made kernel loads.
  Expr instantiate(const std::vector<Expr>& axis_values) {
    Expr e = substitute_vars(op_.body, axis_values);
    e = to_kernel_loads(g_, op_, e, bounds_);
    return finalize_indices(e, bounds_);
  }

  Expr output_index(const std::vector<Expr>& spatial) {
    const Shape& shape = g_.tensor(op_.output).shape;
    return finalize_indices(linear_index(shape, spatial), bounds_);
  }

  // Wraps `inner` in loops over `vars` (outermost first); the first
  // parallel_depth of them become one collapsed parallel loop.
  Stmt nest(const std::vector<int>& vars, Stmt inner, LoopKind innermost) {
    const int depth = std::min<int>(kernel_.schedule.parallel_depth, static_cast<int>(vars.size()));
    for (int i = static_cast<int>(vars.size()) - 1; i >= 0; --i) {
      LoopKind kind = i == static_cast<int>(vars.size()) - 1 ? innermost : LoopKind::kSerial;
      // The collapsed loops below the outermost carry no pragma of their own:
      // OpenMP requires them perfectly nested.
      if (i < depth) kind = i == 0 ? LoopKind::kParallel : LoopKind::kSerial;
      const int collapse = (i == 0 && depth > 0) ? depth : 1;
      inner = make_for(vars[i], int_imm(bounds_[vars[i]].hi + 1), kind, {inner}, collapse);
    }
    return inner;
  }

  Stmt build_map(const Shape& shape) {
    std::vector<int> vars;
    std::vector<Expr> spatial;
    for (size_t d = 0; d < shape.size(); ++d) {
      vars.push_back(new_var("i" + std::to_string(d), shape[d]));
      spatial.push_back(var(vars.back()));
    }
    Stmt store = make_store(output_buffer_, output_index(spatial), instantiate(spatial));
    return nest(vars, store, LoopKind::kVectorized);
  }

  Stmt build_reduction(const Shape& shape) {
    const int rank = static_cast<int>(shape.size());
    const DType dtype = g_.tensor(op_.output).dtype;
    const int row_axis = kernel_.schedule.row_axis;
    // The axes after col_axis (a keepdims reduction's) have extent 1: coordinate 0.
    const int col_axis = rank >= 1 ? scheduler::reduction_col_axis(g_, op_) : -1;
    const int64_t rows = row_axis >= 0 ? kernel_.schedule.tile_rows : 1;
    const int64_t cols = rank >= 1 ? kernel_.schedule.tile_cols : 1;
    std::vector<int> outer_vars;
    std::vector<Expr> spatial(static_cast<size_t>(rank), int_imm(0));
    for (int d = 0; d < col_axis; ++d) {
      if (d == row_axis) continue;
      outer_vars.push_back(new_var("i" + std::to_string(d), shape[d]));
      spatial[d] = var(outer_vars.back());
    }
    // Block loops over the tiled axes, then tile-local offsets.
    int row_block = -1, col_block = -1, ii = -1, jj = -1;
    if (row_axis >= 0) row_block = new_var("rb", (shape[row_axis] + rows - 1) / rows);
    if (rank >= 1) col_block = new_var("cb", (shape[col_axis] + cols - 1) / cols);
    if (row_block >= 0) outer_vars.push_back(row_block);
    if (col_block >= 0) outer_vars.push_back(col_block);
    if (rows > 1) ii = new_var("ii", rows);
    if (cols > 1) jj = new_var("jj", cols);
    const Expr ii_e = ii >= 0 ? var(ii) : int_imm(0);
    const Expr jj_e = jj >= 0 ? var(jj) : int_imm(0);
    Expr row, col;
    if (row_axis >= 0) row = var(row_block) * rows + ii_e;
    if (rank >= 1) col = var(col_block) * cols + jj_e;
    // Clamped coordinates keep tail iterations in bounds (recomputing the last
    // row/column) so the tile loops keep constant trip counts.
    std::vector<Expr> clamped = spatial;
    if (row_axis >= 0) clamped[row_axis] = clamp_to_last(row, shape[row_axis]);
    if (rank >= 1) clamped[col_axis] = clamp_to_last(col, shape[col_axis]);

    const int acc = add_local("acc", dtype, rows * cols);
    const Expr acc_index = ii_e * cols + jj_e;
    // The column tile loop's extent: `cols`, or fewer for the tail block's
    // update (set while building it, below).
    int64_t jj_extent = cols;
    auto tile_loops = [&](Stmt inner) {
      if (jj >= 0) inner = make_for(jj, int_imm(jj_extent), LoopKind::kVectorized, {inner});
      if (ii >= 0) inner = make_for(ii, int_imm(rows), LoopKind::kUnrolled, {inner});
      return inner;
    };
    // init
    Stmt init = tile_loops(make_store(acc, acc_index, reduction_init(op_.reduction, dtype)));
    // reduce loops outside the tile loops
    std::vector<int> reduce_vars;
    std::vector<Expr> axis_values = clamped;
    for (size_t r = 0; r < op_.reduce_extents.size(); ++r) {
      reduce_vars.push_back(new_var("r" + std::to_string(r), op_.reduce_extents[r]));
      axis_values.push_back(var(reduce_vars.back()));
    }
    const Expr current = load(acc, dtype, {acc_index});
    // An operand read across its rows as the vector loop moves along the
    // output's columns (q @ k^T: B[j, k]) would be a gather per element:
    // stage its (reduce x columns) tile once per tile, transposed, so the
    // update reads it contiguously.
    const int staged_slot = jj >= 0 ? transposed_operand(rank) : -1;
    int staged = -1;
    Stmt stage;
    if (staged_slot >= 0) {
      const int64_t k = op_.reduce_extents[0];
      const DType t = g_.tensor(op_.inputs[static_cast<size_t>(staged_slot)]).dtype;
      staged = add_local("staged", compute_dtype(t), k * cols);
      kernel_.buffers[static_cast<size_t>(staged)].scratch = true;
      Expr operand;
      visit(op_.body, [&](const Expr& e) {
        if (!operand && e->kind == ExprKind::kLoad && e->int_value == staged_slot) operand = e;
      });
      Expr value = finalize_indices(to_kernel_loads(g_, op_, substitute_vars(operand, axis_values), bounds_), bounds_);
      // Columns outside k: the source rows are read contiguously.
      stage = make_store(staged, var(reduce_vars[0]) * cols + jj_e, value);
      stage = make_for(reduce_vars[0], int_imm(k), LoopKind::kSerial, {stage});
      stage = make_for(jj, int_imm(cols), LoopKind::kSerial, {stage});
    }
    auto update_loops = [&](const std::vector<Expr>& values) {
      Expr value = instantiate(values);
      if (staged >= 0)
        value = rewrite(value, [&](const Expr& e) -> Expr {
          if (e->kind != ExprKind::kLoad || e->int_value != staged_slot) return nullptr;
          return load(staged, e->dtype, {var(reduce_vars[0]) * cols + jj_e});
        });
      Stmt update = make_store(acc, acc_index, reduction_combine(op_.reduction, current, value));
      if (jj >= 0) {  // reduce loops outside the tile loops: a register tile across columns
        update = tile_loops(update);
        for (size_t r = reduce_vars.size(); r-- > 0;)
          update = make_for(reduce_vars[r], int_imm(op_.reduce_extents[r]), LoopKind::kSerial, {update});
        return update;
      }
      // One output column per tile (a row's sum or max): each row's innermost
      // reduce loop vectorizes on its own (LoopKind::kReduce).
      for (size_t r = reduce_vars.size(); r-- > 0;)
        update = make_for(reduce_vars[r], int_imm(op_.reduce_extents[r]),
                          r + 1 == reduce_vars.size() ? LoopKind::kReduce : LoopKind::kSerial, {update});
      return tile_loops(update);
    };
    Stmt update = update_loops(axis_values);
    // Full tiles (all but the last block of a ragged axis) need no clamping:
    // give them their own copy of the reduce loops, whose loads stay
    // contiguous and vectorize; only tail tiles pay for the clamps.
    const int64_t full_rows = row_axis >= 0 ? shape[row_axis] / rows : 0;
    const int64_t full_cols = rank >= 1 ? shape[col_axis] / cols : 0;
    const bool ragged_rows = row_axis >= 0 && shape[row_axis] % rows != 0 && full_rows > 0;
    const bool ragged_cols = rank >= 1 && shape[col_axis] % cols != 0 && full_cols > 0;
    if (ragged_rows || ragged_cols) {
      std::vector<Expr> exact = axis_values;
      if (row_axis >= 0) exact[row_axis] = row;
      if (rank >= 1) exact[col_axis] = col;
      const auto saved = bounds_;
      Expr full = int_imm(1, DType::kBool);
      if (ragged_rows) {
        bounds_[row_block] = Interval::range(full_rows);
        full = logical_and(full, lt(var(row_block), int_imm(full_rows)));
      }
      if (ragged_cols) {
        bounds_[col_block] = Interval::range(full_cols);
        full = logical_and(full, lt(var(col_block), int_imm(full_cols)));
      }
      Stmt fast = update_loops(exact);
      bounds_ = saved;
      // Only the columns ragged: the tail is the last column block, and its
      // update runs over the columns that exist (exact coordinates, no
      // clamp). A clamped column index made each of its loads a gather (a
      // classifier's 1000 outputs in blocks of 256: the last block's 232
      // columns over all 1280 rows of the weights; MobileNetV2's, one
      // thread: 265 -> 232 us alone).
      if (ragged_cols && !ragged_rows && jj >= 0) {
        bounds_[col_block] = Interval::point(full_cols);
        jj_extent = shape[col_axis] - full_cols * cols;
        bounds_[jj] = Interval::range(jj_extent);
        update = update_loops(exact);
        bounds_ = saved;
        jj_extent = cols;
      }
      update = make_seq({make_if(full, {fast}), make_if(unary(UnaryOp::kNot, full), {update})});
    }
    // write back, guarded for tails
    std::vector<Expr> out_coords = spatial;
    if (row_axis >= 0) out_coords[row_axis] = row;
    if (rank >= 1) out_coords[col_axis] = col;
    Expr in_bounds = int_imm(1, DType::kBool);
    if (row_axis >= 0) in_bounds = logical_and(in_bounds, lt(row, int_imm(shape[row_axis])));
    if (rank >= 1) in_bounds = logical_and(in_bounds, lt(col, int_imm(shape[col_axis])));
    in_bounds = simplify(in_bounds, bounds_);
    Stmt write = make_store(output_buffer_, output_index(out_coords), load(acc, dtype, {acc_index}));
    if (!is_const(in_bounds)) write = make_if(in_bounds, {write});
    write = tile_loops(write);
    Stmt tile = make_allocate(acc, {init, update, write});
    if (staged >= 0) {
      // The staged tile serves every row block of its column block: row
      // blocks become a loop inside the column block, after the staging.
      if (row_block >= 0) {
        outer_vars.erase(std::find(outer_vars.begin(), outer_vars.end(), row_block));
        tile = make_for(row_block, int_imm(bounds_[row_block].hi + 1), LoopKind::kSerial, {tile});
      }
      tile = make_allocate(staged, {stage, tile});
    }
    if (outer_vars.empty()) return tile;
    return nest(outer_vars, tile, LoopKind::kSerial);
  }

  const Op op_;  // the kernel's single phase op (register-level producers inlined)
  int output_buffer_ = -1;
};

}  // namespace

Kernel lower_cpu_kernel(const Graph& g, const scheduler::KernelSchedule& schedule) {
  const std::vector<Op> phases = scheduler::phase_ops(g, schedule);
  TG_CHECK(phases.size() == 1, "the CPU loop lowering takes kernels of one phase, got ", phases.size());
  return LoopNestBuilder(g, phases.front(), schedule).build();
}

}  // namespace tilegraph::codegen
