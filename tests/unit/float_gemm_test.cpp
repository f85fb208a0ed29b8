// Float32 GEMMs: the shared matcher's axis roles for matmuls and convs, the
// rule that keeps column-starved contractions (depthwise) off the
// micro-kernel, the lowered loops (packing, column tables, k blocks), and
// epilogue fusion in the CPU schedule.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "codegen/lowering/lower_direct_conv_kernel.h"
#include "codegen/lowering/lower_float_gemm_kernel.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/project/in_place.h"
#include "codegen/kernel_ir/verify_kernel.h"
#include "compiler/ir/error.h"
#include "compiler/ir/simplify.h"
#include "driver/pipeline.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"
#include "scheduler/int_gemm.h"
#include "scheduler/ukernel_features.h"
#include "tests/unit/kernel_calls.h"
#include "tests/unit/imported_graph.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

using testing::calls_in;
using testing::import_and_optimize;
using testing::OnnxModelBuilder;

std::vector<scheduler::Gemm> float_gemms(const Graph& g) {
  std::vector<scheduler::Gemm> found;
  for (const Op& op : g.ops)
    if (auto m = scheduler::match_gemm(g, op); m && m->element == DType::kF32) found.push_back(*m);
  return found;
}

std::vector<float> ramp(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>((i * 37) % 11) * 0.1f - 0.5f);
  return v;
}

// g's one float GEMM, scheduled for the host: the schedule's kernel count,
// the micro-kernel `variant`, the operands packed at compile time (none
// without `prepack`: the profiler's case, packed at run time) and the
// kernel lowered for `arch`.
struct LoweredGemm {
  size_t kernels = 0;
  codegen::FloatGemmVariant variant;
  codegen::FloatGemmPacks packs;
  codegen::Kernel kernel;
};

LoweredGemm lower_the_gemm(Graph& g, const std::string& variant = "scalar",
                           const scheduler::ArchSpec& arch = scheduler::host_arch(), bool prepack = true) {
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  EXPECT_EQ(scheduler::use_gemm_ukernels(g, s, true).float_gemms, 1);
  LoweredGemm r;
  r.kernels = s.kernels.size();
  r.variant = codegen::float_gemm_variant_named(variant);
  if (prepack) r.packs = codegen::prepack_float_gemm_operands(g, s.kernels.at(0), r.variant, arch);
  r.kernel = codegen::lower_float_gemm_kernel(g, s.kernels.at(0), r.variant, r.packs, arch);
  return r;
}

TEST(FloatGemm, MatMulRowsAreTheLeadingAxesAndWeightsAreB) {
  OnnxModelBuilder b(13);
  b.input("a", 1, {2, 3, 5}).output("y");
  b.initializer_f("w", {5, 16}, ramp(80));
  b.node("MatMul", {"a", "w"}, {"y"});
  const Graph g = import_and_optimize(b, "matmul");
  const std::vector<scheduler::Gemm> m = float_gemms(g);
  ASSERT_EQ(m.size(), 1u) << to_string(g);
  EXPECT_EQ(m[0].row_axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(m[0].col_axes, (std::vector<int>{2}));
  EXPECT_TRUE(m[0].batch_axes.empty());
  EXPECT_EQ(m[0].k, 5);
  EXPECT_FALSE(scheduler::match_int_gemm(g, g.ops[0]).has_value());
  EXPECT_TRUE(scheduler::float_gemm_pays(m[0]));
}

// One row (a classifier's x @ W^T): on the micro-kernel where W is
// constant and holds a MiB or more (its panels packed at compile time
// stream in order), in the loop nest where it is smaller or where B is
// another activation.
TEST(FloatGemm, AVectorTimesConstantWeightsTakesTheMicroKernel) {
  OnnxModelBuilder small(13);
  small.input("x", 1, {1, 64}).output("y");
  small.initializer_f("w", {100, 64}, ramp(6400));
  OnnxModelBuilder::attr_int(small.node("Gemm", {"x", "w"}, {"y"}), "transB", 1);
  const std::vector<scheduler::Gemm> cached = float_gemms(import_and_optimize(small, "small_classifier"));
  ASSERT_EQ(cached.size(), 1u);
  EXPECT_FALSE(scheduler::float_gemm_pays(cached[0], false, true));

  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 512}).output("y");
  b.initializer_f("w", {512, 512}, ramp(512 * 512));
  OnnxModelBuilder::attr_int(b.node("Gemm", {"x", "w"}, {"y"}), "transB", 1);
  Graph g = import_and_optimize(b, "classifier");
  const std::vector<scheduler::Gemm> m = float_gemms(g);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].rows(), 1);
  EXPECT_FALSE(scheduler::float_gemm_pays(m[0]));
  EXPECT_TRUE(scheduler::float_gemm_pays(m[0], false, true));
  const LoweredGemm gemm = lower_the_gemm(g, "avx512");
  EXPECT_GE(gemm.packs.b, 0);
  codegen::verify(gemm.kernel);

  OnnxModelBuilder two(13);
  two.input("x", 1, {1, 512}).input("v", 1, {512, 512}).output("y");
  two.node("MatMul", {"x", "v"}, {"y"});
  Graph ga = import_and_optimize(two, "vector_times_activation");
  scheduler::Schedule s = scheduler::schedule_tile_graph(ga, scheduler::host_arch(), {});
  EXPECT_EQ(scheduler::use_gemm_ukernels(ga, s, true).float_gemms, 0);
}

TEST(FloatGemm, BatchMatMulOfTwoActivationsThroughATransposeHasBatchAxes) {
  OnnxModelBuilder b(13);
  b.input("q", 1, {2, 6, 4}).input("k", 1, {2, 9, 4}).output("y");
  OnnxModelBuilder::attr_ints(b.node("Transpose", {"k"}, {"kt"}), "perm", {0, 2, 1});
  b.node("MatMul", {"q", "kt"}, {"y"});
  const std::vector<scheduler::Gemm> m = float_gemms(import_and_optimize(b, "qk"));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].batch_axes, (std::vector<int>{0}));
  EXPECT_EQ(m[0].row_axes, (std::vector<int>{1}));
  EXPECT_EQ(m[0].col_axes, (std::vector<int>{2}));
  EXPECT_EQ(m[0].k, 4);
}

// NCHW: the activations read the output's innermost axis, so they are B
// (columns = output pixels, contiguous in the output) and the weights A
// (rows = filters).
TEST(FloatGemm, PaddedStridedConvIsAnImplicitGemmWithFiltersAsRows) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 3, 24, 24}).output("y");  // 12 x 12 output pixels
  b.initializer_f("w", {16, 3, 3, 3}, ramp(16 * 27));
  auto& conv = b.node("Conv", {"x", "w"}, {"y"});
  OnnxModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  OnnxModelBuilder::attr_ints(conv, "strides", {2, 2});
  const std::vector<scheduler::Gemm> m = float_gemms(import_and_optimize(b, "conv"));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].row_axes, (std::vector<int>{1}));     // filters
  EXPECT_EQ(m[0].col_axes, (std::vector<int>{2, 3}));  // output pixels (batch 1 has no role)
  EXPECT_TRUE(m[0].batch_axes.empty());
  EXPECT_EQ(m[0].k, 27);                               // channels x window
  const Graph g = import_and_optimize(b, "conv_roles");
  EXPECT_TRUE(scheduler::reads_only_constants(g, g.ops[0], m[0].a));  // the weights: packed at compile time
  EXPECT_FALSE(scheduler::reads_only_constants(g, g.ops[0], m[0].b));
  EXPECT_TRUE(scheduler::float_gemm_pays(m[0]));
}

// The conv's weights (A) are packed at compile time into MR-row panels,
// zero past K; the activations (B) are packed per column panel at run time.
// (5 input channels: over 3 the conv would take the direct kernel.)
TEST(FloatGemm, ConvWeightsArePackedAsRowPanelsAtCompileTime) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 5, 12, 12}).output("y");
  const std::vector<float> w = ramp(16 * 45);
  b.initializer_f("w", {16, 5, 3, 3}, w);
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  Graph g = import_and_optimize(b, "conv_packed_a");
  const LoweredGemm gemm = lower_the_gemm(g);  // scalar: 4 x 8
  ASSERT_EQ(gemm.kernels, 1u);
  ASSERT_GE(gemm.packs.a, 0);
  EXPECT_EQ(gemm.packs.b, -1);
  const Tensor& packed = g.tensor(gemm.packs.a);
  constexpr int64_t kPanel = 192;  // 45 k x 4 rows, padded to 16 floats
  ASSERT_EQ(packed.shape, (Shape{4 * kPanel}));
  std::vector<float> got(static_cast<size_t>(4 * kPanel));
  std::memcpy(got.data(), packed.data->data(), got.size() * sizeof(float));
  for (int64_t p = 0; p < 4; ++p)
    for (int64_t k = 0; k < 48; ++k)
      for (int64_t i = 0; i < 4; ++i) {
        const float want = k < 45 ? w[static_cast<size_t>((p * 4 + i) * 45 + k)] : 0.0f;
        ASSERT_EQ(got[static_cast<size_t>(p * kPanel + k * 4 + i)], want) << p << " " << k << " " << i;
      }
  const codegen::Kernel& kernel = gemm.kernel;
  EXPECT_EQ(kernel.ukernel, "sgemm_scalar");
  // no run-time A packing loop ("pa"), a run-time B panel loop ("jb")
  EXPECT_EQ(std::count(kernel.var_names.begin(), kernel.var_names.end(), "pa"), 0);
  EXPECT_EQ(std::count(kernel.var_names.begin(), kernel.var_names.end(), "jb"), 1);
}

// The one lowering dispatch in two steps: pack_constant_operands adds the
// conv weights' panels to the graph; lower_kernel reads a const graph, and
// without the packs (the profiler's case) packs A at run time instead.
TEST(FloatGemm, LowerKernelPacksConstantsOnlyWhenGivenThePacks) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 5, 12, 12}).output("y");
  b.initializer_f("w", {16, 5, 3, 3}, ramp(16 * 45));
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  Graph g = import_and_optimize(b, "lower_kernel_packs");
  const scheduler::ArchSpec arch = scheduler::host_arch();
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, arch, {});
  ASSERT_EQ(scheduler::use_gemm_ukernels(g, s, true).float_gemms, 1);
  ASSERT_EQ(s.kernels.size(), 1u);
  const size_t tensors = g.tensors.size();
  const codegen::Kernel unpacked = codegen::lower_kernel(g, s.kernels[0], arch);
  codegen::verify(unpacked);
  EXPECT_EQ(g.tensors.size(), tensors);
  EXPECT_EQ(std::count(unpacked.var_names.begin(), unpacked.var_names.end(), "pa"), 1);
  const codegen::KernelPacks packs = codegen::pack_constant_operands(g, s.kernels[0], arch);
  ASSERT_GE(packs.float_gemm.a, 0);
  EXPECT_EQ(packs.int_gemm.panels, -1);
  EXPECT_EQ(g.tensors.size(), tensors + 1);
  const codegen::Kernel packed = codegen::lower_kernel(g, s.kernels[0], arch, packs);
  codegen::verify(packed);
  EXPECT_EQ(std::count(packed.var_names.begin(), packed.var_names.end(), "pa"), 0);
  // The packed kernel reads the panels, not the filters: those are no longer
  // its parameter (so weights.bin does not carry them twice,
  // codegen/lowering/drop_unread_constants.h).
  auto takes = [&](const codegen::Kernel& k, TensorId t) {
    return std::any_of(k.buffers.begin(), k.buffers.end(), [&](const codegen::Buffer& b) {
      return b.scope == codegen::MemoryScope::kGlobal && b.tensor == t;
    });
  };
  TensorId w = -1;
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].name == "w") w = static_cast<TensorId>(t);
  ASSERT_GE(w, 0);
  EXPECT_TRUE(takes(unpacked, w));
  EXPECT_FALSE(takes(packed, w));
  EXPECT_TRUE(takes(packed, packs.float_gemm.a));
}

// The For loops over var `name` anywhere in s.
void loops_named(const codegen::Kernel& k, const codegen::Stmt& s, const std::string& name,
                 std::vector<codegen::Stmt>* found) {
  if (!s) return;
  if (s->kind == codegen::StmtKind::kFor && k.var_names[static_cast<size_t>(s->var)] == name) found->push_back(s);
  for (const codegen::Stmt& c : s->body) loops_named(k, c, name, found);
}

// Binary nodes of the given ops in s's stores.
int ops_in(const codegen::Stmt& s, const std::vector<BinaryOp>& ops) {
  int n = 0;
  auto count = [&](const Expr& e) {
    if (!e) return;
    visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kBinary && std::find(ops.begin(), ops.end(), x->binary_op) != ops.end()) ++n;
    });
  };
  count(s->index);
  count(s->value);
  for (const codegen::Stmt& c : s->body) n += ops_in(c, ops);
  return n;
}

int divisions_in(const codegen::Stmt& s) {
  return ops_in(s, {BinaryOp::kDiv, BinaryOp::kRem, BinaryOp::kFloorDiv, BinaryOp::kFloorMod});
}

// A k x k conv's B panel: each column's output pixel (div/mod by the output
// width) and, per window position, its padding test and clamped input
// offset are computed once per panel into a table ("columns", loop "jt"):
// the per-k packing loop ("jb") divides nothing and clamps nothing.
TEST(FloatGemm, ConvColumnCoordinatesAreComputedOncePerPanel) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {2, 5, 29, 23}).output("y");  // batch 2, odd sizes: 15 x 11 output pixels
  b.initializer_f("w", {16, 5, 3, 3}, ramp(16 * 45));
  auto& conv = b.node("Conv", {"x", "w"}, {"y"});
  OnnxModelBuilder::attr_ints(conv, "pads", {1, 0, 2, 1});
  OnnxModelBuilder::attr_ints(conv, "strides", {2, 2});
  Graph g = import_and_optimize(b, "conv_column_table");
  const codegen::Kernel kernel = lower_the_gemm(g).kernel;
  std::vector<codegen::Stmt> pack, fill;
  loops_named(kernel, kernel.body, "jb", &pack);
  loops_named(kernel, kernel.body, "jt", &fill);
  ASSERT_EQ(pack.size(), 1u);
  ASSERT_EQ(fill.size(), 1u);
  EXPECT_EQ(divisions_in(pack[0]), 0);
  EXPECT_EQ(ops_in(pack[0], {BinaryOp::kMin, BinaryOp::kMax}), 0);
  EXPECT_GT(divisions_in(fill[0]), 0);
  EXPECT_GT(ops_in(fill[0], {BinaryOp::kMin, BinaryOp::kMax}), 0);
  EXPECT_TRUE(std::any_of(kernel.buffers.begin(), kernel.buffers.end(),
                          [](const codegen::Buffer& buf) { return buf.name == "columns"; }));
}

// The kernel of one 3x3 conv over `channels` x 40 x 40 (pad 1, `stride`),
// lowered for the AVX-512 variant (32-column panels: two runs of 16).
codegen::Kernel conv3x3_avx512_kernel(const std::string& name, int64_t stride, int64_t channels = 8,
                                      int64_t side = 40) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, channels, side, side}).output("y");
  b.initializer_f("w", {16, channels, 3, 3}, ramp(16 * channels * 9));
  auto& conv = b.node("Conv", {"x", "w"}, {"y"});
  OnnxModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  OnnxModelBuilder::attr_ints(conv, "strides", {stride, stride});
  Graph g = import_and_optimize(b, name);
  LoweredGemm gemm = lower_the_gemm(g, "avx512");
  EXPECT_EQ(gemm.variant.nr, 32);
  codegen::verify(gemm.kernel);
  return gemm.kernel;
}

