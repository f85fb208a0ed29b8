// Security (issue 13): integer division never traps and runtime indices are
// checked. The rule (compiler/ir/expr.h): x / 0 = 0, x % 0 = 0, MIN / -1 = MIN,
// MIN % -1 = 0, for Div/Rem (truncating) and FloorDiv/FloorMod alike; the
// interpreter and constant folding compute it, and a CheckIndex out of range
// is a user error naming the ONNX node.
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "compiler/ir/interval.h"
#include "compiler/ir/scalar.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

struct Case {
  BinaryOp op;
  int64_t a, b, expected;
};

constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();

// The rule, and ordinary values for contrast (truncating vs flooring).
std::vector<Case> cases(int64_t min) {
  std::vector<Case> c;
  for (BinaryOp op : {BinaryOp::kDiv, BinaryOp::kRem, BinaryOp::kFloorDiv, BinaryOp::kFloorMod}) {
    c.push_back({op, 7, 0, 0});
    c.push_back({op, -7, 0, 0});
    c.push_back({op, min, 0, 0});
    c.push_back({op, 0, 0, 0});
    const bool div = op == BinaryOp::kDiv || op == BinaryOp::kFloorDiv;
    c.push_back({op, min, -1, div ? min : 0});
    c.push_back({op, 5, -1, div ? -5 : 0});
  }
  c.push_back({BinaryOp::kDiv, -7, 2, -3});
  c.push_back({BinaryOp::kFloorDiv, -7, 2, -4});
  c.push_back({BinaryOp::kRem, -7, 2, -1});
  c.push_back({BinaryOp::kFloorMod, -7, 2, 1});
  c.push_back({BinaryOp::kRem, 5, -2, 1});
  c.push_back({BinaryOp::kFloorMod, 5, -2, -1});
  return c;
}

TEST(IntegerDivisionRule, InterpreterScalars) {
  for (const auto& [t, min] : {std::pair{DType::kI32, kMin32}, std::pair{DType::kI64, kMin64}}) {
    for (const Case& c : cases(min)) {
      const Scalar r = scalar_binary(c.op, t, Scalar{0, c.a}, Scalar{0, c.b});
      EXPECT_EQ(r.i, c.expected) << binary_op_name(c.op) << "(" << c.a << ", " << c.b << ") " << dtype_name(t);
    }
  }
  // int8 wraps the same way: -128 / -1 = -128.
  EXPECT_EQ(scalar_binary(BinaryOp::kDiv, DType::kI8, Scalar{0, -128}, Scalar{0, -1}).i, -128);
  // uint64 divides unsigned: 2^64 - 2 (bit pattern -2) / 2 = 2^63 - 1.
  EXPECT_EQ(scalar_binary(BinaryOp::kDiv, DType::kU64, Scalar{0, -2}, Scalar{0, 2}).i,
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(scalar_binary(BinaryOp::kRem, DType::kU64, Scalar{0, -1}, Scalar{0, 0}).i, 0);
}

TEST(IntegerDivisionRule, ConstantFoldingAgrees) {
  for (const auto& [t, min] : {std::pair{DType::kI32, kMin32}, std::pair{DType::kI64, kMin64}}) {
    for (const Case& c : cases(min)) {
      const Expr folded = binary(c.op, int_imm(c.a, t), int_imm(c.b, t));
      int64_t v = 0;
      ASSERT_TRUE(is_const_int(folded, &v)) << to_string(folded);
      EXPECT_EQ(v, c.expected) << binary_op_name(c.op) << "(" << c.a << ", " << c.b << ") " << dtype_name(t);
    }
  }
}

TEST(IntegerDivisionRule, OnnxDivAndModThroughTheInterpreter) {
  // Div, Mod (fmod 0: floor) and Mod (fmod 1: truncating) on int64 inputs.
  testing::OnnxModelBuilder b(17);
  b.input("a", onnx::TensorProto::INT64, {4}).input("b", onnx::TensorProto::INT64, {4});
  b.output("q", onnx::TensorProto::INT64).output("m", onnx::TensorProto::INT64).output("f", onnx::TensorProto::INT64);
  b.node("Div", {"a", "b"}, {"q"});
  b.node("Mod", {"a", "b"}, {"m"});
  testing::OnnxModelBuilder::attr_int(b.node("Mod", {"a", "b"}, {"f"}), "fmod", 1);
  const Graph g = b.import_as("traps_div_mod");
  const auto outs = evaluate_graph(g, {testing::bytes_of_i64({7, kMin64, -7, 5}),
                                       testing::bytes_of_i64({0, -1, 2, -2})});
  auto values = [&](size_t o) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < 4; ++i) v.push_back(read_element(outs[o].data(), DType::kI64, i).i);
    return v;
  };
  EXPECT_EQ(values(0), (std::vector<int64_t>{0, kMin64, -3, -2}));
  EXPECT_EQ(values(1), (std::vector<int64_t>{0, 0, 1, -1}));
  EXPECT_EQ(values(2), (std::vector<int64_t>{0, 0, -1, 1}));
}

TEST(CheckIndex, WrapsFoldsAndBounds) {
  EXPECT_TRUE(same_expr(check_index(int_imm(-2), 5, 0), int_imm(3)));
  EXPECT_TRUE(same_expr(check_index(int_imm(4), 5, 0), int_imm(4)));
  // Out of range: kept, so the run reports it; its bounds stay inside the axis.
  const Expr bad = check_index(int_imm(5), 5, 0);
  EXPECT_EQ(bad->kind, ExprKind::kCheckIndex);
  const Interval r = bound_of(check_index(load(0, DType::kI64, {var(0)}), 5, 0), {});
  EXPECT_EQ(r.lo, 0);
  EXPECT_EQ(r.hi, 4);
}

TEST(CheckIndex, InterpreterNamesTheNode) {
  testing::OnnxModelBuilder b(17);
  b.input("data", onnx::TensorProto::FLOAT, {5, 2}).input("idx", onnx::TensorProto::INT64, {2}).output("y");
  b.node("Gather", {"data", "idx"}, {"y"}, "emb");
  const Graph g = b.import_as("traps_gather");
  ASSERT_EQ(g.index_checks.size(), 1u);
  const std::vector<uint8_t> data = testing::bytes_of(std::vector<float>(10, 1.0f));
  EXPECT_NO_THROW(evaluate_graph(g, {data, testing::bytes_of_i64({-5, 4})}));
  try {
    evaluate_graph(g, {data, testing::bytes_of_i64({1, 7})});
    FAIL() << "no error for index 7";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "Gather node 'emb': index 7 out of range [-5, 5) for axis 0");
  }
  EXPECT_THROW(evaluate_graph(g, {data, testing::bytes_of_i64({-6, 0})}), UserError);
}

}  // namespace
}  // namespace tilegraph
