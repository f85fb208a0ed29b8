#include "compiler/passes/inline_index_maps.h"

#include <map>
#include <optional>
#include <set>

#include "compiler/passes/eliminate_dead_ops.h"
#include "compiler/passes/inline_producer.h"

namespace tilegraph::passes {

namespace {

// Most loads an index map may put into every consumer.
constexpr int kMaxInlinedLoads = 4;

// The loads of an op that computes no values of its own; nullopt otherwise.
std::optional<int> index_map_loads(const Op& op) {
  if (op.reduction != Reduction::kNone) return std::nullopt;
  bool pure = true;
  int loads = 0;
  visit(op.body, [&](const Expr& n) {
    switch (n->kind) {
      case ExprKind::kLoad: ++loads; break;
      case ExprKind::kUnary: pure &= n->unary_op == UnaryOp::kNot || !is_float(n->dtype); break;
      // Value arithmetic on floats is real work: keep it in its own kernel
      // until the scheduler fuses by tiles.
      case ExprKind::kBinary: pure &= !is_float(n->args[0]->dtype); break;
      default: break;
    }
  });
  if (!pure) return std::nullopt;
  return loads;
}

// The axes (var ids) of e.
std::set<int64_t> vars_of(const Expr& e) {
  std::set<int64_t> vars;
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::kVar) vars.insert(n->int_value);
  });
  return vars;
}

// The axes of `map` its selects choose a branch by (a Concat's axis).
std::set<int64_t> branch_axes(const Op& map) {
  std::set<int64_t> axes;
  visit(map.body, [&](const Expr& n) {
    if (n->kind != ExprKind::kSelect) return;
    const std::set<int64_t> in_condition = vars_of(n->args[0]);
    axes.insert(in_condition.begin(), in_condition.end());
  });
  return axes;
}

// Whether `consumer` is a sum reduction whose every load of slot `slot`
// (the wide index map `map`'s output) indexes map's branch axes by reduce
// axes only: per output element, each reduce step reads one branch.
bool branches_by_reduce_axes(const Graph& g, const Op& consumer, int slot, const Op& map) {
  if (consumer.reduction != Reduction::kSum) return false;
  const auto rank = static_cast<int64_t>(g.tensor(consumer.output).shape.size());
  const std::set<int64_t> axes = branch_axes(map);
  if (axes.empty()) return false;
  bool ok = true;
  visit(consumer.body, [&](const Expr& n) {
    if (n->kind != ExprKind::kLoad || n->int_value != slot) return;
    for (int64_t axis : axes) {
      if (axis < 0 || axis >= static_cast<int64_t>(n->args.size())) {
        ok = false;
        continue;
      }
      const std::set<int64_t> used = vars_of(n->args[static_cast<size_t>(axis)]);
      ok &= !used.empty() && *used.begin() >= rank;
    }
  });
  return ok;
}

}  // namespace

bool is_index_map(const Op& op) {
  const std::optional<int> loads = index_map_loads(op);
  // Many loads (a 50-way Concat) would bloat every consumer's inner loop.
  return loads && *loads <= kMaxInlinedLoads;
}

Graph inline_index_maps(const Graph& g, const InlineIndexMapOptions& options) {
  Graph result = g;
  std::map<TensorId, const Op*> inlinable, wide;
  bool changed = false;
  for (Op& op : result.ops) {
    for (size_t s = 0; s < op.inputs.size(); ++s) {
      const Op* producer = nullptr;
      if (auto it = inlinable.find(op.inputs[s]); it != inlinable.end()) {
        producer = it->second;
      } else if (auto w = wide.find(op.inputs[s]);
                 w != wide.end() && branches_by_reduce_axes(result, op, static_cast<int>(s), *w->second)) {
        producer = w->second;
      }
      if (!producer) continue;
      inline_producer(op, *producer);
      changed = true;
      s = static_cast<size_t>(-1);  // slots changed: rescan (chains resolve in one sweep)
    }
    const std::optional<int> loads = index_map_loads(op);
    if (loads && *loads <= kMaxInlinedLoads) inlinable[op.output] = &op;
    else if (loads && options.wide_into_contractions) wide[op.output] = &op;
  }
  if (!changed) return g;
  return eliminate_dead_ops(result);
}

}  // namespace tilegraph::passes
