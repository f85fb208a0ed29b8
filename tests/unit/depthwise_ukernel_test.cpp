// The depthwise micro-kernels (codegen/ukernels/dwconv_avx512.h, and
// dwconv_avx2.h's stride-2 form; each where the CPU runs it) against a
// scalar reference, and the direct conv lowering's micro-kernel form
// (codegen/lowering/lower_direct_conv_kernel.h): which convs take it and the
// kernel it builds around the call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/lowering/lower_direct_conv_kernel.h"
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

#if defined(__x86_64__)
#include <immintrin.h>
#include "tests/unit/avx512_target_begin.h"
#include "codegen/ukernels/dwconv_avx512.h"

namespace {
// plane_same<H, W, K> on a whole result buffer (a function per shape, so that
// only code inside the pragma uses AVX-512).
template <int H, int W, int K>
void dwconv_avx512_plane(const float* in, const float* w, float* result) {
  tg_dwconv::avx512::plane_same<H, W, K>(in, w, result);
}
template <int H, int W>
void dwconv_avx512_stride2(const float* in, const float* w, float* result) {
  tg_dwconv::avx512::plane_stride2<H, W>(in, w, result);
}
}  // namespace

#include "tests/unit/avx512_target_end.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "codegen/ukernels/dwconv_avx2.h"
namespace {
template <int H, int W>
void dwconv_avx2_stride2(const float* in, const float* w, float* result) {
  tg_dwconv::avx2::plane_stride2<H, W>(in, w, result);
}
template <int H, int W, int K>
void dwconv_avx2_planes8(const float* in, const float* w, float* result) {
  tg_dwconv::avx2::planes8_same<H, W, K>(in, w, result);
}
}  // namespace
#pragma GCC pop_options
#endif  // defined(__x86_64__)

