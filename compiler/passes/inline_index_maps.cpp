#include "compiler/passes/inline_index_maps.h"

#include <map>

#include "compiler/passes/eliminate_dead_ops.h"

namespace tilegraph::passes {

bool is_index_map(const Op& op) {
  if (op.reduction != Reduction::kNone) return false;
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
  // Many loads (a 50-way Concat) would bloat every consumer's inner loop.
  return pure && loads <= 4;
}

namespace {

// Rewrites `consumer` so that loads of `producer`'s output read the
// producer's inputs directly.
void inline_into(Op& consumer, const Op& producer) {
  int producer_slot = -1;
  for (size_t s = 0; s < consumer.inputs.size(); ++s)
    if (consumer.inputs[s] == producer.output) producer_slot = static_cast<int>(s);
  if (producer_slot < 0) return;
  // The producer's inputs become (possibly new) slots of the consumer.
  std::vector<int> slot_map;
  for (TensorId in : producer.inputs) {
    int slot = -1;
    for (size_t s = 0; s < consumer.inputs.size(); ++s)
      if (consumer.inputs[s] == in) slot = static_cast<int>(s);
    if (slot < 0) {
      slot = static_cast<int>(consumer.inputs.size());
      consumer.inputs.push_back(in);
    }
    slot_map.push_back(slot);
  }
  const Expr remapped_body = rewrite(producer.body, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kLoad) return nullptr;
    return load(slot_map[n->int_value], n->dtype, n->args);
  });
  consumer.body = rewrite(consumer.body, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kLoad || n->int_value != producer_slot) return nullptr;
    return substitute_vars(remapped_body, n->args);
  });
  for (const std::string& node : producer.source_nodes) consumer.source_nodes.push_back(node);
  drop_unused_inputs(consumer);
}

}  // namespace

Graph inline_index_maps(const Graph& g) {
  Graph result = g;
  std::map<TensorId, const Op*> inlinable;
  bool changed = false;
  for (Op& op : result.ops) {
    for (size_t s = 0; s < op.inputs.size(); ++s) {
      auto it = inlinable.find(op.inputs[s]);
      if (it == inlinable.end()) continue;
      inline_into(op, *it->second);
      changed = true;
      s = static_cast<size_t>(-1);  // slots changed: rescan (chains resolve in one sweep)
    }
    if (is_index_map(op)) inlinable[op.output] = &op;
  }
  if (!changed) return g;
  return eliminate_dead_ops(result);
}

}  // namespace tilegraph::passes
