#include "compiler/passes/inline_producer_tree.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/error.h"
#include "compiler/passes/inline_producer.h"

namespace tilegraph::passes {

namespace {

using ProducersOf = std::function<std::vector<int>(int)>;

// The reference construction: inline_producer one producer at a time, each
// producer finished (its own tree inlined) before its consumer takes it.
Op inline_stepwise(const Graph& g, int index, const ProducersOf& producers_of) {
  Op op = g.ops.at(static_cast<size_t>(index));
  for (int p : producers_of(index)) inline_producer(op, inline_stepwise(g, p, producers_of));
  return op;
}

// The one-pass construction. Each op of the tree is rewritten once, its
// vars bound to its consumer's load indices as it goes (substitution
// composes: binding P's vars while P's own producers are inlined gives the
// tree that inlining P first and binding afterwards gives). Loads of
// non-inlined inputs carry a temporary label per (op, slot); the final slot
// numbering follows inline_producer's: the root's own inputs in order, then
// each inlined op's inputs, in inlining order (depth first), where not
// already present.
class TreeInliner {
 public:
  TreeInliner(const Graph& g, const ProducersOf& producers_of) : g_(g), producers_of_(producers_of) {}

  // nullopt: a case where the one-pass result could differ from the stepwise one.
  std::optional<Op> run(int root) {
    if (!collect_tree(root)) return std::nullopt;
    const Expr labelled = expand(root, nullptr);
    std::vector<bool> seen(labels_, false);
    visit(labelled, [&](const Expr& n) {
      if (n->kind == ExprKind::kLoad) seen[static_cast<size_t>(n->int_value)] = true;
    });
    // Every non-inlined input must still be loaded: inline_producer drops a
    // slot whose loads fold away (Select on a now-constant condition), and a
    // later producer's input would then take a new slot, not that one.
    std::vector<int> slot_of_label(labels_, -1);
    Op result = g_.ops[static_cast<size_t>(root)];
    result.inputs.clear();
    result.source_nodes.clear();
    std::unordered_map<TensorId, int> first_slot;
    for (const Node& node : tree_) {
      const Op& op = g_.ops[static_cast<size_t>(node.op)];
      for (size_t s = 0; s < op.inputs.size(); ++s) {
        if (node.producer_at[s] >= 0) continue;
        const int label = node.first_label + static_cast<int>(s);
        if (!seen[static_cast<size_t>(label)]) return std::nullopt;
        const TensorId in = op.inputs[s];
        auto found = first_slot.find(in);
        // The root keeps every slot of its own (an op may read a tensor
        // through two slots); an inlined op's input joins the first slot
        // already reading that tensor.
        if (node.op == root || found == first_slot.end()) {
          const int slot = static_cast<int>(result.inputs.size());
          result.inputs.push_back(in);
          first_slot.emplace(in, slot);
          slot_of_label[static_cast<size_t>(label)] = slot;
        } else {
          slot_of_label[static_cast<size_t>(label)] = found->second;
        }
      }
      for (const std::string& name : op.source_nodes) result.source_nodes.push_back(name);
    }
    result.body = rewrite(labelled, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kLoad) return nullptr;
      return load(slot_of_label[static_cast<size_t>(n->int_value)], n->dtype, n->args);
    });
    return result;
  }

 private:
  struct Node {
    int op = -1;
    std::vector<int> producer_at;  // per input slot: the inlined op it reads, or -1
    int first_label = 0;           // label of slot s: first_label + s
  };

  // The tree in inlining order (depth first, producers in producers_of
  // order); false where the stepwise construction must decide.
  bool collect_tree(int root) {
    std::unordered_set<int> in_tree;
    std::unordered_set<TensorId> inlined_outputs;
    std::vector<int> stack = {root};
    while (!stack.empty()) {
      const int index = stack.back();
      stack.pop_back();
      // An op inlined twice (into two consumers) is copied twice, step by step.
      if (!in_tree.insert(index).second) return false;
      const Op& op = g_.ops.at(static_cast<size_t>(index));
      Node node{index, std::vector<int>(op.inputs.size(), -1), labels_};
      labels_ += static_cast<int>(op.inputs.size());
      std::vector<int> read;  // producers op reads, in inlining order
      for (int p : producers_of_(index)) {
        TG_CHECK(p >= 0 && p < index, "register producer ", p, " not before consumer ", index);
        const Op& producer = g_.ops[static_cast<size_t>(p)];
        TG_CHECK(producer.reduction == Reduction::kNone, "cannot inline reduction ", producer.name);
        bool reads = false;
        for (size_t s = 0; s < op.inputs.size(); ++s)
          if (op.inputs[s] == producer.output && node.producer_at[s] < 0) node.producer_at[s] = p, reads = true;
        if (reads) read.push_back(p), inlined_outputs.insert(producer.output);
      }
      for (auto it = read.rbegin(); it != read.rend(); ++it) stack.push_back(*it);
      tree_.push_back(std::move(node));
    }
    // A producer's output read elsewhere in the tree than through its
    // consumer's inlined slots would stay a load of its own.
    for (const Node& node : tree_) {
      const Op& op = g_.ops[static_cast<size_t>(node.op)];
      for (size_t s = 0; s < op.inputs.size(); ++s)
        if (node.producer_at[s] < 0 && inlined_outputs.count(op.inputs[s])) return false;
      node_of_.emplace(node.op, &node - tree_.data());
    }
    return true;
  }

  // op's body with its vars bound to `vars` (null: the root, unbound),
  // inlined producers expanded, other loads labelled.
  Expr expand(int index, const std::vector<Expr>* vars) {
    const Node& node = tree_[node_of_.at(index)];
    return rewrite(g_.ops[static_cast<size_t>(index)].body, [&](const Expr& n) -> Expr {
      if (n->kind == ExprKind::kVar)
        return vars && n->int_value < static_cast<int64_t>(vars->size()) ? (*vars)[n->int_value] : nullptr;
      if (n->kind != ExprKind::kLoad) return nullptr;
      const int producer = node.producer_at[static_cast<size_t>(n->int_value)];
      if (producer < 0) return load(node.first_label + static_cast<int>(n->int_value), n->dtype, n->args);
      return expand(producer, &n->args);
    });
  }

  const Graph& g_;
  const ProducersOf& producers_of_;
  std::vector<Node> tree_;
  std::unordered_map<int, size_t> node_of_;
  int labels_ = 0;
};

}  // namespace

Op inline_producer_tree(const Graph& g, int root, const ProducersOf& producers_of) {
  if (producers_of(root).empty()) return g.ops.at(static_cast<size_t>(root));
  if (std::optional<Op> op = TreeInliner(g, producers_of).run(root)) return std::move(*op);
  return inline_stepwise(g, root, producers_of);
}

}  // namespace tilegraph::passes