namespace tilegraph {
namespace {

using testing::calls_in;
using testing::import_and_optimize;
using testing::OnnxModelBuilder;

#if defined(__x86_64__)

// The contract's sum, in tap order with the micro-kernel's rounding (the first
// product, then one fused multiply-add per tap), of a k x k window at
// `stride` padded by k / 2 at the top and left, over oh x ow outputs.
std::vector<float> reference_plane(int h, int w, int k, const std::vector<float>& in, const std::vector<float>& wt,
                                   int stride = 1) {
  const int oh = (h - 1) / stride + 1, ow = (w - 1) / stride + 1;
  std::vector<float> out(static_cast<size_t>(oh * ow), 0.0f);
  for (int q = 0; q < oh * ow; ++q) {
    float acc = 0.0f;
    for (int t = 0; t < k * k; ++t) {
      const int row = q / ow * stride + t / k - k / 2, col = q % ow * stride + t % k - k / 2;
      const float x = row >= 0 && row < h && col >= 0 && col < w ? in[static_cast<size_t>(row * w + col)] : 0.0f;
      acc = t == 0 ? x * wt[static_cast<size_t>(t)] : std::fma(x, wt[static_cast<size_t>(t)], acc);
    }
    out[static_cast<size_t>(q)] = acc;
  }
  return out;
}

// Plane: the variant's plane_same<H, W, K>; kLanes its vector width.
template <int H, int W, int K, int kLanes, void (*Plane)(const float*, const float*, float*)>
void expect_plane_matches(const char* variant) {
  SCOPED_TRACE(std::string(variant) + " " + std::to_string(H) + "x" + std::to_string(W) + " k" + std::to_string(K));
  // The plane sits inside a larger buffer of NaNs: a tap that read outside
  // the plane (a lane the masks should drop) would turn its sum into NaN.
  const int outputs = H * W, guard = 64;
  std::vector<float> buffer(static_cast<size_t>(outputs + 2 * guard), std::nanf(""));
  std::vector<float> in(static_cast<size_t>(outputs)), wt(static_cast<size_t>(K * K));
  for (int i = 0; i < outputs; ++i) in[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 23) * 0.25f - 2.5f;
  for (int t = 0; t < K * K; ++t) wt[static_cast<size_t>(t)] = static_cast<float>((t * 7) % 5) * 0.5f - 1.0f + 0.01f * t;
  std::copy(in.begin(), in.end(), buffer.begin() + guard);
  constexpr int kResult = (H * W + kLanes - 1) / kLanes * kLanes;
  std::vector<float> result(kResult, 123.0f);
  Plane(buffer.data() + guard, wt.data(), result.data());
  const std::vector<float> expected = reference_plane(H, W, K, in, wt);
  for (int q = 0; q < outputs; ++q) EXPECT_EQ(result[static_cast<size_t>(q)], expected[static_cast<size_t>(q)]) << q;
  for (int q = outputs; q < kResult; ++q) EXPECT_EQ(result[static_cast<size_t>(q)], 0.0f) << "lane past the plane " << q;
}

template <int H, int W, int K>
void expect_plane_matches_reference() {
  expect_plane_matches<H, W, K, tg_dwconv::avx512::kLanes, dwconv_avx512_plane<H, W, K>>("avx512");
}

TEST(DepthwiseUkernel, Avx512PlaneMatchesTheScalarSum) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_plane_matches_reference<1, 1, 3>();    // every tap but the centre in the padding
  expect_plane_matches_reference<1, 19, 3>();   // one row
  expect_plane_matches_reference<2, 2, 3>();    // no interior
  expect_plane_matches_reference<5, 3, 3>();    // 15 outputs: one partial vector
  expect_plane_matches_reference<7, 7, 3>();    // MobileNetV2's 7 x 7 maps (4 vectors: one group)
  expect_plane_matches_reference<13, 11, 5>();  // 5 x 5, 9 vectors: two groups and a single one
  expect_plane_matches_reference<14, 14, 3>();  // 13 vectors: a group of 4 + 1
  expect_plane_matches_reference<9, 16, 3>();   // 9 vectors: rows of exactly one vector
  expect_plane_matches_reference<28, 28, 3>();  // 49 vectors
  expect_plane_matches_reference<64, 64, 3>();  // 256 vectors: the largest plane taken
}

template <int H, int W, int kLanes, void (*Plane)(const float*, const float*, float*)>
void expect_stride2_matches(const char* variant) {
  SCOPED_TRACE(std::string(variant) + " " + std::to_string(H) + "x" + std::to_string(W) + " stride 2");
  constexpr int kOutRows = (H - 1) / 2 + 1, kOutCols = (W - 1) / 2 + 1, outputs = kOutRows * kOutCols;
  const int guard = 64;
  std::vector<float> buffer(static_cast<size_t>(H * W + 2 * guard), std::nanf(""));
  std::vector<float> in(static_cast<size_t>(H * W)), wt(9);
  for (int i = 0; i < H * W; ++i) in[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 23) * 0.25f - 2.5f;
  for (int t = 0; t < 9; ++t) wt[static_cast<size_t>(t)] = static_cast<float>((t * 7) % 5) * 0.5f - 1.0f + 0.01f * t;
  std::copy(in.begin(), in.end(), buffer.begin() + guard);
  // As large as the contract says, no larger: a store past it fails under ASan.
  std::vector<float> result((outputs + kLanes - 1) / kLanes * kLanes, 123.0f);
  Plane(buffer.data() + guard, wt.data(), result.data());
  const std::vector<float> expected = reference_plane(H, W, 3, in, wt, 2);
  for (int q = 0; q < outputs; ++q) EXPECT_EQ(result[static_cast<size_t>(q)], expected[static_cast<size_t>(q)]) << q;
  for (size_t q = outputs; q < result.size(); ++q) EXPECT_EQ(result[q], 123.0f) << "lane past the plane " << q;
}

template <int H, int W>
void expect_stride2_matches_reference() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    expect_stride2_matches<H, W, tg_dwconv::avx512::kLanes, dwconv_avx512_stride2<H, W>>("avx512");
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    expect_stride2_matches<H, W, tg_dwconv::avx2::kLanes, dwconv_avx2_stride2<H, W>>("avx2");
}

TEST(DepthwiseUkernel, Stride2PlaneMatchesTheScalarSumOnEachVariant) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "neither AVX2 nor AVX-512 on this CPU";
  expect_stride2_matches_reference<1, 1>();      // 1 output, every tap but the centre in the padding
  expect_stride2_matches_reference<2, 2>();      // even: no bottom or right padding read
  expect_stride2_matches_reference<13, 11>();    // odd: the last row and column read the padding
  expect_stride2_matches_reference<14, 14>();    // MobileNetV2's 14 -> 7
  expect_stride2_matches_reference<33, 35>();    // 18 output columns: a second, 2-wide chunk
  expect_stride2_matches_reference<112, 112>();  // 112 -> 56: 4 chunks per row
  expect_stride2_matches_reference<28, 28>();    // AVX2: 14 columns, the last chunk of 6
  expect_stride2_matches_reference<56, 56>();    // AVX2: 28 columns, interior and edge chunks
}

