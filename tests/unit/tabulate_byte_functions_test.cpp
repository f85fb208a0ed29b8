// tabulate_byte_functions: which elementwise chains become 256-entry table
// lookups, and that a lookup gives the chain's own values for every byte.
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "driver/pipeline.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;

constexpr int kU8 = 2, kI8 = 3;

// Is op a lookup `table[...]` into a constant of 256 elements?
bool is_lookup(const Graph& g, const Op& op) {
  if (op.body->kind != ExprKind::kLoad) return false;
  const Tensor& t = g.tensor(op.inputs.at(static_cast<size_t>(op.body->int_value)));
  return t.kind == TensorKind::kConstant && t.shape == Shape{256};
}

// x (8-bit, [rows, 256]) -> DequantizeLinear -> Erf -> QuantizeLinear -> y (uint8).
OnnxModelBuilder quantized_erf(int x_type, int x_zero, int64_t rows) {
  OnnxModelBuilder b(13);
  b.input("x", x_type, {rows, 256}).output("y", kU8);
  b.initializer_f("sx", {}, {0.03f});
  b.initializer_8bit("zx", x_type, {}, {x_zero});
  b.initializer_f("sy", {}, {1.0f / 127});
  b.initializer_8bit("zy", kU8, {}, {128});
  b.node("DequantizeLinear", {"x", "sx", "zx"}, {"f"});
  b.node("Erf", {"f"}, {"e"});
  b.node("QuantizeLinear", {"e", "sy", "zy"}, {"y"});
  return b;
}

// Every byte value, each row the same ramp.
std::vector<uint8_t> every_byte(int64_t rows) {
  std::vector<uint8_t> x(static_cast<size_t>(rows) * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i % 256);
  return x;
}

void expect_one_lookup_with_the_chains_values(int x_type, int x_zero, const std::string& name) {
  const Graph g = quantized_erf(x_type, x_zero, 8).import_as(name);
  const Graph opt = driver::optimize_graph(driver::CompileOptions{}, g);
  ASSERT_EQ(opt.ops.size(), 1u) << to_string(opt);
  EXPECT_TRUE(is_lookup(opt, opt.ops[0])) << to_string(opt);
  const std::vector<uint8_t> x = every_byte(8);
  const auto want = evaluate_graph(g, {x});
  const auto got = evaluate_graph(opt, {x});
  EXPECT_EQ(got, want);
  // The chain is not constant: the table has many distinct values.
  std::set<uint8_t> distinct(got[0].begin(), got[0].end());
  EXPECT_GT(distinct.size(), 100u);
}

TEST(TabulateByteFunctions, QuantizedErfOfUint8BecomesOneLookup) {
  expect_one_lookup_with_the_chains_values(kU8, 128, "tab_erf_u8");
}

TEST(TabulateByteFunctions, QuantizedErfOfInt8IndexesTheTableFromMinus128) {
  expect_one_lookup_with_the_chains_values(kI8, -3, "tab_erf_i8");
}

TEST(TabulateByteFunctions, RequantizingToTheSameScaleIsACopyNotATable) {
  OnnxModelBuilder b(13);
  b.input("x", kU8, {8, 256}).output("y", kU8);
  b.initializer_f("s", {}, {0.03f});
  b.initializer_8bit("z", kU8, {}, {128});
  b.initializer_i64("shape", {2}, {16, 128});
  b.node("DequantizeLinear", {"x", "s", "z"}, {"f"});
  b.node("Reshape", {"f", "shape"}, {"r"});
  b.node("QuantizeLinear", {"r", "s", "z"}, {"y"});
  const Graph g = b.import_as("tab_identity");
  const Graph opt = driver::optimize_graph(driver::CompileOptions{}, g);
  for (const Tensor& t : opt.tensors) EXPECT_NE(t.shape, Shape{256}) << to_string(opt);
  ASSERT_EQ(opt.ops.size(), 1u) << to_string(opt);
  EXPECT_EQ(opt.ops[0].body->kind, ExprKind::kLoad) << to_string(opt);
  const std::vector<uint8_t> x = every_byte(8);
  EXPECT_EQ(evaluate_graph(opt, {x}), evaluate_graph(g, {x}));
}

TEST(TabulateByteFunctions, ChainsFedByTwoActivationsAreLeftAlone) {
  OnnxModelBuilder b(13);
  b.input("a", kU8, {8, 256}).input("c", kU8, {8, 256}).output("y", kU8);
  b.initializer_f("s", {}, {0.03f});
  b.initializer_8bit("z", kU8, {}, {128});
  b.node("DequantizeLinear", {"a", "s", "z"}, {"fa"});
  b.node("DequantizeLinear", {"c", "s", "z"}, {"fc"});
  b.node("Mul", {"fa", "fc"}, {"m"});
  b.node("Erf", {"m"}, {"e"});
  b.node("QuantizeLinear", {"e", "s", "z"}, {"y"});
  const Graph opt = driver::optimize_graph(driver::CompileOptions{}, b.import_as("tab_two_inputs"));
  for (const Op& op : opt.ops) EXPECT_FALSE(is_lookup(opt, op)) << to_string(opt);
}

TEST(TabulateByteFunctions, TensorsSmallerThanATableAreLeftAlone) {
  const Graph small = quantized_erf(kU8, 128, 2).import_as("tab_small");  // 512 elements
  const Graph opt = driver::optimize_graph(driver::CompileOptions{}, small);
  for (const Op& op : opt.ops) EXPECT_FALSE(is_lookup(opt, op)) << to_string(opt);
}

}  // namespace
}  // namespace tilegraph
