// QOperator quantization lowerings (frontends/onnx/ops/quantization.cpp,
// quantization_contrib.cpp) and the com.microsoft domain support in the
// importer (op_table, import.cpp): tiny models imported and run with the
// reference interpreter, against values computed by hand — rounding ties
// (half to even), saturation at both ends — or, where MLAS's FMA rounding
// decides a result, recorded from onnxruntime 1.23 (CPU, AVX2).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "frontends/onnx/op_table.h"
#include "scheduler/int_gemm.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;
constexpr int kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6;
constexpr const char* kMs = "com.microsoft";

template <typename T>
int onnx_type() {
  if constexpr (std::is_same_v<T, float>) return kFloat;
  if constexpr (std::is_same_v<T, uint8_t>) return kUint8;
  if constexpr (std::is_same_v<T, int8_t>) return kInt8;
  return kInt32;
}

// OnnxModelBuilder plus what these models need beyond it: typed
// initializers, contrib-domain nodes and the com.microsoft opset import.
class QuantModel {
 public:
  explicit QuantModel(int opset = 17) : b_(opset) {}
  OnnxModelBuilder& b() { return b_; }

  onnx::NodeProto& contrib(const std::string& op, std::vector<std::string> inputs,
                           std::vector<std::string> outputs) {
    onnx::NodeProto& n = b_.node(op, std::move(inputs), std::move(outputs));
    n.set_domain(kMs);
    return n;
  }

  template <typename T>
  QuantModel& init(const std::string& name, std::vector<int64_t> dims, std::vector<T> values) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx_type<T>());
    for (int64_t d : dims) t.add_dims(d);
    t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
    inits_.push_back(std::move(t));
    return *this;
  }
  template <typename T>
  QuantModel& scalar(const std::string& name, T value) {
    return init<T>(name, {}, {value});
  }

  // Leaves out the com.microsoft opset import.
  void without_contrib_import() { contrib_import_ = false; }

  onnx::ModelProto proto() const {
    onnx::ModelProto m = b_.model();
    if (contrib_import_) {
      auto* op = m.add_opset_import();
      op->set_domain(kMs);
      op->set_version(1);
    }
    for (const auto& t : inits_) *m.mutable_graph()->add_initializer() = t;
    return m;
  }
  Graph import() const {
    Graph g = onnx_frontend::import_model_bytes(proto().SerializeAsString(), "", "quant_test.onnx");
    verify(g);
    return g;
  }
  std::string import_error() const {
    try {
      import();
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }

 private:
  OnnxModelBuilder b_;
  std::vector<onnx::TensorProto> inits_;
  bool contrib_import_ = true;
};

template <typename T>
std::vector<uint8_t> bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Output `o` of the graph run on `inputs`, as T values.
template <typename T>
std::vector<T> run(const Graph& g, const std::vector<std::vector<uint8_t>>& inputs, size_t o = 0) {
  const auto raw = evaluate_graph(g, inputs);
  std::vector<T> out(raw[o].size() / sizeof(T));
  std::memcpy(out.data(), raw[o].data(), raw[o].size());
  return out;
}

std::vector<int> ints(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }
std::vector<int> ints(const std::vector<int8_t>& v) { return {v.begin(), v.end()}; }

// ---- the com.microsoft domain

TEST(QuantizationDomains, ContribOpsLookUpByDomainAndItsOpset) {
  using onnx_frontend::find_lowering;
  EXPECT_NE(find_lowering("QLinearAdd", 1, kMs), nullptr);
  EXPECT_NE(find_lowering("QGemm", 1, kMs), nullptr);
  EXPECT_EQ(find_lowering("QLinearAdd", 17), nullptr);      // not an ai.onnx op
  EXPECT_EQ(find_lowering("QLinearAdd", 0, kMs), nullptr);  // domain not imported
  EXPECT_EQ(find_lowering("Relu", 17, kMs), nullptr);       // no contrib Relu
  EXPECT_NE(find_lowering("QLinearConv", 10), nullptr);
  EXPECT_EQ(onnx_frontend::normalize_domain("ai.onnx"), "");
  const auto names = onnx_frontend::supported_op_types();
  EXPECT_NE(std::find(names.begin(), names.end(), "com.microsoft.QLinearSoftmax"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "QLinearSoftmax"), names.end());
}

