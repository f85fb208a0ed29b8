// Reduction and normalization lowerings (frontends/onnx/ops/reduction.cpp,
// normalization.cpp): small models imported and run with the reference
// interpreter, checked against hand-computed values, plus the user errors.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "frontends/onnx/tensor_proto.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;
constexpr int kFloat = 1, kInt64 = 7;

using testing::bytes_of;
using testing::bytes_of_i64;
using Result = testing::LoweredModel;

Result run(const OnnxModelBuilder& b, const std::string& name,
           const std::vector<std::vector<uint8_t>>& inputs) {
  return testing::run_lowered(b, testing::test_model_path("reduction_ops", name), inputs);
}

std::string import_error(const OnnxModelBuilder& b, const std::string& name) {
  return testing::import_error_of(b, testing::test_model_path("reduction_ops", name));
}

std::string model_path(const std::string& name) { return testing::test_model_path("reduction_ops", name); }

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(FrontendReductionOps, SoftmaxOfLargeValuesIsFiniteAndSumsToOne) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {2, 3}).output("y");
  b.node("Softmax", {"x"}, {"y"});
  Result r = run(b, "softmax_large", {bytes_of({1000, 1001, 1002, -1000, -1000, 50000})});
  const auto& y = r.outputs[0];
  for (double v : y) EXPECT_TRUE(std::isfinite(v));
  // exp(-2), exp(-1), 1 normalized.
  const double z = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  expect_near_all(y, {std::exp(-2.0) / z, std::exp(-1.0) / z, 1.0 / z, 0, 0, 1}, 1e-6);
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0, 1e-6);
}

TEST(FrontendReductionOps, LogSoftmaxStaysFiniteForVeryNegativeProbabilities) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {1, 3}).output("y");
  b.node("LogSoftmax", {"x"}, {"y"});
  Result r = run(b, "log_softmax_large", {bytes_of({0, 1000, 2000})});
  // log softmax(x) = x - 2000 - log(1 + e^-1000 + e^-2000) = x - 2000 (to float precision).
  expect_near_all(r.outputs[0], {-2000, -1000, 0}, 1e-3);
}

TEST(FrontendReductionOps, SoftmaxBeforeOpset13CoercesTo2D) {
  // Opset 11, axis=1 on [1, 2, 2]: one softmax over the 4 trailing elements.
  OnnxModelBuilder b(11);
  b.input("x", kFloat, {1, 2, 2}).output("y");
  b.node("Softmax", {"x"}, {"y"});
  Result r = run(b, "softmax_opset11", {bytes_of({0, 0, 0, 0})});
  expect_near_all(r.outputs[0], {0.25, 0.25, 0.25, 0.25}, 1e-7);
}

TEST(FrontendReductionOps, HardmaxMarksTheFirstMaximum) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {2, 4}).output("y");
  b.node("Hardmax", {"x"}, {"y"});
  Result r = run(b, "hardmax", {bytes_of({1, 7, 7, 2, -5, -1, -3, -1})});
  expect_near_all(r.outputs[0], {0, 1, 0, 0, 0, 1, 0, 0}, 0);
}

TEST(FrontendReductionOps, LayerNormOfAKnownVectorWithStatistics) {
  OnnxModelBuilder b(17);
  b.input("x", kFloat, {1, 4}).output("y").output("mean").output("inv_std");
  b.initializer_f("scale", {4}, {1, 2, 1, 1});
  b.initializer_f("bias", {4}, {0, 0, 0, 10});
  auto& n = b.node("LayerNormalization", {"x", "scale", "bias"}, {"y", "mean", "inv_std"});
  OnnxModelBuilder::attr_float(n, "epsilon", 0.0f);
  // Offset by 1e4: a one-pass E[x^2] - E[x]^2 in float32 would lose the variance.
  Result r = run(b, "layer_norm", {bytes_of({10001, 10002, 10003, 10004})});
  const double s = 1.0 / std::sqrt(1.25);  // population variance of 1, 2, 3, 4
  expect_near_all(r.outputs[0], {-1.5 * s, -0.5 * s * 2, 0.5 * s, 1.5 * s + 10}, 1e-4);
  expect_near_all(r.outputs[1], {10002.5}, 1e-3);
  expect_near_all(r.outputs[2], {s}, 1e-4);
  EXPECT_EQ(r.shape(1), (Shape{1, 1}));
}

