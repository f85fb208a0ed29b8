#include <filesystem>

#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;

std::string temp_model_path(const std::string& name) {
  return (testing::unit_temp_dir() / name / "model.onnx").string();
}

TEST(FrontendImport, ShapeSubgraphFoldsToStaticReshape) {
  // x:[2,6] → Shape → Gather(0) → Unsqueeze → Concat([.., 3, 2]) → Reshape
  OnnxModelBuilder b(13);
  b.input("x", 1, {2, 6}).output("y");
  b.initializer_i64("zero", {}, {0});
  b.initializer_i64("axes", {1}, {0});
  b.initializer_i64("rest", {2}, {3, 2});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"n"});
  b.node("Unsqueeze", {"n", "axes"}, {"n1"});
  b.node("Concat", {"n1", "rest"}, {"target"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  b.node("Reshape", {"x", "target"}, {"y"});
  const std::string path = temp_model_path("shape_subgraph");
  b.save(path);
  Graph g = onnx_frontend::import_model(path);
  verify(g);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.tensor(g.outputs[0]).shape, (Shape{2, 3, 2}));
  // Everything but the reshape folded away.
  EXPECT_EQ(g.ops.size(), 1u);
}

TEST(FrontendImport, UnsupportedOpsAreAllListed) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {2}).output("z");
  b.node("FancyOp", {"x"}, {"y"}, "first_bad");
  b.node("OtherOp", {"y"}, {"z"}, "second_bad");
  const std::string path = temp_model_path("unsupported");
  b.save(path);
  try {
    onnx_frontend::import_model(path);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'first_bad' (FancyOp, opset 13)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("node 'second_bad' (OtherOp, opset 13)"), std::string::npos) << msg;
  }
}

TEST(FrontendImport, DynamicInputNeedsInputShape) {
  OnnxModelBuilder b(13);
  b.input("tokens", 1, {-1, 4}).output("y");
  b.node("Relu", {"tokens"}, {"y"});
  const std::string path = temp_model_path("dynamic");
  b.save(path);
  try {
    onnx_frontend::import_model(path);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("tokens [Nx4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--input-shape"), std::string::npos);
  }
  onnx_frontend::ImportOptions options;
  options.input_shapes["tokens"] = {3, 4};
  Graph g = onnx_frontend::import_model(path, options);
  EXPECT_EQ(g.tensor(g.outputs[0]).shape, (Shape{3, 4}));
}

TEST(FrontendImport, GarbageFileIsAUserError) {
  const std::string path = temp_model_path("garbage");
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  FILE* f = fopen(path.c_str(), "wb");
  fputs("this is not an onnx model at all \xff\xff\xff", f);
  fclose(f);
  EXPECT_THROW(onnx_frontend::import_model(path), UserError);
  EXPECT_THROW(onnx_frontend::import_model(path + ".missing"), UserError);
}

// The UserError's message of importing model `name` ("" if none).
std::string import_error(const OnnxModelBuilder& b, const std::string& name) {
  return testing::import_error_of(b, temp_model_path(name));
}

TEST(FrontendImport, InputsOfOneTypeParameterMustAgree) {
  // Add's A and B are both "T": float + int32 are each allowed, not together.
  OnnxModelBuilder b(13);
  b.input("a", 1, {2, 3}).input("b", 6, {2, 3}).output("y");
  b.node("Add", {"a", "b"}, {"y"}, "mixed_add");
  const std::string msg = import_error(b, "mixed_add");
  EXPECT_NE(msg.find("node 'mixed_add' (Add, opset 13)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inputs 0 ('a', tensor(float)) and 1 ('b', tensor(int32)) share type T"),
            std::string::npos) << msg;
}

TEST(FrontendImport, InputTypeTheSchemaRejectsIsAUserError) {
  // Gemm's T has no bool (the fuzzer found this reaching the IR verifier).
  OnnxModelBuilder b(13);
  b.input("a", 1, {3, 5}).input("b", 9, {5, 4}).output("y");
  b.node("Gemm", {"a", "b"}, {"y"}, "bool_gemm");
  const std::string msg = import_error(b, "bool_gemm");
  EXPECT_NE(msg.find("node 'bool_gemm' (Gemm, opset 13): input 1 ('b', B) is tensor(bool)"),
            std::string::npos) << msg;
}