TEST(QuantizationDomains, UnsupportedContribOpsAreListedByName) {
  QuantModel m;
  m.b().input("x", kUint8, {4}).output("y", kUint8);
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("z", 0);
  m.contrib("QLinearMystery", {"x", "s", "z"}, {"t"});
  m.b().node("QLinearAdd", {"t", "s", "z", "t", "s", "z", "s", "z"}, {"y"});  // default domain
  const std::string err = m.import_error();
  EXPECT_NE(err.find("2 unsupported node(s)"), std::string::npos) << err;
  EXPECT_NE(err.find("com.microsoft.QLinearMystery, opset 1"), std::string::npos) << err;
  EXPECT_NE(err.find("(QLinearAdd, opset 17)"), std::string::npos) << err;
}

TEST(QuantizationDomains, ContribOpNeedsItsDomainImported) {
  QuantModel m;
  m.b().input("x", kUint8, {2}).output("y", kUint8);
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("z", 0);
  m.contrib("QLinearAdd", {"x", "s", "z", "x", "s", "z", "s", "z"}, {"y"});
  m.without_contrib_import();
  const std::string err = m.import_error();
  EXPECT_NE(err.find("com.microsoft.QLinearAdd, opset 0"), std::string::npos) << err;
}

TEST(QuantizationDomains, AiOnnxSpelledOutIsTheDefaultDomain) {
  QuantModel m;
  m.b().input("x", kFloat, {3}).output("y");
  m.b().node("Relu", {"x"}, {"y"}).set_domain("ai.onnx");
  const Graph g = m.import();
  EXPECT_EQ(run<float>(g, {bytes<float>({-1, 0, 2})}), (std::vector<float>{0, 0, 2}));
}

TEST(QuantizationDomains, ContribErrorsNameTheDomain) {
  QuantModel m;
  m.b().input("x", kUint8, {2}).output("y", kUint8);
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("z", 0).scalar<int8_t>("zs", 0);
  m.contrib("QLinearAdd", {"x", "s", "zs", "x", "s", "z", "s", "z"}, {"y"});
  const std::string err = m.import_error();
  EXPECT_NE(err.find("(com.microsoft.QLinearAdd, opset 1)"), std::string::npos) << err;
  EXPECT_NE(err.find("A_zero_point"), std::string::npos) << err;
}

// ---- QLinearAdd

// c = sat(round(a * s_a / s_c + b * s_b / s_c + z_c)) for inputs of one shape.
template <typename T>
std::vector<int> qlinear_add(std::vector<T> a, std::vector<T> b, float sa, T za, float sb, T zb, float sc,
                             T zc, std::vector<int64_t> a_dims = {}, std::vector<int64_t> b_dims = {}) {
  if (a_dims.empty()) a_dims = {static_cast<int64_t>(a.size())};
  if (b_dims.empty()) b_dims = {static_cast<int64_t>(b.size())};
  QuantModel m;
  m.b().input("a", onnx_type<T>(), a_dims).input("b", onnx_type<T>(), b_dims).output("c", onnx_type<T>());
  m.scalar<float>("sa", sa);
  m.scalar<T>("za", za);
  m.scalar<float>("sb", sb);
  m.scalar<T>("zb", zb);
  m.scalar<float>("sc", sc);
  m.scalar<T>("zc", zc);
  m.contrib("QLinearAdd", {"a", "sa", "za", "b", "sb", "zb", "sc", "zc"}, {"c"});
  return ints(run<T>(m.import(), {bytes(a), bytes(b)}));
}

TEST(QLinearAdd, RoundsHalfToEvenAndSaturatesUint8) {
  // 0.5a + 0.5b + 10: 10.5 -> 10, 11.5 -> 12, 12.5 -> 12; 265 -> 255.
  EXPECT_EQ(qlinear_add<uint8_t>({1, 3, 5, 255, 0}, {0, 0, 0, 255, 0}, 0.5f, 0, 0.5f, 0, 1.0f, 10),
            (std::vector<int>{10, 12, 12, 255, 10}));
}