// The loads of buffer `buffer` in s's stores and conditions.
void loads_of(const codegen::Stmt& s, int buffer, std::vector<Expr>* found) {
  auto collect = [&](const Expr& e) {
    if (!e) return;
    visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kLoad && x->int_value == buffer) found->push_back(x);
    });
  };
  collect(s->index);
  collect(s->value);
  collect(s->cond);
  for (const codegen::Stmt& c : s->body) loads_of(c, buffer, found);
}

// A stride-1 conv's panel packs in runs of 16 columns: where a run's input
// offsets step by one (its flag, filled per panel after the table: loop
// "lr"), one plain load at the run's first offset plus the lane; else a
// load per column through the table. Both loops are "lb"; no "jb" is left.
// The table is int32 (its 2 terms x 9 positions x 32 columns) plus the 9 x 2
// flags.
TEST(FloatGemm, StrideOneConvPacksContiguousRunsWithPlainLoads) {
  const codegen::Kernel kernel = conv3x3_avx512_kernel("conv_runs", 1);
  std::vector<codegen::Stmt> runs, flags, per_column;
  loops_named(kernel, kernel.body, "lb", &runs);
  loops_named(kernel, kernel.body, "lr", &flags);
  loops_named(kernel, kernel.body, "jb", &per_column);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(flags.size(), 1u);
  EXPECT_TRUE(per_column.empty());
  const auto table = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                  [](const codegen::Buffer& buf) { return buf.name == "columns"; });
  ASSERT_NE(table, kernel.buffers.end());
  EXPECT_EQ(table->dtype, DType::kI32);
  EXPECT_EQ(table->elements, 2 * 9 * 32 + 9 * 2);
  const int table_id = static_cast<int>(table - kernel.buffers.begin());
  const int lane = static_cast<int>(std::find(kernel.var_names.begin(), kernel.var_names.end(), "lb") -
                                    kernel.var_names.begin());
  // The run's loop reads the padding test per lane and the input at the
  // run's first offset (read from the table into a local before the loop)
  // plus the lane; the other loop reads both per lane.
  std::vector<Expr> fast, each;
  loads_of(runs[0], table_id, &fast);
  loads_of(runs[1], table_id, &each);
  ASSERT_EQ(fast.size(), 1u);
  ASSERT_EQ(each.size(), 2u);
  EXPECT_TRUE(uses_var(fast[0], lane));
  EXPECT_EQ(std::count_if(each.begin(), each.end(), [&](const Expr& l) { return uses_var(l, lane); }), 2);
  const auto first = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                  [](const codegen::Buffer& buf) { return buf.name == "run_first0"; });
  ASSERT_NE(first, kernel.buffers.end());
  std::vector<Expr> from_first;
  loads_of(runs[0], static_cast<int>(first - kernel.buffers.begin()), &from_first);
  EXPECT_EQ(from_first.size(), 1u);
}

// On AVX-512 a stride-1 conv's packing reads its padded window under the
// padding test (guarded_select: a masked load), so its table holds
// unclamped offsets, which step by one across the padding and across
// output rows (40 wide in and out): every run's flag is set, no lane
// gathers. Stride 2 keeps the clamped offsets (a masked load would not
// vectorize with a step of two) and its plain selects.
TEST(FloatGemm, StrideOneConvReadsThePaddingUnderItsTestNotClamped) {
  const codegen::Kernel kernel = conv3x3_avx512_kernel("conv_guarded", 1);
  std::vector<codegen::Stmt> runs;
  loops_named(kernel, kernel.body, "lb", &runs);
  ASSERT_EQ(runs.size(), 2u);
  for (const codegen::Stmt& r : runs)
    EXPECT_TRUE(any_node(r->body[0]->value, is_guarded_select)) << codegen::to_string(kernel);
  // One Min: the run flags' over the lanes; no clamp.
  EXPECT_EQ(ops_in(kernel.body, {BinaryOp::kMin, BinaryOp::kMax}), 1) << codegen::to_string(kernel);
  const codegen::Kernel stride2 = conv3x3_avx512_kernel("conv_clamped", 2);
  std::vector<codegen::Stmt> runs2;
  loops_named(stride2, stride2.body, "lb", &runs2);
  ASSERT_EQ(runs2.size(), 2u);
  EXPECT_FALSE(any_node(runs2[0]->body[0]->value, is_guarded_select));
  EXPECT_GT(ops_in(stride2.body, {BinaryOp::kMin, BinaryOp::kMax}), 1);
}

// Stride 2: a run's input offsets step by two, flagged per run as for
// stride 1. On AVX-512 the run first reads its 32 contiguous input values
// ("lw0": a masked load at the run's first offset, the mask keeping the
// read inside the input) into a local "run_wide0", then its loop takes
// every other one (twice the lane: one permute instead of a gather).
// Stride 3 keeps one load per column and no flags.
TEST(FloatGemm, StrideTwoConvPacksRunsThatStepByTwo) {
  const codegen::Kernel kernel = conv3x3_avx512_kernel("conv_step2_runs", 2);
  std::vector<codegen::Stmt> runs, flags, per_column;
  loops_named(kernel, kernel.body, "lb", &runs);
  loops_named(kernel, kernel.body, "lr", &flags);
  loops_named(kernel, kernel.body, "jb", &per_column);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(flags.size(), 1u);
  EXPECT_TRUE(per_column.empty());
  const int lane = static_cast<int>(std::find(kernel.var_names.begin(), kernel.var_names.end(), "lb") -
                                    kernel.var_names.begin());
  std::vector<Expr> input_reads;
  visit(runs[0]->body[0]->value, [&](const Expr& x) {
    if (x->kind == ExprKind::kLoad && x->dtype == DType::kF32) input_reads.push_back(x);
  });
  ASSERT_EQ(input_reads.size(), 1u);
  std::vector<Expr> at(kernel.var_names.size());
  for (size_t i = 0; i < at.size(); ++i) at[i] = var(static_cast<int>(i));
  const Expr index = input_reads[0]->args[0];
  at[static_cast<size_t>(lane)] = int_imm(1);
  const Expr next = substitute_vars(index, at);
  at[static_cast<size_t>(lane)] = int_imm(0);
  int64_t step = 0;
  ASSERT_TRUE(is_const_int(simplify(next - substitute_vars(index, at), {}), &step));
  EXPECT_EQ(step, 2);
  const auto wide = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                 [](const codegen::Buffer& b) { return b.name == "run_wide0"; });
  ASSERT_NE(wide, kernel.buffers.end());
  EXPECT_EQ(wide->elements, 32);
  EXPECT_EQ(input_reads[0]->int_value, wide - kernel.buffers.begin());
  // Two fills: a plain load where the run's 32 values lie inside the input
  // (tested once per run), the masked one near its end.
  std::vector<codegen::Stmt> fills;
  loops_named(kernel, kernel.body, "lw0", &fills);
  ASSERT_EQ(fills.size(), 2u) << codegen::to_string(kernel);
  const Expr plain = fills[0]->body[0]->value;
  ASSERT_EQ(plain->kind, ExprKind::kLoad) << codegen::to_string(kernel);
  const Expr filled = fills[1]->body[0]->value;
  ASSERT_TRUE(is_guarded_select(filled)) << codegen::to_string(kernel);
  ASSERT_EQ(filled->args[1]->kind, ExprKind::kLoad);
  EXPECT_EQ(plain->int_value, filled->args[1]->int_value) << "both read the conv's input";
  ASSERT_EQ(filled->args[0]->kind, ExprKind::kBinary);
  EXPECT_EQ(filled->args[0]->binary_op, BinaryOp::kLt);
  int64_t input_elements = 0;
  ASSERT_TRUE(is_const_int(filled->args[0]->args[1], &input_elements));
  EXPECT_EQ(input_elements, 8 * 40 * 40);
  // The flags compare in the table's int32 (a lane's offset minus the run's
  // first against the lane's step): no value of the loop widens to int64.
  int widened = 0, compares = 0;
  visit(flags[0]->body[0]->value, [&](const Expr& x) {
    widened += x->kind == ExprKind::kCast && x->dtype == DType::kI64;
    if (x->kind == ExprKind::kBinary && x->binary_op == BinaryOp::kEq) {
      ++compares;
      EXPECT_EQ(x->args[0]->dtype, DType::kI32) << codegen::to_string(kernel);
    }
  });
  EXPECT_EQ(widened, 0) << codegen::to_string(kernel);
  EXPECT_EQ(compares, 1) << codegen::to_string(kernel);

  const codegen::Kernel stride3 = conv3x3_avx512_kernel("conv_no_runs", 3);
  runs.clear(), flags.clear(), per_column.clear();
  loops_named(stride3, stride3.body, "lb", &runs);
  loops_named(stride3, stride3.body, "lr", &flags);
  loops_named(stride3, stride3.body, "jb", &per_column);
  EXPECT_TRUE(runs.empty());
  EXPECT_TRUE(flags.empty());
  EXPECT_EQ(per_column.size(), 1u);
}

// A stem conv (3 channels) prefetches, before each (channel, window row)'s
// loop over the window's columns, the input the panel after next reads
// there: the run's first offset two panels of columns further (2 x 32
// columns at a step of 2), 32 x 2 + 3 floats, clamped to the input. With 64
// channels those lines (64 x 3 x 268 bytes per panel) would not stay in
// the L1 until read: none.
TEST(FloatGemm, StemConvPrefetchesTheInputOfThePanelAfterNext) {
  const codegen::Kernel kernel = conv3x3_avx512_kernel("stem_prefetch", 2, 3, 64);
  std::vector<codegen::Stmt> calls, rows, runs;
  calls_in(kernel.body, "tg_prefetch_bytes<3>", &calls);
  ASSERT_EQ(calls.size(), 1u) << codegen::to_string(kernel);
  loops_named(kernel, kernel.body, "kb1", &rows);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0]->body.size(), 2u);
  EXPECT_EQ(rows[0]->body[0], calls[0]);
  ASSERT_EQ(rows[0]->body[1]->kind, codegen::StmtKind::kFor);
  EXPECT_EQ(kernel.var_names[static_cast<size_t>(rows[0]->body[1]->var)], "kb2");
  const codegen::CallArg& at = calls[0]->args[0];
  int64_t bytes = 0;
  ASSERT_TRUE(is_const_int(calls[0]->args[1].value, &bytes));
  EXPECT_EQ(bytes, (32 * 2 + 3) * 4);
  ASSERT_EQ(at.value->kind, ExprKind::kBinary);
  ASSERT_EQ(at.value->binary_op, BinaryOp::kMin);
  int64_t last = 0;
  ASSERT_TRUE(is_const_int(at.value->args[1], &last));
  EXPECT_EQ(last, 3 * 64 * 64 - (32 * 2 + 3));
  // The run's first input offset (its plain fill "lw0" at 0) at the first
  // run and the window's first column.
  std::vector<codegen::Stmt> fills;
  loops_named(kernel, kernel.body, "lw0", &fills);
  ASSERT_EQ(fills.size(), 2u);
  const Expr plain = fills[0]->body[0]->value;
  ASSERT_EQ(plain->kind, ExprKind::kLoad);
  EXPECT_EQ(plain->int_value, at.buffer) << "the prefetch is of the conv's input";
  std::vector<Expr> first(kernel.var_names.size());
  for (size_t i = 0; i < first.size(); ++i) {
    const std::string& n = kernel.var_names[i];
    first[i] = n == "lw0" || n == "gb" || n == "kb2" ? int_imm(0) : var(static_cast<int>(i));
  }
  int64_t ahead = 0;
  ASSERT_TRUE(is_const_int(simplify(at.value->args[0] - substitute_vars(plain->args[0], first), {}), &ahead))
      << codegen::to_string(kernel);
  EXPECT_EQ(ahead, 2 * 32 * 2);

  const codegen::Kernel wide = conv3x3_avx512_kernel("many_channels_no_prefetch", 2, 64, 40);
  calls.clear();
  calls_in(wide.body, "tg_prefetch_bytes<3>", &calls);
  EXPECT_TRUE(calls.empty()) << codegen::to_string(wide);
}

// A matmul's B (weights packed at compile time aside, an activation read
// along plain rows) needs no table.
TEST(FloatGemm, MatMulPanelsNeedNoColumnTable) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {2, 13, 24}).input("z", 1, {2, 24, 37}).output("y");
  b.node("MatMul", {"x", "z"}, {"y"});
  Graph g = import_and_optimize(b, "matmul_no_table");
  const codegen::Kernel kernel = lower_the_gemm(g).kernel;
  std::vector<codegen::Stmt> pack, fill;
  loops_named(kernel, kernel.body, "jb", &pack);
  loops_named(kernel, kernel.body, "jt", &fill);
  EXPECT_EQ(pack.size(), 1u);
  EXPECT_TRUE(fill.empty());
}

int selects_in(const codegen::Stmt& s) {
  int n = 0;
  auto count = [&](const Expr& e) {
    if (e) visit(e, [&](const Expr& x) { n += x->kind == ExprKind::kSelect; });
  };
  count(s->index);
  count(s->value);
  for (const codegen::Stmt& c : s->body) n += selects_in(c);
  return n;
}

// Where N has a tail (a 1x1 conv over 9 x 15 = 135 pixels, scalar NR 8:
// 16 full panels and one of 7 columns), the full panels get their own B
// packing and store loops ("jbw", "jw") at the panel clamped to the last
// full one: their column indices need no zero-fill select and no division,
// so the B panel and the residual read are contiguous. The last panel
// keeps the guarded loops ("jb", "j"), whose residual index still splits
// the column into output row and column.
TEST(FloatGemm, FullColumnPanelsIndexWithoutTheTailsGuards) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 6, 9, 15}).input("r", 1, {1, 16, 9, 15}).output("y");
  b.initializer_f("w", {16, 6, 1, 1}, ramp(16 * 6));
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("Add", {"c", "r"}, {"y"});
  Graph g = import_and_optimize(b, "full_column_panels");
  const LoweredGemm gemm = lower_the_gemm(g);
  ASSERT_GE(gemm.packs.a, 0);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  std::vector<codegen::Stmt> full_pack, tail_pack, full_store, tail_store;
  loops_named(kernel, kernel.body, "jbw", &full_pack);
  loops_named(kernel, kernel.body, "jb", &tail_pack);
  loops_named(kernel, kernel.body, "jw", &full_store);
  loops_named(kernel, kernel.body, "j", &tail_store);
  ASSERT_EQ(full_pack.size(), 1u);
  ASSERT_EQ(tail_pack.size(), 1u);
  ASSERT_EQ(full_store.size(), 1u);
  ASSERT_EQ(tail_store.size(), 1u);
  EXPECT_EQ(selects_in(full_pack[0]), 0);
  EXPECT_EQ(selects_in(tail_pack[0]), 1) << "the tail zero-fills past N";
  EXPECT_EQ(divisions_in(full_pack[0]), 0);
  EXPECT_EQ(divisions_in(full_store[0]), 0);
  EXPECT_GT(divisions_in(tail_store[0]), 0);
  int64_t columns = 0;
  EXPECT_TRUE(is_const_int(full_store[0]->extent, &columns));
  EXPECT_EQ(columns, 8);
  EXPECT_FALSE(is_const(tail_store[0]->extent)) << "the last panel stops at the last column";
}

