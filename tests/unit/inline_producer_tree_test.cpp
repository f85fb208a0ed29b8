// inline_producer_tree builds in one pass the op that inlining each producer
// in turn (inline_producer) builds: same body, same input slots in the same
// order, same source nodes — including where the one pass hands over to the
// step-by-step construction.
#include <map>

#include <gtest/gtest.h>

#include "compiler/passes/inline_producer.h"
#include "compiler/passes/inline_producer_tree.h"

namespace tilegraph {
namespace {

using Producers = std::map<int, std::vector<int>>;

TensorId tensor(Graph& g, const std::string& name, TensorKind kind, DType t = DType::kF32) {
  Tensor x;
  x.name = name;
  x.dtype = t;
  x.shape = {8};
  x.kind = kind;
  return g.add_tensor(x);
}

// Adds op `name` computing a new tensor from `inputs` with `body`.
int add_op(Graph& g, const std::string& name, std::vector<TensorId> inputs, Expr body) {
  Op op;
  op.name = name;
  op.source_nodes = {name};
  op.inputs = std::move(inputs);
  op.output = tensor(g, name + "_out", TensorKind::kIntermediate, body->dtype);
  op.body = std::move(body);
  g.ops.push_back(op);
  return static_cast<int>(g.ops.size()) - 1;
}

Expr at(int slot, DType t = DType::kF32) { return load(slot, t, {var(0)}); }

// The reference: inline_producer one producer at a time, leaves first.
Op stepwise(const Graph& g, int index, const Producers& producers) {
  Op op = g.ops[static_cast<size_t>(index)];
  if (auto it = producers.find(index); it != producers.end())
    for (int p : it->second) passes::inline_producer(op, stepwise(g, p, producers));
  return op;
}

void expect_same_as_stepwise(const Graph& g, int root, const Producers& producers) {
  auto producers_of = [&](int op) {
    auto it = producers.find(op);
    return it == producers.end() ? std::vector<int>{} : it->second;
  };
  const Op expected = stepwise(g, root, producers);
  const Op got = passes::inline_producer_tree(g, root, producers_of);
  EXPECT_EQ(to_string(got.body), to_string(expected.body));
  EXPECT_EQ(got.inputs, expected.inputs);
  EXPECT_EQ(got.source_nodes, expected.source_nodes);
  EXPECT_EQ(got.output, expected.output);
}

TEST(InlineProducerTree, TwoProducersSharingInputsWithTheRoot) {
  Graph g;
  const TensorId x = tensor(g, "x", TensorKind::kInput), w = tensor(g, "w", TensorKind::kInput);
  const int e = add_op(g, "e", {x}, unary(UnaryOp::kExp, at(0)));
  const int f = add_op(g, "f", {w, x, w}, at(0) * at(1) + at(2));
  // The root reads w through two slots (both stay), and e and f.
  const int y = add_op(g, "y", {g.ops[e].output, w, g.ops[f].output, w}, at(0) * at(1) + at(2) - at(3));
  expect_same_as_stepwise(g, y, {{y, {f, e}}});
  const Op got = passes::inline_producer_tree(g, y, [&](int op) {
    return op == y ? std::vector<int>{f, e} : std::vector<int>{};
  });
  EXPECT_EQ(got.inputs, (std::vector<TensorId>{w, w, x}));
  EXPECT_EQ(got.source_nodes, (std::vector<std::string>{"y", "f", "e"}));
}

TEST(InlineProducerTree, ChainWithShiftedIndices) {
  // p2[i] = p1[i] + c[i]; p1[i] = x[7 - i] * 2; root[i] = p2[i] - x[i]:
  // the producers' vars are bound to their consumers' index expressions.
  Graph g;
  const TensorId x = tensor(g, "x", TensorKind::kInput), c = tensor(g, "c", TensorKind::kConstant);
  const int p1 = add_op(g, "p1", {x}, load(0, DType::kF32, {int_imm(7) - var(0)}) * float_imm(2.0));
  const int p2 = add_op(g, "p2", {g.ops[p1].output, c}, at(0) + at(1));
  const int root = add_op(g, "root", {g.ops[p2].output, x}, at(0) - at(1));
  expect_same_as_stepwise(g, root, {{root, {p2}}, {p2, {p1}}});
}

TEST(InlineProducerTree, LongChainIsOneExpression) {
  Graph g;
  const TensorId x = tensor(g, "x", TensorKind::kInput);
  TensorId previous = x;
  Producers producers;
  for (int i = 0; i < 200; ++i) {
    const TensorId c = tensor(g, "c" + std::to_string(i), TensorKind::kConstant);
    const int op = add_op(g, "add" + std::to_string(i), {previous, i % 2 ? x : c}, at(0) + at(1));
    if (i > 0) producers[op] = {op - 1};
    previous = g.ops[op].output;
  }
  expect_same_as_stepwise(g, 199, producers);
}

TEST(InlineProducerTree, LoadFoldedAwayFallsBackToStepwise) {
  // p[i] = i < 4 has no inputs; the root reads it at index 0, so its Select
  // folds and never loads b: the step-by-step inlining drops b's slot.
  Graph g;
  const TensorId a = tensor(g, "a", TensorKind::kInput), b = tensor(g, "b", TensorKind::kInput);
  const int p = add_op(g, "p", {}, lt(var(0), int_imm(4)));
  const int root = add_op(g, "root", {a, g.ops[p].output, b},
                          select(load(1, DType::kBool, {int_imm(0)}), at(0), at(2)));
  expect_same_as_stepwise(g, root, {{root, {p}}});
  const Op got = passes::inline_producer_tree(g, root, [&](int op) {
    return op == root ? std::vector<int>{p} : std::vector<int>{};
  });
  EXPECT_EQ(got.inputs, (std::vector<TensorId>{a}));
}

}  // namespace
}  // namespace tilegraph
