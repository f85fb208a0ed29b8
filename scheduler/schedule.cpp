#include "scheduler/schedule.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/ir/error.h"
#include "compiler/passes/inline_producer_tree.h"

namespace tilegraph::scheduler {

namespace {

// Accumulator vectors of a reduction tile that has no row axis (see
// apply_cpu_loop_rules).
constexpr int64_t kRowlessTileVectors = 4;

// Which output axis should share the register tile with the last (vector)
// axis: one along which the vector loads do not move, so each loaded vector
// is reused tile_rows times (matmul: the row axis; a 1x1 convolution in NCHW:
// the output-channel axis, not the image row). -1 when none qualifies.
int choose_row_axis(const Op& op, const Shape& shape, int col_axis) {
  if (col_axis < 1 || shape[col_axis] <= 1) return -1;
  const int rank = static_cast<int>(shape.size());
  // For each load: the set of output axes its indices mention.
  std::vector<std::vector<bool>> uses;
  visit(op.body, [&](const Expr& n) {
    if (n->kind != ExprKind::kLoad) return;
    std::vector<bool> mentioned(static_cast<size_t>(rank), false);
    for (const Expr& idx : n->args)
      visit(idx, [&](const Expr& m) {
        if (m->kind == ExprKind::kVar && m->int_value < rank) mentioned[m->int_value] = true;
      });
    uses.push_back(mentioned);
  });
  for (int d = col_axis - 1; d >= 0; --d) {
    if (shape[d] < 4) continue;
    for (const auto& mentioned : uses)
      if (mentioned[col_axis] && !mentioned[d]) return d;
  }
  return shape[col_axis - 1] >= 4 ? col_axis - 1 : -1;
}

}  // namespace

bool reads_along_reduce_axis(const Graph& g, const Op& op) {
  const int rank = static_cast<int>(g.tensor(op.output).shape.size());
  if (rank == 0 || op.reduce_extents.empty()) return false;
  const int reduce_var = rank + static_cast<int>(op.reduce_extents.size()) - 1;
  bool along_reduce = false, along_output = false;
  visit(op.body, [&](const Expr& e) {
    if (e->kind != ExprKind::kLoad || e->args.empty()) return;
    along_reduce |= uses_var(e->args.back(), reduce_var);
    along_output |= uses_var(e->args.back(), rank - 1);
  });
  return along_reduce && !along_output;
}

bool loads_walk_reduce_axis(const Graph& g, const Op& op) {
  int reduce = static_cast<int>(op.reduce_extents.size()) - 1;  // the innermost reduce axis longer than 1
  while (reduce >= 0 && op.reduce_extents[static_cast<size_t>(reduce)] == 1) --reduce;
  if (reduce < 0) return false;
  const int reduce_var = static_cast<int>(g.tensor(op.output).shape.size()) + reduce;
  bool along_reduce = false;
  visit(op.body, [&](const Expr& e) {
    if (e->kind != ExprKind::kLoad) return;
    const Shape& in = g.tensor(op.inputs[static_cast<size_t>(e->int_value)]).shape;
    for (size_t d = std::min(in.size(), e->args.size()); d-- > 0;)
      if (in[d] > 1) {
        along_reduce |= uses_var(e->args[d], reduce_var);
        return;
      }
  });
  return along_reduce;
}

int reduction_col_axis(const Graph& g, const Op& op) {
  const Shape& shape = g.tensor(op.output).shape;
  const int last = static_cast<int>(shape.size()) - 1;
  int col = last;
  while (col > 0 && shape[col] == 1) --col;
  if (col == last || shape[col] == 1 || op.reduce_extents.empty() || loads_walk_reduce_axis(g, op)) return last;
  return col;
}

void apply_cpu_loop_rules(const Graph& g, const Op& op, const ArchSpec& arch, KernelSchedule& k) {
  const Shape& shape = g.tensor(op.output).shape;
  const int rank = static_cast<int>(shape.size());
  const int vector_lanes = std::max(1, arch.vector_bytes / 4);
  // The loop nest the lowering builds, outermost first (see KernelSchedule).
  std::vector<int64_t> loops;
  if (op.reduction != Reduction::kNone && rank >= 1) {
    const int col_axis = reduction_col_axis(g, op);
    k.tile_cols = std::min<int64_t>(shape[col_axis], 2 * vector_lanes);

    k.row_axis = choose_row_axis(op, shape, col_axis);
    // Rows x two vectors of accumulators: 8 with 16 vector registers (AVX2),
    // 16 with 32 (AVX-512, NEON), enough independent FMA chains either way.
    const int64_t vector_registers =
        arch.vector_bytes > 0 ? int64_t{arch.registers_per_unit} * 4 / arch.vector_bytes : 16;
    if (k.row_axis >= 0) k.tile_rows = vector_registers >= 32 ? 8 : 4;
    // No row axis to share the tile (a vector-matrix product: a classifier
    // at batch 1, out[j] = sum_k x[k] * W[k, j]): the columns alone hold the
    // accumulators, kRowlessTileVectors of them, which stay in registers
    // across the reduce loop and read a run of 4 vectors of each weight row.
    // MobileNetV2's 1280 x 1000 classifier alone, the ragged last block
    // updating only its columns: 16 vectors (256 columns, accumulators in
    // memory) 199 us one thread / 119 two, 4 vectors 153-159 / 90. (Two
    // vectors' worth ran latency-bound before the ragged tail was fixed.)
    if (k.row_axis < 0) k.tile_cols = std::min<int64_t>(shape[col_axis], kRowlessTileVectors * vector_lanes);
    for (int d = 0; d < col_axis; ++d)
      if (d != k.row_axis) loops.push_back(shape[d]);
    if (k.row_axis >= 0) loops.push_back((shape[k.row_axis] + k.tile_rows - 1) / k.tile_rows);
    loops.push_back((shape[col_axis] + k.tile_cols - 1) / k.tile_cols);
  } else {
    loops.assign(shape.begin(), shape.end());
  }
  // Parallelize the fewest leading loops that give every core several chunks;
  // the last loop stays serial for vectorization unless it is the only one.
  const int64_t wanted = 4 * static_cast<int64_t>(arch.cores);
  const int n = static_cast<int>(loops.size());
  // A reduction's loops are all block loops (its vector loop is the tile's,
  // inside them), so each may be parallel: a row-less one has only its
  // column blocks to split.
  const bool reduction = op.reduction != Reduction::kNone && rank >= 1;
  const int max_depth = n == 1 || reduction ? n : n - 1;
  int64_t product = 1;
  int depth = 0;
  while (depth < max_depth && product < wanted) product *= loops[depth++];
  // Starting a parallel region costs microseconds: small kernels run serially.
  int64_t work = num_elements(shape);
  for (int64_t r : op.reduce_extents) work *= r;
  k.parallel_depth = work >= (int64_t{1} << 15) ? depth : 0;
}

Schedule schedule_one_op_per_kernel(const Graph& g, const ArchSpec& arch) {
  Schedule s;
  s.arch = arch.name;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    KernelSchedule k;
    k.ops = {static_cast<int>(i)};
    apply_cpu_loop_rules(g, g.ops[i], arch, k);
    s.kernels.push_back(std::move(k));
  }
  return s;
}