TEST(QLinearAdd, RoundsHalfToEvenAndSaturatesInt8) {
  // 0.5a + 0.5b - 10: -138 -> -128, -10.5 -> -10, -11.5 -> -12; zero points shift a and b.
  EXPECT_EQ(qlinear_add<int8_t>({-128, -1, -3, 127}, {-128, 0, 0, 127}, 0.5f, 0, 0.5f, 0, 1.0f, -10),
            (std::vector<int>{-128, -10, -12, 117}));
  EXPECT_EQ(qlinear_add<int8_t>({10, 20}, {5, 5}, 1.0f, 10, 1.0f, 5, 1.0f, 0), (std::vector<int>{0, 10}));
}

TEST(QLinearAdd, FusedMultiplyAddRoundingAsOnnxruntime) {
  // MLAS's AVX2 kernel rounds a * r_a + (b * r_b + F) with FMAs: 47 (separate
  // roundings would give 46). Recorded from onnxruntime.
  EXPECT_EQ(qlinear_add<uint8_t>({127, 127}, {137, 137}, 0.25f, 86, 0.2f, 255, 0.3f, 91),
            (std::vector<int>{47, 47}));
}

TEST(QLinearAdd, BroadcastScalarOperandGoesSecondAsInOnnxruntime) {
  // The same values; when A is one value per innermost span (A [2,1] against
  // B [2,2]) onnxruntime hands B to MLAS first, which rounds to 95 instead of
  // 94. Recorded from onnxruntime.
  EXPECT_EQ(qlinear_add<uint8_t>({168, 168}, {153, 153}, 0.7f, 135, 0.15f, 100, 0.9f, 60),
            (std::vector<int>{94, 94}));
  EXPECT_EQ(
      qlinear_add<uint8_t>({168, 168}, {153, 153, 153, 153}, 0.7f, 135, 0.15f, 100, 0.9f, 60, {2, 1}, {2, 2}),
      (std::vector<int>{95, 95, 95, 95}));
  // B one value per span: no swap.
  EXPECT_EQ(
      qlinear_add<uint8_t>({168, 168, 168, 168}, {153, 153}, 0.7f, 135, 0.15f, 100, 0.9f, 60, {2, 2}, {2, 1}),
      (std::vector<int>{94, 94, 94, 94}));
}

// ---- QLinearMul

TEST(QLinearMul, RoundsProductHalfToEvenAndSaturates) {
  // (a - 1) * b * (1 * 1 / 2): 1.5 -> 2, 2.5 -> 2, 200, 300 -> 255, -100 -> 0.
  QuantModel m;
  m.b().input("a", kUint8, {5}).input("b", kUint8, {5}).output("c", kUint8);
  m.scalar<float>("s1", 1.0f).scalar<float>("s2", 2.0f).scalar<uint8_t>("z1", 1).scalar<uint8_t>("z0", 0);
  m.contrib("QLinearMul", {"a", "s1", "z1", "b", "s1", "z0", "s2", "z0"}, {"c"});
  const auto c =
      run<uint8_t>(m.import(), {bytes<uint8_t>({4, 6, 21, 31, 0}), bytes<uint8_t>({1, 1, 20, 20, 200})});
  EXPECT_EQ(ints(c), (std::vector<int>{2, 2, 200, 255, 0}));
}

TEST(QLinearMul, Int8WithZeroPointsAndBroadcast) {
  // a [2,2] * b [2,1]: (a - 2) * (b + 1) / 4 + 3.
  QuantModel m;
  m.b().input("a", kInt8, {2, 2}).input("b", kInt8, {2, 1}).output("c", kInt8);
  m.scalar<float>("s", 1.0f).scalar<float>("s4", 4.0f);
  m.scalar<int8_t>("za", 2).scalar<int8_t>("zb", -1).scalar<int8_t>("zc", 3);
  m.contrib("QLinearMul", {"a", "s", "za", "b", "s", "zb", "s4", "zc"}, {"c"});
  const auto c = run<int8_t>(m.import(), {bytes<int8_t>({4, 8, -126, 127}), bytes<int8_t>({1, 127})});
  // row 0: 2*2/4 = 1 -> 4, 6*2/4 = 3 -> 6; row 1: -128*128/4 -> -128, 125*128/4 -> 127.
  EXPECT_EQ(ints(c), (std::vector<int>{4, 6, -128, 127}));
}

// ---- QLinearLeakyRelu, QLinearSigmoid