// AVX2's planes8_same<H, W, K>: eight channels' planes, each as plane_same's
// sum (bit for bit), read from consecutive planes inside a buffer of NaNs
// (a read outside the eight planes would turn a sum into NaN), every
// channel with its own taps.
template <int H, int W, int K>
void expect_planes8_match_reference() {
  SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W) + " k" + std::to_string(K));
  constexpr int kPlane = H * W, kGuard = 64;
  std::vector<float> buffer(static_cast<size_t>(8 * kPlane + 2 * kGuard), std::nanf(""));
  std::vector<float> taps(static_cast<size_t>(8 * K * K));
  for (int i = 0; i < 8 * kPlane; ++i)
    buffer[static_cast<size_t>(kGuard + i)] = static_cast<float>((i * 37) % 23) * 0.25f - 2.5f;
  for (int t = 0; t < 8 * K * K; ++t) taps[static_cast<size_t>(t)] = static_cast<float>((t * 7) % 5) * 0.5f - 1.0f + 0.01f * t;
  std::vector<float> result(static_cast<size_t>(8 * kPlane + kGuard), 123.0f);
  dwconv_avx2_planes8<H, W, K>(buffer.data() + kGuard, taps.data(), result.data());
  for (int c = 0; c < 8; ++c) {
    const auto first = buffer.begin() + kGuard + c * kPlane;
    const std::vector<float> in(first, first + kPlane);
    const std::vector<float> wt(taps.begin() + c * K * K, taps.begin() + (c + 1) * K * K);
    const std::vector<float> expected = reference_plane(H, W, K, in, wt);
    for (int q = 0; q < kPlane; ++q)
      EXPECT_EQ(result[static_cast<size_t>(c * kPlane + q)], expected[static_cast<size_t>(q)]) << "channel " << c << " q " << q;
  }
  for (int i = 8 * kPlane; i < 8 * kPlane + kGuard; ++i) EXPECT_EQ(result[static_cast<size_t>(i)], 123.0f) << "past the planes";
}

TEST(DepthwiseUkernel, Avx2EightPlanesMatchTheScalarSum) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  expect_planes8_match_reference<1, 1, 3>();    // every tap but the centre in the padding; no group of 8
  expect_planes8_match_reference<2, 3, 3>();    // 6 outputs: the tail alone
  expect_planes8_match_reference<7, 7, 3>();    // MobileNetV2's 7 x 7: 6 groups + 1
  expect_planes8_match_reference<14, 14, 3>();  // 14 x 14: 24 groups + 4, groups across rows
  expect_planes8_match_reference<4, 8, 3>();    // rows of exactly one group
  expect_planes8_match_reference<5, 9, 5>();    // 5 x 5: two pixels of border
  expect_planes8_match_reference<3, 11, 1>();   // 1 x 1: no border
}

#endif  // defined(__x86_64__)

std::vector<float> ramp(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>((i * 37) % 11) * 0.1f - 0.5f);
  return v;
}

struct DepthwiseConv {
  int64_t height = 7, width = 7, k = 3, pad = 1, stride = 1, dilation = 1;
  int64_t channels = 8, multiplier = 1;  // input channels; output channels per input channel
};

