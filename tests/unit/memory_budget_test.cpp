// --memory-budget's pieces: the byte-size flag, the batch-independence check
// that decides whether a graph may run in micro-batches (and names the op
// that mixes batch elements), the micro-batch graph computing the same rows,
// and the search's candidates and peak accounting.

#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "compiler/passes/inline_index_maps.h"
#include "compiler/passes/split_batch.h"
#include "driver/memory_budget.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;
using testing::random_float_bytes;

constexpr int kF32 = 1;

TEST(MemoryBudget, ParsesByteCountsWithBinarySuffixes) {
  EXPECT_EQ(driver::parse_byte_size("4096"), 4096);
  EXPECT_EQ(driver::parse_byte_size("64K"), 64 << 10);
  EXPECT_EQ(driver::parse_byte_size("64M"), int64_t{64} << 20);
  EXPECT_EQ(driver::parse_byte_size("64m"), int64_t{64} << 20);
  EXPECT_EQ(driver::parse_byte_size("512MB"), int64_t{512} << 20);
  EXPECT_EQ(driver::parse_byte_size("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(driver::parse_byte_size("1.5G"), int64_t{3} << 29);
  EXPECT_EQ(driver::parse_byte_size("1T"), int64_t{1} << 40);
  EXPECT_EQ(driver::parse_byte_size("100B"), 100);
}

TEST(MemoryBudget, BadSizesAreOneLineErrorsNamingTheFlag) {
  for (const char* bad : {"", "12X", "0", "0.1", "-5M", "1.5.G", "M", ".", "64 M", "99999999999T"}) {
    try {
      driver::parse_byte_size(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--memory-budget '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(MemoryBudget, FormatsBytesForMessages) {
  EXPECT_EQ(driver::format_bytes(512), "512 B");
  EXPECT_EQ(driver::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(driver::format_bytes(int64_t{48} << 20), "48.0 MiB");
  EXPECT_EQ(driver::format_bytes(int64_t{3} << 29), "1.50 GiB");
}

TEST(MemoryBudget, CandidatesStartAtTheLargestDivisorWhoseArenaCouldFitAndEndAtOne) {
  driver::MemoryPeak untiled;
  untiled.arena = 8 << 20;
  untiled.weights = 1 << 20;
  EXPECT_EQ(driver::micro_batch_candidates(8, untiled, 3 << 20), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(driver::micro_batch_candidates(8, untiled, 4 << 20), (std::vector<int64_t>{4, 2, 1}));
  EXPECT_EQ(driver::micro_batch_candidates(6, untiled, 6 << 20), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(driver::micro_batch_candidates(8, untiled, 100), (std::vector<int64_t>{1}));
  EXPECT_EQ(driver::micro_batch_candidates(7, untiled, 100), (std::vector<int64_t>{1}));  // a prime batch
}

// A small conv net: Conv -> Relu -> MaxPool -> Flatten -> Gemm, batch 4.
Graph conv_net(const std::string& name) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {4, 2, 6, 6}).output("y");
  std::vector<float> w(3 * 2 * 3 * 3), fc(5 * 27);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < fc.size(); ++i) fc[i] = 0.05f * static_cast<float>(i % 11) - 0.25f;
  b.initializer_f("w", {3, 2, 3, 3}, w).initializer_f("fc", {5, 27}, fc);
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  OnnxModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = b.node("MaxPool", {"r"}, {"p"}, "pool");
  OnnxModelBuilder::attr_ints(pool, "kernel_shape", {2, 2});
  OnnxModelBuilder::attr_ints(pool, "strides", {2, 2});
  b.node("Flatten", {"p"}, {"f"}, "flatten");
  auto& gemm = b.node("Gemm", {"f", "fc"}, {"y"}, "fc");
  OnnxModelBuilder::attr_int(gemm, "transB", 1);
  return passes::inline_index_maps(b.import_as(name));
}

TEST(MemoryBudget, AConvNetSplitsAndItsMicroBatchComputesTheSameRows) {
  const Graph g = conv_net("budget_conv_net");
  const passes::BatchSplit split = passes::analyze_batch_split(g);
  ASSERT_TRUE(split.splits()) << split.blocker;
  EXPECT_EQ(split.batch, 4);
  const Graph micro = passes::split_batch(g, split, 2);
  EXPECT_EQ(micro.tensor(micro.inputs[0]).shape, (Shape{2, 2, 6, 6}));
  EXPECT_EQ(micro.tensor(micro.outputs[0]).shape, (Shape{2, 5}));
  verify(micro);
  const std::vector<uint8_t> x = random_float_bytes(4 * 2 * 6 * 6, 7, -1.0f, 1.0f);
  const std::vector<uint8_t> whole = evaluate_graph(g, {x})[0];
  const size_t in_half = x.size() / 2, out_half = whole.size() / 2;
  const std::vector<uint8_t> first(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(in_half));
  const std::vector<uint8_t> second(x.begin() + static_cast<std::ptrdiff_t>(in_half), x.end());
  EXPECT_EQ(evaluate_graph(micro, {first})[0], std::vector<uint8_t>(whole.begin(), whole.begin() + out_half));
  EXPECT_EQ(evaluate_graph(micro, {second})[0], std::vector<uint8_t>(whole.begin() + out_half, whole.end()));
  EXPECT_EQ(to_string(passes::split_batch(g, split, 4)), to_string(g)) << "the whole batch is the graph";
}

// The blocker of a graph of one node (op_type over x of shape dims).
std::string blocker_of(const std::string& name, std::vector<int64_t> dims, const std::string& op_type,
                       void (*attrs)(onnx::NodeProto&)) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, dims).output("y");
  auto& n = b.node(op_type, {"x"}, {"y"}, "culprit");
  if (attrs) attrs(n);
  return passes::analyze_batch_split(passes::inline_index_maps(b.import_as(name))).blocker;
}

TEST(MemoryBudget, OpsThatMixBatchElementsAreNamed) {
  const std::string sum = blocker_of("budget_max", {4, 3}, "ReduceMax", [](onnx::NodeProto& n) {
    OnnxModelBuilder::attr_ints(n, "axes", {0});
  });
  EXPECT_NE(sum.find("ONNX node 'culprit'"), std::string::npos) << sum;
  EXPECT_NE(sum.find("1x3"), std::string::npos) << sum;
  const std::string transpose = blocker_of("budget_transpose", {4, 4}, "Transpose", [](onnx::NodeProto& n) {
    OnnxModelBuilder::attr_ints(n, "perm", {1, 0});
  });
  EXPECT_NE(transpose.find("ONNX node 'culprit' reads 'x' at batch index v1"), std::string::npos) << transpose;
  const std::string softmax = blocker_of("budget_softmax", {4, 3}, "Softmax", [](onnx::NodeProto& n) {
    OnnxModelBuilder::attr_int(n, "axis", 0);
  });
  EXPECT_NE(softmax.find("ONNX node 'culprit'"), std::string::npos) << softmax;
  EXPECT_EQ(blocker_of("budget_relu", {4, 3}, "Relu", nullptr), "");
}

TEST(MemoryBudget, BatchOneHasNothingToSplit) {
  const std::string blocker = blocker_of("budget_batch_one", {1, 3}, "Relu", nullptr);
  EXPECT_NE(blocker.find("input 'x' has batch 1: nothing to split"), std::string::npos) << blocker;
}

TEST(MemoryBudget, InputsWithoutACommonBatchDoNotSplit) {
  OnnxModelBuilder b(13);
  b.input("a", kF32, {4, 3}).input("b", kF32, {2, 3}).output("y");
  b.node("Add", {"a", "a"}, {"y"});
  b.node("Relu", {"b"}, {"z"});
  const std::string blocker = passes::analyze_batch_split(b.import_as("budget_two_batches")).blocker;
  EXPECT_NE(blocker.find("input 'b' has shape 2x3"), std::string::npos) << blocker;
}

}  // namespace
}  // namespace tilegraph
