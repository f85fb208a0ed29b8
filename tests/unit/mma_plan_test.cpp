// plan_mma: which matmul phases run on tensor cores (mma.sync m16n8k16) and
// how their tiles are dealt to warps.
#include "scheduler/mma_plan.h"

#include <filesystem>
#include <map>
#include <stdexcept>

#include <gtest/gtest.h>

#include "compiler/passes/to_half_precision.h"
#include "frontends/onnx/import.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using scheduler::plan_mma;
using scheduler::Region;
using testing::OnnxModelBuilder;

constexpr int kF32 = 1, kF16 = 10;

// x[2, 64, K] @ W[K, 32] (MatMul) in elem_type; returns the matmul op's graph.
Graph matmul_graph(int elem_type, int64_t k, bool transposed_b = false) {
  OnnxModelBuilder b(13);
  b.input("x", elem_type, {2, 64, k}).input("w", elem_type, transposed_b ? std::vector<int64_t>{2, 32, k}
                                                                         : std::vector<int64_t>{k, 32});
  b.output("y", elem_type);
  if (transposed_b) {
    OnnxModelBuilder::attr_ints(b.node("Transpose", {"w"}, {"wt"}), "perm", {0, 2, 1});
    b.node("MatMul", {"x", "wt"}, {"y"});
  } else {
    b.node("MatMul", {"x", "w"}, {"y"});
  }
  return b.import_as("mma_" + std::to_string(elem_type) + "_" + std::to_string(k) + (transposed_b ? "_t" : ""));
}

const Op& matmul_of(const Graph& g) {
  for (const Op& op : g.ops)
    if (op.reduction == Reduction::kSum) return op;
  throw std::runtime_error("no matmul");
}

Region region(std::vector<int64_t> extents) {
  Region r;
  for (int64_t e : extents) r.dims.push_back({int_imm(0), 0, e, false});
  return r;
}

const scheduler::ArchSpec& arch(const std::string& name) {
  static std::map<std::string, scheduler::ArchSpec> specs;
  if (!specs.count(name)) specs[name] = scheduler::arch_by_name(name);
  return specs[name];
}

TEST(MmaPlan, HalfMatmulOnSm80AndLaterDealsTilesToWarps) {
  const Graph g = matmul_graph(kF16, 64);
  const Op& op = matmul_of(g);
  for (const char* a : {"A100", "RTX3090", "L4", "H100"}) {
    const auto p = plan_mma(g, op, region({1, 32, 32}), 128, 32, arch(a));
    ASSERT_TRUE(p.has_value()) << a;
    EXPECT_EQ(p->tiles_m, 2);
    EXPECT_EQ(p->tiles_n, 4);
    EXPECT_EQ(p->tiles_per_warp, 2);  // 8 tiles over 4 warps
    // a reads the rows (x), b the columns (w).
    EXPECT_TRUE(uses_var(p->a, 1) && !uses_var(p->a, 2));
    EXPECT_TRUE(uses_var(p->b, 2) && !uses_var(p->b, 1));
  }
  EXPECT_FALSE(plan_mma(g, op, region({1, 32, 32}), 128, 32, arch("T4")));    // sm_75: no m16n8k16 f16
  EXPECT_FALSE(plan_mma(g, op, region({1, 32, 32}), 128, 32, arch("V100")));
  EXPECT_FALSE(plan_mma(g, op, region({1, 32, 32}), 128, 32, arch("MI250")));  // HIP
  EXPECT_FALSE(plan_mma(g, op, region({1, 32, 32}), 128, 32, arch("host")));
  // tune --no-tensor-cores
  EXPECT_FALSE(plan_mma(g, op, region({1, 32, 32}), 128, 32, without_tensor_cores(arch("H100"))));
}