// A depthwise conv (c.channels groups, c.multiplier filters each) + bias +
// Clip(0, 6), scheduled for the host, lowered as the direct kernel with the
// depthwise micro-kernel `variant` ("" for none).
codegen::Kernel lower_depthwise(const std::string& name, const DepthwiseConv& c, const std::string& variant) {
  const int64_t filters = c.channels * c.multiplier;
  OnnxModelBuilder b(13);
  b.input("x", 1, {1, c.channels, c.height, c.width}).output("y");
  b.initializer_f("w", {filters, 1, c.k, c.k}, ramp(static_cast<int>(filters * c.k * c.k)));
  b.initializer_f("bias", {filters}, ramp(static_cast<int>(filters)));
  b.initializer_f("lo", {}, {0.0f});
  b.initializer_f("hi", {}, {6.0f});
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"});
  OnnxModelBuilder::attr_int(conv, "group", c.channels);
  OnnxModelBuilder::attr_ints(conv, "pads", {c.pad, c.pad, c.pad, c.pad});
  OnnxModelBuilder::attr_ints(conv, "strides", {c.stride, c.stride});
  OnnxModelBuilder::attr_ints(conv, "dilations", {c.dilation, c.dilation});
  b.node("Clip", {"c", "lo", "hi"}, {"y"});
  Graph g = import_and_optimize(b, name);
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  scheduler::use_gemm_ukernels(g, s, true);
  EXPECT_EQ(s.kernels.size(), 1u) << name;
  EXPECT_EQ(s.kernels.at(0).kind, scheduler::KernelKind::kDirectConv) << name;
  return codegen::lower_direct_conv_kernel(g, s.kernels.at(0), variant);
}

void loops_named(const codegen::Kernel& k, const codegen::Stmt& s, const std::string& name,
                 std::vector<codegen::Stmt>* found) {
  if (!s) return;
  if (s->kind == codegen::StmtKind::kFor && k.var_names[static_cast<size_t>(s->var)] == name) found->push_back(s);
  for (const codegen::Stmt& c : s->body) loops_named(k, c, name, found);
}

// The longest run of nested float additions in e: the dependent adds (or
// fused multiply-adds) one output waits for.
int add_depth(const Expr& e) {
  if (!e) return 0;
  int deepest = 0;
  for (const Expr& a : e->args) deepest = std::max(deepest, add_depth(a));
  const bool add = e->kind == ExprKind::kBinary && e->binary_op == BinaryOp::kAdd && e->dtype == DType::kF32;
  return deepest + (add ? 1 : 0);
}

// The generated loops sum a 3 x 3 window row by row (three products each),
// then the rows' sums pairwise: 4 dependent additions per output instead of
// 8 in one chain over the taps (sum_of_taps). Here the padded form of a 7 x
// 7 plane (no micro-kernel), whose loop "q" stores each output's sum.
TEST(DepthwiseUkernel, GeneratedLoopsSumTheWindowRowByRow) {
  const codegen::Kernel k = lower_depthwise("rows7", {}, "");
  std::vector<codegen::Stmt> flat;
  loops_named(k, k.body, "q", &flat);
  ASSERT_EQ(flat.size(), 1u);
  ASSERT_EQ(flat[0]->body.size(), 1u);
  const codegen::Stmt& store = flat[0]->body[0];
  ASSERT_EQ(store->kind, codegen::StmtKind::kStore);
  EXPECT_EQ(add_depth(store->value), 4);
}

// A 7 x 7 'same' conv: one call per (image, channel) plane on the channel's 9
// weights, into a 64-float local result, then one vectorized loop over the 49
// outputs through the bias + Clip epilogue. No padded plane.
TEST(DepthwiseUkernel, SameConvCallsTheMicroKernelPerPlane) {
  const codegen::Kernel k = lower_depthwise("same7", {}, "avx512");
  EXPECT_EQ(k.ukernel, "dwconv_avx512");
  std::vector<codegen::Stmt> calls, flat;
  calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_dwconv::plane_same<7, 7, 3>");
  ASSERT_EQ(calls[0]->args.size(), 3u);
  EXPECT_EQ(calls[0]->args[0].buffer, 0) << "the input plane";
  EXPECT_EQ(k.buffers.at(static_cast<size_t>(calls[0]->args[2].buffer)).elements, 64);
  EXPECT_EQ(k.buffers.at(static_cast<size_t>(calls[0]->args[2].buffer)).scope, codegen::MemoryScope::kLocal);
  loops_named(k, k.body, "q", &flat);
  ASSERT_EQ(flat.size(), 1u);
  int64_t extent = 0;
  ASSERT_TRUE(is_const_int(flat[0]->extent, &extent));
  EXPECT_EQ(extent, 49);
  EXPECT_EQ(flat[0]->loop, codegen::LoopKind::kVectorized);
  for (const codegen::Buffer& b : k.buffers) EXPECT_NE(b.name, "padded");
  EXPECT_EQ(k.flops, 2 * 8 * 49 * 9);
  // The 5 x 5 window (pad 2) too, and 56 x 56 and 64 x 64 planes (the largest taken).
  std::vector<codegen::Stmt> calls5, calls56, calls64;
  calls_in(lower_depthwise("same5", {9, 11, 5, 2}, "avx512").body, &calls5);
  ASSERT_EQ(calls5.size(), 1u);
  EXPECT_EQ(calls5[0]->callee, "tg_dwconv::plane_same<9, 11, 5>");
  calls_in(lower_depthwise("same56", {56, 56}, "avx512").body, &calls56);
  ASSERT_EQ(calls56.size(), 1u);
  EXPECT_EQ(calls56[0]->callee, "tg_dwconv::plane_same<56, 56, 3>");
  calls_in(lower_depthwise("same64", {64, 64}, "avx512").body, &calls64);
  ASSERT_EQ(calls64.size(), 1u);
  EXPECT_EQ(calls64[0]->callee, "tg_dwconv::plane_same<64, 64, 3>");
  // AVX2 has no 'same' micro-kernel (dwconv_avx2.h): the generated loops.
  const codegen::Kernel avx2 = lower_depthwise("same56_avx2", {56, 56}, "avx2");
  EXPECT_EQ(avx2.ukernel, "");
  std::vector<codegen::Stmt> avx2_calls;
  calls_in(avx2.body, &avx2_calls);
  EXPECT_TRUE(avx2_calls.empty());
}