const char* connection_name(Connection c) {
  switch (c) {
    case Connection::kRegister: return "register";
    case Connection::kShared: return "shared";
    case Connection::kDram: return "dram";
  }
  return "?";
}

const char* kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::kLoopNest: return "loop_nest";
    case KernelKind::kBlock: return "block";
    case KernelKind::kIntGemm: return "int_gemm";
    case KernelKind::kFloatGemm: return "float_gemm";
    case KernelKind::kDirectConv: return "direct_conv";
    case KernelKind::kWinogradConv: return "winograd_conv";
    case KernelKind::kLibraryGemm: return "library_gemm";
  }
  return "?";
}

std::string TileConfig::to_string() const {
  std::string s = "tile=";
  for (size_t d = 0; d < tile.size(); ++d) s += (d ? "x" : "") + std::to_string(tile[d]);
  if (tile.empty()) s += "scalar";
  s += " threads=" + std::to_string(threads);
  if (reduce_step > 0) s += " step=" + std::to_string(reduce_step);
  return s;
}

std::vector<Op> phase_ops(const Graph& g, const KernelSchedule& k) {
  std::set<int> inlined;
  std::map<int, std::vector<int>> register_producers;  // consumer -> producers, in edge order
  const std::set<int> in_kernel(k.ops.begin(), k.ops.end());
  for (const FusedEdge& e : k.edges) {
    if (e.level != Connection::kRegister) continue;
    TG_CHECK(in_kernel.count(e.producer) && e.producer < e.consumer, "register producer ", e.producer,
             " not before consumer ", e.consumer);
    inlined.insert(e.producer);
    register_producers[e.consumer].push_back(e.producer);
  }
  const auto producers_of = [&](int op) {
    auto it = register_producers.find(op);
    return it == register_producers.end() ? std::vector<int>{} : it->second;
  };
  std::vector<Op> phases;
  for (int index : k.ops)
    if (!inlined.count(index)) phases.push_back(passes::inline_producer_tree(g, index, producers_of));
  TG_CHECK(!phases.empty() && !inlined.count(k.ops.back()), "a kernel's root cannot be inlined");
  return phases;
}

}  // namespace tilegraph::scheduler