TEST(FrontendReductionOps, BatchNormFoldsItsConstantFactor) {
  OnnxModelBuilder b(15);
  b.input("x", kFloat, {1, 2, 2}).output("y");
  b.initializer_f("scale", {2}, {2, 1});
  b.initializer_f("bias", {2}, {1, 0});
  b.initializer_f("mean", {2}, {1, -1});
  b.initializer_f("var", {2}, {4, 0.25f});
  auto& n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
  OnnxModelBuilder::attr_float(n, "epsilon", 0.0f);
  Result r = run(b, "batch_norm", {bytes_of({1, 3, 0, 1})});
  // channel 0: (x - 1) * 2 / 2 + 1; channel 1: (x + 1) * 1 / 0.5.
  expect_near_all(r.outputs[0], {1, 3, 2, 4}, 1e-6);
  // Reshapes and the factor fold at import; one elementwise op remains.
  EXPECT_EQ(r.graph.ops.size(), 1u);
}

TEST(FrontendReductionOps, InstanceNormStandardizesEachChannel) {
  OnnxModelBuilder b(6);
  b.input("x", kFloat, {1, 2, 2}).output("y");
  b.initializer_f("scale", {2}, {1, 3});
  b.initializer_f("bias", {2}, {0, 1});
  auto& n = b.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"});
  OnnxModelBuilder::attr_float(n, "epsilon", 0.0f);
  Result r = run(b, "instance_norm", {bytes_of({1, 3, 10, 30})});
  expect_near_all(r.outputs[0], {-1, 1, -2, 4}, 1e-5);
}

TEST(FrontendReductionOps, GroupNormPerGroupAndPerChannelParameters) {
  // x: N=1, C=4, 2 groups of 2 channels, 1 spatial element each.
  const std::vector<float> x = {1, 3, 5, 9};
  {
    OnnxModelBuilder b(18);
    b.input("x", kFloat, {1, 4, 1}).output("y");
    b.initializer_f("scale", {2}, {1, 2});
    b.initializer_f("bias", {2}, {0, 1});
    auto& n = b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
    OnnxModelBuilder::attr_int(n, "num_groups", 2);
    OnnxModelBuilder::attr_float(n, "epsilon", 0.0f);
    Result r = run(b, "group_norm_18", {bytes_of(x)});
    expect_near_all(r.outputs[0], {-1, 1, -1, 3}, 1e-5);
  }
  {
    OnnxModelBuilder b(21);
    b.input("x", kFloat, {1, 4, 1}).output("y");
    b.initializer_f("scale", {4}, {1, 2, 3, 4});
    b.initializer_f("bias", {4}, {0, 0, 0, 1});
    auto& n = b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
    OnnxModelBuilder::attr_int(n, "num_groups", 2);
    OnnxModelBuilder::attr_float(n, "epsilon", 0.0f);
    Result r = run(b, "group_norm_21", {bytes_of(x)});
    expect_near_all(r.outputs[0], {-1, 2, -3, 5}, 1e-5);
  }
}

