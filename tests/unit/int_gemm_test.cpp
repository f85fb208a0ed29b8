// Integer GEMMs: the frontend's canonical form, the QDQ rewrite, the
// matcher's axis roles, and epilogue fusion in the CPU schedule.
#include <cmath>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "codegen/project/embedded_ukernels.h"
#include "codegen/lowering/int_gemm_variant.h"
#include "driver/pipeline.h"
#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "compiler/passes/quantize_matmul.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"
#include "scheduler/int_gemm.h"
#include "tests/unit/imported_graph.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

using testing::import_and_optimize;
using testing::OnnxModelBuilder;

// The only op of g that is an integer GEMM.
scheduler::Gemm only_gemm(const Graph& g) {
  std::optional<scheduler::Gemm> found;
  for (const Op& op : g.ops)
    if (auto m = scheduler::match_int_gemm(g, op)) {
      EXPECT_FALSE(found.has_value()) << "two integer GEMMs";
      found = m;
    }
  EXPECT_TRUE(found.has_value()) << to_string(g);
  return found.value_or(scheduler::Gemm{});
}

std::vector<int> ramp(int n, int lo, int hi) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (i * 37) % (hi - lo + 1));
  return v;
}

// kc blocks and row blocks from the cache sizes: a B panel's kc slice within
// half of L1, a row block's packed A within half of L2.
TEST(IntGemmBlocking, BlocksFollowTheCacheSizes) {
  scheduler::ArchSpec arch;
  arch.l1_bytes = 48 << 10;
  arch.l2_bytes = 2 << 20;
  // avx512vnni panels: NR 32 x KU 4 = 128 bytes per k group, 192 in 24 KiB.
  scheduler::IntGemmBlocking b = scheduler::int_gemm_blocking(arch, 192, 32, 4, 192 * 32);  // K = 768
  EXPECT_EQ(b.k_blocks, 1);
  EXPECT_EQ(b.kc_groups, 192);
  EXPECT_EQ(b.max_row_panels, (1 << 20) / (192 * 32));
  b = scheduler::int_gemm_blocking(arch, 768, 32, 4, 768 * 32);  // K = 3072: 4 blocks of 768
  EXPECT_EQ(b.k_blocks, 4);
  EXPECT_EQ(b.kc_groups, 192);
  EXPECT_EQ(b.max_row_panels, 42);
  b = scheduler::int_gemm_blocking(arch, 770, 32, 4, 770 * 32);  // balanced: 5 x 154
  EXPECT_EQ(b.k_blocks, 5);
  EXPECT_EQ(b.kc_groups, 154);
  b = scheduler::int_gemm_blocking(arch, 700, 32, 4, 700 * 32);  // 4 blocks of 175, none short
  EXPECT_EQ(b.k_blocks, 4);
  EXPECT_EQ(b.kc_groups, 175);
  // A smaller L1 (32 KiB): 128 groups per block; a huge A panel: one per row block.
  arch.l1_bytes = 32 << 10;
  b = scheduler::int_gemm_blocking(arch, 300, 32, 4, 4 << 20);
  EXPECT_EQ(b.k_blocks, 3);
  EXPECT_EQ(b.kc_groups, 100);
  EXPECT_EQ(b.max_row_panels, 1);
}

