// The softmax micro-kernels (codegen/ukernels/softmax_avx2.h and
// softmax_avx512.h, where the CPU runs them) against a double reference, and
// which softmaxes the lowering gives them (codegen/lowering/lower_softmax_kernel.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/lowering/lower_softmax_kernel.h"
#include "compiler/ir/simplify.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/imported_graph.h"
#include "tests/unit/kernel_calls.h"
#include "tests/unit/onnx_model_builder.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "codegen/ukernels/softmax_avx2.h"
namespace {
template <int N>
void softmax_avx2_row(const float* in, float* out) {
  tg_softmax::avx2::row<N>(in, out);
}
}  // namespace
#pragma GCC pop_options

#include "tests/unit/avx512_target_begin.h"
#include "codegen/ukernels/softmax_avx512.h"
namespace {
template <int N>
void softmax_avx512_row(const float* in, float* out) {
  tg_softmax::avx512::row<N>(in, out);
}
}  // namespace
#include "tests/unit/avx512_target_end.h"
#endif  // defined(__x86_64__)

namespace tilegraph {
namespace {

using testing::import_and_optimize;
using testing::OnnxModelBuilder;

#if defined(__x86_64__)

using RowFn = void (*)(const float*, float*);

// A row in a larger buffer of NaN (a value read from outside the row would
// make its sum NaN) and an output in one of a marker (a write outside it
// would overwrite the marker). Values from -150 to +40 around the maximum, so
// some exponentials underflow to 0 and one dominates; relative error within
// 2e-6 of the reference, absolute 1e-30 where it underflows.
void expect_row_matches(int n, RowFn row, const char* variant) {
  SCOPED_TRACE(std::string(variant) + " length " + std::to_string(n));
  constexpr int kGuard = 32;
  std::vector<float> in(static_cast<size_t>(n + 2 * kGuard), std::nanf(""));
  for (int j = 0; j < n; ++j) in[static_cast<size_t>(kGuard + j)] = static_cast<float>((j * 37) % 191) - 150.0f + 0.37f * j;
  std::vector<float> out(in.size(), 123.0f);
  row(in.data() + kGuard, out.data() + kGuard);
  // The reference takes x - max in float as the kernel must (its rounding,
  // up to 4e-6 relative in e^(x - max) at -33, is the input's), the rest in double.
  float max = -INFINITY;
  for (int j = 0; j < n; ++j) max = std::max(max, in[static_cast<size_t>(kGuard + j)]);
  std::vector<double> e(static_cast<size_t>(n));
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += e[static_cast<size_t>(j)] = std::exp(static_cast<double>(in[static_cast<size_t>(kGuard + j)] - max));
  for (int j = 0; j < n; ++j) {
    const double expected = e[static_cast<size_t>(j)] / sum;
    const double got = out[static_cast<size_t>(kGuard + j)];
    EXPECT_LE(std::abs(got - expected), 2e-6 * expected + 1e-30) << j << ": " << got << " vs " << expected;
  }
  for (int q = 0; q < kGuard; ++q) {
    EXPECT_EQ(out[static_cast<size_t>(q)], 123.0f) << "written before the row";
    EXPECT_EQ(out[static_cast<size_t>(kGuard + n + q)], 123.0f) << "written past the row";
  }
  // A NaN anywhere in the row makes the whole row NaN (as the generated loops do).
  in[static_cast<size_t>(kGuard + n / 2)] = std::nanf("");
  row(in.data() + kGuard, out.data() + kGuard);
  for (int j = 0; j < n; ++j) EXPECT_TRUE(std::isnan(out[static_cast<size_t>(kGuard + j)])) << "NaN lost at " << j;
}

// Rows shorter than a vector, whole vectors with and without a tail, one
// vector past an unrolled pair, ViT's 197 and a long row.
template <template <int> class Rows>
void expect_rows_match(const char* variant) {
  expect_row_matches(1, Rows<1>::fn, variant);
  expect_row_matches(5, Rows<5>::fn, variant);
  expect_row_matches(8, Rows<8>::fn, variant);
  expect_row_matches(9, Rows<9>::fn, variant);
  expect_row_matches(16, Rows<16>::fn, variant);
  expect_row_matches(17, Rows<17>::fn, variant);
  expect_row_matches(40, Rows<40>::fn, variant);
  expect_row_matches(49, Rows<49>::fn, variant);
  expect_row_matches(197, Rows<197>::fn, variant);
  expect_row_matches(1000, Rows<1000>::fn, variant);
}

template <int N>
struct Avx2Rows {
  static constexpr RowFn fn = softmax_avx2_row<N>;
};
template <int N>
struct Avx512Rows {
  static constexpr RowFn fn = softmax_avx512_row<N>;
};

TEST(SoftmaxUkernel, Avx2RowsMatchTheReference) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  expect_rows_match<Avx2Rows>("avx2");
}

TEST(SoftmaxUkernel, Avx512RowsMatchTheReference) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_rows_match<Avx512Rows>("avx512");
}