TEST(FrontendReductionOps, LpNormalizationAndMeanVarianceNormalization) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {2, 2, 1, 1}).output("l2").output("l1").output("mvn");
  b.node("LpNormalization", {"x"}, {"l2"});
  auto& l1 = b.node("LpNormalization", {"x"}, {"l1"});
  OnnxModelBuilder::attr_int(l1, "p", 1);
  OnnxModelBuilder::attr_int(l1, "axis", 1);
  b.node("MeanVarianceNormalization", {"x"}, {"mvn"});
  Result r = run(b, "lp_mvn", {bytes_of({3, -4, 1, 1})});
  expect_near_all(r.outputs[0], {1, -1, 1, 1}, 1e-6);  // each norm is over one element
  expect_near_all(r.outputs[1], {3.0 / 7, -4.0 / 7, 0.5, 0.5}, 1e-6);
  // MVN over N, H, W: channel 0 holds {3, 1}, channel 1 {-4, 1}.
  expect_near_all(r.outputs[2], {1, -1, -1, 1}, 1e-6);
}

TEST(FrontendReductionOps, ReduceFamilyValues) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {2, 3}).output("mean").output("l2").output("lse").output("prod").output("min");
  auto axes1 = [&](onnx::NodeProto& n) { OnnxModelBuilder::attr_ints(n, "axes", {1}); };
  axes1(b.node("ReduceMean", {"x"}, {"mean"}));
  auto& l2 = b.node("ReduceL2", {"x"}, {"l2"});
  axes1(l2);
  OnnxModelBuilder::attr_int(l2, "keepdims", 0);
  axes1(b.node("ReduceLogSumExp", {"x"}, {"lse"}));
  b.node("ReduceProd", {"x"}, {"prod"});
  axes1(b.node("ReduceMin", {"x"}, {"min"}));
  Result r = run(b, "reduce_family", {bytes_of({1, 2, 6, 1000, 1000, 1000})});
  expect_near_all(r.outputs[0], {3, 1000}, 1e-4);
  EXPECT_EQ(r.shape(1), (Shape{2}));
  expect_near_all(r.outputs[1], {std::sqrt(41.0), std::sqrt(3e6)}, 1e-2);
  // Stable: log(3 e^1000) = 1000 + log 3 without overflowing exp.
  const double lse0 = 6 + std::log(std::exp(-5.0) + std::exp(-4.0) + 1.0);
  expect_near_all(r.outputs[2], {lse0, 1000 + std::log(3.0)}, 1e-3);
  EXPECT_EQ(r.shape(3), (Shape{1, 1}));
  expect_near_all(r.outputs[3], {12e9}, 1e4);
  expect_near_all(r.outputs[4], {1, 1000}, 0);
}

TEST(FrontendReductionOps, ReduceLogSumExpOfAllNegativeInfinityIsNegativeInfinity) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {2}).output("y");
  b.node("ReduceLogSumExp", {"x"}, {"y"});
  const float inf = std::numeric_limits<float>::infinity();
  Result r = run(b, "lse_neg_inf", {bytes_of({-inf, -inf})});
  EXPECT_EQ(r.outputs[0][0], -std::numeric_limits<double>::infinity());
}

TEST(FrontendReductionOps, Opset18AxesInputAndNoopWithEmptyAxes) {
  OnnxModelBuilder b(18);
  b.input("x", kFloat, {2, 2}).output("max").output("same");
  b.initializer_i64("axes", {1}, {0});
  b.initializer_i64("no_axes", {0}, {});
  b.node("ReduceMax", {"x", "axes"}, {"max"});
  auto& noop = b.node("ReduceMax", {"x", "no_axes"}, {"same"});
  OnnxModelBuilder::attr_int(noop, "noop_with_empty_axes", 1);
  Result r = run(b, "reduce_opset18", {bytes_of({1, 5, 4, 2})});
  expect_near_all(r.outputs[0], {4, 5}, 0);
  EXPECT_EQ(r.shape(0), (Shape{1, 2}));
  expect_near_all(r.outputs[1], {1, 5, 4, 2}, 0);
}

