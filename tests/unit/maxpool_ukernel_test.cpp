// The max pooling micro-kernel (codegen/ukernels/maxpool_avx2.h, where the
// CPU runs it) against a scalar reference, and which pools the lowering
// gives it (codegen/lowering/lower_pool_kernel.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/lowering/lower_pool_kernel.h"
#include "compiler/ir/simplify.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/imported_graph.h"
#include "tests/unit/kernel_calls.h"
#include "tests/unit/onnx_model_builder.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2")
#include "codegen/ukernels/maxpool_avx2.h"
namespace {
template <int H, int W>
void maxpool_avx2_plane(const float* in, float* out) {
  tg_maxpool::avx2::plane_3x3_s2<H, W>(in, out);
}
}  // namespace
#pragma GCC pop_options
#endif  // defined(__x86_64__)

namespace tilegraph {
namespace {

using testing::import_and_optimize;
using testing::OnnxModelBuilder;

#if defined(__x86_64__)

// ONNX MaxPool 3 x 3, strides 2, pads 1: the max over the window's taps
// inside the plane.
std::vector<float> reference_pool(int h, int w, const std::vector<float>& in) {
  const int oh = (h - 1) / 2 + 1, ow = (w - 1) / 2 + 1;
  std::vector<float> out(static_cast<size_t>(oh * ow), -std::numeric_limits<float>::infinity());
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
          const int row = 2 * y + r - 1, col = 2 * x + s - 1;
          if (row < 0 || row >= h || col < 0 || col >= w) continue;
          float& o = out[static_cast<size_t>(y * ow + x)];
          o = std::max(o, in[static_cast<size_t>(row * w + col)]);
        }
  return out;
}

template <int H, int W>
void expect_pool_matches() {
  SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W));
  constexpr int kOutputs = ((H - 1) / 2 + 1) * ((W - 1) / 2 + 1), kGuard = 64;
  // Planes in larger buffers of NaN (input) and of a marker (output): a read
  // outside the plane would turn a max into NaN, a write outside it would
  // overwrite the marker. Values negative and positive, so a padding read as
  // 0 would win where every tap is negative.
  std::vector<float> in(static_cast<size_t>(H * W));
  for (int i = 0; i < H * W; ++i) in[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 23) * 0.25f - 4.0f;
  std::vector<float> buffer(in.size() + 2 * kGuard, std::nanf(""));
  std::copy(in.begin(), in.end(), buffer.begin() + kGuard);
  std::vector<float> out(kOutputs + 2 * kGuard, 123.0f);
  maxpool_avx2_plane<H, W>(buffer.data() + kGuard, out.data() + kGuard);
  const std::vector<float> expected = reference_pool(H, W, in);
  for (int q = 0; q < kOutputs; ++q) EXPECT_EQ(out[static_cast<size_t>(kGuard + q)], expected[static_cast<size_t>(q)]) << q;
  for (int q = 0; q < kGuard; ++q) {
    EXPECT_EQ(out[static_cast<size_t>(q)], 123.0f) << "written before the plane";
    EXPECT_EQ(out[static_cast<size_t>(kGuard + kOutputs + q)], 123.0f) << "written past the plane";
  }
}

// Planes narrower than a vector, odd and even sizes, a row of whole chunks
// and tails, ResNet-50's 112 x 112 stem.
TEST(MaxPoolUkernel, Avx2PlanesMatchTheReference) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_pool_matches<1, 1>();
  expect_pool_matches<2, 3>();
  expect_pool_matches<3, 2>();
  expect_pool_matches<5, 7>();
  expect_pool_matches<8, 8>();
  expect_pool_matches<9, 17>();
  expect_pool_matches<16, 33>();
  expect_pool_matches<7, 113>();
  expect_pool_matches<112, 112>();
}

#endif  // defined(__x86_64__)

struct PoolAttrs {
  std::vector<int64_t> kernel{3, 3}, strides{2, 2}, pads{1, 1, 1, 1}, dilations{1, 1};
  int64_t ceil_mode = 0;
};