TEST(Gemm, MatMulIntegerRowsAreTheLeadingAxes) {
  OnnxModelBuilder b(13);
  b.input("a", 2, {2, 3, 5}).output("y", 6);
  b.initializer_8bit("w", 3, {5, 4}, ramp(20, -128, 127));
  b.initializer_8bit("za", 2, {}, {3});
  b.node("MatMulInteger", {"a", "w", "za"}, {"y"});
  const scheduler::Gemm m = only_gemm(import_and_optimize(b, "mmi_roles"));
  EXPECT_EQ(m.row_axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(m.col_axes, (std::vector<int>{2}));
  EXPECT_TRUE(m.batch_axes.empty());
  EXPECT_EQ(m.k, 5);
  EXPECT_EQ(m.a->dtype, DType::kU8);
  EXPECT_EQ(m.b->dtype, DType::kI8);
}

TEST(Gemm, BatchMatMulOfTwoActivationsHasBatchAxes) {
  OnnxModelBuilder b(13);
  b.input("a", 3, {2, 3, 5}).input("c", 3, {2, 5, 4}).output("y", 6);
  b.node("MatMulInteger", {"a", "c"}, {"y"});
  const scheduler::Gemm m = only_gemm(import_and_optimize(b, "mmi_batch"));
  EXPECT_EQ(m.batch_axes, (std::vector<int>{0}));
  EXPECT_EQ(m.row_axes, (std::vector<int>{1}));
  EXPECT_EQ(m.col_axes, (std::vector<int>{2}));
}

TEST(Gemm, ConvIntegerIsAnImplicitGemmOverFilters) {
  OnnxModelBuilder b(13);
  b.input("x", 2, {1, 2, 5, 5}).output("y", 6);
  b.initializer_8bit("w", 3, {3, 2, 3, 3}, ramp(54, -100, 100));
  OnnxModelBuilder::attr_ints(b.node("ConvInteger", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  const scheduler::Gemm m = only_gemm(import_and_optimize(b, "conv_integer_roles"));
  EXPECT_EQ(m.col_axes, (std::vector<int>{1}));     // filters
  EXPECT_EQ(m.row_axes, (std::vector<int>{2, 3}));  // output pixels; batch 1 takes no role
  EXPECT_EQ(m.k_extents, (std::vector<int64_t>{2, 3, 3}));
}

TEST(Gemm, ConvIntegerWithAScalarWeightIsAUserError) {
  // Found by the fuzzer: the filter count was read before the ranks were checked.
  OnnxModelBuilder b(13);
  b.input("x", 2, {1, 1, 3, 3}).input("w", 2, {}).output("y", 6);
  b.node("ConvInteger", {"x", "w"}, {"y"}, "bad_conv");
  const std::string path =
      (testing::unit_temp_dir() / "conv_int_rank" / "model.onnx").string();
  b.save(path);
  try {
    onnx_frontend::import_model(path);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'bad_conv' (ConvInteger"), std::string::npos) << e.what();
  }
}

// x (uint8, per-tensor) and w (int8, per output column) dequantized, then MatMul.
OnnxModelBuilder qdq_matmul() {
  OnnxModelBuilder b(13);
  b.input("xq", 2, {3, 8}).output("y");
  b.initializer_f("sx", {}, {0.05f});
  b.initializer_8bit("zx", 2, {}, {121});
  b.initializer_8bit("w", 3, {8, 4}, ramp(32, -128, 127));
  b.initializer_f("sw", {4}, {0.01f, 0.02f, 0.03f, 0.04f});
  b.initializer_8bit("zw", 3, {4}, {0, 0, 0, 0});
  b.node("DequantizeLinear", {"xq", "sx", "zx"}, {"x"});
  OnnxModelBuilder::attr_int(b.node("DequantizeLinear", {"w", "sw", "zw"}, {"wf"}), "axis", 1);
  b.node("MatMul", {"x", "wf"}, {"y"});
  return b;
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(QuantizeMatmul, QdqMatMulBecomesIntegerGemmTimesScales) {
  const OnnxModelBuilder b = qdq_matmul();
  const std::string path =
      (testing::unit_temp_dir() / "qdq_mm" / "model.onnx").string();
  b.save(path);
  const Graph before = onnx_frontend::import_model(path);
  const Graph after = passes::quantize_matmul(before);
  ASSERT_NE(to_string(after), to_string(before));
  const scheduler::Gemm m = only_gemm(after);
  EXPECT_EQ(m.k, 8);
  // Same values as the float product of dequantized operands (the scales
  // move out of the sum: equal up to float rounding).
  std::vector<uint8_t> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 53) % 256);
  const auto want = as_floats(evaluate_graph(before, {x})[0]);
  const auto got = as_floats(evaluate_graph(after, {x})[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << i;
}

TEST(QuantizeMatmul, FloatMatMulIsLeftAlone) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {3, 8}).output("y");
  b.initializer_f("w", {8, 2}, std::vector<float>(16, 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"});
  const std::string path =
      (testing::unit_temp_dir() / "float_mm" / "model.onnx").string();
  b.save(path);
  const Graph g = onnx_frontend::import_model(path);
  const Graph same = passes::quantize_matmul(g);
  EXPECT_EQ(to_string(same), to_string(g));
}

// a (uint8 [4,16]) -> QLinearMatMul with int8 weights [16,8] -> `out`, and
// the output declared as `y` of y_type (the caller adds what follows).
OnnxModelBuilder qlinear_matmul(const std::string& out, int y_type) {
  OnnxModelBuilder b(13);
  b.input("a", 2, {4, 16}).output("y", y_type);
  for (const char* s : {"sa", "sb", "sy"}) b.initializer_f(s, {}, {0.1f});
  b.initializer_8bit("za", 2, {}, {128});
  b.initializer_8bit("w", 3, {16, 8}, ramp(128, -128, 127));
  b.initializer_8bit("zb", 3, {}, {0});
  b.initializer_8bit("zy", 2, {}, {100});
  b.node("QLinearMatMul", {"a", "sa", "za", "w", "sb", "zb", "sy", "zy"}, {out});
  return b;
}

TEST(Gemm, RequantizeIsFusedAsTheEpilogue) {
  const OnnxModelBuilder b = qlinear_matmul("y", 2);
  const Graph g = import_and_optimize(b, "qlinear_epilogue");
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  EXPECT_EQ(scheduler::use_gemm_ukernels(g, s, true).int_gemms, 1);
  ASSERT_EQ(s.kernels.size(), 1u) << "the requantize op should be the GEMM's epilogue";
  EXPECT_EQ(s.kernels[0].kind, scheduler::KernelKind::kIntGemm);
  EXPECT_EQ(g.tensor(g.ops[static_cast<size_t>(s.kernels[0].ops.back())].output).dtype, DType::kU8);
}

TEST(Gemm, EpilogueBehindAReshapeAddingAUnitDimensionIsStillFused) {
  // QLinearMatMul [4,8] -> Reshape [1,4,8] -> DequantizeLinear: the consumer
  // kernel has the accumulator's elements in another rank.
  OnnxModelBuilder b = qlinear_matmul("q", 1);
  b.initializer_i64("shape", {3}, {1, 4, 8});
  b.node("Reshape", {"q", "shape"}, {"r"});
  b.node("DequantizeLinear", {"r", "sy", "zy"}, {"y"});
  const Graph g = import_and_optimize(b, "reshaped_epilogue");
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  EXPECT_EQ(scheduler::use_gemm_ukernels(g, s, true).int_gemms, 1);
  ASSERT_EQ(s.kernels.size(), 1u) << to_string(g);
  EXPECT_EQ(g.tensor(g.ops[static_cast<size_t>(s.kernels[0].ops.back())].output).shape, (Shape{1, 4, 8}));
}

TEST(Gemm, EpilogueCoordinatesMapAcrossUnitDimensions) {
  const std::vector<Expr> acc = {var(0), var(1)};
  const std::vector<Expr> epi = scheduler::epilogue_coords(acc, {4, 8}, {1, 4, 1, 8});
  ASSERT_EQ(epi.size(), 4u);
  EXPECT_TRUE(is_const_int(epi[0]) && is_const_int(epi[2]));
  EXPECT_TRUE(same_expr(epi[1], var(0)) && same_expr(epi[3], var(1)));
  EXPECT_THROW(scheduler::epilogue_coords(acc, {4, 8}, {32}), InternalError);
}

// The generated kernels.h static_asserts that the shipped micro-kernel header
// has the tile the packing loops were generated for: the assertion names the
// compiler's table's constants, and every embedded header defines exactly those.
TEST(IntGemm, GeneratedTileAssertMatchesEveryMicroKernelHeader) {
  int headers = 0;
  for (const char* name : {"avx512vnni", "avx2", "i8mm", "dotprod", "neon", "scalar"}) {
    const codegen::IntGemmVariant v = codegen::int_gemm_variant_named(name);
    const std::string check = codegen::int_gemm_tile_assert(v);
    EXPECT_EQ(check.rfind("static_assert(", 0), 0u) << check;
    EXPECT_NE(check.find(str_cat("tg_qgemm::kMR == ", v.mr, " && tg_qgemm::kNR == ", v.nr, " && tg_qgemm::kKU == ",
                                 v.ku, " && tg_qgemm::kAUnsigned == ", v.a_unsigned ? "true" : "false",
                                 " && tg_qgemm::kABytes == ", v.a_bytes)),
              std::string::npos) << check;
    for (const codegen::EmbeddedFile& f : codegen::embedded_ukernel_files()) {
      if (f.name != v.header()) continue;
      ++headers;
      const std::string text(f.contents);
      for (const std::string& constant :
           {str_cat("constexpr int kMR = ", v.mr, ";"), str_cat("constexpr int kNR = ", v.nr, ";"),
            str_cat("constexpr int kKU = ", v.ku, ";"),
            str_cat("constexpr bool kAUnsigned = ", v.a_unsigned ? "true" : "false", ";"),
            str_cat("constexpr int kABytes = ", v.a_bytes, ";")})
        EXPECT_NE(text.find(constant), std::string::npos) << v.header() << " lacks " << constant;
    }
  }
  EXPECT_EQ(headers, 6);
}

}  // namespace
}  // namespace tilegraph