bool has_ukernel_param(const codegen::Kernel& k, const std::string& name) {
  for (const auto& param : k.ukernel_params)
    if (param.first == name) return true;
  return false;
}

// B packed at run time, as before B could be read in place
// (lower_float_gemm_kernel.cpp: find_in_place_b), for the tests of packing
// and of the packed calls.
struct PackedB {
  PackedB() { EXPECT_EQ(setenv("TILEGRAPH_B_IN_PLACE", "off", 1), 0); }
  ~PackedB() { unsetenv("TILEGRAPH_B_IN_PLACE"); }
  PackedB(const PackedB&) = delete;
  PackedB& operator=(const PackedB&) = delete;
};

int64_t ukernel_param(const codegen::Kernel& k, const std::string& name) {
  for (const auto& [param, value] : k.ukernel_params)
    if (param == name) return value;
  ADD_FAILURE() << "no ukernel param " << name;
  return -1;
}

// A 1x1 conv over 16 channels of a 40 x 40 map on AVX-512 (B: the input,
// packed at run time; 2 KB panels of 16 x 32 floats): a task packs its
// column panels in groups within half the L1 ("nw": each into its own slot
// of the scratch, which holds the group) and runs each row panel over the
// group ("nq"). With two cores a chunk holds 25 of the 50 panels: groups of
// 7, the last one short, guarded; its panels read the input without a
// clamp (built at a column var bounded to N's panels).
TEST(FloatGemm, WideMapPointwiseConvPacksItsColumnPanelsInGroups) {
  const PackedB packed;
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 16, 40, 40}).output("y");
  b.initializer_f("w", {24, 16, 1, 1}, ramp(24 * 16));
  b.node("Conv", {"x", "w"}, {"y"});
  Graph g = import_and_optimize(b, "pointwise_groups");
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.l1_bytes = 32 << 10;
  arch.cores = 2;
  const LoweredGemm gemm = lower_the_gemm(g, "avx512", arch);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  ASSERT_EQ(ukernel_param(kernel, "chunk_panels"), 25) << codegen::to_string(kernel);
  EXPECT_EQ(ukernel_param(kernel, "column_group"), 7);
  std::vector<codegen::Stmt> packs, runs;
  loops_named(kernel, kernel.body, "nw", &packs);
  loops_named(kernel, kernel.body, "nq", &runs);
  ASSERT_EQ(packs.size(), 1u);
  ASSERT_EQ(runs.size(), 1u);
  int64_t extent = 0;
  EXPECT_TRUE(is_const_int(packs[0]->extent, &extent) && extent == 7);
  EXPECT_TRUE(is_const_int(runs[0]->extent, &extent) && extent == 7);
  EXPECT_EQ(ops_in(packs[0], {BinaryOp::kMin, BinaryOp::kMax}), 0) << codegen::to_string(kernel);
  // The channel (k) loop encloses the group's panels: each k copies one run
  // of the group's columns from its input row, not NR floats of every row
  // per panel (rows H x W floats apart are as many streams).
  std::vector<codegen::Stmt> k_loops;
  loops_named(kernel, kernel.body, "kb0", &k_loops);
  ASSERT_EQ(k_loops.size(), 1u) << codegen::to_string(kernel);
  EXPECT_TRUE(is_const_int(k_loops[0]->extent, &extent) && extent == 16);
  ASSERT_EQ(k_loops[0]->body.size(), 1u);
  EXPECT_EQ(k_loops[0]->body[0], packs[0]);
  // The short group's guard, in both loops.
  EXPECT_EQ(packs[0]->body[0]->kind, codegen::StmtKind::kIf);
  EXPECT_EQ(runs[0]->body[0]->kind, codegen::StmtKind::kIf);
  const auto panels = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                   [](const codegen::Buffer& buf) { return buf.name == "panels"; });
  ASSERT_NE(panels, kernel.buffers.end());
  EXPECT_EQ(panels->elements, 7 * 16 * 32);
  // The tile call reads B at the group's slot.
  std::vector<codegen::Stmt> calls;
  calls_in(kernel.body, "tg_sgemm::tile", &calls);
  ASSERT_FALSE(calls.empty());
  EXPECT_TRUE(uses_var(calls[0]->args[2].value, runs[0]->var));

  // The weights as B (packed at compile time): no groups.
  OnnxModelBuilder mm(13);
  mm.input("x", 1, {64, 16}).output("y");
  mm.initializer_f("w", {16, 64}, ramp(16 * 64));
  mm.node("MatMul", {"x", "w"}, {"y"});
  Graph mg = import_and_optimize(mm, "matmul_no_groups");
  const LoweredGemm weights = lower_the_gemm(mg, "avx512", arch);
  std::vector<codegen::Stmt> none;
  loops_named(weights.kernel, weights.kernel.body, "nw", &none);
  EXPECT_TRUE(none.empty());
}

// The host with an L1 that holds a B block of 32 k values for the scalar
// variant (8 columns): half of it is 32 x 8 floats.
scheduler::ArchSpec host_with_small_l1() {
  scheduler::ArchSpec a = scheduler::host_arch();
  a.l1_bytes = 2 * 32 * 8 * 4;
  return a;
}

// K = 23 channels x 9 window positions = 207 > kc: blocks of 3 channels (27
// k values), the last of 2. The column table is filled once per panel,
// outside the k-block loop; the B panel is packed per block inside it, and
// the tile call accumulates after the first block.
TEST(FloatGemm, ConvKBlocksPackEachBlockAndFillTheColumnTableOncePerPanel) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 23, 14, 13}).output("y");
  b.initializer_f("w", {16, 23, 3, 3}, ramp(16 * 23 * 9));
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  Graph g = import_and_optimize(b, "conv_k_blocks");
  const codegen::Kernel kernel = lower_the_gemm(g, "scalar", host_with_small_l1()).kernel;
  EXPECT_EQ(ukernel_param(kernel, "kc"), 27);
  EXPECT_EQ(ukernel_param(kernel, "k_blocks"), 8);
  std::vector<codegen::Stmt> k_loop, fill, pack_in_block, fill_in_block, calls;
  loops_named(kernel, kernel.body, "kcb", &k_loop);
  loops_named(kernel, kernel.body, "jt", &fill);
  ASSERT_EQ(k_loop.size(), 1u);
  EXPECT_EQ(fill.size(), 1u);
  loops_named(kernel, k_loop[0], "jb", &pack_in_block);
  loops_named(kernel, k_loop[0], "jt", &fill_in_block);
  EXPECT_EQ(pack_in_block.size(), 1u);
  EXPECT_TRUE(fill_in_block.empty());
  EXPECT_EQ(divisions_in(pack_in_block[0]), 0);
  calls_in(k_loop[0], "tg_sgemm::tile", &calls);
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0]->args.size(), 5u);
  EXPECT_FALSE(is_const(calls[0]->args[0].value)) << "the last block is shorter: 2 channels";
  EXPECT_FALSE(is_const(calls[0]->args[4].value)) << "accumulate after the first block";
  // The blocked channel loop stops at the channels left.
  std::vector<codegen::Stmt> channels;
  loops_named(kernel, k_loop[0], "kb0", &channels);
  ASSERT_EQ(channels.size(), 1u);
  EXPECT_FALSE(is_const(channels[0]->extent));
}

// k outer (a 1 KiB-per-row-block L2 share: the 10 A panels of 40 filters
// overflow it): the k-block loop runs outside the column panels, and each
// column panel's table is filled once per group of panels ("jtt", one copy
// per panel), before the blocks; the blocks pack only ("jb").
TEST(FloatGemm, ConvKOuterFillsEachColumnTableOncePerGroup) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 23, 14, 13}).output("y");
  b.initializer_f("w", {40, 23, 3, 3}, ramp(40 * 23 * 9));
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  Graph g = import_and_optimize(b, "conv_k_outer");
  scheduler::ArchSpec arch = host_with_small_l1();
  arch.l2_bytes = 2048;
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", arch);
  ASSERT_GE(gemm.packs.a, 0);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  EXPECT_EQ(ukernel_param(kernel, "k_blocks"), 8);
  EXPECT_GE(ukernel_param(kernel, "group_panels"), 1);
  std::vector<codegen::Stmt> groups, k_loop, fill, fill_in_block, pack_in_block;
  loops_named(kernel, kernel.body, "ng", &groups);
  loops_named(kernel, kernel.body, "kcb", &k_loop);
  loops_named(kernel, kernel.body, "jtt", &fill);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(k_loop.size(), 1u);
  EXPECT_EQ(fill.size(), 1u);
  loops_named(kernel, k_loop[0], "jtt", &fill_in_block);
  loops_named(kernel, k_loop[0], "jt", &fill_in_block);
  loops_named(kernel, k_loop[0], "jb", &pack_in_block);
  EXPECT_TRUE(fill_in_block.empty());
  EXPECT_EQ(pack_in_block.size(), 1u);
  EXPECT_EQ(divisions_in(pack_in_block[0]), 0);
}

int64_t value_at(const codegen::Kernel& k, const Expr& e, const std::map<std::string, int64_t>& at) {
  std::vector<Expr> vars;
  for (const std::string& name : k.var_names) vars.push_back(int_imm(at.count(name) ? at.at(name) : 0));
  int64_t v = 0;
  EXPECT_TRUE(is_const_int(simplify(substitute_vars(e, vars), {}), &v));
  return v;
}

// relu(a @ w + bias): a rows x k, w k x n, bias per column.
OnnxModelBuilder linear_relu(int64_t rows = 8, int64_t k = 32, int64_t n = 24) {
  OnnxModelBuilder b(13);
  b.input("a", 1, {rows, k}).output("y");
  b.initializer_f("w", {k, n}, ramp(static_cast<int>(k * n)));
  b.initializer_f("bias", {n}, ramp(static_cast<int>(n)));
  b.node("MatMul", {"a", "w"}, {"mm"});
  b.node("Add", {"mm", "bias"}, {"z"});
  b.node("Relu", {"z"}, {"y"});
  return b;
}

// k outer over a MatMul + a bias per column (+ Relu): 7 column panels of 8
// run in groups that overshoot them (the last group guarded). The epilogue
// stores each C tile at its panel clamped to the last one (the same panel
// where it runs), so the bias read along the tile's columns is contiguous:
// clamping each column index instead (the group's bound says past N) kept
// GCC from vectorizing the epilogue (ViT-B/16's GELU ran scalar).
TEST(FloatGemm, KOuterEpilogueReadsTheBiasContiguously) {
  Graph g = import_and_optimize(linear_relu(40, 96, 56), "matmul_k_outer_bias");
  scheduler::ArchSpec arch = host_with_small_l1();
  arch.l2_bytes = 2048;
  arch.cores = 1;
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", arch);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  const int64_t group = ukernel_param(kernel, "group_panels"), panels = ukernel_param(kernel, "chunk_panels");
  ASSERT_EQ(panels, 7);
  ASSERT_NE(panels % group, 0) << "the last group is short";
  std::vector<codegen::Stmt> epilogue, stores;
  loops_named(kernel, kernel.body, "nqe", &epilogue);
  ASSERT_EQ(epilogue.size(), 1u);
  std::function<void(const codegen::Stmt&)> collect = [&](const codegen::Stmt& st) {
    if (!st) return;
    if (st->kind == codegen::StmtKind::kStore && kernel.buffers[static_cast<size_t>(st->buffer)].name == "out")
      stores.push_back(st);
    for (const codegen::Stmt& c : st->body) collect(c);
  };
  collect(epilogue[0]);
  ASSERT_FALSE(stores.empty());
  int bias_reads = 0;
  for (const codegen::Stmt& st : stores)
    visit(st->value, [&](const Expr& e) {
      if (e->kind != ExprKind::kLoad || kernel.buffers[static_cast<size_t>(e->int_value)].elements != 56) return;
      ++bias_reads;
      // One column further (j + 1) reads the next bias: no clamp on the index.
      for (const std::string& panel : {"ng", "nqe"})
        for (int64_t at = 0; at < 4; ++at) {
          std::map<std::string, int64_t> here{{panel, at}}, next = here;
          const int64_t j = 3;
          here["j"] = j;
          next["j"] = j + 1;
          EXPECT_EQ(value_at(kernel, e->args[0], next) - value_at(kernel, e->args[0], here), 1) << panel << " " << at;
        }
    });
  EXPECT_GT(bias_reads, 0);
}

// Weights packed at compile time as B (x @ W): the k blocks read them at
// the block's offset; K = 96 splits in three even blocks of 32, no tail.
TEST(FloatGemm, MatMulKBlocksReadThePackedWeightsPerBlock) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {9, 96}).output("y");
  b.initializer_f("w", {96, 20}, ramp(96 * 20));
  b.node("MatMul", {"x", "w"}, {"y"});
  Graph g = import_and_optimize(b, "matmul_k_blocks");
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", host_with_small_l1());
  ASSERT_GE(gemm.packs.b, 0);
  const codegen::Kernel& kernel = gemm.kernel;
  EXPECT_EQ(ukernel_param(kernel, "kc"), 32);
  EXPECT_EQ(ukernel_param(kernel, "k_blocks"), 3);
  std::vector<codegen::Stmt> k_loop, pack, calls;
  loops_named(kernel, kernel.body, "kcb", &k_loop);
  loops_named(kernel, kernel.body, "jb", &pack);
  ASSERT_EQ(k_loop.size(), 1u);
  EXPECT_TRUE(pack.empty());
  calls_in(k_loop[0], "tg_sgemm::tile", &calls);
  ASSERT_EQ(calls.size(), 1u);
  int64_t k = 0;
  EXPECT_TRUE(is_const_int(calls[0]->args[0].value, &k));
  EXPECT_EQ(k, 32);
  // Each row panel's call prefetches its share of the weights' next block.
  ASSERT_EQ(calls[0]->args.size(), 7u);
  EXPECT_EQ(calls[0]->args[5].buffer, calls[0]->args[2].buffer);
  int64_t floats = 0;
  ASSERT_TRUE(is_const_int(calls[0]->args[6].value, &floats));
  EXPECT_EQ(value_at(kernel, calls[0]->args[5].value, {{"kcb", 0}, {"p", 1}}),
            value_at(kernel, calls[0]->args[2].value, {{"kcb", 1}}) + floats);
}

// x (m x k) @ w (k x n, a ramp), imported and optimized as `name`.
Graph activation_times_weights(const std::string& name, int64_t m, int64_t k, int64_t n) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {m, k}).output("y");
  b.initializer_f("w", {k, n}, ramp(static_cast<int>(k * n)));
  b.node("MatMul", {"x", "w"}, {"y"});
  return import_and_optimize(b, name);
}

// x (83 x 139) @ w (139 x 45): with streamed_weights_arch, its weights as B
// overflow the L2 and A is packed per k block.
Graph streamed_weights_matmul(const std::string& name) { return activation_times_weights(name, 83, 139, 45); }

// host_with_small_l1 with an L2 of 24 KB (B: 139 x 48 floats, 26.7 KB), an
// L3 of 48 KB (half of it less than all of A's panels) and one core (one
// task: the row block holds every row panel).
scheduler::ArchSpec streamed_weights_arch() {
  scheduler::ArchSpec arch = host_with_small_l1();
  arch.l2_bytes = 24 << 10;
  arch.l3_bytes = 48 << 10;
  arch.cores = 1;
  return arch;
}