// On AVX2, 'same' planes of at most 14 x 14 outputs call planes8_same per
// eight channels: 16 channels of 7 x 7, two calls (channel 8 c's plane and
// taps), into a local result of both planes' 8 x 49 outputs, stored through
// the epilogue by one flat loop over them. Not where the eight channels'
// planes or taps are not one after the other (a channel multiplier: two
// filters read each input plane), nor for 12 channels, nor past 14 x 14: the
// generated padded form.
TEST(DepthwiseUkernel, SmallSamePlanesCallTheAvx2MicroKernelPerEightChannels) {
  DepthwiseConv c7;
  c7.channels = 16;
  const codegen::Kernel k = lower_depthwise("planes8_7", c7, "avx2");
  EXPECT_EQ(k.ukernel, "dwconv_avx2");
  std::vector<codegen::Stmt> calls, flat, tasks;
  calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_dwconv::planes8_same<7, 7, 3>");
  ASSERT_EQ(calls[0]->args.size(), 3u);
  EXPECT_EQ(k.buffers.at(static_cast<size_t>(calls[0]->args[2].buffer)).elements, 400);  // 8 x 49, to 16 floats
  loops_named(k, k.body, "c", &tasks);
  ASSERT_EQ(tasks.size(), 1u);
  int64_t extent = 0;
  ASSERT_TRUE(is_const_int(tasks[0]->extent, &extent));
  EXPECT_EQ(extent, 2);
  // Task c's call: plane 8 c (49 floats each) and taps 8 c (9 each).
  const codegen::Stmt& call = calls[0];
  for (const auto& [arg, step] : {std::pair<size_t, int64_t>{0, 8 * 49}, {1, 8 * 9}}) {
    std::vector<Expr> at(k.var_names.size());
    for (size_t v = 0; v < at.size(); ++v) at[v] = int_imm(0);
    const Expr first = simplify(substitute_vars(call->args[arg].value, at), {});
    at[static_cast<size_t>(tasks[0]->var)] = int_imm(1);
    const Expr second = simplify(substitute_vars(call->args[arg].value, at), {});
    int64_t a = -1, b = -1;
    ASSERT_TRUE(is_const_int(first, &a) && is_const_int(second, &b)) << arg;
    EXPECT_EQ(a, 0) << arg;
    EXPECT_EQ(b, step) << arg;
  }
  loops_named(k, k.body, "q", &flat);
  ASSERT_EQ(flat.size(), 1u);
  ASSERT_TRUE(is_const_int(flat[0]->extent, &extent));
  EXPECT_EQ(extent, 8 * 49);
  EXPECT_EQ(k.flops, 2 * 16 * 49 * 9);
  DepthwiseConv c14 = c7;
  c14.height = c14.width = 14;
  std::vector<codegen::Stmt> calls14;
  calls_in(lower_depthwise("planes8_14", c14, "avx2").body, &calls14);
  ASSERT_EQ(calls14.size(), 1u);
  EXPECT_EQ(calls14[0]->callee, "tg_dwconv::planes8_same<14, 14, 3>");
  DepthwiseConv doubled = c7, twelve = c7, wide = c7;
  doubled.channels = 8;
  doubled.multiplier = 2;
  twelve.channels = 12;
  wide.height = wide.width = 28;
  for (const auto& [name, conv] : {std::pair<const char*, DepthwiseConv>{"planes8_x2", doubled}, {"planes8_12", twelve},
                                   {"planes8_28", wide}}) {
    const codegen::Kernel other = lower_depthwise(name, conv, "avx2");
    std::vector<codegen::Stmt> other_calls;
    calls_in(other.body, &other_calls);
    EXPECT_TRUE(other_calls.empty()) << name;
    bool padded = false;
    for (const codegen::Buffer& b : other.buffers) padded = padded || b.name == "padded";
    EXPECT_TRUE(padded) << name;
  }
}

