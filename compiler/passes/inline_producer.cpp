#include "compiler/passes/inline_producer.h"

#include "compiler/ir/error.h"

namespace tilegraph::passes {

bool inline_producer(Op& consumer, const Op& producer) {
  TG_CHECK(producer.reduction == Reduction::kNone, "cannot inline reduction ", producer.name);
  // An op may read one tensor through several slots (Mul(x, x)): all go.
  std::vector<bool> reads_producer(consumer.inputs.size(), false);
  bool any = false;
  for (size_t s = 0; s < consumer.inputs.size(); ++s)
    if (consumer.inputs[s] == producer.output) reads_producer[s] = any = true;
  if (!any) return false;
  // The producer's inputs become (possibly new) slots of the consumer.
  std::vector<int> slot_map;
  for (TensorId in : producer.inputs) {
    int slot = -1;
    for (size_t s = 0; s < consumer.inputs.size() && slot < 0; ++s)
      if (consumer.inputs[s] == in && !(s < reads_producer.size() && reads_producer[s])) slot = static_cast<int>(s);
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
    if (n->kind != ExprKind::kLoad || !reads_producer[static_cast<size_t>(n->int_value)]) return nullptr;
    return substitute_vars(remapped_body, n->args);
  });
  for (const std::string& node : producer.source_nodes) consumer.source_nodes.push_back(node);
  drop_unused_inputs(consumer);
  return true;
}

}  // namespace tilegraph::passes