// A MaxPool over x[1, 4, h, w], imported and optimized: its one op.
Graph max_pool_graph(const std::string& name, int64_t h, int64_t w, const PoolAttrs& a) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, 4, h, w}).output("y");
  auto& pool = b.node("MaxPool", {"x"}, {"y"});
  OnnxModelBuilder::attr_ints(pool, "kernel_shape", a.kernel);
  OnnxModelBuilder::attr_ints(pool, "strides", a.strides);
  OnnxModelBuilder::attr_ints(pool, "pads", a.pads);
  OnnxModelBuilder::attr_ints(pool, "dilations", a.dilations);
  OnnxModelBuilder::attr_int(pool, "ceil_mode", a.ceil_mode);
  Graph g = import_and_optimize(b, name);
  EXPECT_EQ(g.ops.size(), 1u) << name;
  return g;
}

// The pools the micro-kernel computes, by what their bodies read: ResNet's,
// also on odd planes and with no padding at the bottom and right (which
// those outputs never read); not a pool whose window starts elsewhere,
// steps or spans otherwise, or whose output has another shape.
TEST(MaxPoolUkernel, MatchesOnlyTheThreeByThreeStrideTwoPool) {
  struct Case {
    std::string name;
    int64_t h, w;
    PoolAttrs attrs;
    bool matches;
  };
  const std::vector<Case> cases = {
      {"resnet", 16, 16, {}, true},
      {"odd", 9, 11, {}, true},
      {"no_end_pad", 10, 12, {.pads = {1, 1, 0, 0}}, true},
      {"no_begin_pad", 10, 12, {.pads = {0, 0, 1, 1}}, false},
      {"stride1", 9, 9, {.strides = {1, 1}}, false},
      {"kernel2", 8, 8, {.kernel = {2, 2}, .pads = {0, 0, 0, 0}}, false},
      {"dilated", 11, 11, {.pads = {2, 2, 2, 2}, .dilations = {2, 2}}, false},
      {"ceil", 10, 10, {.ceil_mode = 1}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Graph g = max_pool_graph(c.name, c.h, c.w, c.attrs);
    const std::optional<codegen::MaxPoolPlane> plane = codegen::max_pool_3x3_s2_plane(g, g.ops.at(0));
    ASSERT_EQ(plane.has_value(), c.matches);
    if (plane) {
      EXPECT_EQ(plane->height, c.h);
      EXPECT_EQ(plane->width, c.w);
    }
  }
}

// The kernel: a parallel loop over the 4 planes, each one call on its input
// and output plane.
TEST(MaxPoolUkernel, KernelCallsTheMicroKernelPerPlane) {
  const Graph g = max_pool_graph("calls", 9, 11, {});
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  ASSERT_EQ(s.kernels.size(), 1u);
  const codegen::Kernel k =
      codegen::lower_max_pool_kernel(g, s.kernels[0], g.ops[0], codegen::MaxPoolPlane{9, 11}, "avx2");
  EXPECT_EQ(k.ukernel, "maxpool_avx2");
  std::vector<codegen::Stmt> calls;
  testing::calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_maxpool::plane_3x3_s2<9, 11>");
  ASSERT_EQ(calls[0]->args.size(), 2u);
  ASSERT_EQ(k.body->kind, codegen::StmtKind::kFor);
  EXPECT_EQ(k.body->loop, codegen::LoopKind::kParallel);
  int64_t planes = 0, in_step = 0, out_step = 0;
  ASSERT_TRUE(is_const_int(k.body->extent, &planes));
  EXPECT_EQ(planes, 4);
  std::vector<Expr> next{var(k.body->var) + 1};
  auto step = [&](const Expr& e) {
    int64_t v = -1;
    EXPECT_TRUE(is_const_int(simplify(substitute_vars(e, next) - e, {}), &v));
    return v;
  };
  in_step = step(calls[0]->args[0].value);
  out_step = step(calls[0]->args[1].value);
  EXPECT_EQ(in_step, 9 * 11);
  EXPECT_EQ(out_step, 5 * 6);
  // On the host, lower_kernel takes this form where the CPU has AVX2.
  const codegen::Kernel hosted = codegen::lower_kernel(g, s.kernels[0], scheduler::host_arch(), {});
  EXPECT_EQ(hosted.ukernel, codegen::max_pool_variant_for(scheduler::host_arch()).empty() ? "" : "maxpool_avx2");
}

}  // namespace
}  // namespace tilegraph
