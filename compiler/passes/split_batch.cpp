#include "compiler/passes/split_batch.h"

#include "compiler/ir/error.h"

namespace tilegraph::passes {

namespace {

// "ONNX node 'Conv_3'" (or the op's own name when it has no source node).
std::string describe_op(const Op& op) {
  if (op.source_nodes.empty()) return str_cat("op '", op.name, "'");
  std::string nodes;
  for (size_t i = 0; i < op.source_nodes.size() && i < 3; ++i) nodes += (i ? "', '" : "") + op.source_nodes[i];
  return str_cat("ONNX node '", nodes, "'");
}

bool is_var0(const Expr& e) { return e->kind == ExprKind::kVar && e->int_value == 0; }

// Why op (which reads a batched tensor) mixes batch elements, or "".
std::string op_blocker(const Graph& g, const Op& op, const std::vector<bool>& batched, int64_t batch) {
  const Shape& out = g.tensor(op.output).shape;
  if (out.empty() || out[0] != batch)
    return str_cat(describe_op(op), " turns the batch into shape ", shape_to_string(out),
                   " (its output does not lead with the batch dimension ", batch, ")");
  int64_t var0_uses = 0, var0_as_batch_index = 0;
  std::string bad_index;
  visit(op.body, [&](const Expr& e) {
    if (is_var0(e)) ++var0_uses;
    if (e->kind != ExprKind::kLoad) return;
    const TensorId input = op.inputs.at(static_cast<size_t>(e->int_value));
    if (!batched[static_cast<size_t>(input)]) return;
    if (!e->args.empty() && is_var0(e->args[0]))
      ++var0_as_batch_index;
    else if (bad_index.empty())
      bad_index = str_cat(describe_op(op), " reads '", g.tensor(input).name, "' at batch index ",
                          e->args.empty() ? "?" : to_string(e->args[0]), ", not its own batch element v0");
  });
  if (!bad_index.empty()) return bad_index;
  if (var0_uses != var0_as_batch_index)
    return str_cat(describe_op(op), " uses the batch index in its arithmetic, not only to pick its inputs' batch element");
  return "";
}

}  // namespace

BatchSplit analyze_batch_split(const Graph& g) {
  BatchSplit split;
  split.batched.assign(g.tensors.size(), false);
  if (g.inputs.empty()) {
    split.blocker = "the graph has no inputs to split";
    return split;
  }
  for (TensorId in : g.inputs) {
    const Tensor& t = g.tensor(in);
    if (t.shape.empty()) {
      split.blocker = str_cat("input '", t.name, "' is a scalar: it has no batch dimension");
      return split;
    }
    if (split.batch == 0) split.batch = t.shape[0];
    if (t.shape[0] != split.batch) {
      split.blocker = str_cat("input '", t.name, "' has shape ", shape_to_string(t.shape),
                              ": not the batch dimension ", split.batch, " of input '", g.tensor(g.inputs[0]).name, "'");
      return split;
    }
    split.batched[static_cast<size_t>(in)] = true;
  }
  // (At batch 1 the simplifier has already folded batch indices to 0.)
  if (split.batch < 2) {
    split.blocker = str_cat("input '", g.tensor(g.inputs[0]).name, "' has batch ", split.batch,
                            ": nothing to split, and tiling one input spatially is not implemented");
    return split;
  }
  for (const Op& op : g.ops) {
    bool reads_batched = false;
    for (TensorId in : op.inputs) reads_batched |= split.batched[static_cast<size_t>(in)];
    if (!reads_batched) continue;
    split.blocker = op_blocker(g, op, split.batched, split.batch);
    if (!split.splits()) return split;
    split.batched[static_cast<size_t>(op.output)] = true;
  }
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (!split.batched[static_cast<size_t>(g.outputs[i])]) {
      split.blocker = str_cat("output '", i < g.output_names.size() ? g.output_names[i] : g.tensor(g.outputs[i]).name,
                              "' does not depend on the batch");
      return split;
    }
  return split;
}

Graph split_batch(const Graph& g, const BatchSplit& split, int64_t micro_batch) {
  TG_CHECK(split.splits(), "split_batch on a graph that does not split: ", split.blocker);
  TG_CHECK(micro_batch > 0 && micro_batch <= split.batch, "micro-batch ", micro_batch, " of batch ", split.batch);
  if (micro_batch == split.batch) return g;
  Graph result = g;
  for (size_t t = 0; t < result.tensors.size(); ++t)
    if (split.batched[t]) result.tensors[t].shape[0] = micro_batch;
  return result;
}

}  // namespace tilegraph::passes