// Weights as B beyond the L2 and more rows than a row block's whole-K A
// panels hold (scheduler/float_gemm_blocking.h, a_per_k_block): one row
// block of all 21 row panels packs each k block of A once (inside the
// k-block loop, outside the column panels), and the calls read the packed
// weights at the block's offset. K = 139 in 5 blocks of 28, the last 27.
TEST(FloatGemm, StreamedWeightsPackAOneKBlockAtATime) {
  Graph g = streamed_weights_matmul("matmul_a_per_k_block");
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", streamed_weights_arch());
  ASSERT_GE(gemm.packs.b, 0);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  EXPECT_EQ(ukernel_param(kernel, "a_per_k_block"), 1);
  EXPECT_EQ(ukernel_param(kernel, "kc"), 28);
  EXPECT_EQ(ukernel_param(kernel, "k_blocks"), 5);
  EXPECT_EQ(ukernel_param(kernel, "row_panels"), 21);
  std::vector<codegen::Stmt> k_loop, pack, pack_in_block, columns, pack_in_columns, calls;
  loops_named(kernel, kernel.body, "kcb", &k_loop);
  loops_named(kernel, kernel.body, "pa", &pack);
  ASSERT_EQ(k_loop.size(), 1u);
  ASSERT_EQ(pack.size(), 1u) << "A is packed only per k block";
  loops_named(kernel, k_loop[0], "pa", &pack_in_block);
  EXPECT_EQ(pack_in_block.size(), 1u);
  loops_named(kernel, k_loop[0], "nq", &columns);
  ASSERT_EQ(columns.size(), 1u);
  loops_named(kernel, columns[0], "pa", &pack_in_columns);
  EXPECT_TRUE(pack_in_columns.empty()) << "not once per column panel";
  calls_in(columns[0], "tg_sgemm::tile", &calls);
  ASSERT_EQ(calls.size(), 1u);
  const int b_buffer = calls[0]->args[2].buffer;
  ASSERT_GE(b_buffer, 0);
  EXPECT_EQ(kernel.buffers[static_cast<size_t>(b_buffer)].tensor, gemm.packs.b) << "B: the packed weights";
}

// The same GEMM where all of A's panels fit half the L3 (scheduler/
// float_gemm_blocking.h): k outer, A packed whole (K = 139 per panel) once,
// before the k blocks, and each block's calls read their A block in the
// whole-K panels (panel p at p x the panel's floats, block kcb kcb x kc x MR
// further).
TEST(FloatGemm, StreamedWeightsPackAWholeBeforeTheKBlocks) {
  Graph g = streamed_weights_matmul("matmul_a_whole_k_outer");
  scheduler::ArchSpec arch = streamed_weights_arch();
  arch.l3_bytes = 1 << 20;
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", arch);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  bool per_k_block = false, k_outer = false;
  for (const auto& [param, value] : kernel.ukernel_params) {
    per_k_block = per_k_block || param == "a_per_k_block";
    k_outer = k_outer || param == "group_panels";
  }
  EXPECT_FALSE(per_k_block);
  EXPECT_TRUE(k_outer);
  EXPECT_EQ(ukernel_param(kernel, "row_panels"), 21);
  const int64_t kc = ukernel_param(kernel, "kc"), mr = ukernel_param(kernel, "mr");
  EXPECT_EQ(kc, 28);
  std::vector<codegen::Stmt> k_loop, pack, pack_in_block, calls;
  loops_named(kernel, kernel.body, "kcb", &k_loop);
  loops_named(kernel, kernel.body, "pa", &pack);
  ASSERT_EQ(k_loop.size(), 1u);
  ASSERT_EQ(pack.size(), 1u);
  loops_named(kernel, k_loop[0], "pa", &pack_in_block);
  EXPECT_TRUE(pack_in_block.empty()) << "A is packed once, not per k block";
  calls_in(k_loop[0], "tg_sgemm::tile", &calls);
  ASSERT_EQ(calls.size(), 1u);
  // A's argument: p * (139 x MR rounded up to 16 floats) + kcb * kc * MR.
  const std::string a_arg = to_string(calls[0]->args[1].value);
  EXPECT_NE(a_arg.find(std::to_string((139 * mr + 15) / 16 * 16)), std::string::npos) << a_arg;
  EXPECT_NE(a_arg.find(std::to_string(kc) + "), " + std::to_string(mr)), std::string::npos) << a_arg;
}

// There the row panels run inside the column panels, so each call prefetches
// its 1/row_panels share of the block the calls need next: the next column
// panel's at the same k block (where the micro-kernel alone would fetch
// this panel's next k block, read only after every other column panel).
TEST(FloatGemm, StreamedWeightsPrefetchTheNextColumnPanelsBlock) {
  Graph g = streamed_weights_matmul("matmul_next_column_block");
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", streamed_weights_arch());
  const codegen::Kernel& kernel = gemm.kernel;
  const int64_t kc = ukernel_param(kernel, "kc"), row_panels = ukernel_param(kernel, "row_panels");
  const int64_t nr = ukernel_param(kernel, "nr");
  std::vector<codegen::Stmt> calls;
  calls_in(kernel.body, "tg_sgemm::tile", &calls);
  ASSERT_EQ(calls.size(), 1u);
  const std::vector<codegen::CallArg>& args = calls[0]->args;
  ASSERT_EQ(args.size(), 7u) << "the call takes `next` and its floats";
  EXPECT_EQ(args[5].buffer, args[2].buffer) << "a block of the same packed weights";
  int64_t floats = 0;
  ASSERT_TRUE(is_const_int(args[6].value, &floats));
  EXPECT_EQ(floats, ((kc * nr + row_panels - 1) / row_panels + 15) / 16 * 16);
  for (int64_t block : {0, 2}) {
    const int64_t next_column_b = value_at(kernel, args[2].value, {{"nq", 1}, {"kcb", block}});
    EXPECT_EQ(value_at(kernel, args[5].value, {{"nq", 0}, {"kcb", block}, {"p", 0}}), next_column_b) << block;
    EXPECT_EQ(value_at(kernel, args[5].value, {{"nq", 0}, {"kcb", block}, {"p", 3}}), next_column_b + 3 * floats)
        << "row panel 3's share";
  }
}

// x (600 x 64) @ w (64 x 64) on a 1-core arch whose L2 (64 KB) the 150 KB
// activation overflows while the 16 KB of packed weights stay in its
// quarter: several row blocks, each packing its A from x.
Graph streamed_activation_matmul(const std::string& name) { return activation_times_weights(name, 600, 64, 64); }

scheduler::ArchSpec streamed_activation_arch() {
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.l2_bytes = 64 << 10;
  arch.cores = 1;
  return arch;
}

// There the weights need no prefetch, and the row block's tile calls
// prefetch the next row block's rows of x instead, each call its share
// (whole lines) in the order the calls run (column panel, then row panel),
// clamped inside x. TILEGRAPH_PREFETCH_NEXT_A=off (and weights beyond a
// quarter of the L2) keep the weights' next block.
TEST(FloatGemm, CachedWeightsPrefetchTheNextRowBlocksActivation) {
  Graph g = streamed_activation_matmul("matmul_next_row_block");
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", streamed_activation_arch());
  ASSERT_GE(gemm.packs.b, 0);
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  EXPECT_EQ(ukernel_param(kernel, "prefetch_next_a"), 1);
  const int64_t row_panels = ukernel_param(kernel, "row_panels"), mr = ukernel_param(kernel, "mr");
  const int64_t col_panels = 64 / ukernel_param(kernel, "nr"), block_rows = row_panels * mr;
  ASSERT_LT(block_rows, 600) << "several row blocks";
  std::vector<codegen::Stmt> packs, calls;
  calls_in(kernel.body, "tg_sgemm::pack_a_rows", &packs);
  calls_in(kernel.body, "tg_sgemm::tile", &calls);
  ASSERT_EQ(packs.size(), 1u);
  ASSERT_FALSE(calls.empty());
  for (const codegen::Stmt& call : calls) {
    const std::vector<codegen::CallArg>& args = call->args;
    ASSERT_EQ(args.size(), 7u) << "the call takes `next` and its floats";
    EXPECT_EQ(args[5].buffer, packs[0]->args[2].buffer) << "x, which the row block packs";
    int64_t floats = 0;
    ASSERT_TRUE(is_const_int(args[6].value, &floats));
    EXPECT_EQ(floats, ((block_rows * 64 + col_panels * row_panels - 1) / (col_panels * row_panels) + 15) / 16 * 16);
    EXPECT_EQ(value_at(kernel, args[5].value, {{"mb", 0}, {"nb", 0}, {"p", 0}}), block_rows * 64);
    EXPECT_EQ(value_at(kernel, args[5].value, {{"mb", 1}, {"nb", 1}, {"p", 2}}),
              2 * block_rows * 64 + (row_panels + 2) * floats)
        << "column panel 1, row panel 2's share of row block 2";
    const int64_t last_block = (600 + block_rows - 1) / block_rows - 1;
    EXPECT_EQ(value_at(kernel, args[5].value, {{"mb", last_block}, {"nb", col_panels - 1}, {"p", row_panels - 1}}),
              600 * 64 - floats)
        << "the last block's shares stay inside x";
  }

  ASSERT_EQ(setenv("TILEGRAPH_PREFETCH_NEXT_A", "off", 1), 0);
  Graph off_graph = streamed_activation_matmul("matmul_next_row_block_off");
  const LoweredGemm off = lower_the_gemm(off_graph, "scalar", streamed_activation_arch());
  unsetenv("TILEGRAPH_PREFETCH_NEXT_A");
  scheduler::ArchSpec small_l2 = streamed_activation_arch();
  small_l2.l2_bytes = 48 << 10;  // the 16 KB of weights beyond its quarter
  Graph streamed_graph = streamed_activation_matmul("matmul_next_row_block_small_l2");
  const LoweredGemm streamed = lower_the_gemm(streamed_graph, "scalar", small_l2);
  for (const LoweredGemm* other : {&off, &streamed}) {
    std::vector<codegen::Stmt> other_calls;
    calls_in(other->kernel.body, "tg_sgemm::tile", &other_calls);
    ASSERT_FALSE(other_calls.empty());
    for (const auto& [param, value] : other->kernel.ukernel_params) EXPECT_NE(param, "prefetch_next_a");
    ASSERT_EQ(other_calls[0]->args.size(), 7u);
    EXPECT_EQ(other_calls[0]->args[5].buffer, other_calls[0]->args[2].buffer) << "the packed weights' next block";
  }
}

// A read through a Concat of two activations (NeRF's skip connection:
// [x1 | x2] @ w) prefetches both: x1's share through the call's `next`,
// x2's through a prefetch of its bytes before the call.
TEST(FloatGemm, ConcatenatedActivationPrefetchesTheNextRowBlockOfBoth) {
  OnnxModelBuilder b(13);
  b.input("x1", 1, {600, 24}).input("x2", 1, {600, 40}).output("y");
  b.initializer_f("w", {64, 64}, ramp(64 * 64));
  OnnxModelBuilder::attr_int(b.node("Concat", {"x1", "x2"}, {"x"}), "axis", 1);
  b.node("MatMul", {"x", "w"}, {"y"});
  Graph g = import_and_optimize(b, "matmul_next_row_block_concat");
  const LoweredGemm gemm = lower_the_gemm(g, "scalar", streamed_activation_arch());
  const codegen::Kernel& kernel = gemm.kernel;
  codegen::verify(kernel);
  EXPECT_EQ(ukernel_param(kernel, "prefetch_next_a"), 2);
  const int64_t row_panels = ukernel_param(kernel, "row_panels"), mr = ukernel_param(kernel, "mr");
  const int64_t calls_per_block = 64 / ukernel_param(kernel, "nr") * row_panels, block_rows = row_panels * mr;
  std::vector<codegen::Stmt> calls, prefetches;
  calls_in(kernel.body, "tg_sgemm::tile", &calls);
  calls_in(kernel.body, "tg_prefetch_bytes<2>", &prefetches);
  ASSERT_FALSE(calls.empty());
  ASSERT_EQ(prefetches.size(), 1u);
  ASSERT_EQ(calls[0]->args.size(), 7u);
  const int first = calls[0]->args[5].buffer, second = prefetches[0]->args[0].buffer;
  auto tensor_name = [&](int buffer) { return g.tensor(kernel.buffers[static_cast<size_t>(buffer)].tensor).name; };
  EXPECT_EQ((std::set<std::string>{tensor_name(first), tensor_name(second)}), (std::set<std::string>{"x1", "x2"}));
  const int64_t width = tensor_name(second) == "x1" ? 24 : 40;
  const int64_t slice = ((block_rows * width + calls_per_block - 1) / calls_per_block + 15) / 16 * 16;
  EXPECT_EQ(value_at(kernel, prefetches[0]->args[1].value, {}), slice * 4) << "bytes";
  EXPECT_EQ(value_at(kernel, prefetches[0]->args[0].value, {{"mb", 1}, {"nb", 1}, {"p", 2}}),
            2 * block_rows * width + (row_panels + 2) * slice);
}

// The one pack_a_rows call of `kernel` (the activation A contiguous along k),
// with the MR row pointers into `a_buffer` checked at `at`: row r of the
// panel reads x's row rows[r] from column k_first, and the call packs `count`
// k values.
void expect_pack_a_rows(const codegen::Kernel& kernel, const std::map<std::string, int64_t>& at, int64_t ld,
                        const std::vector<int64_t>& rows, int64_t k_first, int64_t count) {
  std::vector<codegen::Stmt> calls;
  calls_in(kernel.body, "tg_sgemm::pack_a_rows", &calls);
  ASSERT_EQ(calls.size(), 1u);
  const std::vector<codegen::CallArg>& args = calls[0]->args;
  ASSERT_EQ(args.size(), 2 + rows.size());
  EXPECT_EQ(value_at(kernel, args[0].value, at), count);
  const codegen::Buffer& panels = kernel.buffers[static_cast<size_t>(args[1].buffer)];
  EXPECT_EQ(panels.scope, codegen::MemoryScope::kLocal) << "packed into the kernel's panels";
  for (size_t r = 0; r < rows.size(); ++r) {
    ASSERT_GE(args[2 + r].buffer, 0);
    const codegen::Buffer& a = kernel.buffers[static_cast<size_t>(args[2 + r].buffer)];
    EXPECT_EQ(a.scope, codegen::MemoryScope::kGlobal) << "straight from the activation";
    EXPECT_EQ(value_at(kernel, args[2 + r].value, at), rows[r] * ld + k_first) << "row " << r;
  }
}