#endif  // defined(__x86_64__)

// `op_type` (Softmax, LogSoftmax) over x[2, 3, 37] along `axis`, imported,
// optimized and scheduled for the host: its kernels. With `producer`, the
// softmax reads x + b (b[37] an input: a bias, as swin's) or Where(x > 0, x,
// -10000) (a mask, as Conformer's) instead of x.
struct Scheduled {
  Graph g;
  scheduler::Schedule s;
};
Scheduled softmax_graph(const std::string& name, const std::string& op_type, int64_t axis,
                        const std::string& producer = "", std::vector<int64_t> shape = {2, 3, 37}) {
  OnnxModelBuilder b(13);
  b.input("x", 1, shape).output("y");
  std::string scores = "x";
  if (producer == "bias") {
    b.input("b", 1, {37});
    b.node("Add", {"x", "b"}, {"biased"});
    scores = "biased";
  } else if (producer == "mask") {
    b.initializer_f("zero", {}, {0.0f}).initializer_f("masked", {}, {-10000.0f});
    b.node("Greater", {"x", "zero"}, {"keep"});
    b.node("Where", {"keep", "x", "masked"}, {"kept"});
    scores = "kept";
  }
  OnnxModelBuilder::attr_int(b.node(op_type, {scores}, {"y"}), "axis", axis);
  Scheduled out{import_and_optimize(b, name), {}};
  out.s = scheduler::schedule_tile_graph(out.g, scheduler::host_arch(), {});
  return out;
}

