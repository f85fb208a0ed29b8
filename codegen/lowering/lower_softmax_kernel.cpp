#include "codegen/lowering/lower_softmax_kernel.h"

#include <algorithm>
#include <climits>
#include <functional>

#include "codegen/lowering/index_samples.h"
#include "codegen/lowering/kernel_builder.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/flops.h"
#include "compiler/passes/inline_producer_tree.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

// The sampled points a softmax's bodies are checked at, at most: 5 samples on
// each of 5 axes. A tensor of higher rank keeps the block kernel, so that a
// model's rank cannot make the check's time explode.
constexpr int64_t kMaxSamplePoints = 5 * 5 * 5 * 5 * 5;

// Whether `op`'s body at the constant variable values `point` is `expected`.
bool body_is(const Op& op, const std::vector<int64_t>& point, const Expr& expected) {
  return same_expr(simplify(substitute_vars(op.body, constant_indices(point)), {}), simplify(expected, {}));
}

// The slot of `op` that reads tensor `id`, or -1.
int slot_of(const Op& op, TensorId id) {
  for (size_t s = 0; s < op.inputs.size(); ++s)
    if (op.inputs[s] == id) return static_cast<int>(s);
  return -1;
}

// Calls `visit(outer, j)` for sampled outer indices (all axes but the last)
// and row positions j; stops at the first false. False where the samples
// would be more than kMaxSamplePoints.
bool all_samples(const Shape& shape, const std::function<bool(const std::vector<int64_t>&, int64_t)>& visit) {
  return all_sample_points(shape, kMaxSamplePoints, [&](const std::vector<int64_t>& p) {
    return visit(std::vector<int64_t>(p.begin(), p.end() - 1), p.back());
  });
}

// Constant indices: the outer ones, then `last`.
std::vector<Expr> indices(const std::vector<int64_t>& outer, int64_t last) {
  std::vector<Expr> out;
  for (int64_t v : outer) out.push_back(int_imm(v));
  out.push_back(int_imm(last));
  return out;
}

// An op's var values: the outer indices, then `rest` (a reduction's kept
// axis and reduce var, or an elementwise op's last axis).
std::vector<int64_t> point(const std::vector<int64_t>& outer, std::vector<int64_t> rest) {
  std::vector<int64_t> p = outer;
  p.insert(p.end(), rest.begin(), rest.end());
  return p;
}

// Whether tensor `id` is float32 of `shape`.
bool has_shape(const Graph& g, TensorId id, const Shape& shape) {
  const Tensor& t = g.tensor(id);
  return t.dtype == DType::kF32 && t.shape == shape;
}

class SoftmaxBuilder : KernelBuilder {
 public:
  SoftmaxBuilder(const Graph& g, const std::vector<Op>& phases, const scheduler::KernelSchedule& schedule)
      : KernelBuilder(g), phases_(phases) {
    start_single_op_kernel(phases.back(), schedule);
    kernel_.source_nodes.clear();
    for (const Op& op : phases) add_source_nodes_once(op);
    // Buffer ids equal phase 0's input slots (to_kernel_loads).
    for (TensorId id : phases.front().inputs) add_global(id, false);
    output_ = add_global(phases.back().output, true);
  }

  Kernel build(const SoftmaxRows& rows, const std::string& variant) {
    for (const Op& op : phases_)
      kernel_.flops += arithmetic_per_point(op, FlopRule::kFloatArithmetic) *
                       num_elements(g_.tensor(op.output).shape) * reduce_points(op);
    const int vr = new_var("row", rows.rows);
    const Expr first = finalize_indices(var(vr) * rows.length, bounds_);
    const std::string callee = str_cat("tg_softmax::row<", rows.length, ">");
    Stmt body;
    if (rows.in_place) {
      body = make_call(callee, {{0, first}, {output_, first}});
    } else {
      // x computed into a local row, then the row's softmax. A row past
      // kMaxStackRowFloats lives in the thread's scratch arena, not on a
      // pool thread's stack.
      const int x = add_local("x", DType::kF32, rows.length, kRowAlignment);
      if (rows.length > kMaxStackRowFloats) kernel_.buffers[static_cast<size_t>(x)].scratch = true;
      const int vj = new_var("j", rows.length);
      const Shape& shape = g_.tensor(phases_.back().output).shape;
      std::vector<Expr> at;  // phase 0's vars: the row's outer indices, 0, j
      int64_t stride = rows.rows;
      for (size_t d = 0; d + 1 < shape.size(); ++d) {
        stride /= shape[d];
        at.push_back(simplify(floormod(floordiv(var(vr), stride), shape[d]), bounds_));
      }
      at.push_back(int_imm(0));
      at.push_back(var(vj));
      const Op& max = phases_.front();
      const Expr value = finalize_indices(to_kernel_loads(g_, max, substitute_vars(max.body, at), bounds_), bounds_);
      const Stmt fill = make_for(vj, int_imm(rows.length), LoopKind::kVectorized, {make_store(x, var(vj), value)});
      body = make_allocate(x, {fill, make_call(callee, {{x, int_imm(0)}, {output_, first}})});
    }
    kernel_.body = make_for(vr, int_imm(rows.rows), LoopKind::kParallel, {body});
    kernel_.ukernel = "softmax_" + variant;
    return std::move(kernel_);
  }

