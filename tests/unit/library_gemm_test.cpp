// Library GEMMs (tune --skip-dot): which ops scheduler/library_gemm
// recognizes and the geometry it reads off their index expressions; that
// the tile-graph scheduler keeps each one a kernel of its own; that
// lowering makes it one tg_gemm Call; that non-CUDA archs refuse the flag.
#include "scheduler/library_gemm.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "codegen/lowering/lower_library_gemm.h"
#include "driver/pipeline.h"
#include "compiler/ir/error.h"
#include "frontends/onnx/import.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;
using B = OnnxModelBuilder;
using scheduler::GemmMatrix;
using scheduler::LibraryGemm;
constexpr int kF32 = onnx::TensorProto::FLOAT;

Graph optimized(const OnnxModelBuilder& b, const std::string& name) {
  const std::string path = testing::test_model_path("library_gemm", name);
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

// The graph's only Sum reduction (the matrix product).
const Op& product_op(const Graph& g) {
  const Op* found = nullptr;
  for (const Op& op : g.ops)
    if (op.reduction == Reduction::kSum) {
      EXPECT_EQ(found, nullptr) << "several reductions:\n" << to_string(g);
      found = &op;
    }
  EXPECT_NE(found, nullptr) << to_string(g);
  return *found;
}

void expect_matrix(const GemmMatrix& x, bool row_major, int64_t ld, int64_t batch_stride, int64_t offset,
                   const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(x.row_major, row_major);
  EXPECT_EQ(x.ld, ld);
  EXPECT_EQ(x.batch_stride, batch_stride);
  EXPECT_EQ(x.offset, offset);
}

void expect_dims(const LibraryGemm& gemm, int64_t batch, int64_t m, int64_t n, int64_t k) {
  EXPECT_EQ(gemm.batch, batch);
  EXPECT_EQ(gemm.m, m);
  EXPECT_EQ(gemm.n, n);
  EXPECT_EQ(gemm.k, k);
}

TEST(LibraryGemm, PlainMatMulIsRowMajorTimesRowMajor) {
  OnnxModelBuilder b(13);
  b.input("a", kF32, {4, 8}).input("b", kF32, {8, 6}).output("y");
  b.node("MatMul", {"a", "b"}, {"y"});
  const Graph g = optimized(b, "plain");
  const Op& op = product_op(g);
  const auto gemm = scheduler::match_library_gemm(g, op);
  ASSERT_TRUE(gemm) << to_string(g);
  EXPECT_EQ(gemm->dtype, DType::kF32);
  expect_dims(*gemm, 1, 4, 6, 8);
  EXPECT_EQ(g.tensor(op.inputs[static_cast<size_t>(gemm->a_slot)]).name, "a");
  EXPECT_EQ(g.tensor(op.inputs[static_cast<size_t>(gemm->b_slot)]).name, "b");
  expect_matrix(gemm->a, true, 8, 0, 0, "A");
  expect_matrix(gemm->b, true, 6, 0, 0, "B");
  expect_matrix(gemm->c, true, 6, 0, 0, "C");
}

TEST(LibraryGemm, BatchedMatMulHasOneStridePerOperand) {
  OnnxModelBuilder b(13);
  b.input("a", kF32, {2, 3, 4, 8}).input("b", kF32, {2, 3, 8, 6}).output("y");
  b.node("MatMul", {"a", "b"}, {"y"});
  const Graph g = optimized(b, "batched");
  const auto gemm = scheduler::match_library_gemm(g, product_op(g));
  ASSERT_TRUE(gemm) << to_string(g);
  // The two batch axes flatten into one of 6 matrices.
  expect_dims(*gemm, 6, 4, 6, 8);
  expect_matrix(gemm->a, true, 8, 32, 0, "A");
  expect_matrix(gemm->b, true, 6, 48, 0, "B");
  expect_matrix(gemm->c, true, 6, 24, 0, "C");
}

TEST(LibraryGemm, SharedWeightsFoldTheBatchIntoTheRows) {
  OnnxModelBuilder b(13);
  b.input("a", kF32, {3, 4, 8}).input("w", kF32, {8, 6}).output("y");
  b.node("MatMul", {"a", "w"}, {"y"});
  const Graph g = optimized(b, "shared_weights");
  const auto gemm = scheduler::match_library_gemm(g, product_op(g));
  ASSERT_TRUE(gemm) << to_string(g);
  expect_dims(*gemm, 1, 12, 6, 8);
  expect_matrix(gemm->a, true, 8, 0, 0, "A");
}

// q @ k^T of multi-head attention: [1, 4, 16] split into 2 heads of 8 by
// Reshape + Transpose, which the passes inline into the product's loads.
TEST(LibraryGemm, AttentionScoresReadKTransposedThroughInlinedLayoutOps) {
  OnnxModelBuilder b(13);
  b.input("q", kF32, {1, 4, 16}).input("k", kF32, {1, 4, 16}).output("s");
  b.initializer_i64("heads", {4}, {1, 4, 2, 8});
  b.node("Reshape", {"q", "heads"}, {"q4"});
  b.node("Reshape", {"k", "heads"}, {"k4"});
  B::attr_ints(b.node("Transpose", {"q4"}, {"qt"}), "perm", {0, 2, 1, 3});
  B::attr_ints(b.node("Transpose", {"k4"}, {"kt"}), "perm", {0, 2, 3, 1});
  b.node("MatMul", {"qt", "kt"}, {"s"});
  const Graph g = optimized(b, "attention_scores");
  const Op& op = product_op(g);
  const auto gemm = scheduler::match_library_gemm(g, op);
  ASSERT_TRUE(gemm) << to_string(g);
  expect_dims(*gemm, 2, 4, 4, 8);
  EXPECT_EQ(g.tensor(op.inputs[static_cast<size_t>(gemm->a_slot)]).name, "q");
  // Head h of q starts at 8h; rows (tokens) 16 apart. k^T's column j is
  // token j: unit steps along k (the head dimension), so column-major.
  expect_matrix(gemm->a, true, 16, 8, 0, "A");
  expect_matrix(gemm->b, false, 16, 8, 0, "B");
  expect_matrix(gemm->c, true, 4, 16, 0, "C");
  // Element (i, j) of batch h of B is k[0, j, 8h + p] for row p.
  EXPECT_EQ(scheduler::gemm_element_offset(gemm->b, 1, 3, 2), 2 * 16 + 8 + 3);
}

TEST(LibraryGemm, GemmWithTransBReadsBColumnMajor) {
  OnnxModelBuilder b(13);
  b.input("a", kF32, {4, 8}).input("w", kF32, {6, 8}).output("y");
  B::attr_int(b.node("Gemm", {"a", "w"}, {"y"}), "transB", 1);
  const Graph g = optimized(b, "gemm_trans_b");
  const auto gemm = scheduler::match_library_gemm(g, product_op(g));
  ASSERT_TRUE(gemm) << to_string(g);
  expect_dims(*gemm, 1, 4, 6, 8);
  expect_matrix(gemm->a, true, 8, 0, 0, "A");
  expect_matrix(gemm->b, false, 8, 0, 0, "B");
}

TEST(LibraryGemm, MergedHeadsAreNotAffineAndStayFused) {
  // [1, 2, 4, 8] heads merged back to [1, 4, 16]: k = 16 walks the head
  // (stride 32) in steps of 8 and the head dimension (stride 1) within,
  // a floordiv/floormod of k that no single stride describes.
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, 2, 4, 8}).input("w", kF32, {16, 6}).output("y");
  b.initializer_i64("merged", {3}, {1, 4, 16});
  B::attr_ints(b.node("Transpose", {"x"}, {"xt"}), "perm", {0, 2, 1, 3});
  b.node("Reshape", {"xt", "merged"}, {"x3"});
  b.node("MatMul", {"x3", "w"}, {"y"});
  const Graph g = optimized(b, "merged_heads");
  EXPECT_FALSE(scheduler::match_library_gemm(g, product_op(g))) << to_string(g);
}

