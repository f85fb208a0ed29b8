// Index arithmetic: simplify, interval bounds and reshape index maps, each
// checked against brute-force evaluation over every point of a small domain.
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "compiler/ir/evaluate.h"
#include "compiler/ir/interval.h"
#include "compiler/ir/reshape.h"
#include "compiler/ir/simplify.h"

namespace tilegraph {
namespace {

// Values of an int64 expression over Var ids 0..extents.size()-1 ranging over
// [0, extent), evaluated by the reference interpreter (row-major order).
std::vector<int64_t> evaluate_over(const Expr& e, const Shape& extents) {
  Graph g;
  Tensor out;
  out.name = "out";
  out.dtype = DType::kI64;
  out.shape = extents;
  Op op;
  op.name = "probe";
  op.output = g.add_tensor(out);
  op.body = e;
  g.ops.push_back(op);
  auto data = evaluate_op(g, g.ops[0]);
  std::vector<int64_t> values(static_cast<size_t>(num_elements(extents)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = read_element(data->data(), DType::kI64, static_cast<int64_t>(i)).i;
  return values;
}

std::vector<Interval> bounds_for(const Shape& extents) {
  std::vector<Interval> b;
  for (int64_t e : extents) b.push_back(Interval::range(e));
  return b;
}

// The traversal predicates: any_node stops at the first match (the later
// nodes are never offered), and the helpers built on it see nested nodes.
TEST(ExprTraversal, AnyNodeStopsAtTheFirstMatchParentsFirst) {
  const Expr x = load(0, DType::kF32, {var(0) + 1});
  const Expr e = x * load(1, DType::kF32, {var(2)});
  std::vector<ExprKind> offered;
  EXPECT_TRUE(any_node(e, [&](const Expr& n) {
    offered.push_back(n->kind);
    return n->kind == ExprKind::kLoad;
  }));
  EXPECT_EQ(offered, (std::vector<ExprKind>{ExprKind::kBinary, ExprKind::kLoad}));
  EXPECT_FALSE(any_node(e, [](const Expr& n) { return n->kind == ExprKind::kCheckIndex; }));
  EXPECT_TRUE(uses_var(e, 2));
  EXPECT_FALSE(uses_var(e, 1));
  EXPECT_TRUE(has_load(e));
  EXPECT_FALSE(has_load(var(0) * 3));
  EXPECT_FALSE(has_indirect_load(e));
  EXPECT_TRUE(has_indirect_load(load(0, DType::kF32, {cast(DType::kI64, load(1, DType::kI32, {var(0)}))})));
}

TEST(Simplify, SplitAndMergeOfAReshapeCancel) {
  const Expr h = var(0), d = var(1);
  const auto b = bounds_for({12, 64});
  EXPECT_TRUE(same_expr(simplify(floordiv(h * 64 + d, 64), b), h));
  EXPECT_TRUE(same_expr(simplify(floormod(h * 64 + d, 64), b), d));
  // Nested division collapses: ((x / 4) / 16) == x / 64.
  const Expr x = var(0);
  Expr nested = simplify(floordiv(floordiv(x * 1 + var(1), 4), 16), bounds_for({1000, 3}));
  EXPECT_EQ(to_string(nested), to_string(floordiv(x + var(1), 64)));
}

// A GEMM's flat column c = nb * 32 + j (j < 32) as an output pixel
// (c / 256, c % 256) stored at row * 256 + col: the division splits at the
// panel (nb / 8, nb % 8 * 32 + j) and the store index is c again.
TEST(Simplify, FlatIndexSplitAtADivisorOfItsStrideAndMergedAgain) {
  const Expr nb = var(0), j = var(1);
  const auto b = bounds_for({40, 32});
  const Expr c = nb * 32 + j;
  const Expr row = simplify(floordiv(c, 256), b), col = simplify(floormod(c, 256), b);
  EXPECT_EQ(to_string(row), to_string(floordiv(nb, 8)));
  EXPECT_EQ(to_string(col), to_string(j + floormod(nb, 8) * 32));
  EXPECT_EQ(evaluate_over(row, {40, 32}), evaluate_over(floordiv(c, 256), {40, 32}));
  EXPECT_EQ(evaluate_over(col, {40, 32}), evaluate_over(floormod(c, 256), {40, 32}));
  const Expr merged = simplify(floordiv(c, 256) * 256 + floormod(c, 256) + 7, b);
  EXPECT_EQ(to_string(merged), to_string(j + nb * 32 + 7));
  // j may reach the next multiple of 32: no split
  EXPECT_EQ(to_string(simplify(floordiv(nb * 32 + j, 256), bounds_for({40, 33}))),
            to_string(floordiv(nb * 32 + j, 256)));
}

TEST(Simplify, ComparisonsDecidedByBounds) {
  const auto b = bounds_for({8, 4});
  EXPECT_TRUE(is_const(simplify(ge(var(0) + var(1), int_imm(0)), b)));
  EXPECT_EQ(simplify(lt(var(0), int_imm(8)), b)->int_value, 1);
  EXPECT_FALSE(is_const(simplify(lt(var(0), int_imm(5)), b)));
}

// Random index expressions: simplify must never change a value.
TEST(Simplify, PreservesValuesOnRandomExpressions) {
  std::mt19937 rng(7);
  const Shape extents{5, 7, 3};
  std::function<Expr(int)> random_expr = [&](int depth) -> Expr {
    std::uniform_int_distribution<int> pick(0, depth > 0 ? 7 : 1);
    switch (pick(rng)) {
      case 0: return var(static_cast<int>(rng() % 3));
      case 1: return int_imm(static_cast<int64_t>(rng() % 9) - 2);
      case 2: return random_expr(depth - 1) + random_expr(depth - 1);
      case 3: return random_expr(depth - 1) - random_expr(depth - 1);
      case 4: return random_expr(depth - 1) * static_cast<int64_t>(rng() % 8 + 1);
      case 5: return floordiv(random_expr(depth - 1), static_cast<int64_t>(rng() % 6 + 1));
      case 6: return floormod(random_expr(depth - 1), static_cast<int64_t>(rng() % 6 + 1));
      default: return min(random_expr(depth - 1), random_expr(depth - 1));
    }
  };
  for (int trial = 0; trial < 300; ++trial) {
    const Expr e = random_expr(4);
    const Expr s = simplify(e, bounds_for(extents));
    ASSERT_EQ(evaluate_over(e, extents), evaluate_over(s, extents)) << to_string(e) << "  vs  " << to_string(s);
    // and the bounds of e contain every value it takes
    const Interval b = bound_of(e, bounds_for(extents));
    for (int64_t v : evaluate_over(e, extents)) ASSERT_TRUE(v >= b.lo && v <= b.hi) << to_string(e);
  }
}

TEST(Simplify, ReturnsTheSameNodeWhenNothingChanges) {
  const Expr e = var(0) * var(1);
  EXPECT_EQ(simplify(e, bounds_for({3, 3})), e);
}

// reshape_indices(in, out) read through must equal numpy's row-major reshape.
void check_reshape(const Shape& in, const Shape& out) {
  std::vector<Expr> vars;
  for (size_t d = 0; d < out.size(); ++d) vars.push_back(var(static_cast<int>(d)));
  const auto idx = reshape_indices(in, out, vars);
  // linear index into `in` computed from the returned indices
  Expr flat = int_imm(0);
  for (size_t d = 0; d < in.size(); ++d) flat = flat * in[d] + idx[d];
  const auto values = evaluate_over(flat, out);
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(values[i], static_cast<int64_t>(i)) << shape_to_string(in) << " -> " << shape_to_string(out);
  // and every index stays inside its dimension
  for (size_t d = 0; d < in.size(); ++d)
    for (int64_t v : evaluate_over(idx[d], out)) ASSERT_TRUE(v >= 0 && v < in[d]);
}

TEST(Reshape, IndexMapsMatchRowMajorOrder) {
  check_reshape({2, 3, 4}, {6, 4});
  check_reshape({6, 4}, {2, 3, 4});
  check_reshape({2, 3, 4}, {4, 6});
  check_reshape({1, 8, 1, 3}, {2, 12});
  check_reshape({4, 6}, {3, 8});
  check_reshape({2, 12}, {2, 3, 1, 4});
  check_reshape({24}, {2, 3, 4});
  check_reshape({5}, {1, 5, 1});
}

TEST(Reshape, SplitGroupNeedsNoModuloOnItsFirstDimension) {
  // [B, 768] -> [B, 12, 64]: the batch dim maps straight through.
  const auto idx = reshape_indices({2, 768}, {2, 12, 64}, {var(0), var(1), var(2)});
  EXPECT_TRUE(same_expr(idx[0], var(0)));
  const auto simple = simplify(idx[1], bounds_for({2, 12, 64}));
  EXPECT_EQ(to_string(simple), to_string(var(1) * 64 + var(2)));
}

}  // namespace
}  // namespace tilegraph

namespace tilegraph {
namespace {

// Regression: substituting v0 -> 0 turns (v0*2 + v2) into plain v2's
// replacement; that replacement must not be substituted a second time.
TEST(Rewrite, SubstitutionIsAppliedOncePerOriginalNode) {
  const Expr e = (var(0) * 2 + var(2)) * 16 + var(4);
  const Expr s = substitute_vars(e, {int_imm(0), var(0), var(1), var(2), var(3)});
  EXPECT_EQ(to_string(s), to_string(var(1) * 16 + var(3)));
}

}  // namespace
}  // namespace tilegraph
