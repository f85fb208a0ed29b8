// to_half_precision (tune --fp16): which tensors become half, how bodies
// convert at the graph's float32 edges, and that the half graph computes the
// float32 graph's values to half precision.
#include "compiler/passes/to_half_precision.h"

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

constexpr int kF32 = 1;
constexpr int kI64 = 7;

// x[2,8] @ W[8,4] (W = k/3, not representable in half), then Softmax.
Graph matmul_softmax() {
  OnnxModelBuilder b(13);
  std::vector<float> w;
  for (int k = 0; k < 32; ++k) w.push_back(static_cast<float>(k % 7 - 3) / 3.0f);
  b.input("x", kF32, {2, 8}).initializer_f("W", {8, 4}, w).output("y");
  b.node("MatMul", {"x", "W"}, {"h"});
  b.node("Softmax", {"h"}, {"y"});
  return b.import_as("half_matmul_softmax");
}

std::vector<float> floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(ToHalfPrecision, WeightsAndActivationsBecomeHalfAndGraphEdgesStayFloat) {
  const Graph g = matmul_softmax();
  const Graph h = passes::to_half_precision(g);
  verify(h);
  EXPECT_EQ(h.tensor(h.inputs[0]).dtype, DType::kF32);
  EXPECT_EQ(h.tensor(h.outputs[0]).dtype, DType::kF32);
  int constants = 0, intermediates = 0;
  for (const Tensor& t : h.tensors) {
    if (t.kind == TensorKind::kInput || t.name == "y") continue;
    if (t.dtype == DType::kF32) ADD_FAILURE() << t.name << " is still float32";
    if (t.kind == TensorKind::kConstant && t.name == "W") {
      ++constants;
      ASSERT_EQ(t.data->size(), 32u * 2);
      // W[0][1] = -2/3: the nearest half is -0.66650390625 (0xB955).
      EXPECT_DOUBLE_EQ(t.value_as_double(1), -0.66650390625);
    }
    if (t.kind == TensorKind::kIntermediate) ++intermediates;
  }
  EXPECT_EQ(constants, 1);
  EXPECT_GE(intermediates, 1);  // the matmul's result at least
  // The op reading the float32 input rounds it to half.
  const Op& matmul = h.ops.front();
  bool rounds_input = false;
  visit(matmul.body, [&](const Expr& e) {
    rounds_input |= e->kind == ExprKind::kCast && e->dtype == DType::kF16 && e->args[0]->kind == ExprKind::kLoad &&
                    e->args[0]->dtype == DType::kF32;
  });
  EXPECT_TRUE(rounds_input) << to_string(h);
}

TEST(ToHalfPrecision, ComputesTheFloatGraphToHalfPrecision) {
  const Graph g = matmul_softmax();
  const Graph h = passes::to_half_precision(g);
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1.7f * static_cast<float>(i)) * 2.0f;
  std::vector<uint8_t> x_bytes(x.size() * 4);
  std::memcpy(x_bytes.data(), x.data(), x_bytes.size());
  const std::vector<float> want = floats(evaluate_graph(g, {x_bytes})[0]);
  const std::vector<float> got = floats(evaluate_graph(h, {x_bytes})[0]);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  EXPECT_GT(worst, 0.0) << "nothing was rounded";
  EXPECT_LT(worst, 5e-3);
}

TEST(ToHalfPrecision, GraphsWithoutFloat32AreUnchanged) {
  OnnxModelBuilder b(13);
  b.input("a", kI64, {4}).input("b", kI64, {4}).output("c", kI64);
  b.node("Add", {"a", "b"}, {"t"});
  b.node("Mul", {"t", "b"}, {"c"});
  const Graph g = b.import_as("half_ints");
  EXPECT_EQ(to_string(passes::to_half_precision(g)), to_string(g));
}

}  // namespace
}  // namespace tilegraph
