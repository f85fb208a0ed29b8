#include "compiler/passes/materialize_outputs.h"

#include <set>

namespace tilegraph::passes {

Graph materialize_outputs(const Graph& g) {
  Graph result = g;
  if (result.output_names.size() != result.outputs.size()) {
    result.output_names.clear();
    for (TensorId o : result.outputs) result.output_names.push_back(result.tensor(o).name);
  }
  std::set<TensorId> seen;
  bool changed = false;
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    TensorId& out = result.outputs[i];
    const std::string& wanted = result.output_names[i];
    const bool computed = result.producer(out) >= 0;
    if (computed && seen.insert(out).second) {
      if (result.tensor(out).name != wanted) {
        result.tensor(out).name = wanted;
        changed = true;
      }
      continue;
    }
    Tensor copy = result.tensor(out);
    copy.name = wanted;
    copy.kind = TensorKind::kIntermediate;
    copy.data = nullptr;
    const TensorId copy_id = result.add_tensor(std::move(copy));
    Op op;
    op.name = result.unique_op_name("copy_output");
    op.source_nodes = {wanted};
    op.inputs = {out};
    op.output = copy_id;
    std::vector<Expr> idx;
    for (size_t d = 0; d < result.tensor(copy_id).shape.size(); ++d) idx.push_back(var(static_cast<int>(d)));
    op.body = load(0, result.tensor(copy_id).dtype, idx);
    result.ops.push_back(std::move(op));
    out = copy_id;
    seen.insert(copy_id);
    changed = true;
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