// A hand-built gather-like product: out[i, j] = sum_k x[idx[i], k] * w[k, j].
TEST(LibraryGemm, DataDependentRowsAreRejected) {
  Graph g;
  const TensorId x = g.add_tensor({"x", DType::kF32, {10, 8}, TensorKind::kInput});
  const TensorId idx = g.add_tensor({"idx", DType::kI64, {4}, TensorKind::kInput});
  const TensorId w = g.add_tensor({"w", DType::kF32, {8, 6}, TensorKind::kInput});
  const TensorId y = g.add_tensor({"y", DType::kF32, {4, 6}, TensorKind::kIntermediate});
  Op op;
  op.name = "gathered_matmul";
  op.inputs = {x, idx, w};
  op.output = y;
  op.reduction = Reduction::kSum;
  op.reduce_extents = {8};
  const Expr row = load(1, DType::kI64, {var(0)});
  op.body = load(0, DType::kF32, {row, var(2)}) * load(2, DType::kF32, {var(2), var(1)});
  g.ops.push_back(op);
  g.inputs = {x, idx, w};
  EXPECT_FALSE(scheduler::match_library_gemm(g, g.ops[0]));
  // The same product at an affine row is one.
  g.ops[0].body = load(0, DType::kF32, {var(0) * 2 + 1, var(2)}) * load(2, DType::kF32, {var(2), var(1)});
  const auto gemm = scheduler::match_library_gemm(g, g.ops[0]);
  ASSERT_TRUE(gemm);
  expect_matrix(gemm->a, true, 16, 0, 8, "A (rows 1, 3, 5, 7 of x)");
}

