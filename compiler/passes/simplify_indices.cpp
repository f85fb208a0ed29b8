#include "compiler/passes/simplify_indices.h"

#include "compiler/ir/simplify.h"

namespace tilegraph::passes {

std::vector<Interval> axis_bounds(const Graph& g, const Op& op) {
  std::vector<Interval> bounds;
  for (int64_t d : g.tensor(op.output).shape) bounds.push_back(Interval::range(d));
  for (int64_t r : op.reduce_extents) bounds.push_back(Interval::range(r));
  return bounds;
}

Graph simplify_indices(const Graph& g) {
  Graph result = g;
  bool changed = false;
  for (Op& op : result.ops) {
    Expr body = simplify(op.body, axis_bounds(result, op));
    changed |= body != op.body;
    op.body = body;
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
