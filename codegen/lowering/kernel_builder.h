// The state every lowering builder (lower_*_kernel.cpp) grows while it
// builds one Kernel: its loop variables with their bounds, and its buffers.
// Builders derive from KernelBuilder and add their own structure.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_ir/kernel_exprs.h"
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/interval.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// The ops of a GEMM micro-kernel kernel (int or float): the GEMM phase
// first, then at most one epilogue phase. `what` names the kernel kind in
// the internal error ("a float GEMM kernel").
inline std::vector<Op> gemm_kernel_phases(const Graph& g, const scheduler::KernelSchedule& ks, const char* what) {
  std::vector<Op> phases = scheduler::phase_ops(g, ks);
  TG_CHECK(!phases.empty() && phases.size() <= 2, what, " has 1 or 2 phases, got ", phases.size());
  return phases;
}

// The row block of a GEMM micro-kernel kernel: `count` panels of MR rows
// from row0; rows past `rows` (M) are never computed.
struct RowPanels {
  Expr row0;
  int64_t count = 0;
  int64_t mr = 0;
  int64_t rows = 0;
};

// K cut into blocks around the micro-kernel calls (see k_block_calls).
struct KBlocks {
  int64_t count = 0;       // > 1
  // How the micro-kernel starts a C tile: false, one call with an
  // accumulate flag (float: tg_sgemm::tile(..., accumulate)), so all blocks
  // share one loop and the flag is `block > 0`; true, a separate call
  // (int: tile, then tile_accumulate), so block 0 is peeled into its own
  // loop and the flag is a constant in each.
  bool peel_first = false;
  std::string block_var;   // the block loop's var
  std::string panel_var;   // the row panels' var (peeled: "<panel_var>0" for block 0's)
};

class KernelBuilder {
 protected:
  explicit KernelBuilder(const Graph& g) : g_(g) {}

  // A new loop variable named `name` ranging over [0, extent); returns its id.
  int new_var(const std::string& name, int64_t extent) {
    kernel_.var_names.push_back(name);
    bounds_.push_back(Interval::range(extent));
    return static_cast<int>(kernel_.var_names.size() - 1);
  }

  // Every kernel var as itself, in var order: the substitution list from
  // which a caller replaces a few vars (substitute_vars).
  std::vector<Expr> vars_as_themselves() const {
    std::vector<Expr> vars;
    for (size_t i = 0; i < bounds_.size(); ++i) vars.push_back(var(static_cast<int>(i)));
    return vars;
  }

  // A kernel of the one op `op`: named after it, with its ONNX nodes.
  void start_single_op_kernel(const Op& op, const scheduler::KernelSchedule& schedule) {
    kernel_.name = op.name;
    kernel_.source_nodes = op.source_nodes;
    kernel_.schedule = schedule;
  }

  // Appends `op`'s ONNX nodes the kernel does not list yet (a Softmax is
  // several ops of one node).
  void add_source_nodes_once(const Op& op) {
    for (const std::string& n : op.source_nodes)
      if (std::find(kernel_.source_nodes.begin(), kernel_.source_nodes.end(), n) == kernel_.source_nodes.end())
        kernel_.source_nodes.push_back(n);
  }

  // Graph tensor `id` as the kernel's next global buffer (add_global_buffer).
  int add_global(TensorId id, bool written) { return add_global_buffer(kernel_, g_, id, written); }

  // A per-thread scratch buffer (add_local_buffer).
  int add_local(const std::string& name, DType dtype, int64_t elements, int alignment = 0) {
    return add_local_buffer(kernel_, name, dtype, elements, alignment);
  }

  // The start of a GEMM micro-kernel kernel (int and float): named after
  // the root phase with every phase's ONNX nodes, the GEMM phase's inputs as
  // global buffers in slot order (so buffer id = slot), then the epilogue
  // phase's other inputs. Returns the epilogue slots' buffers (-1: the
  // GEMM's accumulator).
  std::vector<int> begin_gemm_kernel(const std::vector<Op>& phases, const scheduler::KernelSchedule& ks,
                                     const std::string& ukernel) {
    const Op& gemm = phases.front();
    kernel_.name = phases.back().name;
    for (const Op& p : phases)
      kernel_.source_nodes.insert(kernel_.source_nodes.end(), p.source_nodes.begin(), p.source_nodes.end());
    kernel_.schedule = ks;
    kernel_.ukernel = ukernel;
    for (TensorId t : gemm.inputs) add_global(t, false);
    std::vector<int> epilogue_buffers;
    if (phases.size() == 2)
      for (TensorId t : phases[1].inputs) epilogue_buffers.push_back(t == gemm.output ? -1 : add_global(t, false));
    return epilogue_buffers;
  }