// A row-major activation times the weights packs its A panels with the
// micro-kernel header's pack_a_rows, one call per panel on MR row pointers:
// whole K, and one k block at a time (the last one short). The panel past M
// repeats M's last row. TILEGRAPH_PACK_A_ROWS=off keeps the generated loop.
TEST(FloatGemm, RowMajorActivationIsPackedByPackARows) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {10, 37}).output("y");
  b.initializer_f("w", {37, 20}, ramp(37 * 20));
  b.node("MatMul", {"x", "w"}, {"y"});
  {
    Graph g = import_and_optimize(b, "pack_a_rows_whole_k");
    const codegen::Kernel kernel = lower_the_gemm(g, "scalar").kernel;
    codegen::verify(kernel);
    expect_pack_a_rows(kernel, {{"pa", 2}}, 37, {8, 9, 9, 9}, 0, 37);
  }
  ASSERT_EQ(setenv("TILEGRAPH_PACK_A_ROWS", "off", 1), 0);
  Graph g = import_and_optimize(b, "pack_a_rows_off");
  const codegen::Kernel off = lower_the_gemm(g, "scalar").kernel;
  unsetenv("TILEGRAPH_PACK_A_ROWS");
  std::vector<codegen::Stmt> calls;
  calls_in(off.body, "tg_sgemm::pack_a_rows", &calls);
  EXPECT_TRUE(calls.empty());

  Graph gb = streamed_weights_matmul("pack_a_rows_per_k_block");
  const codegen::Kernel kernel = lower_the_gemm(gb, "scalar", streamed_weights_arch()).kernel;
  codegen::verify(kernel);
  ASSERT_EQ(ukernel_param(kernel, "a_per_k_block"), 1);
  expect_pack_a_rows(kernel, {{"pa", 20}, {"kcb", 4}}, 139, {80, 81, 82, 82}, 112, 27);  // K 139: blocks of 28
  expect_pack_a_rows(kernel, {{"pa", 1}, {"kcb", 2}}, 139, {4, 5, 6, 7}, 56, 28);
}

// Weights packed as B that overflow the L2 (bert's FFN: 9.4 MB) are
// streamed again by every task that reads them: two cores then split the
// columns (each streams half of B once) rather than the rows (each streams
// all of B). Where B fits the L2, the rows split as before.
TEST(FloatGemm, WeightsBeyondTheL2SplitByColumnsNotRows) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {32, 64}).output("y");
  b.initializer_f("w", {64, 256}, ramp(64 * 256));  // 64 KiB packed
  b.node("MatMul", {"x", "w"}, {"y"});
  Graph g = import_and_optimize(b, "matmul_b_beyond_l2");
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  ASSERT_EQ(scheduler::use_gemm_ukernels(g, s, true).float_gemms, 1);
  const codegen::FloatGemmVariant variant = codegen::float_gemm_variant_named("scalar");
  const codegen::FloatGemmPacks packs =
      codegen::prepack_float_gemm_operands(g, s.kernels[0], variant, scheduler::host_arch());
  ASSERT_GE(packs.b, 0);
  const int64_t row_panels = (32 + variant.mr - 1) / variant.mr, col_panels = (256 + variant.nr - 1) / variant.nr;
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.cores = 2;

  arch.l2_bytes = 1 << 20;  // B stays cached
  const codegen::Kernel cached = codegen::lower_float_gemm_kernel(g, s.kernels[0], variant, packs, arch);
  EXPECT_EQ(ukernel_param(cached, "row_panels"), row_panels / 2);
  EXPECT_EQ(ukernel_param(cached, "chunk_panels"), col_panels);

  arch.l2_bytes = 32 << 10;  // half of B
  const codegen::Kernel streamed = codegen::lower_float_gemm_kernel(g, s.kernels[0], variant, packs, arch);
  codegen::verify(streamed);
  EXPECT_EQ(ukernel_param(streamed, "row_panels"), row_panels);
  EXPECT_EQ(ukernel_param(streamed, "chunk_panels"), col_panels / 2);
}

// Without k blocks (a B panel, 64 x 8 floats, that fits the L1) the tile
// call never accumulates.
TEST(FloatGemm, OneKBlockStartsEveryTile) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {9, 64}).output("y");
  b.initializer_f("w", {64, 20}, ramp(64 * 20));
  b.node("MatMul", {"x", "w"}, {"y"});
  Graph g = import_and_optimize(b, "matmul_one_k_block");
  const codegen::Kernel kernel = lower_the_gemm(g, "scalar", host_with_small_l1()).kernel;
  EXPECT_EQ(ukernel_param(kernel, "k_blocks"), 1);
  EXPECT_EQ(ukernel_param(kernel, "kc"), 64);
  std::vector<codegen::Stmt> k_loop, calls;
  loops_named(kernel, kernel.body, "kcb", &k_loop);
  EXPECT_TRUE(k_loop.empty());
  calls_in(kernel.body, "tg_sgemm::tile", &calls);
  ASSERT_EQ(calls.size(), 1u);
  int64_t accumulate = -1;
  EXPECT_TRUE(is_const_int(calls[0]->args[4].value, &accumulate));
  EXPECT_EQ(accumulate, 0);
}

// Under 128 output pixels (a ViT patch embedding: 7 x 7) the filters stay
// the columns: B = the weights, as in the int8 path.
TEST(FloatGemm, ConvWithFewOutputPixelsKeepsFiltersAsColumns) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 3, 28, 28}).output("y");
  b.initializer_f("w", {48, 3, 4, 4}, ramp(48 * 48));
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "strides", {4, 4});
  const Graph g = import_and_optimize(b, "patch_embed");
  const std::vector<scheduler::Gemm> m = float_gemms(g);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].col_axes, (std::vector<int>{1}));     // filters
  EXPECT_EQ(m[0].row_axes, (std::vector<int>{2, 3}));  // 7 x 7 output pixels
  EXPECT_TRUE(scheduler::reads_only_constants(g, g.ops[0], m[0].b));
}

// Under 256 output pixels with 1 MiB or more of weights (ResNet-50's layer3:
// 14 x 14 pixels) the weights are B and the pixels the rows; the same conv
// with a quarter of the filters (256 KB of weights) keeps the pixels as
// columns.
TEST(FloatGemm, FewPixelConvWithLargeWeightsTakesThePixelsAsRows) {
  for (const int64_t filters : {1024, 256}) {
    OnnxModelBuilder b(13);
    b.input("x", 1, {1, 256, 14, 14}).output("y");
    b.initializer_f("w", {filters, 256, 1, 1}, ramp(filters * 256));
    b.node("Conv", {"x", "w"}, {"y"});
    const Graph g = import_and_optimize(b, "conv1x1");
    const std::vector<scheduler::Gemm> m = float_gemms(g);
    ASSERT_EQ(m.size(), 1u);
    const bool large = filters * 256 * 4 >= (1 << 20);
    EXPECT_EQ(m[0].row_axes, large ? (std::vector<int>{2, 3}) : (std::vector<int>{1})) << filters;
    EXPECT_EQ(m[0].col_axes, large ? (std::vector<int>{1}) : (std::vector<int>{2, 3})) << filters;
    EXPECT_EQ(scheduler::reads_only_constants(g, g.ops[0], m[0].b), large) << filters;
  }
}

// The A panels of a conv with the pixels as rows, packed at run time: a
// 1x1 conv's A(pixel, channel) steps by one along the pixels, so the rows
// ("ia") run inside the channels ("ka0"), vectorized: MR contiguous floats
// per channel. A matmul's activation A steps by one along k and keeps k
// inside, as does a kxk conv whose pixel coordinates divide.
codegen::Kernel few_pixels_kernel(const std::string& name, int64_t k, int64_t stride, bool prepack = true) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 64, 7 * stride, 7 * stride}).output("y");
  b.initializer_f("w", {96, 64, k, k}, ramp(96 * 64 * static_cast<int>(k * k)));
  auto& conv = b.node("Conv", {"x", "w"}, {"y"});
  OnnxModelBuilder::attr_ints(conv, "strides", {stride, stride});
  OnnxModelBuilder::attr_ints(conv, "pads", {k / 2, k / 2, k / 2, k / 2});
  Graph g = import_and_optimize(b, name);
  LoweredGemm gemm = lower_the_gemm(g, "avx512", scheduler::host_arch(), prepack);
  EXPECT_LT(gemm.packs.a, 0);  // the pixels are the rows: A is the activation
  codegen::verify(gemm.kernel);
  return gemm.kernel;
}

// ResNet-50's stride-2 1x1 downsample, scaled down: 256 filters over a 32 x 32
// map's every other pixel (16 x 16) (B packed at run time in column groups), with an
// L2 that holds a third of the weights' panels, so a chunk runs in several
// row blocks. A thread that runs the next row block of the same chunk right
// after the last keeps the chunk's B panels (each group in its own slot) and
// packs them only on a run's first task or a chunk's first row block; the
// pool hands each thread whole chunks (grain: the row blocks).
codegen::Kernel strided_downsample_kernel(const std::string& name) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 64, 32, 32}).output("y");
  b.initializer_f("w", {256, 64, 1, 1}, ramp(256 * 64));
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "strides", {2, 2});
  Graph g = import_and_optimize(b, name);
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.l1_bytes = 32 << 10;
  arch.l2_bytes = 64 << 10;
  arch.cores = 2;
  const codegen::Kernel kernel = lower_the_gemm(g, "avx2", arch).kernel;
  codegen::verify(kernel);
  return kernel;
}

TEST(FloatGemm, RowBlocksOfAChunkReuseItsPackedB) {
  const codegen::Kernel kernel = strided_downsample_kernel("reuse_b");
  ASSERT_EQ(ukernel_param(kernel, "b_reused"), 1) << codegen::to_string(kernel);
  const int64_t row_panels = ukernel_param(kernel, "row_panels"), group = ukernel_param(kernel, "column_group");
  const int64_t row_blocks = (256 + 6 * row_panels - 1) / (6 * row_panels);
  ASSERT_GE(row_blocks, 2);
  ASSERT_GE(group, 2);
  ASSERT_EQ(kernel.body->kind, codegen::StmtKind::kFor);
  EXPECT_EQ(kernel.body->grain, row_blocks);
  ASSERT_GE(kernel.body->run_var, 0);
  // The group's packing runs under the run's guard; the tiles do not.
  std::vector<codegen::Stmt> packs, runs;
  loops_named(kernel, kernel.body, "nw", &packs);
  loops_named(kernel, kernel.body, "nq", &runs);
  ASSERT_EQ(packs.size(), 1u);
  ASSERT_EQ(runs.size(), 1u);
  // ... the guard: Lt(Min(run, mb), 1), run and mb by their var ids (v<id>).
  const std::string dump = codegen::to_string(kernel);
  int mb = -1;
  for (size_t i = 0; i < kernel.var_names.size(); ++i)
    if (kernel.var_names[i] == "mb") mb = static_cast<int>(i);
  const std::string guard =
      "if Lt(Min(v" + std::to_string(kernel.body->run_var) + ", v" + std::to_string(mb) + "), 1)";
  const size_t at = dump.find(guard);
  ASSERT_NE(at, std::string::npos) << dump;
  EXPECT_LT(at, dump.find("for nw")) << "the group's packing inside the guard";
  EXPECT_GT(at, dump.find("for ng")) << dump;
  ASSERT_EQ(setenv("TILEGRAPH_REUSE_B", "off", 1), 0);
  const codegen::Kernel off = strided_downsample_kernel("reuse_b_off");
  unsetenv("TILEGRAPH_REUSE_B");
  EXPECT_FALSE(has_ukernel_param(off, "b_reused"));
  EXPECT_EQ(off.body->grain, 1);
  EXPECT_EQ(off.body->run_var, -1);
}

// Pixel rows (49 pixels: 6 full row panels and one of 1 row on AVX-512, 8
// and one of 1 on AVX2) store their C tile transposed (tile_ct) and the
// epilogue runs over one filter's pixels at a time, vectorized: the full row
// panels' copy at the row clamped to the last full panel's, the tail's loop
// bounded by M. With a residual add of the conv's input, the full panels
// read it at the pixel itself (no division into the map's row and column);
// the tail keeps them.
void expect_pixel_rows_store_the_tile_transposed(const std::string& variant, int64_t mr) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 96, 7, 7}).output("y");
  b.initializer_f("w", {96, 96, 1, 1}, ramp(96 * 96));
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("Add", {"c", "x"}, {"y"});
  Graph g = import_and_optimize(b, "pixel_rows_transposed_" + variant);
  const codegen::Kernel kernel = lower_the_gemm(g, variant).kernel;
  codegen::verify(kernel);
  EXPECT_EQ(ukernel_param(kernel, "c_transposed"), 1) << codegen::to_string(kernel);
  std::vector<codegen::Stmt> full_rows, tail_rows, row_major;
  loops_named(kernel, kernel.body, "ir", &full_rows);
  loops_named(kernel, kernel.body, "i", &tail_rows);
  calls_in(kernel.body, "tg_sgemm::tile", &row_major);
  ASSERT_EQ(full_rows.size(), 1u);
  ASSERT_EQ(tail_rows.size(), 1u);
  EXPECT_TRUE(row_major.empty());
  EXPECT_EQ(full_rows[0]->loop, codegen::LoopKind::kVectorized);
  int64_t rows = 0;
  EXPECT_TRUE(is_const_int(full_rows[0]->extent, &rows) && rows == mr);
  EXPECT_FALSE(is_const(tail_rows[0]->extent)) << "the last row panel stops at M";
  EXPECT_EQ(divisions_in(full_rows[0]), 0);
  EXPECT_GT(divisions_in(tail_rows[0]), 0);
  ASSERT_EQ(setenv("TILEGRAPH_TRANSPOSED_C", "off", 1), 0);
  Graph g_off = import_and_optimize(b, "pixel_rows_row_major_" + variant);
  const codegen::Kernel off = lower_the_gemm(g_off, variant).kernel;
  unsetenv("TILEGRAPH_TRANSPOSED_C");
  EXPECT_FALSE(has_ukernel_param(off, "c_transposed"));
}

TEST(FloatGemm, PixelRowsStoreTheTileTransposed) { expect_pixel_rows_store_the_tile_transposed("avx512", 8); }

TEST(FloatGemm, PixelRowsStoreTheTileTransposedOnAvx2) { expect_pixel_rows_store_the_tile_transposed("avx2", 6); }

// A conv's patches (pixel rows) are no row-major activation: no pack_a_rows.
TEST(FloatGemm, ConvPatchesAreNotPackedByPackARows) {
  std::vector<codegen::Stmt> calls;
  calls_in(few_pixels_kernel("pack_a_rows_conv3", 3, 1, false).body, "tg_sgemm::pack_a_rows", &calls);
  calls_in(few_pixels_kernel("pack_a_rows_conv1", 1, 1, false).body, "tg_sgemm::pack_a_rows", &calls);
  EXPECT_TRUE(calls.empty());
}