TEST(FrontendReductionOps, ArgMaxAndArgMinWithTies) {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {1, 5}).output("max_first", kInt64).output("max_last", kInt64)
      .output("min_last", kInt64);
  auto& first = b.node("ArgMax", {"x"}, {"max_first"});
  OnnxModelBuilder::attr_int(first, "axis", 1);
  auto& last = b.node("ArgMax", {"x"}, {"max_last"});
  OnnxModelBuilder::attr_int(last, "axis", -1);
  OnnxModelBuilder::attr_int(last, "select_last_index", 1);
  OnnxModelBuilder::attr_int(last, "keepdims", 0);
  auto& min_last = b.node("ArgMin", {"x"}, {"min_last"});
  OnnxModelBuilder::attr_int(min_last, "axis", 1);
  OnnxModelBuilder::attr_int(min_last, "select_last_index", 1);
  Result r = run(b, "arg_ties", {bytes_of({0, 3, -1, 3, -1})});
  expect_near_all(r.outputs[0], {1}, 0);
  EXPECT_EQ(r.shape(0), (Shape{1, 1}));
  expect_near_all(r.outputs[1], {3}, 0);
  EXPECT_EQ(r.shape(1), (Shape{1}));
  expect_near_all(r.outputs[2], {4}, 0);
  EXPECT_EQ(r.graph.tensor(r.graph.outputs[0]).dtype, DType::kI64);
}

TEST(FrontendReductionOps, CumSumConstantAndRuntimeAxis) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [[1, 2, 3], [4, 5, 6]]
  {
    OnnxModelBuilder b(14);
    b.input("x", kFloat, {2, 3}).output("y");
    b.initializer_i64("axis", {}, {1});
    auto& n = b.node("CumSum", {"x", "axis"}, {"y"});
    OnnxModelBuilder::attr_int(n, "exclusive", 1);
    OnnxModelBuilder::attr_int(n, "reverse", 1);
    Result r = run(b, "cumsum_const", {bytes_of(x)});
    expect_near_all(r.outputs[0], {5, 3, 0, 11, 6, 0}, 0);
  }
  {
    OnnxModelBuilder b(14);
    b.input("x", kFloat, {2, 3}).input("axis", kInt64, {}).output("y");
    b.node("CumSum", {"x", "axis"}, {"y"});
    Result rows = run(b, "cumsum_runtime", {bytes_of(x), bytes_of_i64({0})});
    expect_near_all(rows.outputs[0], {1, 2, 3, 5, 7, 9}, 0);
    Result cols = run(b, "cumsum_runtime", {bytes_of(x), bytes_of_i64({-1})});
    expect_near_all(cols.outputs[0], {1, 3, 6, 4, 9, 15}, 0);
  }
}