// Bodies other than one product of two affine loads, hand-built over
// out[i, j] = sum_k a[i, k] * w[k, j].
TEST(LibraryGemm, OtherBodiesAreNotGemms) {
  Graph g;
  const TensorId a = g.add_tensor({"a", DType::kF32, {4, 8}, TensorKind::kInput});
  const TensorId w = g.add_tensor({"w", DType::kF32, {8, 6}, TensorKind::kInput});
  const TensorId y = g.add_tensor({"y", DType::kF32, {4, 6}, TensorKind::kIntermediate});
  Op op;
  op.name = "product";
  op.inputs = {a, w};
  op.output = y;
  op.reduction = Reduction::kSum;
  op.reduce_extents = {8};
  const Expr av = load(0, DType::kF32, {var(0), var(2)}), wv = load(1, DType::kF32, {var(2), var(1)});
  op.body = av * wv;
  g.ops.push_back(op);
  g.inputs = {a, w};
  ASSERT_TRUE(scheduler::match_library_gemm(g, g.ops[0]));
  g.ops[0].body = av * wv * float_imm(0.5);  // a scaled product (Gemm's alpha is an op of its own)
  EXPECT_FALSE(scheduler::match_library_gemm(g, g.ops[0]));
  g.ops[0].body = av * load(1, DType::kF32, {var(2), int_imm(0)});  // column j read by no operand
  EXPECT_FALSE(scheduler::match_library_gemm(g, g.ops[0]));
  g.ops[0].body = av * load(1, DType::kF32, {var(2), int_imm(5) - var(1)});  // columns reversed
  EXPECT_FALSE(scheduler::match_library_gemm(g, g.ops[0]));
  g.ops[0].body = av * wv;
  g.ops[0].reduction = Reduction::kMax;
  EXPECT_FALSE(scheduler::match_library_gemm(g, g.ops[0]));
}