TEST(QLinearLeakyRelu, DequantizeApplyQuantize) {
  QuantModel m;
  m.b().input("x", kUint8, {5}).output("y", kUint8);
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("zx", 128).scalar<uint8_t>("zy", 130);
  OnnxModelBuilder::attr_float(m.contrib("QLinearLeakyRelu", {"x", "s", "zx", "s", "zy"}, {"y"}), "alpha",
                               0.5f);
  // d = x - 128 = -3, -1, 0, 127, -128; alpha * d = -1.5 -> -2, -0.5 -> -0;
  // + 130, and 257 saturates.
  const auto y = run<uint8_t>(m.import(), {bytes<uint8_t>({125, 127, 128, 255, 0})});
  EXPECT_EQ(ints(y), (std::vector<int>{128, 130, 130, 255, 66}));
}

TEST(QLinearSigmoid, TableOfTheLogisticFoldsToAConstant) {
  QuantModel m;
  m.b().input("x", kUint8, {5}).output("y", kUint8);
  m.scalar<float>("sx", 0.25f)
      .scalar<uint8_t>("zx", 128)
      .scalar<float>("sy", 1.0f / 256)
      .scalar<uint8_t>("zy", 0);
  m.contrib("QLinearSigmoid", {"x", "sx", "zx", "sy", "zy"}, {"y"});
  const Graph g = m.import();
  EXPECT_EQ(g.ops.size(), 1u);  // the table is a constant; one lookup op remains
  // sigmoid(0) = 0.5 -> 128; sigmoid(31.75) rounds to 1.0 -> 256 -> 255;
  // sigmoid(-32) -> 0; sigmoid(1) * 256 = 187.15; sigmoid(-1) * 256 = 68.85.
  const auto y = run<uint8_t>(g, {bytes<uint8_t>({128, 255, 0, 132, 124})});
  EXPECT_EQ(ints(y), (std::vector<int>{128, 255, 0, 187, 69}));
}

TEST(QLinearSigmoid, Int8LevelsIndexTheTable) {
  QuantModel m;
  m.b().input("x", kInt8, {3}).output("y", kInt8);
  m.scalar<float>("sx", 0.25f)
      .scalar<int8_t>("zx", 0)
      .scalar<float>("sy", 1.0f / 256)
      .scalar<int8_t>("zy", -128);
  m.contrib("QLinearSigmoid", {"x", "sx", "zx", "sy", "zy"}, {"y"});
  const auto y = run<int8_t>(m.import(), {bytes<int8_t>({0, 127, -128})});
  EXPECT_EQ(ints(y), (std::vector<int>{0, 127, -128}));
}

TEST(QLinearSigmoid, RuntimeScaleBuildsTheTableAtRunTime) {
  QuantModel m;
  m.b().input("x", kUint8, {5}).input("sx", kFloat, {}).output("y", kUint8);
  m.scalar<uint8_t>("zx", 128).scalar<float>("sy", 1.0f / 256).scalar<uint8_t>("zy", 0);
  m.contrib("QLinearSigmoid", {"x", "sx", "zx", "sy", "zy"}, {"y"});
  const Graph g = m.import();
  EXPECT_EQ(g.ops.size(), 2u);  // the table, then the lookup
  const auto y = run<uint8_t>(g, {bytes<uint8_t>({128, 255, 0, 132, 124}), bytes<float>({0.25f})});
  EXPECT_EQ(ints(y), (std::vector<int>{128, 255, 0, 187, 69}));
}

// ---- QLinearConcat

TEST(QLinearConcat, RequantizesInputsWithOtherParameters) {
  QuantModel m;
  m.b().input("a", kUint8, {1, 2}).input("b", kUint8, {1, 3}).input("c", kUint8, {1, 1}).output("y", kUint8);
  m.scalar<float>("s1", 1.0f).scalar<float>("s05", 0.5f).scalar<float>("s2", 2.0f);
  m.scalar<uint8_t>("z10", 10).scalar<uint8_t>("z0", 0);
  OnnxModelBuilder::attr_int(
      m.contrib("QLinearConcat", {"s1", "z10", "a", "s1", "z10", "b", "s05", "z0", "c", "s2", "z0"}, {"y"}),
      "axis", -1);
  // a is copied; b: 0.5 -> 0, 1.5 -> 2, 125, each + 10; c: 400 + 10 -> 255.
  const auto y =
      run<uint8_t>(m.import(), {bytes<uint8_t>({5, 7}), bytes<uint8_t>({1, 3, 250}), bytes<uint8_t>({200})});
  EXPECT_EQ(ints(y), (std::vector<int>{5, 7, 10, 12, 135, 255}));
}