// A strided conv with the pixels as rows packs A through its row table, a
// gather per channel and window position: before each channel ("ka0"), the
// lines of the channel 8 further at the panel's first and last row (and, of
// a 3x3 window, each window row's first column) are prefetched, clamped to
// the input. A stride-1 1x1 conv reads its rows contiguously inside the
// channels (the hardware prefetchers follow): none.
TEST(FloatGemm, StridedConvWithPixelRowsPrefetchesTheChannelsAhead) {
  for (const int64_t k : {int64_t{1}, int64_t{3}}) {
    const codegen::Kernel kernel = few_pixels_kernel(str_cat("channels_ahead_", k), k, 2);
    std::vector<codegen::Stmt> channels, calls, gathers;
    loops_named(kernel, kernel.body, "ka0", &channels);
    ASSERT_EQ(channels.size(), 1u) << codegen::to_string(kernel);
    calls_in(channels[0], "tg_prefetch_bytes<3>", &calls);
    ASSERT_EQ(calls.size(), static_cast<size_t>(2 * k)) << codegen::to_string(kernel);
    ASSERT_EQ(channels[0]->body.front()->kind, codegen::StmtKind::kSeq) << "first in the channel's body";
    loops_named(kernel, channels[0], "ia", &gathers);
    ASSERT_EQ(gathers.size(), 1u);
    std::vector<Expr> reads;
    visit(gathers[0]->body[0]->value, [&](const Expr& x) {
      if (x->kind == ExprKind::kLoad && x->dtype == DType::kF32) reads.push_back(x);
    });
    ASSERT_EQ(reads.size(), 1u);
    const int64_t elements = 64 * 14 * 14;
    std::vector<Expr> ahead(kernel.var_names.size());
    for (size_t i = 0; i < ahead.size(); ++i) {
      const std::string& n = kernel.var_names[i];
      ahead[i] = n == "ka0" ? var(static_cast<int>(i)) + int_imm(8)
                 : n == "ia" ? int_imm(7)
                 : n == "ka1" || n == "ka2" ? int_imm(0)
                             : var(static_cast<int>(i));
    }
    const codegen::CallArg& last_row = calls[1]->args[0];
    EXPECT_EQ(kernel.buffers[static_cast<size_t>(last_row.buffer)].name, "in0");
    ASSERT_EQ(last_row.value->kind, ExprKind::kBinary);
    ASSERT_EQ(last_row.value->binary_op, BinaryOp::kMin);
    int64_t clamp = 0, offset = -1;
    ASSERT_TRUE(is_const_int(last_row.value->args[1], &clamp));
    EXPECT_EQ(clamp, elements - 1);
    ASSERT_TRUE(is_const_int(simplify(last_row.value->args[0] - substitute_vars(reads[0]->args[0], ahead), {}), &offset))
        << codegen::to_string(kernel);
    EXPECT_EQ(offset, 0) << "the last row's read 8 channels on";
  }
  std::vector<codegen::Stmt> none;
  calls_in(few_pixels_kernel("channels_ahead_stride1", 1, 1).body, "tg_prefetch_bytes<3>", &none);
  EXPECT_TRUE(none.empty());
}

TEST(FloatGemm, PointwiseConvPacksPixelRowsInsideTheChannels) {
  const codegen::Kernel kernel = few_pixels_kernel("pointwise_rows_inside", 1, 1);
  std::vector<codegen::Stmt> channels, rows, rows_in_channels;
  loops_named(kernel, kernel.body, "ka0", &channels);
  loops_named(kernel, kernel.body, "ia", &rows);
  ASSERT_EQ(channels.size(), 1u);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]->loop, codegen::LoopKind::kVectorized);
  EXPECT_EQ(channels[0]->loop, codegen::LoopKind::kSerial);
  loops_named(kernel, channels[0], "ia", &rows_in_channels);
  EXPECT_EQ(rows_in_channels.size(), 1u);
}

// Min/max nodes over var `v` (their operands read it) in s's stores.
int clamps_of_var(const codegen::Stmt& s, int v) {
  int n = 0;
  auto count = [&](const Expr& e) {
    if (!e) return;
    visit(e, [&](const Expr& x) {
      if (x->kind != ExprKind::kBinary || (x->binary_op != BinaryOp::kMin && x->binary_op != BinaryOp::kMax)) return;
      bool reads = false;
      visit(x, [&](const Expr& y) { reads = reads || (y->kind == ExprKind::kVar && y->int_value == v); });
      n += reads;
    });
  };
  count(s->index);
  count(s->value);
  for (const codegen::Stmt& c : s->body) n += clamps_of_var(c, v);
  return n;
}

// 7 x 7 = 49 pixel rows: six full MR-row panels and one of a single row.
// The full panels ("ia") read their rows unclamped, so the copy of MR
// contiguous floats vectorizes (a min per value kept GCC scalar: a quarter
// of MobileNetV2's 7 x 7 projections); the panel across the end ("il",
// under its own guard) clamps its rows to the last pixel.
TEST(FloatGemm, PointwiseConvClampsOnlyThePanelAcrossTheLastPixel) {
  const codegen::Kernel kernel = few_pixels_kernel("pointwise_clamp_tail", 1, 1);
  std::vector<codegen::Stmt> full, across;
  loops_named(kernel, kernel.body, "ia", &full);
  loops_named(kernel, kernel.body, "il", &across);
  ASSERT_EQ(full.size(), 1u);
  ASSERT_EQ(across.size(), 1u);
  EXPECT_EQ(full[0]->loop, codegen::LoopKind::kVectorized);
  EXPECT_EQ(clamps_of_var(full[0], full[0]->var), 0);
  EXPECT_EQ(divisions_in(full[0]), 0);
  EXPECT_GT(clamps_of_var(across[0], across[0]->var), 0);
}

// A kxk conv's pixel rows: what a row needs besides the channel (its
// pixel's input offset and padding test per window position: div/mod by the
// output width) is filled once per row panel ("pa") into a table ("rows",
// loop "it"), so the packing loop runs the rows ("ia") innermost,
// vectorized inside the window ("ka2"), and divides nothing.
TEST(FloatGemm, KxKConvPacksPixelRowsInsideTheWindowFromARowTable) {
  const codegen::Kernel kernel = few_pixels_kernel("kxk_row_table", 3, 2);
  std::vector<codegen::Stmt> panels, fills, rows, window, rows_in_window, channels, fills_in_channels;
  loops_named(kernel, kernel.body, "pa", &panels);
  ASSERT_EQ(panels.size(), 1u);
  loops_named(kernel, panels[0], "it", &fills);
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0]->loop, codegen::LoopKind::kVectorized);
  EXPECT_GT(divisions_in(fills[0]), 0);
  loops_named(kernel, panels[0], "ka0", &channels);
  ASSERT_EQ(channels.size(), 1u);
  loops_named(kernel, channels[0], "it", &fills_in_channels);
  EXPECT_TRUE(fills_in_channels.empty()) << "the table is filled once per panel, not per channel";
  loops_named(kernel, kernel.body, "ia", &rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]->loop, codegen::LoopKind::kVectorized);
  EXPECT_EQ(divisions_in(rows[0]), 0);
  loops_named(kernel, kernel.body, "ka2", &window);
  ASSERT_EQ(window.size(), 1u);
  loops_named(kernel, window[0], "ia", &rows_in_window);
  EXPECT_EQ(rows_in_window.size(), 1u);
  // Per window position (3 x 3) and row (MR = 8): a padding test and an offset, in int32.
  const auto table = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                  [](const codegen::Buffer& b) { return b.name == "rows"; });
  ASSERT_NE(table, kernel.buffers.end());
  EXPECT_EQ(table->elements, 2 * 9 * 8);
  EXPECT_EQ(table->dtype, DType::kI32);
}

// Stride 1, pixels as rows on AVX-512: a row panel wholly inside M reads
// its window under the padding test (guarded_select), from a table of
// unclamped offsets; each k's MR rows are one masked load at the panel's
// first offset (read into a local before the row loop) plus the row, the
// padding test per row. The panel across M's end keeps the clamped table
// and its gather ("rows").
TEST(FloatGemm, StrideOneKxKPixelRowsReadTheirWindowAsOneVectorPerK) {
  const codegen::Kernel kernel = few_pixels_kernel("kxk_guarded_rows", 3, 1);
  std::vector<codegen::Stmt> rows;
  loops_named(kernel, kernel.body, "ia", &rows);
  ASSERT_EQ(rows.size(), 2u);
  auto buffer = [&](const std::string& name) {
    const auto b = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                [&](const codegen::Buffer& x) { return x.name == name; });
    EXPECT_NE(b, kernel.buffers.end()) << name;
    return static_cast<int>(b - kernel.buffers.begin());
  };
  const int guarded_table = buffer("rows_guarded"), clamped_table = buffer("rows"), first = buffer("run_first0");
  const int row = static_cast<int>(std::find(kernel.var_names.begin(), kernel.var_names.end(), "ia") -
                                   kernel.var_names.begin());
  ASSERT_TRUE(any_node(rows[0]->body[0]->value, is_guarded_select)) << codegen::to_string(kernel);
  std::vector<Expr> tests, firsts, clamped;
  loads_of(rows[0], guarded_table, &tests);
  loads_of(rows[0], first, &firsts);
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_TRUE(uses_var(tests[0], row));
  EXPECT_EQ(firsts.size(), 1u);
  EXPECT_FALSE(any_node(rows[1]->body[0]->value, is_guarded_select));
  loads_of(rows[1], clamped_table, &clamped);
  EXPECT_EQ(clamped.size(), 2u);  // the padding test and the offset, per row
}

// Weights left for the run time to pack (lower_kernel without the packs):
// the row table's and the column table's fill loops each name their window
// vars, so the kernel verifies (names are unique) with both tables.
TEST(FloatGemm, KxKConvPixelRowsWithRunTimePackedWeightsVerify) {
  const codegen::Kernel kernel = few_pixels_kernel("kxk_rows_runtime_b", 3, 2, /*prepack=*/false);
  std::vector<codegen::Stmt> row_fills, b_packs;
  loops_named(kernel, kernel.body, "it", &row_fills);
  loops_named(kernel, kernel.body, "jb", &b_packs);
  EXPECT_EQ(row_fills.size(), 1u);
  EXPECT_FALSE(b_packs.empty()) << "B is packed in the kernel";
}

// The pixel rows' B (the weights, packed at compile time) streams in one
// block ahead: each row panel's call ("p") passes the micro-kernel its
// 1/row_panels share of the next B block (kc x NR floats) to prefetch while
// it computes, so the next block's first call does not wait on L3 or DRAM.
// Both with k blocks (3x3) and without (1x1: the next column panel's K).
TEST(FloatGemm, PixelRowsPrefetchTheNextWeightBlockPerRowPanel) {
  for (const int64_t k : {int64_t{3}, int64_t{1}}) {
    const codegen::Kernel kernel = few_pixels_kernel("prefetch_" + std::to_string(k), k, 1);
    const int64_t kc = ukernel_param(kernel, "kc"), row_panels = ukernel_param(kernel, "row_panels");
    EXPECT_GT(row_panels, 1);  // of 7 (49 pixels)
    std::vector<codegen::Stmt> panel_loops, calls;
    loops_named(kernel, kernel.body, "p", &panel_loops);
    ASSERT_EQ(panel_loops.size(), 1u) << k;
    // tile_ct: the pixel rows' C tile transposed (in at most 4 k blocks).
    calls_in(panel_loops[0], has_ukernel_param(kernel, "c_transposed") ? "tg_sgemm::tile_ct" : "tg_sgemm::tile", &calls);
    ASSERT_EQ(calls.size(), 1u) << k;
    ASSERT_EQ(calls[0]->args.size(), 7u) << k;
    EXPECT_EQ(calls[0]->args[5].buffer, calls[0]->args[2].buffer) << "the next block of the same packed weights";
    int64_t floats = 0;
    ASSERT_TRUE(is_const_int(calls[0]->args[6].value, &floats));
    EXPECT_EQ(floats, ((kc * 32 + row_panels - 1) / row_panels + 15) / 16 * 16) << k;
  }
}

TEST(FloatGemm, DepthwiseConvDoesNotPay) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 8, 6, 6}).output("y");
  b.initializer_f("w", {8, 1, 3, 3}, ramp(72));
  auto& conv = b.node("Conv", {"x", "w"}, {"y"});
  OnnxModelBuilder::attr_int(conv, "group", 8);
  const std::vector<scheduler::Gemm> m = float_gemms(import_and_optimize(b, "depthwise"));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].batch_axes, (std::vector<int>{1}));  // each channel its own 1-column GEMM (36 pixels)
  EXPECT_TRUE(m[0].col_axes.empty());
  EXPECT_FALSE(scheduler::float_gemm_pays(m[0]));
}

// Which convs take the direct kernel (scheduler/direct_conv.h), and its
// bias + Relu6 epilogue fused like a GEMM's.
struct ScheduledConv {
  Graph g;
  scheduler::Schedule s;
};

// Conv (8 filters, 9 x `width` output) + bias + Clip(0, 6), scheduled for the host.
ScheduledConv conv_relu6(const std::string& name, int64_t channels, int64_t group, int64_t k, int64_t width = 10) {
  constexpr int64_t kFilters = 8;
  const int64_t weights = kFilters * channels / group * k * k;
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, channels, 9, width}).output("y");
  b.initializer_f("w", {kFilters, channels / group, k, k}, ramp(static_cast<int>(weights)));
  b.initializer_f("bias", {kFilters}, ramp(kFilters));
  b.initializer_f("lo", {}, {0.0f});
  b.initializer_f("hi", {}, {6.0f});
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"});
  OnnxModelBuilder::attr_int(conv, "group", group);
  if (k > 1) OnnxModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Clip", {"c", "lo", "hi"}, {"y"});
  ScheduledConv r{import_and_optimize(b, name), {}};
  r.s = scheduler::schedule_tile_graph(r.g, scheduler::host_arch(), {});
  scheduler::use_gemm_ukernels(r.g, r.s, true);
  return r;
}

TEST(FloatGemm, DepthwiseConvsTakeTheDirectKernelWithTheirEpilogue) {
  for (const auto& [name, channels, group] : {std::tuple<const char*, int64_t, int64_t>{"dw", 8, 8}, {"dw_x2", 4, 4}}) {
    const ScheduledConv c = conv_relu6(name, channels, group, 3);
    ASSERT_EQ(c.s.kernels.size(), 1u) << name << ": bias + Clip should be the direct kernel's epilogue";
    EXPECT_EQ(c.s.kernels[0].kind, scheduler::KernelKind::kDirectConv) << name;
    const codegen::Kernel kernel = codegen::lower_direct_conv_kernel(c.g, c.s.kernels[0]);
    EXPECT_EQ(kernel.flops, 2 * 8 * 9 * 10 * channels / group * 9) << name;
  }
}

// A stride-1 'same' depthwise conv on a plane wider than 14 runs its
// interior rows as one flat loop over the plane (lower_direct_conv_kernel.h);
// the border rows and columns keep their segments.
TEST(FloatGemm, SameDepthwiseConvRunsItsInteriorAsOneFlatLoop) {
  const ScheduledConv c = conv_relu6("dw_flat", 8, 8, 3, 20);
  ASSERT_EQ(c.s.kernels.size(), 1u);
  const codegen::Kernel kernel = codegen::lower_direct_conv_kernel(c.g, c.s.kernels[0]);
  std::vector<codegen::Stmt> flat, rows;
  loops_named(kernel, kernel.body, "q", &flat);
  ASSERT_EQ(flat.size(), 1u);
  // From output (1, 1) to (7, 18) of the 9 x 20 plane: 6 rows of 20 + 18.
  int64_t extent = 0;
  ASSERT_TRUE(is_const_int(flat[0]->extent, &extent));
  EXPECT_EQ(extent, 6 * 20 + 18);
  EXPECT_EQ(flat[0]->loop, codegen::LoopKind::kVectorized);
  loops_named(kernel, kernel.body, "oh1", &rows);
  EXPECT_EQ(rows.size(), 1u) << "the interior rows' border columns are stored again";
}

