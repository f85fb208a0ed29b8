#include "compiler/passes/eliminate_dead_ops.h"

#include <set>

namespace tilegraph::passes {

Graph eliminate_dead_ops(const Graph& g) {
  Graph result = g;
  bool changed = false;
  for (Op& op : result.ops) changed |= drop_unused_inputs(op);
  std::set<TensorId> live(g.outputs.begin(), g.outputs.end());
  std::vector<bool> keep(result.ops.size(), false);
  for (size_t i = result.ops.size(); i-- > 0;) {
    const Op& op = result.ops[i];
    if (!live.count(op.output)) continue;
    keep[i] = true;
    live.insert(op.inputs.begin(), op.inputs.end());
  }
  std::vector<Op> kept;
  for (size_t i = 0; i < result.ops.size(); ++i)
    if (keep[i]) kept.push_back(std::move(result.ops[i]));
  changed |= kept.size() != g.ops.size();
  result.ops = std::move(kept);
  return changed ? result : g;
}

}  // namespace tilegraph::passes