// A 3 x 3 stride-2 conv padded by 1 calls the stride-2 micro-kernel per
// plane, its 7 x 7 outputs (of a 14 x 14 input; 7 x 6 of a 13 x 11 one)
// stored through the epilogue by one flat loop; on AVX-512 and on AVX2.
TEST(DepthwiseUkernel, Stride2ConvCallsTheMicroKernelPerPlane) {
  for (const std::string variant : {"avx512", "avx2"})
  for (const auto& [case_name, conv, callee, outputs] :
       {std::tuple<const char*, DepthwiseConv, const char*, int64_t>{
            "stride2", {14, 14, 3, 1, 2}, "tg_dwconv::plane_stride2<14, 14>", 49},
        {"stride2_odd", {13, 11, 3, 1, 2}, "tg_dwconv::plane_stride2<13, 11>", 42}}) {
    const std::string name = std::string(case_name) + "_" + variant;
    const codegen::Kernel k = lower_depthwise(name, conv, variant);
    EXPECT_EQ(k.ukernel, "dwconv_" + variant) << name;
    std::vector<codegen::Stmt> calls, flat;
    calls_in(k.body, &calls);
    ASSERT_EQ(calls.size(), 1u) << name;
    EXPECT_EQ(calls[0]->callee, callee);
    loops_named(k, k.body, "q", &flat);
    ASSERT_EQ(flat.size(), 1u) << name;
    int64_t extent = 0;
    ASSERT_TRUE(is_const_int(flat[0]->extent, &extent)) << name;
    EXPECT_EQ(extent, outputs) << name;
    EXPECT_EQ(k.buffers.at(static_cast<size_t>(calls[0]->args[2].buffer)).elements, (outputs + 15) / 16 * 16) << name;
  }
}

// Without the micro-kernel (other targets), and for convs it does not cover
// (dilation, stride 1 with padding other than 'same', stride 2 with padding
// 0 or a 5 x 5 window, stride-1 planes over 64 x 64, stride-2 ones over 64 x
// 64 outputs), the generated loops as before.
TEST(DepthwiseUkernel, OtherConvsKeepTheGeneratedLoops) {
  const std::vector<std::pair<std::string, DepthwiseConv>> cases = {
      {"dilated", {14, 14, 3, 2, 1, 2}}, {"valid", {9, 9, 3, 0}},  {"plane65", {65, 65}},
      {"stride2_valid", {14, 14, 3, 0, 2}}, {"stride2_5x5", {14, 14, 5, 2, 2}},
      {"stride2_plane65", {130, 130, 3, 1, 2}}};
  for (const auto& [name, conv] : cases) {
    const codegen::Kernel k = lower_depthwise(name, conv, "avx512");
    std::vector<codegen::Stmt> calls;
    calls_in(k.body, &calls);
    EXPECT_TRUE(calls.empty()) << name;
    EXPECT_EQ(k.ukernel, "") << name;
  }
  const codegen::Kernel none = lower_depthwise("same7_none", {}, "");
  std::vector<codegen::Stmt> calls;
  calls_in(none.body, &calls);
  EXPECT_TRUE(calls.empty());
  EXPECT_EQ(none.ukernel, "");
}

}  // namespace
}  // namespace tilegraph