// On a plane at most 14 wide the same conv takes the padded form: the 9 x 10
// input copied into a zeroed 11 x 12 local plane (one row and column of
// padding each side), one vectorized loop over all 9 rows of 12 padded
// columns (the last row's 10 only) into a local result, and a loop per row
// storing the outputs through the epilogue; no segments.
TEST(FloatGemm, NarrowDepthwiseConvRunsOnAPaddedLocalPlane) {
  const ScheduledConv c = conv_relu6("dw_padded", 8, 8, 3);
  ASSERT_EQ(c.s.kernels.size(), 1u);
  const codegen::Kernel kernel = codegen::lower_direct_conv_kernel(c.g, c.s.kernels[0]);
  auto extent_of = [&](const std::string& name) -> int64_t {
    std::vector<codegen::Stmt> loops;
    loops_named(kernel, kernel.body, name, &loops);
    int64_t extent = -1;
    if (loops.size() != 1 || !is_const_int(loops[0]->extent, &extent)) return -1;
    EXPECT_EQ(loops[0]->loop, name == "ih" || name == "oh" ? codegen::LoopKind::kSerial : codegen::LoopKind::kVectorized)
        << name;
    return extent;
  };
  EXPECT_EQ(extent_of("z"), 11 * 12);  // zeroing the padded plane
  EXPECT_EQ(extent_of("ih"), 9);
  EXPECT_EQ(extent_of("iw"), 10);
  EXPECT_EQ(extent_of("q"), 8 * 12 + 10);
  EXPECT_EQ(extent_of("oh"), 9);
  EXPECT_EQ(extent_of("ow"), 10);
  std::vector<int64_t> locals;
  for (const codegen::Buffer& b : kernel.buffers)
    if (b.scope == codegen::MemoryScope::kLocal) locals.push_back(b.elements);
  EXPECT_EQ(locals, (std::vector<int64_t>{11 * 12, 8 * 12 + 10}));
  std::vector<codegen::Stmt> segments;
  loops_named(kernel, kernel.body, "oh0", &segments);
  EXPECT_TRUE(segments.empty());
  EXPECT_EQ(kernel.flops, 2 * 8 * 9 * 10 * 9);
}

// Where the depthwise micro-kernel has no stride-1 form (AVX2), planes up to
// 112 wide take the padded form too; from 28 wide on, only the padding of
// the local plane is zeroed (its top and bottom rows, one column each side
// of every copied row) and each output row sums its taps and stores through
// the epilogue in one vectorized loop: no result plane, no flat loop.
TEST(FloatGemm, WideDepthwiseConvStoresEachRowFromThePaddedPlane) {
  const ScheduledConv c = conv_relu6("dw_rows", 8, 8, 3, 30);
  ASSERT_EQ(c.s.kernels.size(), 1u);
  const codegen::Kernel kernel = codegen::lower_direct_conv_kernel(c.g, c.s.kernels[0], "avx2");
  auto loops = [&](const std::string& name) {
    std::vector<codegen::Stmt> found;
    loops_named(kernel, kernel.body, name, &found);
    std::vector<int64_t> extents;
    for (const codegen::Stmt& l : found) {
      int64_t e = -1;
      EXPECT_TRUE(is_const_int(l->extent, &e)) << name;
      extents.push_back(e);
    }
    return extents;
  };
  EXPECT_EQ(loops("z_top"), std::vector<int64_t>{32});  // one padding row of 1 + 30 + 1 columns
  EXPECT_EQ(loops("z_bottom"), std::vector<int64_t>{32});
  EXPECT_TRUE(loops("z").empty()) << "the whole plane is zeroed";
  EXPECT_TRUE(loops("z_left").empty()) << "one column: a store, not a loop";
  EXPECT_EQ(loops("ih"), std::vector<int64_t>{9});
  EXPECT_EQ(loops("iw"), std::vector<int64_t>{30});
  EXPECT_TRUE(loops("q").empty());
  EXPECT_EQ(loops("oh"), std::vector<int64_t>{9});
  EXPECT_EQ(loops("ow"), std::vector<int64_t>{30});
  std::vector<int64_t> locals;
  for (const codegen::Buffer& b : kernel.buffers)
    if (b.scope == codegen::MemoryScope::kLocal) locals.push_back(b.elements);
  EXPECT_EQ(locals, std::vector<int64_t>{11 * 32});
  // Each copied row's stores: its left and right padding column and the copy.
  std::vector<codegen::Stmt> rows;
  loops_named(kernel, kernel.body, "ih", &rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]->body.size(), 3u);
}

// Convs that sum over input channels stay GEMMs (direct_conv.h: measured).
TEST(FloatGemm, ConvsOverChannelsStayOffTheDirectKernel) {
  for (const auto& [name, channels, k] : {std::tuple<const char*, int64_t, int64_t>{"pointwise", 3, 1}, {"stem", 3, 3}}) {
    const ScheduledConv c = conv_relu6(name, channels, 1, k);
    for (const scheduler::KernelSchedule& ks : c.s.kernels) EXPECT_NE(ks.kind, scheduler::KernelKind::kDirectConv) << name;
  }
}

// A 1x1 conv (16 channels -> `filters`, over h x w) + bias + `activation`
// ("Relu", "Clip" 0..6, "Sigmoid"), lowered for the AVX-512 variant.
codegen::Kernel pointwise_kernel(const std::string& variant, const std::string& name, int64_t filters, int64_t h,
                                 int64_t w, const std::string& activation) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 16, h, w}).output("y");
  b.initializer_f("w", {filters, 16, 1, 1}, ramp(static_cast<int>(filters * 16)));
  b.initializer_f("bias", {filters}, ramp(static_cast<int>(filters)));
  b.node("Conv", {"x", "w", "bias"}, {"c"});
  if (activation == "Clip") {
    b.initializer_f("lo", {}, {0.0f});
    b.initializer_f("hi", {}, {6.0f});
    b.node("Clip", {"c", "lo", "hi"}, {"y"});
  } else {
    b.node(activation, {"c"}, {"y"});
  }
  Graph g = import_and_optimize(b, name);
  LoweredGemm gemm = lower_the_gemm(g, variant);
  EXPECT_EQ(gemm.kernels, 1u) << name << ": the activation should be the GEMM's epilogue";
  codegen::verify(gemm.kernel);
  return gemm.kernel;
}

codegen::Kernel pointwise_avx512_kernel(const std::string& name, int64_t filters, int64_t h, int64_t w,
                                        const std::string& activation) {
  return pointwise_kernel("avx512", name, filters, h, w, activation);
}

double float_arg(const codegen::CallArg& a) {
  EXPECT_EQ(a.buffer, -1);
  EXPECT_EQ(a.value->kind, ExprKind::kFloatImm);
  return a.value->float_value;
}

// Bias + Clip over full tiles (16 filters, 16 x 16 = 8 panels of 32): the
// micro-kernel's fused epilogue, storing the output rows 256 floats apart
// from the accumulators, with no C tile call or epilogue loop left.
TEST(FloatGemm, BiasAndClipAreTheMicroKernelsEpilogue) {
  const PackedB packed;
  const codegen::Kernel kernel = pointwise_avx512_kernel("pointwise_clip", 16, 16, 16, "Clip");
  std::vector<codegen::Stmt> fused, plain;
  calls_in(kernel.body, "tg_sgemm::tile_bias_clamp", &fused);
  calls_in(kernel.body, "tg_sgemm::tile", &plain);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(plain.size(), 0u);
  const std::vector<codegen::CallArg>& args = fused[0]->args;
  ASSERT_EQ(args.size(), 8u);
  int64_t k = 0, ldc = 0;
  EXPECT_TRUE(is_const_int(args[0].value, &k) && k == 16);
  EXPECT_TRUE(kernel.buffers.at(static_cast<size_t>(args[3].buffer)).written) << "c is the output";
  EXPECT_TRUE(is_const_int(args[4].value, &ldc) && ldc == 256);
  EXPECT_EQ(kernel.buffers.at(static_cast<size_t>(args[5].buffer)).dtype, DType::kF32);
  EXPECT_EQ(float_arg(args[6]), 0.0);
  EXPECT_EQ(float_arg(args[7]), 6.0);
  std::vector<codegen::Stmt> epilogue;
  loops_named(kernel, kernel.body, "j", &epilogue);
  EXPECT_EQ(epilogue.size(), 0u);
}

// The same conv with B read in place (16 filters: 2 row panels share each
// B panel): tile_bias_clamp_ldb reads the input itself, its rows (the
// channels) 192 floats apart (12 x 16 pixels), and nothing is packed at run
// time (the weights, A, were packed at compile time): no scratch at all.
// With 12 filters the row tail's call is tile_ldb<32, 4> and the epilogue
// loops. Over 20 x 20 only N's tail panel (16 columns) is packed, for its
// own tile<16> call. With 512 filters (more than 16 row panels per B panel)
// B is packed as before, and so over 64 x 64 pixels (rows 16 KiB apart reach
// 1 of the L1's 64 sets: kMinInPlaceBL1Sets) and over 16 x 16 pixels (1 KiB
// apart: 4 sets) with 48 filters (6 row panels); with 16 (2 row panels) 4 sets
// are enough.
TEST(FloatGemm, PointwiseConvReadsItsInputInPlace) {
  const codegen::Kernel kernel = pointwise_avx512_kernel("pointwise_in_place", 16, 12, 16, "Clip");
  std::vector<codegen::Stmt> fused;
  calls_in(kernel.body, "tg_sgemm::tile_bias_clamp_ldb", &fused);
  ASSERT_EQ(fused.size(), 1u) << codegen::to_string(kernel);
  EXPECT_EQ(ukernel_param(kernel, "b_in_place"), 1);
  const std::vector<codegen::CallArg>& args = fused[0]->args;
  ASSERT_EQ(args.size(), 9u);
  const codegen::Buffer& b = kernel.buffers.at(static_cast<size_t>(args[2].buffer));
  EXPECT_EQ(b.scope, codegen::MemoryScope::kGlobal);
  EXPECT_FALSE(b.written) << "B is the conv's input";
  int64_t ldb = 0, ldc = 0;
  EXPECT_TRUE(is_const_int(args[3].value, &ldb) && ldb == 192);
  EXPECT_TRUE(kernel.buffers.at(static_cast<size_t>(args[4].buffer)).written) << "c is the output";
  EXPECT_TRUE(is_const_int(args[5].value, &ldc) && ldc == 192);
  for (const codegen::Buffer& buffer : kernel.buffers) EXPECT_FALSE(buffer.scratch) << buffer.name;

  const codegen::Kernel rows12 = pointwise_avx512_kernel("pointwise_in_place_rows12", 12, 12, 16, "Relu");
  std::vector<codegen::Stmt> full, tail, packed_calls;
  calls_in(rows12.body, "tg_sgemm::tile_ldb", &full);
  calls_in(rows12.body, "tg_sgemm::tile_ldb<32, 4>", &tail);
  calls_in(rows12.body, "tg_sgemm::tile", &packed_calls);
  EXPECT_EQ(full.size(), 1u) << codegen::to_string(rows12);
  EXPECT_EQ(tail.size(), 1u);
  EXPECT_EQ(packed_calls.size(), 0u);

  const codegen::Kernel column_tail = pointwise_avx512_kernel("pointwise_20x20", 16, 20, 20, "Relu");
  std::vector<codegen::Stmt> in_place, tail16;
  calls_in(column_tail.body, "tg_sgemm::tile_bias_clamp_ldb", &in_place);
  calls_in(column_tail.body, "tg_sgemm::tile<16>", &tail16);
  ASSERT_EQ(in_place.size(), 1u) << codegen::to_string(column_tail);
  ASSERT_EQ(tail16.size(), 1u);
  EXPECT_TRUE(is_const_int(in_place[0]->args[3].value, &ldb) && ldb == 400);
  EXPECT_TRUE(column_tail.buffers.at(static_cast<size_t>(tail16[0]->args[2].buffer)).scratch)
      << "the tail panel's B is packed";

  const codegen::Kernel tall = pointwise_avx512_kernel("pointwise_512_filters", 512, 12, 16, "Relu");
  ASSERT_GT(ukernel_param(tall, "row_panels"), 16);
  EXPECT_FALSE(has_ukernel_param(tall, "b_in_place"));
  const codegen::Kernel one_set = pointwise_avx512_kernel("pointwise_aliased_64", 16, 64, 64, "Relu");
  EXPECT_FALSE(has_ukernel_param(one_set, "b_in_place"));
  const codegen::Kernel four_sets = pointwise_avx512_kernel("pointwise_aliased_16_48", 48, 16, 16, "Relu");
  EXPECT_FALSE(has_ukernel_param(four_sets, "b_in_place"));
  // With 16 filters (2 row panels) 4 sets are enough (kFewRowsMinL1Sets).
  const codegen::Kernel few_panels = pointwise_avx512_kernel("pointwise_aliased_16", 16, 16, 16, "Relu");
  EXPECT_EQ(ukernel_param(few_panels, "b_in_place"), 1);
  // So on AVX2, where 16 filters are 3 row panels (6 + 6 + 4); 17 are not few.
  const codegen::Kernel avx2_16 = pointwise_kernel("avx2", "pointwise_aliased_16_avx2", 16, 16, 16, "Relu");
  EXPECT_EQ(ukernel_param(avx2_16, "row_panels"), 3);
  EXPECT_EQ(ukernel_param(avx2_16, "b_in_place"), 1);
  const codegen::Kernel avx2_17 = pointwise_kernel("avx2", "pointwise_aliased_17_avx2", 17, 16, 16, "Relu");
  EXPECT_FALSE(has_ukernel_param(avx2_17, "b_in_place"));
}

// On two cores, a pointwise conv whose B is read in place splits its rows
// where its columns split unevenly: 96 filters (12 row panels of 8) over 14
// x 14 pixels (7 column panels, the last of 4 columns). Packing B would cost
// each task its chunk's panels, and there the columns go 4 + 3 panels per
// core; read in place, the rows go 6 + 6 panels, each over all 7 columns.
// Over 16 x 16 pixels (rows 1 KiB apart: B packed) the columns stay split.
TEST(FloatGemm, InPlaceBSplitsRowsWhereColumnsSplitUnevenly) {
  scheduler::ArchSpec two_cores = scheduler::host_arch();
  two_cores.cores = 2;
  auto lowered = [&](const std::string& name, int64_t side) {
    OnnxModelBuilder b(13);
    b.input("x", 1, {1, 16, side, side}).output("y");
    b.initializer_f("w", {96, 16, 1, 1}, ramp(96 * 16));
    b.node("Conv", {"x", "w"}, {"y"});
    Graph g = import_and_optimize(b, name);
    const codegen::Kernel kernel = lower_the_gemm(g, "avx512", two_cores).kernel;
    codegen::verify(kernel);
    return kernel;
  };
  const codegen::Kernel in_place = lowered("pointwise_14x14", 14);
  ASSERT_EQ(ukernel_param(in_place, "b_in_place"), 1) << codegen::to_string(in_place);
  EXPECT_EQ(ukernel_param(in_place, "row_panels"), 6);
  EXPECT_EQ(ukernel_param(in_place, "chunk_panels"), 7);

  const codegen::Kernel packed = lowered("pointwise_16x16", 16);
  ASSERT_FALSE(has_ukernel_param(packed, "b_in_place"));
  EXPECT_EQ(ukernel_param(packed, "row_panels"), 12);
  EXPECT_EQ(ukernel_param(packed, "chunk_panels"), 4);
}

