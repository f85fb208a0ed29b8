#include "compiler/passes/materialize_outputs.h"

#include <set>

namespace tilegraph::passes {

Graph materialize_outputs(const Graph& g) {
  Graph result = g;
  std::set<TensorId> seen;
  bool changed = false;
  for (TensorId& out : result.outputs) {
    const bool computed = result.producer(out) >= 0;
    if (computed && seen.insert(out).second) continue;
    const Tensor source = result.tensor(out);
    Tensor copy = source;
    copy.kind = TensorKind::kIntermediate;
    copy.data = nullptr;
    // The copy carries the user-visible name; the source keeps a derived one.
    result.tensor(out).name = source.name + (computed ? "_dup" : "_src");
    const TensorId copy_id = result.add_tensor(std::move(copy));
    Op op;
    op.name = result.unique_op_name("copy_output");
    op.source_nodes = {source.name};
    op.inputs = {out};
    op.output = copy_id;
    std::vector<Expr> idx;
    for (size_t d = 0; d < source.shape.size(); ++d) idx.push_back(var(static_cast<int>(d)));
    op.body = load(0, source.dtype, idx);
    result.ops.push_back(std::move(op));
    out = copy_id;
    seen.insert(copy_id);
    changed = true;
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