TEST(MmaPlan, RejectsShapesTheFragmentsDoNotTile) {
  const Graph g = matmul_graph(kF16, 64);
  const Op& op = matmul_of(g);
  const auto& h100 = arch("H100");
  EXPECT_TRUE(plan_mma(g, op, region({1, 16, 8}), 32, 0, h100));    // one tile, one warp, no chunks
  EXPECT_FALSE(plan_mma(g, op, region({1, 8, 32}), 128, 32, h100));  // 8 rows
  EXPECT_FALSE(plan_mma(g, op, region({1, 16, 12}), 32, 32, h100));  // 12 columns
  EXPECT_FALSE(plan_mma(g, op, region({1, 16, 8}), 48, 32, h100));   // not whole warps
  EXPECT_FALSE(plan_mma(g, op, region({1, 16, 8}), 64, 32, h100));   // 1 tile, a second warp idle
  const auto uneven = plan_mma(g, op, region({1, 16, 24}), 64, 32, h100);  // 3 tiles over 2 warps
  ASSERT_TRUE(uneven.has_value());
  EXPECT_EQ(uneven->tiles_per_warp, 2);  // the second warp's run overhangs by one
  EXPECT_FALSE(plan_mma(g, matmul_of(matmul_graph(kF16, 8)), region({1, 16, 8}), 32, 0, h100));  // K < 16
  const Graph f = matmul_graph(kF32, 64);  // float32 is not half: CUDA cores
  EXPECT_FALSE(plan_mma(f, matmul_of(f), region({1, 16, 8}), 32, 32, h100));
}

TEST(MmaPlan, SharedWeightsMakeTheBatchPartOfTheRows) {
  // x[2, 64, K] @ w[K, 32]: only x reads the batch axis, so a block over 2
  // batches x 8 rows has 16 GEMM rows.
  const Graph g = matmul_graph(kF16, 64);
  const auto p = plan_mma(g, matmul_of(g), region({2, 8, 8}), 32, 24, arch("H100"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->row_axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(p->col_axes, (std::vector<int>{2}));
  EXPECT_EQ(p->rows, 16);
}

TEST(MmaPlan, ConvolutionIsAnImplicitGemm) {
  // x[1, 8, 10, 10] * w[16, 8, 3, 3] (half): rows are the activation's
  // (n, oh, ow), columns the filters, k = (c, kh, kw) = 72 points.
  OnnxModelBuilder b(13);
  b.input("x", kF16, {1, 8, 10, 10}).input("w", kF16, {16, 8, 3, 3}).output("y", kF16);
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  const Graph g = b.import_as("mma_conv");
  const Op& conv = matmul_of(g);
  ASSERT_EQ(conv.reduce_extents.size(), 3u);
  const auto p = plan_mma(g, conv, region({1, 8, 2, 8}), 32, 0, arch("H100"));
  ASSERT_TRUE(p.has_value()) << to_string(g);
  EXPECT_EQ(p->row_axes, (std::vector<int>{0, 2, 3}));  // n, oh, ow: 16 rows
  EXPECT_EQ(p->col_axes, (std::vector<int>{1}));        // f: 8 columns
  EXPECT_EQ(p->tiles_m * p->tiles_n, 1);
  EXPECT_FALSE(plan_mma(g, conv, region({1, 8, 1, 8}), 32, 0, arch("H100")));  // 8 rows
}

TEST(MmaPlan, WidenedHalfFactorsOfAFloatOutputQualify) {
  // --fp16 keeps the graph output float32: its matmul multiplies half loads
  // widened to float, which the MMA computes exactly as well.
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, 16, 64}).initializer_f("w", {64, 8}, std::vector<float>(64 * 8, 0.5f)).output("y");
  b.node("Relu", {"x"}, {"r"});  // an intermediate: half under --fp16 (the graph input stays float32)
  b.node("MatMul", {"r", "w"}, {"y"});
  const Graph g = passes::to_half_precision(b.import_as("mma_widened"));
  const Op& op = matmul_of(g);
  ASSERT_EQ(g.tensor(op.output).dtype, DType::kF32);
  const auto p = plan_mma(g, op, region({1, 16, 8}), 32, 32, arch("H100"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->a->dtype, DType::kF16);
  EXPECT_EQ(p->b->dtype, DType::kF16);
}

TEST(MmaPlan, TransposedOperandIsStillB) {
  const Graph g = matmul_graph(kF16, 64, true);  // the Transpose is inlined into the matmul's loads
  const auto p = plan_mma(g, matmul_of(g), region({1, 16, 16}), 64, 32, arch("H100"));
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(uses_var(p->b, 2) && !uses_var(p->b, 1));
  EXPECT_EQ(p->tiles_per_warp, 1);
}

}  // namespace
}  // namespace tilegraph
