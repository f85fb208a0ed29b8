#include "compiler/passes/inline_index_maps.h"

#include <map>

#include "compiler/passes/eliminate_dead_ops.h"
#include "compiler/passes/inline_producer.h"

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

Graph inline_index_maps(const Graph& g) {
  Graph result = g;
  std::map<TensorId, const Op*> inlinable;
  bool changed = false;
  for (Op& op : result.ops) {
    for (size_t s = 0; s < op.inputs.size(); ++s) {
      auto it = inlinable.find(op.inputs[s]);
      if (it == inlinable.end()) continue;
      inline_producer(op, *it->second);
      changed = true;
      s = static_cast<size_t>(-1);  // slots changed: rescan (chains resolve in one sweep)
    }
    if (is_index_map(op)) inlinable[op.output] = &op;
  }
  if (!changed) return g;
  return eliminate_dead_ops(result);
}

}  // namespace tilegraph::passes