// MatMul -> Add bias -> Relu: under --skip-dot the product is a kernel of its
// own, lowered to one Call; the elementwise tail is still fused.
TEST(LibraryGemm, SchedulerKeepsTheGemmApartAndLowersItToOneCall) {
  OnnxModelBuilder b(13);
  b.input("a", kF32, {1, 16, 32}).output("y");
  b.initializer_f("w", {32, 32}, std::vector<float>(32 * 32, 0.01f));
  b.initializer_f("bias", {32}, std::vector<float>(32, 0.5f));
  b.node("MatMul", {"a", "w"}, {"mm"});
  b.node("Add", {"mm", "bias"}, {"biased"});
  b.node("Relu", {"biased"}, {"r"});
  b.node("Mul", {"r", "r"}, {"y"});
  const Graph g = optimized(b, "gemm_bias_relu");
  scheduler::TileGraphOptions options;
  options.library_gemms = true;
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::arch_by_name("H100"), options);
  int library = 0;
  for (const scheduler::KernelSchedule& k : s.kernels) {
    if (!k.library_gemm) {
      EXPECT_EQ(k.kind, scheduler::KernelKind::kBlock);
      for (int op : k.ops) EXPECT_NE(g.ops[static_cast<size_t>(op)].reduction, Reduction::kSum);
      continue;
    }
    ++library;
    ASSERT_EQ(k.ops.size(), 3u);  // the GEMM, its bias add and the ReLU (cuBLASLt's RELU_BIAS epilogue)
    EXPECT_EQ(k.library_gemm->bias_op, k.ops[1]);
    EXPECT_EQ(k.library_gemm->relu_op, k.ops[2]);
    EXPECT_EQ(k.library_gemm->epilogue_name(), "bias+relu");
    EXPECT_EQ(k.kind, scheduler::KernelKind::kLibraryGemm);
    const codegen::Kernel kernel = codegen::lower_library_gemm_kernel(g, k);
    EXPECT_TRUE(codegen::is_library_gemm(kernel));
    EXPECT_EQ(kernel.grid, 0);
    ASSERT_EQ(kernel.body->kind, codegen::StmtKind::kCall);
    EXPECT_EQ(kernel.body->callee, "tg_gemm");
    // A, B, C; batch, m, n, k; 3 per matrix; the bias and its flag.
    ASSERT_EQ(kernel.body->args.size(), 18u);
    int64_t m = 0, epilogue = 0;
    EXPECT_TRUE(is_const_int(kernel.body->args[4].value, &m));
    EXPECT_EQ(m, 16);
    EXPECT_TRUE(is_const_int(kernel.body->args[17].value, &epilogue));
    EXPECT_EQ(epilogue, 3);  // bias, then ReLU
    EXPECT_EQ(g.tensor(kernel.buffers[kernel.body->args[16].buffer].tensor).name, "bias");
    // C is the ReLU's output: the GEMM's and the bias add's never reach memory.
    EXPECT_EQ(kernel.buffers[kernel.body->args[2].buffer].tensor, g.ops[k.ops.back()].output);
    EXPECT_EQ(kernel.flops, 2 * 16 * 32 * 32);
  }
  EXPECT_EQ(library, 1);
  EXPECT_EQ(s.kernels.size(), 2u);  // GEMM + bias + relu, then the square
}

TEST(LibraryGemm, OnlyABiasOverTheColumnsIsAnEpilogue) {
  // A per-row vector ([16, 1]) broadcast over the columns has no cuBLASLt epilogue.
  OnnxModelBuilder b(13);
  b.input("a", kF32, {16, 32}).output("y");
  b.initializer_f("w", {32, 32}, std::vector<float>(32 * 32, 0.01f));
  b.initializer_f("rows", {16, 1}, std::vector<float>(16, 0.5f));
  b.node("MatMul", {"a", "w"}, {"mm"});
  b.node("Add", {"mm", "rows"}, {"y"});
  const Graph g = optimized(b, "gemm_row_bias");
  const auto gemm = scheduler::match_library_gemm(g, g.ops.front());
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(scheduler::match_bias_epilogue(g, g.ops.back(), g.ops.front().output, *gemm), -1);
}

TEST(LibraryGemm, SkipDotOnANonCudaArchIsAUserError) {
  for (const char* arch : {"host", "MI250"}) {
    driver::CompileOptions o;
    o.arch = arch;
    o.skip_dot = true;
    o.model_path = "/nonexistent/model.onnx";
    try {
      driver::compile(o);
      ADD_FAILURE() << arch << ": no error";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--skip-dot"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tilegraph