// ---- QLinearGlobalAveragePool

TEST(QLinearGlobalAveragePool, AveragesInInt32ThenRequantizes) {
  QuantModel m;
  m.b().input("x", kUint8, {1, 3, 2, 2}).output("y", kUint8);
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("zx", 0).scalar<uint8_t>("zy", 3);
  m.contrib("QLinearGlobalAveragePool", {"x", "s", "zx", "s", "zy"}, {"y"});
  const Graph g = m.import();
  EXPECT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 3, 1, 1}));
  // sums 6, 10, 1020 over 4: 1.5 -> 2, 2.5 -> 2, 255; + 3, 258 saturates.
  const auto y = run<uint8_t>(g, {bytes<uint8_t>({1, 1, 1, 3, 1, 1, 1, 7, 255, 255, 255, 255})});
  EXPECT_EQ(ints(y), (std::vector<int>{5, 5, 255}));
}

TEST(QLinearGlobalAveragePool, ChannelsLastAndInputZeroPoint) {
  QuantModel m;
  m.b().input("x", kInt8, {1, 2, 2, 2}).output("y", kInt8);
  m.scalar<float>("s", 1.0f).scalar<float>("s2", 2.0f).scalar<int8_t>("zx", -2).scalar<int8_t>("zy", 0);
  OnnxModelBuilder::attr_int(m.contrib("QLinearGlobalAveragePool", {"x", "s", "zx", "s2", "zy"}, {"y"}),
                             "channels_last", 1);
  // NHWC: channel 0 reads 0, 2, 4, 6 -> (12 + 8) / 4 / 2 = 2.5 -> 2;
  // channel 1 reads -1, -3, -5, -3 -> (-12 + 8) / 8 = -0.5 -> -0.
  const auto y = run<int8_t>(m.import(), {bytes<int8_t>({0, -1, 2, -3, 4, -5, 6, -3})});
  EXPECT_EQ(ints(y), (std::vector<int>{2, 0}));
}

// ---- QLinearSoftmax

std::vector<int> qlinear_softmax(std::vector<uint8_t> x, std::vector<int64_t> dims, float sx, float sy,
                                 int64_t opset, int64_t axis) {
  QuantModel m;
  m.b().input("x", kUint8, dims).output("y", kUint8);
  m.scalar<float>("sx", sx).scalar<uint8_t>("z", 0).scalar<float>("sy", sy);
  auto& n = m.contrib("QLinearSoftmax", {"x", "sx", "z", "sy", "z"}, {"y"});
  OnnxModelBuilder::attr_int(n, "opset", opset);
  OnnxModelBuilder::attr_int(n, "axis", axis);
  return ints(run<uint8_t>(m.import(), {bytes(x)}));
}

TEST(QLinearSoftmax, EqualLevelsAndSaturation) {
  // y_scale 1/256 gives 256 levels: 4 equal inputs -> 64 each; a dominant one
  // -> 256, saturated to 255.
  EXPECT_EQ(qlinear_softmax({7, 7, 7, 7, 255, 0, 0, 0}, {2, 4}, 0.5f, 1.0f / 256, 13, -1),
            (std::vector<int>{64, 64, 64, 64, 255, 0, 0, 0}));
}

TEST(QLinearSoftmax, LevelsAreFloorOfTheInverseScale) {
  // 1 / f32(1/255) = 254.99998: 254 levels, so two equal inputs give 127
  // (not 127.5 -> 128).
  EXPECT_EQ(qlinear_softmax({9, 9}, {1, 2}, 0.1f, 1.0f / 255, 13, -1), (std::vector<int>{127, 127}));
}

TEST(QLinearSoftmax, Opset12FlattensFromTheAxis) {
  // opset 12 softmax over axes [1, 3): one row of 4.
  EXPECT_EQ(qlinear_softmax({3, 3, 3, 3}, {1, 2, 2}, 0.1f, 1.0f / 256, 12, 1),
            (std::vector<int>{64, 64, 64, 64}));
  // opset 13 along axis 1 only: rows of 2.
  EXPECT_EQ(qlinear_softmax({3, 3, 3, 3}, {1, 2, 2}, 0.1f, 1.0f / 256, 13, 1),
            (std::vector<int>{128, 128, 128, 128}));
}