// Softmax over the last axis, by either spelling of the axis, read in place
// or through a fused bias or mask; not over another axis, and not LogSoftmax
// (four phases as well, other bodies).
TEST(SoftmaxUkernel, MatchesSoftmaxOverTheLastAxisOnly) {
  struct Case {
    std::string name, op_type;
    int64_t axis;
    std::string producer;
    bool matches, in_place;
  };
  const std::vector<Case> cases = {
      {"last", "Softmax", 2, "", true, true},
      {"minus_one", "Softmax", -1, "", true, true},
      {"biased", "Softmax", -1, "bias", true, false},
      {"masked", "Softmax", -1, "mask", true, false},
      {"middle", "Softmax", 1, "", false, false},
      {"biased_middle", "Softmax", 1, "bias", false, false},
      {"log", "LogSoftmax", -1, "", false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Scheduled sc = softmax_graph(c.name, c.op_type, c.axis, c.producer);
    ASSERT_EQ(sc.s.kernels.size(), 1u);
    const std::optional<codegen::SoftmaxRows> rows =
        codegen::softmax_rows(sc.g, codegen::softmax_phases(sc.g, sc.s.kernels[0]));
    ASSERT_EQ(rows.has_value(), c.matches);
    if (rows) {
      EXPECT_EQ(rows->rows, 6);
      EXPECT_EQ(rows->length, 37);
      EXPECT_EQ(rows->in_place, c.in_place);
    }
  }
}

// A fused softmax's row of x longer than 4096 floats lives in the thread's
// scratch arena, not on a pool thread's stack.
TEST(SoftmaxUkernel, LongFusedRowsUseTheScratchArena) {
  const Scheduled sc = softmax_graph("long", "Softmax", -1, "mask", {2, 5000});
  ASSERT_EQ(sc.s.kernels.size(), 1u);
  const std::vector<Op> phases = codegen::softmax_phases(sc.g, sc.s.kernels[0]);
  const std::optional<codegen::SoftmaxRows> rows = codegen::softmax_rows(sc.g, phases);
  ASSERT_TRUE(rows.has_value());
  EXPECT_FALSE(rows->in_place);
  const codegen::Kernel k = codegen::lower_softmax_kernel(sc.g, sc.s.kernels[0], phases, *rows, "avx512");
  int scratch_rows = 0;
  for (const codegen::Buffer& b : k.buffers)
    if (b.scope == codegen::MemoryScope::kLocal && b.elements == 5000 && b.scratch) ++scratch_rows;
  EXPECT_EQ(scratch_rows, 1);
}

// The bodies are checked at up to 5 samples per axis and 5^5 points: a rank-5
// softmax is, a rank-6 one (5^6 points) keeps the block kernel rather than
// take the time.
TEST(SoftmaxUkernel, HighRanksKeepTheBlockKernel) {
  for (const auto& [shape, matches] : std::vector<std::pair<std::vector<int64_t>, bool>>{
           {{5, 5, 5, 5, 37}, true}, {{5, 5, 5, 5, 5, 37}, false}}) {
    SCOPED_TRACE(shape.size());
    const Scheduled sc = softmax_graph("rank" + std::to_string(shape.size()), "Softmax", -1, "", shape);
    ASSERT_EQ(sc.s.kernels.size(), 1u);
    EXPECT_EQ(codegen::softmax_rows(sc.g, codegen::softmax_phases(sc.g, sc.s.kernels[0])).has_value(), matches);
  }
}

// The kernel: a parallel loop over the 6 rows, each one call on its input
// and output row, 37 floats apart.
TEST(SoftmaxUkernel, KernelCallsTheMicroKernelPerRow) {
  const Scheduled sc = softmax_graph("calls", "Softmax", -1);
  ASSERT_EQ(sc.s.kernels.size(), 1u);
  const std::vector<Op> phases = scheduler::phase_ops(sc.g, sc.s.kernels[0]);
  const codegen::Kernel k =
      codegen::lower_softmax_kernel(sc.g, sc.s.kernels[0], phases, codegen::SoftmaxRows{6, 37}, "avx512");
  EXPECT_EQ(k.ukernel, "softmax_avx512");
  EXPECT_EQ(k.name, phases.back().name);
  EXPECT_GT(k.flops, 6 * 37 * 3);
  std::vector<codegen::Stmt> calls;
  testing::calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_softmax::row<37>");
  ASSERT_EQ(calls[0]->args.size(), 2u);
  ASSERT_EQ(k.body->kind, codegen::StmtKind::kFor);
  EXPECT_EQ(k.body->loop, codegen::LoopKind::kParallel);
  int64_t rows = 0;
  ASSERT_TRUE(is_const_int(k.body->extent, &rows));
  EXPECT_EQ(rows, 6);
  const std::vector<Expr> next{var(k.body->var) + 1};
  for (const codegen::CallArg& arg : calls[0]->args) {
    int64_t step = -1;
    EXPECT_TRUE(is_const_int(simplify(substitute_vars(arg.value, next) - arg.value, {}), &step));
    EXPECT_EQ(step, 37);
  }
  // On the host, lower_kernel takes this form where the CPU has AVX2 or AVX-512.
  const std::string variant = codegen::softmax_variant_for(scheduler::host_arch());
  const codegen::Kernel hosted = codegen::lower_kernel(sc.g, sc.s.kernels[0], scheduler::host_arch(), {});
  EXPECT_EQ(hosted.ukernel, variant.empty() ? "" : "softmax_" + variant);
}

// With a fused bias, each row's x is computed into a local row (a vectorized
// loop storing x + b), which the call then reads; both ONNX nodes are the
// kernel's, and x and b its inputs.
TEST(SoftmaxUkernel, FusedProducerFillsARowBeforeTheCall) {
  const Scheduled sc = softmax_graph("fill", "Softmax", -1, "bias");
  ASSERT_EQ(sc.s.kernels.size(), 1u);
  const std::vector<Op> phases = codegen::softmax_phases(sc.g, sc.s.kernels[0]);
  const codegen::Kernel k =
      codegen::lower_softmax_kernel(sc.g, sc.s.kernels[0], phases, codegen::SoftmaxRows{6, 37, false}, "avx2");
  EXPECT_EQ(k.source_nodes.size(), 2u);
  int globals = 0, locals = 0;
  for (const codegen::Buffer& b : k.buffers) {
    if (b.scope == codegen::MemoryScope::kGlobal) ++globals;
    if (b.scope == codegen::MemoryScope::kLocal && b.elements == 37) ++locals;
  }
  EXPECT_EQ(globals, 3);  // x, b, y
  EXPECT_EQ(locals, 1);
  for (const codegen::Buffer& b : k.buffers)
    if (b.scope == codegen::MemoryScope::kLocal) EXPECT_FALSE(b.scratch) << "a row of 37 on the stack";
  std::vector<codegen::Stmt> calls;
  testing::calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_softmax::row<37>");
  ASSERT_EQ(calls[0]->args.size(), 2u);
  const int local = calls[0]->args[0].buffer;
  EXPECT_EQ(k.buffers.at(static_cast<size_t>(local)).scope, codegen::MemoryScope::kLocal);
  // The row's fill: a vectorized loop of 37 storing into that local.
  ASSERT_EQ(k.body->body.size(), 1u);
  const codegen::Stmt allocate = k.body->body[0];
  ASSERT_EQ(allocate->kind, codegen::StmtKind::kAllocate);
  ASSERT_EQ(allocate->body.size(), 2u);
  const codegen::Stmt fill = allocate->body[0];
  ASSERT_EQ(fill->kind, codegen::StmtKind::kFor);
  EXPECT_EQ(fill->loop, codegen::LoopKind::kVectorized);
  ASSERT_EQ(fill->body.size(), 1u);
  EXPECT_EQ(fill->body[0]->kind, codegen::StmtKind::kStore);
  EXPECT_EQ(fill->body[0]->buffer, local);
}

}  // namespace
}  // namespace tilegraph