 private:
  // The micro-kernel needs none; a whole-vector start is the cheapest.
  static constexpr int kRowAlignment = 64;
  static constexpr int64_t kMaxStackRowFloats = 4096;
  const std::vector<Op>& phases_;
  int output_ = -1;
};

}  // namespace

std::vector<Op> softmax_phases(const Graph& g, const scheduler::KernelSchedule& ks) {
  const auto first_max = std::find_if(ks.ops.begin(), ks.ops.end(),
                                      [&](int op) { return g.ops[static_cast<size_t>(op)].reduction == Reduction::kMax; });
  if (first_max == ks.ops.end() || ks.ops.end() - first_max != 4) return scheduler::phase_ops(g, ks);
  const std::vector<int> prologue(ks.ops.begin(), first_max);
  for (int op : prologue)
    if (g.ops[static_cast<size_t>(op)].reduction != Reduction::kNone) return scheduler::phase_ops(g, ks);
  const auto producers_of = [&](int op) {
    std::vector<int> producers;
    for (int p : prologue) {
      const std::vector<TensorId>& inputs = g.ops[static_cast<size_t>(op)].inputs;
      if (p < op && std::find(inputs.begin(), inputs.end(), g.ops[static_cast<size_t>(p)].output) != inputs.end())
        producers.push_back(p);
    }
    return producers;
  };
  std::vector<Op> phases;
  for (auto it = first_max; it != ks.ops.end(); ++it) phases.push_back(passes::inline_producer_tree(g, *it, producers_of));
  return phases;
}

std::optional<SoftmaxRows> softmax_rows(const Graph& g, const std::vector<Op>& phases) {
  if (phases.size() != 4) return std::nullopt;
  const Op& max = phases[0];
  const Op& exp = phases[1];
  const Op& sum = phases[2];
  const Op& quotient = phases[3];
  if (max.reduction != Reduction::kMax || max.reduce_extents.size() != 1 || max.inputs.empty() ||
      exp.reduction != Reduction::kNone || sum.reduction != Reduction::kSum ||
      sum.reduce_extents != max.reduce_extents || sum.inputs != std::vector<TensorId>{exp.output} ||
      quotient.reduction != Reduction::kNone || quotient.inputs.size() != 2)
    return std::nullopt;
  // x is phase 0's body: read from the kernel's inputs only (no phase's
  // output), and recomputed by phase 1 from the same tensors.
  std::vector<int> exp_slot_of_max_slot;
  for (TensorId id : max.inputs) {
    for (const Op& op : phases)
      if (op.output == id) return std::nullopt;
    exp_slot_of_max_slot.push_back(slot_of(exp, id));
    if (exp_slot_of_max_slot.back() < 0) return std::nullopt;
  }
  const Shape shape = g.tensor(quotient.output).shape;
  if (shape.empty() || num_elements(shape) == 0 || shape.back() != max.reduce_extents[0] || shape.back() > INT_MAX)
    return std::nullopt;
  Shape kept = shape;
  kept.back() = 1;
  if (!has_shape(g, max.output, kept) || !has_shape(g, exp.output, shape) || !has_shape(g, sum.output, kept) ||
      !has_shape(g, quotient.output, shape))
    return std::nullopt;
  const int exp_max = slot_of(exp, max.output);
  const int quotient_e = slot_of(quotient, exp.output), quotient_sum = slot_of(quotient, sum.output);
  if (exp_max < 0 || quotient_e < 0 || quotient_sum < 0) return std::nullopt;
  // In place: x is input 0 itself, shaped as the output.
  bool in_place = max.inputs.size() == 1 && has_shape(g, max.inputs[0], shape);
  const bool matches = all_samples(shape, [&](const std::vector<int64_t>& outer, int64_t j) {
    const Expr x = simplify(substitute_vars(max.body, constant_indices(point(outer, {0, j}))), {});
    if (x->dtype != DType::kF32) return false;
    in_place = in_place && same_expr(x, simplify(load(0, DType::kF32, indices(outer, j)), {}));
    const Expr exp_x = rewrite(x, [&](const Expr& e) -> Expr {
      if (e->kind != ExprKind::kLoad) return nullptr;
      return load(exp_slot_of_max_slot[static_cast<size_t>(e->int_value)], e->dtype, e->args);
    });
    return body_is(exp, point(outer, {j}), unary(UnaryOp::kExp, exp_x - load(exp_max, DType::kF32, indices(outer, 0)))) &&
           body_is(sum, point(outer, {0, j}), load(0, DType::kF32, indices(outer, j))) &&
           body_is(quotient, point(outer, {j}),
                   load(quotient_e, DType::kF32, indices(outer, j)) /
                       load(quotient_sum, DType::kF32, indices(outer, 0)));
  });
  if (!matches) return std::nullopt;
  return SoftmaxRows{num_elements(shape) / shape.back(), shape.back(), in_place};
}

Kernel lower_softmax_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const std::vector<Op>& phases,
                            const SoftmaxRows& rows, const std::string& variant) {
  return SoftmaxBuilder(g, phases, schedule).build(rows, variant);
}

}  // namespace tilegraph::codegen