TEST(QLinearSoftmax, RuntimeInputScale) {
  QuantModel m;
  m.b().input("x", kUint8, {2, 4}).input("sx", kFloat, {}).output("y", kUint8);
  m.scalar<uint8_t>("z", 0).scalar<float>("sy", 1.0f / 256);
  OnnxModelBuilder::attr_int(m.contrib("QLinearSoftmax", {"x", "sx", "z", "sy", "z"}, {"y"}), "opset", 13);
  const auto y = run<uint8_t>(m.import(), {bytes<uint8_t>({7, 7, 7, 7, 255, 0, 0, 0}), bytes<float>({0.5f})});
  EXPECT_EQ(ints(y), (std::vector<int>{64, 64, 64, 64, 255, 0, 0, 0}));
}

TEST(QLinearSoftmax, OpsetAttributeIsRequired) {
  QuantModel m;
  m.b().input("x", kUint8, {1, 2}).output("y", kUint8);
  m.scalar<float>("s", 0.1f).scalar<uint8_t>("z", 0);
  m.contrib("QLinearSoftmax", {"x", "s", "z", "s", "z"}, {"y"});
  EXPECT_NE(m.import_error().find("attribute opset"), std::string::npos) << m.import_error();
}

// ---- QGemm

struct QGemmCase {
  bool trans_b = false;
  bool float_output = false;
  float alpha = 1.0f;
  std::vector<float> b_scale{0.5f};
};

Graph qgemm_graph(const QGemmCase& c) {
  QuantModel m;
  m.b().input("a", kUint8, {2, 3}).output("y", c.float_output ? kFloat : kUint8);
  // B = [[1, -1], [2, 0], [1, 1]] (K x N), stored transposed for transB.
  const std::vector<int8_t> b =
      c.trans_b ? std::vector<int8_t>{1, 2, 1, -1, 0, 1} : std::vector<int8_t>{1, -1, 2, 0, 1, 1};
  m.init<int8_t>("B", c.trans_b ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{3, 2}, b);
  m.scalar<float>("sa", 1.0f).scalar<uint8_t>("za", 1).scalar<int8_t>("zb", 0);
  m.init<float>("sb", c.b_scale.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{2}, c.b_scale);
  m.init<int32_t>("C", {2}, {1, -1});
  m.scalar<float>("sy", 1.0f).scalar<uint8_t>("zy", 10);
  std::vector<std::string> inputs{"a", "sa", "za", "B", "sb", "zb", "C"};
  if (!c.float_output) inputs.insert(inputs.end(), {"sy", "zy"});
  auto& n = m.contrib("QGemm", inputs, {"y"});
  if (c.trans_b) OnnxModelBuilder::attr_int(n, "transB", 1);
  if (c.alpha != 1.0f) OnnxModelBuilder::attr_float(n, "alpha", c.alpha);
  return m.import();
}

// A = [[1, 2, 3], [4, 5, 6]], a_zero_point 1: (A - 1) @ B + C = [[5, 1], [17, 1]].
const std::vector<uint8_t> kGemmA{1, 2, 3, 4, 5, 6};

TEST(QGemm, RequantizesBiasedAccumulator) {
  // [[5, 1], [17, 1]] * 0.5 = 2.5 -> 2, 0.5 -> 0, 8.5 -> 8, 0.5 -> 0; + 10.
  for (bool trans_b : {false, true}) {
    const Graph g = qgemm_graph({.trans_b = trans_b});
    EXPECT_EQ(ints(run<uint8_t>(g, {bytes(kGemmA)})), (std::vector<int>{12, 10, 18, 10})) << trans_b;
  }
}

TEST(QGemm, MatmulHasTheCanonicalIntegerForm) {
  const Graph g = qgemm_graph({});
  int matched = 0;
  for (const Op& op : g.ops)
    if (op.reduction == Reduction::kSum) {
      const auto gemm = scheduler::match_int_gemm(g, op);
      ASSERT_TRUE(gemm.has_value()) << to_string(op.body);
      EXPECT_EQ(gemm->k, 3);
      ++matched;
    }
  EXPECT_EQ(matched, 1);
}