TEST(FrontendReductionOps, InvalidAttributesAreUserErrorsNamingTheNode) {
  {
    OnnxModelBuilder b(13);
    b.input("x", kFloat, {2, 2}).input("axes", kInt64, {1}).output("y");
    b.node("ReduceSum", {"x", "axes"}, {"y"}, "sum_node");
    const std::string e = import_error(b, "err_axes");
    EXPECT_NE(e.find("node 'sum_node' (ReduceSum, opset 13)"), std::string::npos) << e;
    EXPECT_NE(e.find("must be a constant"), std::string::npos) << e;
  }
  {
    OnnxModelBuilder b(15);
    b.input("x", kFloat, {1, 2, 2}).output("y");
    for (const char* p : {"s", "b", "m", "v"}) b.initializer_f(p, {2}, {1, 1});
    auto& n = b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
    OnnxModelBuilder::attr_int(n, "training_mode", 1);
    EXPECT_NE(import_error(b, "err_bn").find("node 'bn' (BatchNormalization, opset 15): training_mode"),
              std::string::npos);
  }
  {
    OnnxModelBuilder b(18);
    b.input("x", kFloat, {1, 6, 2}).output("y");
    b.initializer_f("s", {4}, {1, 1, 1, 1});
    auto& n = b.node("GroupNormalization", {"x", "s", "s"}, {"y"}, "gn");
    OnnxModelBuilder::attr_int(n, "num_groups", 4);
    EXPECT_NE(import_error(b, "err_gn").find("node 'gn' (GroupNormalization, opset 18): num_groups 4"),
              std::string::npos);
  }
  {
    OnnxModelBuilder b(13);
    b.input("x", kFloat, {2, 2}).output("y");
    OnnxModelBuilder::attr_int(b.node("LpNormalization", {"x"}, {"y"}, "lp"), "p", 3);
    EXPECT_NE(import_error(b, "err_lp").find("node 'lp' (LpNormalization, opset 13): p must be 1 or 2"),
              std::string::npos);
  }
  {
    OnnxModelBuilder b(13);
    b.input("x", kFloat, {2, 2}).output("y");
    OnnxModelBuilder::attr_int(b.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 2);
    EXPECT_NE(import_error(b, "err_softmax").find("node 'sm' (Softmax, opset 13): axis 2"),
              std::string::npos);
  }
  {
    OnnxModelBuilder b(13);
    b.input("x", kFloat, {2, 2}).output("y");
    OnnxModelBuilder::attr_ints(b.node("ReduceMax", {"x"}, {"y"}, "dup"), "axes", {1, -1});
    EXPECT_NE(import_error(b, "err_dup").find("node 'dup' (ReduceMax, opset 13): axes lists axis -1 twice"),
              std::string::npos);
  }
}

template <typename Proto>
Proto read_proto(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  Proto proto;
  EXPECT_TRUE(proto.ParseFromIstream(&in)) << p;
  return proto;
}

// The node tests that feed ReduceSum's axes as a graph input are skip-listed
// (the axes decide the output shape). Run them with the axes frozen into an
// initializer, as a model exporter would give them.
TEST(FrontendReductionOps, ReduceSumNodeTestsWithFrozenAxes) {
  const std::filesystem::path root = "/usr/share/libonnx-testdata/data/node";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  for (const char* name :
       {"test_reduce_sum_do_not_keepdims_example", "test_reduce_sum_do_not_keepdims_random",
        "test_reduce_sum_keepdims_example", "test_reduce_sum_keepdims_random",
        "test_reduce_sum_negative_axes_keepdims_example"}) {
    SCOPED_TRACE(name);
    const std::filesystem::path dir = root / name, data = dir / "test_data_set_0";
    onnx::ModelProto model = read_proto<onnx::ModelProto>(dir / "model.onnx");
    onnx::GraphProto* graph = model.mutable_graph();
    ASSERT_EQ(graph->input_size(), 2);
    ASSERT_EQ(graph->input(1).name(), "axes");
    onnx::TensorProto axes = read_proto<onnx::TensorProto>(data / "input_1.pb");
    axes.set_name("axes");
    *graph->add_initializer() = axes;
    graph->mutable_input()->RemoveLast();
    const std::string path = model_path(std::string("frozen_") + name);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << model.SerializeAsString();

    Graph g = onnx_frontend::import_model(path);
    verify(g);
    const Tensor x =
        onnx_frontend::tensor_from_proto(read_proto<onnx::TensorProto>(data / "input_0.pb"), "", "x");
    const auto got = evaluate_graph(g, {*x.data});
    const Tensor want =
        onnx_frontend::tensor_from_proto(read_proto<onnx::TensorProto>(data / "output_0.pb"), "", "y");
    const Tensor& out = g.tensor(g.outputs[0]);
    ASSERT_EQ(out.shape, want.shape);
    for (int64_t i = 0; i < num_elements(want.shape); ++i) {
      const double v = scalar_as_double(read_element(got[0].data(), out.dtype, i), out.dtype);
      EXPECT_NEAR(v, want.value_as_double(i), 1e-4 + 1e-4 * std::fabs(want.value_as_double(i)));
    }
  }
}

}  // namespace
}  // namespace tilegraph