  // One row block and several column chunks: a thread that runs chunk c
  // right after chunk c - 1 of the same batch (one thread runs every task
  // back to back) finds the row block's packed A panels in its scratch
  // arena already. The run var of the tasks' parallel loop
  // (StmtNode::run_var) where that can happen, else -1.
  int a_reuse_run_var(int64_t batches, int64_t row_blocks, int64_t chunks) {
    return row_blocks == 1 && chunks > 1 ? new_var("run", batches * chunks) : -1;
  }
  // `pack` only on a run's first task or a batch's first chunk (`vc`: the
  // chunk var) where a_reuse_run_var gave `run`; else always.
  static Stmt unless_packed_for_previous_chunk(int run, int vc, Stmt pack) {
    return run >= 0 ? make_if(lt(min(var(run), var(vc)), int_imm(1)), {std::move(pack)}) : pack;
  }

  // for p < count: if (row0 + p * MR < rows) body, p being var `vp`.
  static Stmt row_panel_loop(int vp, const RowPanels& rows, std::vector<Stmt> body) {
    const Stmt guarded = make_if(lt(rows.row0 + var(vp) * rows.mr, int_imm(rows.rows)), std::move(body));
    return make_for(vp, int_imm(rows.count), LoopKind::kSerial, {guarded});
  }

  // The k-block skeleton both GEMM micro-kernel lowerings share: per k block
  // (`block`: its index), the block's statements (`per_block`, e.g. packing
  // its slice of a B panel; may be null), then one micro-kernel call per row
  // panel (`call`, the panel's var and whether it adds to the C tile or
  // starts it). A block's B slice stays in L1 while every A panel of the
  // row block streams past it; each panel keeps its own C tile across the
  // blocks, and the caller runs the epilogue over the tiles after this, or
  // `finish_panel` (may be null; not with `columns`) does, per panel right
  // after its last block's call, while the panel's C tile is still in L1.
  // `columns` (may be null) wraps each block's body in a loop over column
  // panels (the k block outside them: scheduler/float_gemm_blocking.h);
  // `before_columns` (may be null) are a block's statements outside that
  // loop (packing the block's slice of A once for every column panel).
  using BlockStmts = std::function<std::vector<Stmt>(const Expr& block)>;
  using PanelCall = std::function<Stmt(int vp, const Expr& block, const Expr& accumulate)>;
  using PanelStmt = std::function<Stmt(int vp)>;
  using ColumnLoop = std::function<std::vector<Stmt>(std::vector<Stmt> block_body)>;
  Stmt k_block_calls(const KBlocks& kb, const RowPanels& rows, const BlockStmts& per_block, const PanelCall& call,
                     const ColumnLoop& columns = nullptr, const BlockStmts& before_columns = nullptr,
                     const PanelStmt& finish_panel = nullptr) {
    auto block_body = [&](const Expr& block, const Expr& accumulate, const std::string& panel_var,
                          const PanelStmt& finish) {
      std::vector<Stmt> body = per_block ? per_block(block) : std::vector<Stmt>{};
      const int vp = new_var(panel_var, rows.count);
      std::vector<Stmt> panel{call(vp, block, accumulate)};
      if (finish && kb.peel_first) {
        panel.push_back(finish(vp));
      } else if (finish) {
        // One loop over the blocks (a block's packing stays one copy): the
        // last block's iteration finishes the tiles.
        panel.push_back(make_if(lt(int_imm(kb.count - 2), block), {finish(vp)}));
      }
      body.push_back(row_panel_loop(vp, rows, std::move(panel)));
      if (!columns) return body;
      std::vector<Stmt> outside = before_columns ? before_columns(block) : std::vector<Stmt>{};
      for (Stmt& s : columns(std::move(body))) outside.push_back(std::move(s));
      return outside;
    };
    auto seq = [](std::vector<Stmt> body) { return body.size() == 1 ? body[0] : make_seq(std::move(body)); };
    TG_CHECK(!(finish_panel && columns), "k_block_calls: finish_panel inside a column loop");
    if (!kb.peel_first) {
      const int vk = new_var(kb.block_var, kb.count);
      return make_for(vk, int_imm(kb.count), LoopKind::kSerial,
                      block_body(var(vk), lt(int_imm(0), var(vk)), kb.panel_var, finish_panel));
    }
    std::vector<Stmt> blocks{seq(block_body(int_imm(0), const_of(0, DType::kBool), kb.panel_var + "0", nullptr))};
    // With finish_panel the last block is peeled as well, its panel loop
    // finishing each C tile.
    const int64_t middle = finish_panel ? kb.count - 2 : kb.count - 1;
    if (middle > 0) {
      const int vk = new_var(kb.block_var, middle);
      blocks.push_back(make_for(vk, int_imm(middle), LoopKind::kSerial,
                                block_body(var(vk) + int_imm(1), const_of(1, DType::kBool), kb.panel_var, nullptr)));
    }
    if (finish_panel)
      blocks.push_back(seq(block_body(int_imm(kb.count - 1), const_of(1, DType::kBool), kb.panel_var + "l",
                                      finish_panel)));
    return make_seq(std::move(blocks));
  }

  const Graph& g_;
  Kernel kernel_;
  std::vector<Interval> bounds_;  // per kernel var (kernel_.var_names)
};

}  // namespace tilegraph::codegen