TEST(FrontendImport, VariadicAndConcreteTypesAreAccepted) {
  // Concat's inputs are one variadic "T"; Reshape's shape is tensor(int64).
  OnnxModelBuilder b(13);
  b.input("a", 1, {2, 3}).input("b", 1, {2, 3}).input("c", 1, {2, 3}).output("y");
  b.initializer_i64("shape", {1}, {18});
  OnnxModelBuilder::attr_int(b.node("Concat", {"a", "b", "c"}, {"abc"}), "axis", 0);
  b.node("Reshape", {"abc", "shape"}, {"y"});
  EXPECT_EQ(import_error(b, "variadic_ok"), "");
  OnnxModelBuilder bad(13);
  bad.input("a", 1, {2, 3}).input("b", 1, {2, 3}).input("c", 6, {2, 3}).output("y");
  OnnxModelBuilder::attr_int(bad.node("Concat", {"a", "b", "c"}, {"y"}, "cat"), "axis", 0);
  const std::string msg = import_error(bad, "variadic_bad");
  EXPECT_NE(msg.find("inputs 0 ('a', tensor(float)) and 2 ('c', tensor(int32))"),
            std::string::npos) << msg;
}

TEST(FrontendImport, ConstantMatMulFoldsExactly) {
  OnnxModelBuilder b(13);
  b.initializer_f("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  b.initializer_f("w", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.input("x", 1, {2, 2}).output("y");
  b.node("MatMul", {"a", "w"}, {"aw"});
  b.node("Add", {"x", "aw"}, {"y"});
  const std::string path = temp_model_path("const_matmul");
  b.save(path);
  Graph g = onnx_frontend::import_model(path);
  ASSERT_EQ(g.ops.size(), 1u);  // the matmul folded, the add remains
  const Tensor& aw = g.tensor(g.ops[0].inputs[1]);
  ASSERT_TRUE(aw.data);
  EXPECT_EQ(aw.value_as_double(0), 4);   // 1*1 + 2*0 + 3*1
  EXPECT_EQ(aw.value_as_double(1), 5);   // 1*0 + 2*1 + 3*1
  EXPECT_EQ(aw.value_as_double(2), 10);  // 4 + 6
  EXPECT_EQ(aw.value_as_double(3), 11);  // 5 + 6
}

// swin's relative position bias: a [169, heads] table gathered by a constant
// [2401] index, reshaped to [heads, 49, 49] and added to every window's
// scores. The gather's output is 4-9x its inputs, yet it folds (up to
// kMaxFoldedGatherElements): inlined, every window gathered it again.
Graph import_relative_position_bias(const std::string& name, int64_t heads) {
  OnnxModelBuilder b(13);
  std::vector<float> table(static_cast<size_t>(169 * heads));
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.25f * static_cast<float>(i);
  std::vector<int64_t> index(2401);
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int64_t>((i * 7) % 169);
  b.initializer_f("table", {169, heads}, table);
  b.initializer_i64("index", {2401}, index);
  b.initializer_i64("shape", {3}, {49, 49, heads});
  b.input("x", 1, {4, heads, 49, 49}).output("y");
  b.node("Gather", {"table", "index"}, {"rows"});
  b.node("Reshape", {"rows", "shape"}, {"bias_hwc"});
  OnnxModelBuilder::attr_ints(b.node("Transpose", {"bias_hwc"}, {"bias"}), "perm", {2, 0, 1});
  b.node("Add", {"x", "bias"}, {"y"});
  const std::string path = temp_model_path(name);
  b.save(path);
  return onnx_frontend::import_model(path);
}

TEST(FrontendImport, ConstantGatherFoldsThoughItGrows) {
  const Graph g = import_relative_position_bias("gather_folds", 6);  // 14406 elements from 3415
  ASSERT_EQ(g.ops.size(), 1u) << to_string(g);
  const Op& add = g.ops[0];
  ASSERT_EQ(add.inputs.size(), 2u) << to_string(g);  // x and the folded bias; no index tensor
  const Tensor& bias = g.tensor(add.inputs[1]);
  ASSERT_TRUE(bias.data);
  ASSERT_EQ(bias.shape, (Shape{6, 49, 49}));
  // bias[h, r, c] = table[index[r * 49 + c], h]
  for (int64_t h : {0, 5})
    for (int64_t rc : {0, 1, 2400}) {
      const int64_t row = (rc * 7) % 169;
      EXPECT_EQ(bias.value_as_double(h * 2401 + rc), 0.25 * static_cast<double>(row * 6 + h)) << h << " " << rc;
    }
}

TEST(FrontendImport, ConstantGatherBeyondTheCapStaysAKernelsRead) {
  const Graph g = import_relative_position_bias("gather_stays", 32);  // 76832 elements
  bool reads_the_index = false;
  for (const Op& op : g.ops)
    for (TensorId in : op.inputs) reads_the_index |= g.tensor(in).dtype == DType::kI64;
  EXPECT_TRUE(reads_the_index) << to_string(g);
}

}  // namespace
}  // namespace tilegraph