TEST(QGemm, PerColumnScaleAlphaAndFloatOutput) {
  EXPECT_EQ(ints(run<uint8_t>(qgemm_graph({.b_scale = {0.5f, 2.0f}}), {bytes(kGemmA)})),
            (std::vector<int>{12, 12, 18, 12}));
  EXPECT_EQ(run<float>(qgemm_graph({.float_output = true}), {bytes(kGemmA)}),
            (std::vector<float>{2.5f, 0.5f, 8.5f, 0.5f}));
  EXPECT_EQ(run<float>(qgemm_graph({.float_output = true, .alpha = 2.0f}), {bytes(kGemmA)}),
            (std::vector<float>{5.0f, 1.0f, 17.0f, 1.0f}));
}

TEST(QGemm, MatricesOnly) {
  QuantModel m;
  m.b().input("a", kUint8, {1, 2, 3}).output("y", kFloat);
  m.init<int8_t>("B", {3, 2}, {1, 1, 1, 1, 1, 1});
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("za", 0).scalar<int8_t>("zb", 0);
  m.contrib("QGemm", {"a", "s", "za", "B", "s", "zb"}, {"y"});
  EXPECT_NE(m.import_error().find("must be matrices"), std::string::npos) << m.import_error();
}

// ---- QLinearConv

TEST(QLinearConv, PaddingHoldsTheZeroPointAndRequantizesPerChannel) {
  // x 3x3 = 1..9 with zero point 1 (so 0..8 centered), 2x2 filters, pads 1:
  // filter 0 all ones (w_scale 1), filter 1 [[1, 0], [0, -1]] (w_scale 0.5).
  QuantModel m(13);
  m.b().input("x", kUint8, {1, 1, 3, 3}).output("y", kUint8);
  m.init<int8_t>("w", {2, 1, 2, 2}, {1, 1, 1, 1, 1, 0, 0, -1});
  m.init<float>("ws", {2}, {1.0f, 0.5f});
  m.init<int32_t>("B", {2}, {-2, 3});
  m.scalar<float>("s", 1.0f).scalar<uint8_t>("zx", 1).scalar<int8_t>("zw", 0).scalar<uint8_t>("zy", 100);
  OnnxModelBuilder::attr_ints(
      m.b().node("QLinearConv", {"x", "s", "zx", "w", "ws", "zw", "s", "zy", "B"}, {"y"}), "pads",
      {1, 1, 1, 1});
  const Graph g = m.import();
  ASSERT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 2, 4, 4}));
  const auto y = run<uint8_t>(g, {bytes<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8, 9})});
  // Reference: centered input with zeros around, int accumulation, then
  // round((acc + B[m]) * w_scale[m]) + 100 (x_scale = y_scale = 1).
  const int xc[5][5] = {{0, 0, 0, 0, 0}, {0, 0, 1, 2, 0}, {0, 3, 4, 5, 0}, {0, 6, 7, 8, 0}, {0, 0, 0, 0, 0}};
  const int w[2][2][2] = {{{1, 1}, {1, 1}}, {{1, 0}, {0, -1}}};
  const int bias[2] = {-2, 3};
  const float scale[2] = {1.0f, 0.5f};
  for (int f = 0; f < 2; ++f)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        int acc = bias[f];
        for (int ki = 0; ki < 2; ++ki)
          for (int kj = 0; kj < 2; ++kj) acc += xc[i + ki][j + kj] * w[f][ki][kj];
        const int want = std::min(255, std::max(0, static_cast<int>(std::nearbyint(acc * scale[f])) + 100));
        EXPECT_EQ(y[f * 16 + i * 4 + j], want) << f << " " << i << " " << j;
      }
  // Spot values by hand: filter 0 at (0, 0) reads only x[0][0] (0): -2 + 100;
  // filter 1 at (1, 1): (0 - 4 + 3) * 0.5 = -0.5 -> -0; at (0, 1): (0 - 1 + 3) * 0.5 = 1.
  EXPECT_EQ(y[0], 98);
  EXPECT_EQ(y[16 + 5], 100);
  EXPECT_EQ(y[16 + 1], 101);
}

}  // namespace
}  // namespace tilegraph
