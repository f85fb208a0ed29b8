#include "compiler/passes/fold_constants.h"

#include "compiler/ir/evaluate.h"

namespace tilegraph::passes {

std::shared_ptr<const std::vector<uint8_t>> try_fold(const Graph& g, const Op& op) {
  for (TensorId in : op.inputs)
    if (!g.tensor(in).data) return nullptr;
  const Tensor& out = g.tensor(op.output);
  if (num_elements(out.shape) > kMaxFoldedElements) return nullptr;
  // A scalar broadcast (no inputs, or a huge output from a tiny input) would
  // turn a cheap kernel into weight bytes; fold only when the output is no
  // bigger than the inputs together or small in absolute terms.
  int64_t input_elements = 0;
  for (TensorId in : op.inputs) input_elements += num_elements(g.tensor(in).shape);
  const int64_t out_elements = num_elements(out.shape);
  // A gather is the exception up to kMaxFoldedGatherElements: left to run,
  // it is inlined into its consumers and repeated per use with a checked
  // index read per element (swin's relative position bias, a [169, heads]
  // table gathered to [heads, 49, 49] and added to every window's scores:
  // 16-64 windows each gathered it again, ~5 cycles per element).
  if (out_elements > 4096 && out_elements > 4 * input_elements &&
      !(out_elements <= kMaxFoldedGatherElements &&
        any_node(op.body, [](const Expr& e) { return e->kind == ExprKind::kCheckIndex; })))
    return nullptr;
  // The interpreter walks every point of the reduce domain: keep folding cheap.
  int64_t work = out_elements;
  for (int64_t r : op.reduce_extents)
    if (__builtin_mul_overflow(work, r, &work)) return nullptr;
  if (work > (int64_t{1} << 28)) return nullptr;
  return evaluate_op(g, op);
}

Graph fold_constants(const Graph& g) {
  Graph result = g;
  result.ops.clear();
  bool changed = false;
  for (const Op& op : g.ops) {
    if (auto data = try_fold(result, op)) {
      Tensor& t = result.tensor(op.output);
      t.kind = TensorKind::kConstant;
      t.data = std::move(data);
      changed = true;
    } else {
      result.ops.push_back(op);
    }
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
