// split_reductions: which reductions become a partial and a final reduction,
// the partial's layout, and that the split graph computes the same values.
#include "compiler/passes/split_reductions.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;
using testing::random_float_bytes;

constexpr int kF32 = 1;

float float_at(const std::vector<uint8_t>& bytes, size_t i) {
  float v;
  std::memcpy(&v, bytes.data() + i * 4, 4);
  return v;
}

const Op* op_named_like(const Graph& g, const std::string& part) {
  for (const Op& op : g.ops)
    if (op.name.find(part) != std::string::npos) return &op;
  return nullptr;
}

TEST(SplitReductions, DynamicQuantizeLinearRangeGetsOnePartialPerRowAndTheSameBytes) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {197, 768}).output("y", 2).output("scale").output("zp", 2);
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  const Graph g = b.import_as("split_dql");
  const Graph split = passes::split_reductions(g);
  const Op* partial = op_named_like(split, "_partial");
  ASSERT_NE(partial, nullptr) << to_string(split);
  // Rows of partials first, then both extremes; each partial reduces a row.
  EXPECT_EQ(split.tensor(partial->output).shape, (Shape{197, 2}));
  EXPECT_EQ(partial->reduce_extents, (std::vector<int64_t>{768}));
  const Op& final_op = split.ops.at(static_cast<size_t>(split.producer(g.ops[0].output)));
  EXPECT_EQ(final_op.reduce_extents, (std::vector<int64_t>{197}));
  // max is exact in any order: every output byte is the same.
  const std::vector<uint8_t> x = random_float_bytes(197 * 768, 1, -3.0f, 2.0f);
  EXPECT_EQ(evaluate_graph(split, {x}), evaluate_graph(g, {x}));
}

TEST(SplitReductions, OneLongAxisIsCutNearTwoHundredFiftySixPartials) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {65536}).output("m");
  auto& n = b.node("ReduceMax", {"x"}, {"m"});
  OnnxModelBuilder::attr_int(n, "keepdims", 0);
  const Graph g = b.import_as("split_long_axis");
  const Graph split = passes::split_reductions(g);
  const Op* partial = op_named_like(split, "_partial");
  ASSERT_NE(partial, nullptr) << to_string(split);
  EXPECT_EQ(split.tensor(partial->output).shape, (Shape{256}));
  EXPECT_EQ(partial->reduce_extents, (std::vector<int64_t>{256}));
  const std::vector<uint8_t> x = random_float_bytes(65536, 2, -3.0f, 2.0f);
  EXPECT_EQ(evaluate_graph(split, {x}), evaluate_graph(g, {x}));
}

TEST(SplitReductions, AGlobalSumAgreesUpToReassociation) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {64, 1024}).output("s");
  auto& n = b.node("ReduceSum", {"x"}, {"s"});
  OnnxModelBuilder::attr_int(n, "keepdims", 0);
  const Graph g = b.import_as("split_sum");
  const Graph split = passes::split_reductions(g);
  ASSERT_NE(op_named_like(split, "_partial"), nullptr) << to_string(split);
  const std::vector<uint8_t> x = random_float_bytes(64 * 1024, 3, -3.0f, 2.0f);
  const float want = float_at(evaluate_graph(g, {x})[0], 0);
  const float got = float_at(evaluate_graph(split, {x})[0], 0);
  EXPECT_NEAR(got, want, 1e-4 * 64 * 1024);
  EXPECT_NE(got, 0.0f);
}

TEST(SplitReductions, RowReductionsAndSmallReductionsStayWhole) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {256, 1024}).input("z", kF32, {4, 100}).output("rows").output("small");
  auto& rows = b.node("ReduceMax", {"x"}, {"rows"});
  OnnxModelBuilder::attr_ints(rows, "axes", {1});
  auto& small = b.node("ReduceMax", {"z"}, {"small"});
  OnnxModelBuilder::attr_int(small, "keepdims", 0);
  const Graph g = b.import_as("split_none");
  const Graph split = passes::split_reductions(g);
  EXPECT_EQ(op_named_like(split, "_partial"), nullptr) << to_string(split);
  EXPECT_EQ(split.ops.size(), g.ops.size());
}

}  // namespace
}  // namespace tilegraph