// ReLU over 20 x 20 = 400 pixels: the 12 full panels take the fused
// call (no upper bound), the tail panel (16 columns) keeps a tile call,
// narrowed to one zmm (tile<16>), and its epilogue.
TEST(FloatGemm, ColumnTailKeepsTheTileAndItsEpilogue) {
  const PackedB packed;
  const codegen::Kernel kernel = pointwise_avx512_kernel("pointwise_relu_tail", 16, 20, 20, "Relu");
  std::vector<codegen::Stmt> fused, plain, narrow, epilogue;
  calls_in(kernel.body, "tg_sgemm::tile_bias_clamp", &fused);
  calls_in(kernel.body, "tg_sgemm::tile", &plain);
  calls_in(kernel.body, "tg_sgemm::tile<16>", &narrow);
  loops_named(kernel, kernel.body, "j", &epilogue);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(plain.size(), 0u);
  EXPECT_EQ(narrow.size(), 1u);
  EXPECT_EQ(epilogue.size(), 1u);
  int64_t ldc = 0;
  EXPECT_TRUE(is_const_int(fused[0]->args.at(4).value, &ldc) && ldc == 400);
  EXPECT_EQ(float_arg(fused[0]->args.at(6)), 0.0);
  EXPECT_TRUE(std::isinf(float_arg(fused[0]->args.at(7))));
}

// 12 filters (a row panel of 8 and a tail of 4): the full panel fused, the
// tail keeping the tile and the epilogue loops (its padding rows would be
// stored); an epilogue other than bias and bounds (Sigmoid) never fused.
TEST(FloatGemm, RowTailsAndOtherEpiloguesKeepTheTile) {
  const PackedB packed;
  for (const auto& [name, filters, activation, fused_calls] :
       {std::tuple<const char*, int64_t, const char*, size_t>{"pointwise_rows12", 12, "Relu", 1},
        {"pointwise_sigmoid", 16, "Sigmoid", 0}}) {
    const codegen::Kernel kernel = pointwise_avx512_kernel(name, filters, 16, 16, activation);
    std::vector<codegen::Stmt> fused, plain;
    calls_in(kernel.body, "tg_sgemm::tile_bias_clamp", &fused);
    calls_in(kernel.body, "tg_sgemm::tile", &plain);
    EXPECT_EQ(fused.size(), fused_calls) << name;
    EXPECT_EQ(plain.size(), 1u) << name;
  }
}

// e with every kernel var set by name (`at`; the others 0), as a constant.
// A 1x1 conv (6 channels -> `filters`, h x w pixels) + residual input r +
// Relu, with the filters as rows (scalar: MR 4).
codegen::Kernel conv_add_relu_kernel(const std::string& name, int64_t filters, int64_t h = 9, int64_t w = 15) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 6, h, w}).input("r", 1, {1, filters, h, w}).output("y");
  b.initializer_f("w", {filters, 6, 1, 1}, ramp(static_cast<int>(filters * 6)));
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("Add", {"c", "r"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  Graph g = import_and_optimize(b, name);
  const LoweredGemm gemm = lower_the_gemm(g);
  EXPECT_EQ(gemm.kernels, 1u) << name << ": the add and relu should be the GEMM's epilogue";
  codegen::verify(gemm.kernel);
  return gemm.kernel;
}

// The residual's tile of the next row panel (filters 4p + 4 .. 4p + 7, rows
// 135 floats apart) is prefetched before each panel's tile() call; the last
// panel prefetches its own (clamped: no row past M).
TEST(FloatGemm, ResidualOfTheNextRowPanelIsPrefetched) {
  const codegen::Kernel kernel = conv_add_relu_kernel("conv_add_relu", 16);
  std::vector<codegen::Stmt> prefetches;
  calls_in(kernel.body, "tg_sgemm::prefetch_tile", &prefetches);
  ASSERT_EQ(prefetches.size(), 1u);
  const std::vector<codegen::CallArg>& args = prefetches[0]->args;
  ASSERT_EQ(args.size(), 2u);
  const codegen::Buffer& read = kernel.buffers.at(static_cast<size_t>(args[0].buffer));
  EXPECT_FALSE(read.written);
  EXPECT_EQ(read.elements, 16 * 135) << "the residual, not the weights";
  int64_t ld = 0;
  EXPECT_TRUE(is_const_int(args[1].value, &ld));
  EXPECT_EQ(ld, 135);
  EXPECT_EQ(value_at(kernel, args[0].value, {{"p", 0}}), 4 * 135);
  EXPECT_EQ(value_at(kernel, args[0].value, {{"p", 2}}), 12 * 135);
  EXPECT_EQ(value_at(kernel, args[0].value, {{"p", 3}}), 12 * 135) << "the last panel: clamped";
  // Column panel 2: the first group's third (the input's 6 x 8 floats
  // panels are packed in groups).
  EXPECT_EQ(value_at(kernel, args[0].value, {{"p", 1}, {"ng", 0}, {"nq", 2}}), 8 * 135 + 2 * 8) << "the panel's columns";
}

// No prefetch where M has a tail (18 filters: rows past M) or the epilogue
// reads no activation (bias and ReLU: tile_bias_clamp).
TEST(FloatGemm, NoResidualPrefetchWithARowTailOrWithoutAResidual) {
  std::vector<codegen::Stmt> prefetches;
  calls_in(conv_add_relu_kernel("conv_add_relu_tail", 18).body, "tg_sgemm::prefetch_tile", &prefetches);
  EXPECT_EQ(prefetches.size(), 0u);
  calls_in(pointwise_avx512_kernel("pointwise_relu_no_residual", 16, 16, 16, "Relu").body, "tg_sgemm::prefetch_tile",
           &prefetches);
  calls_in(pointwise_avx512_kernel("pointwise_sigmoid_no_residual", 16, 16, 16, "Sigmoid").body,
           "tg_sgemm::prefetch_tile", &prefetches);
  EXPECT_EQ(prefetches.size(), 0u);
}

// The residual r is read only where the output is written, at the same
// index: the output may take r's bytes (codegen/project/in_place.h). The
// conv's input x is read by the B packing, elsewhere: it may not. With a
// column tail (9 x 15 = 135 pixels, NR 8) the tail's residual index splits
// the column where the store's does not: not provably the same, so no.
TEST(FloatGemm, ResidualIsReadOnlyInPlaceTheConvInputIsNot) {
  EXPECT_FALSE([] {
    const codegen::Kernel tail = conv_add_relu_kernel("conv_add_relu_tail_in_place", 16);
    for (size_t i = 0; i < tail.buffers.size(); ++i)
      for (size_t o = 0; o < tail.buffers.size(); ++o)
        if (tail.buffers[i].elements == 16 * 135 && !tail.buffers[i].written && tail.buffers[o].written &&
            codegen::reads_only_in_place(tail, static_cast<int>(i), static_cast<int>(o)))
          return true;
    return false;
  }());
  const codegen::Kernel kernel = conv_add_relu_kernel("conv_add_relu_in_place", 16, 16, 16);
  int x = -1, r = -1, out = -1;
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    const codegen::Buffer& b = kernel.buffers[i];
    if (b.scope != codegen::MemoryScope::kGlobal) continue;
    if (b.written) out = static_cast<int>(i);
    else if (b.elements == 6 * 256) x = static_cast<int>(i);
    else if (b.elements == 16 * 256) r = static_cast<int>(i);
  }
  ASSERT_GE(x, 0);
  ASSERT_GE(r, 0);
  ASSERT_GE(out, 0);
  EXPECT_TRUE(codegen::reads_only_in_place(kernel, r, out));
  EXPECT_FALSE(codegen::reads_only_in_place(kernel, x, out));
  EXPECT_FALSE(codegen::reads_only_in_place(kernel, out, out));
  EXPECT_FALSE(codegen::reads_only_in_place(kernel, r, x)) << "r is read in stores to another buffer";
}

TEST(FloatGemm, BiasAndActivationAreFusedAsTheEpilogue) {
  const Graph g = import_and_optimize(linear_relu(), "linear_relu");
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  const scheduler::GemmUkernelCounts counts = scheduler::use_gemm_ukernels(g, s, true);
  EXPECT_EQ(counts.float_gemms, 1);
  EXPECT_EQ(counts.int_gemms, 0);
  ASSERT_EQ(s.kernels.size(), 1u) << "bias + relu should be the GEMM's epilogue";
  EXPECT_EQ(s.kernels[0].kind, scheduler::KernelKind::kFloatGemm);
}

TEST(FloatGemm, TurnedOffTheScheduleIsUntouched) {
  const Graph g = import_and_optimize(linear_relu(), "linear_relu_off");
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  const size_t kernels = s.kernels.size();
  EXPECT_EQ(scheduler::use_gemm_ukernels(g, s, false).float_gemms, 0);
  EXPECT_EQ(s.kernels.size(), kernels);
  for (const scheduler::KernelSchedule& k : s.kernels) EXPECT_NE(k.kind, scheduler::KernelKind::kFloatGemm);
}

// The cost model's view of a conv on the float micro-kernel: its GEMM's
// operations, the activations' panels packed at run time (the weights at
// compile time), its inputs and output once through memory.
TEST(FloatGemm, UkernelFeaturesCountTheGemmAndItsRunTimePacking) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 5, 12, 12}).output("y");
  b.initializer_f("w", {16, 5, 3, 3}, ramp(16 * 45));
  OnnxModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  Graph g = import_and_optimize(b, "ukernel_features");
  const scheduler::ArchSpec arch = scheduler::host_arch();
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, arch, {});
  ASSERT_EQ(scheduler::use_gemm_ukernels(g, s, true).float_gemms, 1);
  const scheduler::KernelFeatures f = scheduler::ukernel_features(g, s.kernels[0], arch);
  EXPECT_DOUBLE_EQ(f.ukernel_flops, 2.0 * 16 * 144 * 45);       // rows 16 filters, cols 144 pixels, K 45
  EXPECT_EQ(f.packed_bytes, 144 * 45 * 4);                      // B once: A's panels fit the L2
  EXPECT_EQ(f.dram_bytes, (5 * 144 + 16 * 45 + 16 * 144) * 4);  // x, w, y
  EXPECT_EQ(f.constant_bytes, 16 * 45 * 4);                     // w: priced at DRAM's rate
  EXPECT_EQ(f.blocks, arch.compute_units);
  scheduler::estimate_ukernel_kernels(g, s, arch);
  EXPECT_GT(s.kernels[0].estimate.ukernel_seconds, 0);
  EXPECT_GT(s.kernels[0].estimate.pack_seconds, 0);
  EXPECT_EQ(s.kernels[0].features.ukernel_flops, f.ukernel_flops);
}

// A 1x1 conv over a 6-way channel Concat (3, 5, 7, 2, 9 and 4 channels, too
// many loads to inline everywhere) reads the inputs directly: the Concat is
// inlined into the conv alone (passes/inline_index_maps.h), and the B panel
// is packed by channel ranges, one loop per input ("kbr0".."kbr5") whose
// values read only that input, where one loop would evaluate all six loads
// per value. On 9 x 15 pixels (scalar NR 8: 16 full panels and one of 7
// columns) the full panels' copy needs no select at all and the last
// panel's keeps only its column guard, once per range.
TEST(FloatGemm, ChannelConcatPacksEachInputFromItsOwnChannelRange) {
  OnnxModelBuilder b(13);
  const std::vector<int64_t> channels = {3, 5, 7, 2, 9, 4};
  std::vector<std::string> parts;
  for (size_t i = 0; i < channels.size(); ++i) {
    parts.push_back(str_cat("x", i));
    b.input(parts.back(), 1, {1, channels[i], 9, 15});
  }
  b.output("y");
  b.initializer_f("w", {16, 30, 1, 1}, ramp(16 * 30));
  OnnxModelBuilder::attr_int(b.node("Concat", parts, {"cat"}), "axis", 1);
  b.node("Conv", {"cat", "w"}, {"y"});
  Graph g = import_and_optimize(b, "concat_conv");
  ASSERT_EQ(g.ops.size(), 1u) << to_string(g);
  const codegen::Kernel kernel = lower_the_gemm(g).kernel;
  codegen::verify(kernel);
  for (size_t r = 0; r < channels.size(); ++r) {
    std::vector<codegen::Stmt> full_range, tail_range;
    loops_named(kernel, kernel.body, str_cat("kbrw", r), &full_range);
    loops_named(kernel, kernel.body, str_cat("kbr", r), &tail_range);
    ASSERT_EQ(full_range.size(), 1u) << r;
    ASSERT_EQ(tail_range.size(), 1u) << r;
    int64_t count = 0;
    EXPECT_TRUE(is_const_int(full_range[0]->extent, &count) && count == channels[r]) << r;
  }
  std::vector<codegen::Stmt> full, tail;
  loops_named(kernel, kernel.body, "jbw", &full);
  loops_named(kernel, kernel.body, "jb", &tail);
  ASSERT_EQ(full.size(), channels.size());
  ASSERT_EQ(tail.size(), channels.size());
  for (const codegen::Stmt& loop : full) EXPECT_EQ(selects_in(loop), 0);
  for (const codegen::Stmt& loop : tail) EXPECT_EQ(selects_in(loop), 1);
}

// Where the wide Concat is not read along a contraction's reduce axes (a
// depthwise conv picks its channel by an output axis), or the target's
// kernels would load every branch (a GPU, or --no-float-ukernels's loop
// nests), it stays an op of its own.
TEST(FloatGemm, WideConcatStaysWhereItsBranchesAreNotReduceSteps) {
  OnnxModelBuilder b(13);
  std::vector<std::string> parts;
  for (int i = 0; i < 5; ++i) {
    parts.push_back(str_cat("x", i));
    b.input(parts.back(), 1, {1, 2, 4, 4});
  }
  b.output("y").output("z");
  b.initializer_f("dw", {10, 1, 3, 3}, ramp(90));
  b.initializer_f("w", {3, 10, 1, 1}, ramp(30));
  OnnxModelBuilder::attr_int(b.node("Concat", parts, {"cat"}), "axis", 1);
  OnnxModelBuilder::attr_int(b.node("Conv", {"cat", "dw"}, {"y"}), "group", 10);
  b.node("Conv", {"cat", "w"}, {"z"});
  const std::string path = (testing::unit_temp_dir() / "float_gemm" / "concat_depthwise" / "model.onnx").string();
  b.save(path);
  const Graph imported = onnx_frontend::import_model(path);
  const Graph cpu = driver::optimize_graph(driver::CompileOptions{}, imported);
  // The depthwise conv still reads the Concat; the 1x1 conv reads its inputs.
  ASSERT_EQ(cpu.ops.size(), 3u) << to_string(cpu);
  int concat_readers = 0;
  for (const Op& op : cpu.ops)
    for (TensorId in : op.inputs) concat_readers += cpu.tensor(in).name == "cat";
  EXPECT_EQ(concat_readers, 1) << to_string(cpu);
  const Graph gpu = driver::optimize_graph(driver::CompileOptions{}, imported, /*gpu=*/true);
  concat_readers = 0;
  for (const Op& op : gpu.ops)
    for (TensorId in : op.inputs) concat_readers += gpu.tensor(in).name == "cat";
  EXPECT_EQ(concat_readers, 2) << to_string(gpu);
  driver::CompileOptions loop_nests;
  loop_nests.float_ukernels = false;
  const Graph no_ukernels = driver::optimize_graph(loop_nests, imported);
  concat_readers = 0;
  for (const Op& op : no_ukernels.ops)
    for (TensorId in : op.inputs) concat_readers += no_ukernels.tensor(in).name == "cat";
  EXPECT_EQ(concat_readers, 2) << to_string(no_ukernels);
}

}  // namespace
}  // namespace tilegraph
