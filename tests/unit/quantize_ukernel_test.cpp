// The quantize micro-kernels (codegen/ukernels/quantize_avx2.h and
// quantize_avx512.h, where the CPU runs them) against the generated loop's
// arithmetic, bit for bit, and which quantizations the lowering gives them
// (codegen/lowering/lower_quantize_kernel.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/lowering/lower_quantize_kernel.h"
#include "compiler/ir/simplify.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/imported_graph.h"
#include "tests/unit/kernel_calls.h"
#include "tests/unit/onnx_model_builder.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "codegen/ukernels/quantize_avx2.h"
namespace {
template <typename T>
void quantize_avx2(const float* x, int64_t n, float scale, int32_t zero_point, T* y) {
  tg_quantize::avx2::linear<T>(x, n, scale, zero_point, y);
}
void extremes_avx2(const float* x, int64_t n, float* out) { tg_quantize::avx2::extremes(x, n, out); }
}  // namespace
#pragma GCC pop_options

#include "tests/unit/avx512_target_begin.h"
#include "codegen/ukernels/quantize_avx512.h"
namespace {
template <typename T>
void quantize_avx512(const float* x, int64_t n, float scale, int32_t zero_point, T* y) {
  tg_quantize::avx512::linear<T>(x, n, scale, zero_point, y);
}
void extremes_avx512(const float* x, int64_t n, float* out) { tg_quantize::avx512::extremes(x, n, out); }
}  // namespace
#include "tests/unit/avx512_target_end.h"
#endif  // defined(__x86_64__)

namespace tilegraph {
namespace {

using testing::import_and_optimize;
using testing::OnnxModelBuilder;

#if defined(__x86_64__)

// What the generated loop computes for one value (QuantizeLinear's body as
// the C printer writes it): saturate(nearbyint(x / scale) + zero_point),
// NaN to 0.
template <typename T>
T reference(float x, float scale, int32_t zero_point) {
  const float v = std::nearbyint(x / scale) + static_cast<float>(zero_point);
  const float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const float below = hi < v ? hi : v;  // tg_min(v, hi)
  const float clamped = below < lo ? lo : below;  // tg_max(below, lo)
  return std::isnan(clamped) ? T(0) : static_cast<T>(clamped);
}

template <typename T>
using QuantizeFn = void (*)(const float*, int64_t, float, int32_t, T*);

// xs quantized by `fn` inside a larger output of a marker (a write outside
// the range would overwrite it): the count of values that differ from the
// reference (the first few reported).
template <typename T>
int64_t mismatches(QuantizeFn<T> fn, const std::vector<float>& xs, float scale, int32_t zero_point) {
  constexpr size_t kGuard = 64;
  constexpr T kMarker = T(0x5a);
  std::vector<T> y(xs.size() + 2 * kGuard, kMarker);
  fn(xs.data(), static_cast<int64_t>(xs.size()), scale, zero_point, y.data() + kGuard);
  int64_t wrong = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const T expected = reference<T>(xs[i], scale, zero_point);
    if (y[kGuard + i] == expected) continue;
    if (++wrong <= 3)
      ADD_FAILURE() << "x " << xs[i] << " scale " << scale << " zero point " << zero_point << ": "
                    << int(y[kGuard + i]) << ", expected " << int(expected);
  }
  for (size_t q = 0; q < kGuard; ++q) {
    EXPECT_EQ(y[q], kMarker) << "written before the range";
    EXPECT_EQ(y[kGuard + xs.size() + q], kMarker) << "written past the range";
  }
  return wrong;
}

// Special values and ties (x / scale = k + 0.5 rounds to even), at every
// length from 0 to 40 (tails under and past one and two vectors), over scales
// that take the reciprocal path and ones that divide (0, subnormal, huge,
// inf, NaN, negative).
template <typename T>
void expect_special_values_match(QuantizeFn<T> fn) {
  const float scales[] = {1.0f, 0.5f, 3.0f, 6.0f / 255.0f, 1e-3f, -2.0f, 1e-38f, 1e-44f, 0.0f,
                          1e38f, 3.4e38f, INFINITY, NAN};
  for (float scale : scales) {
    std::vector<float> xs = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, 3.4e38f, -3.4e38f,
                             1e-40f, -1e-45f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 127.5f, 128.5f, -128.5f,
                             254.5f, 255.5f, 300.0f, -300.0f};
    const size_t plain = xs.size();
    for (size_t i = 0; i < plain; ++i) xs.push_back(xs[i] * scale);  // quotients near the listed values
    const std::vector<int32_t> zero_points = std::numeric_limits<T>::is_signed
                                                 ? std::vector<int32_t>{0, 5, 127, -128, -3}
                                                 : std::vector<int32_t>{0, 5, 127, 128, 255};
    for (int32_t zero_point : zero_points) {
      for (size_t n = 0; n <= xs.size(); ++n) {
        SCOPED_TRACE("length " + std::to_string(n));
        const std::vector<float> part(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
        ASSERT_EQ(mismatches(fn, part, scale, zero_point), 0);
      }
    }
  }
}

// Every float of a binade of quotients around the rounding points (x / scale
// in [64, 128) and [-128, -64): ties at every half), for scales whose
// reciprocal is inexact: the reciprocal-and-FMA quotient rounds as the
// division does.
template <typename T>
void expect_binades_match(QuantizeFn<T> fn) {
  for (float scale : {6.0f / 255.0f, 0.0123456f, 3.3e-5f}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    const float lo = scale * 64.0f, hi = scale * 128.0f;
    uint32_t first = 0, last = 0;
    std::memcpy(&first, &lo, 4);
    std::memcpy(&last, &hi, 4);
    std::vector<float> xs;
    xs.reserve(2 * (last - first));
    for (uint32_t bits = first; bits < last; ++bits) {
      float f = 0;
      std::memcpy(&f, &bits, 4);
      xs.push_back(f);
      xs.push_back(-f);
    }
    EXPECT_EQ(mismatches(fn, xs, scale, std::numeric_limits<T>::is_signed ? -1 : 128), 0);
  }
}

TEST(QuantizeUkernel, Avx2MatchesTheGeneratedLoop) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  expect_special_values_match<uint8_t>(quantize_avx2<uint8_t>);
  expect_special_values_match<int8_t>(quantize_avx2<int8_t>);
  expect_binades_match<uint8_t>(quantize_avx2<uint8_t>);
  expect_binades_match<int8_t>(quantize_avx2<int8_t>);
}

TEST(QuantizeUkernel, Avx512MatchesTheGeneratedLoop) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_special_values_match<uint8_t>(quantize_avx512<uint8_t>);
  expect_special_values_match<int8_t>(quantize_avx512<int8_t>);
  expect_binades_match<uint8_t>(quantize_avx512<uint8_t>);
  expect_binades_match<int8_t>(quantize_avx512<int8_t>);
}

using ExtremesFn = void (*)(const float*, int64_t, float*);

// extremes over every length to 150 and a ViT-B/16 activation (197 x 768),
// from several offsets (unaligned starts), with the largest and smallest
// value at each end and the middle, NaNs among the values (skipped, as the
// generated max(acc, v) = acc < v ? v : acc skips them) and none but NaNs
// (-inf, -inf).
void expect_extremes_match(ExtremesFn fn) {
  std::vector<float> xs(197 * 768 + 64);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  for (size_t i = 5; i < xs.size(); i += 97) xs[i] = NAN;
  auto check = [&](size_t start, size_t n) {
    float top = -INFINITY, negated = -INFINITY;
    for (size_t i = start; i < start + n; ++i) {
      top = top < xs[i] ? xs[i] : top;
      negated = negated < -xs[i] ? -xs[i] : negated;
    }
    float out[2] = {0, 0};
    fn(xs.data() + start, static_cast<int64_t>(n), out);
    EXPECT_EQ(out[0], top) << "max of " << n << " from " << start;
    EXPECT_EQ(out[1], negated) << "max of the negations of " << n << " from " << start;
  };
  for (size_t start : {0, 1, 3, 17})
    for (size_t n = 0; n <= 150; ++n) check(start, n);
  for (size_t where : {size_t{0}, size_t{197 * 768 / 2}, size_t{197 * 768 - 1}}) {
    xs[where] = 100.0f;
    xs[(where + 7) % (197 * 768)] = -200.0f;
    check(0, 197 * 768);
    xs[where] = 0.0f;
    xs[(where + 7) % (197 * 768)] = 0.0f;
  }
  const std::vector<float> nans(40, NAN);
  float out[2] = {0, 0};
  fn(nans.data(), 40, out);
  EXPECT_EQ(out[0], -INFINITY);
  EXPECT_EQ(out[1], -INFINITY);
}

TEST(QuantizeUkernel, Avx2ExtremesMatchTheGeneratedReduction) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  expect_extremes_match(extremes_avx2);
}

TEST(QuantizeUkernel, Avx512ExtremesMatchTheGeneratedReduction) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_extremes_match(extremes_avx512);
}

#endif  // defined(__x86_64__)

struct Scheduled {
  Graph g;
  scheduler::Schedule s;
};
Scheduled schedule_for_host(const OnnxModelBuilder& b, const std::string& name) {
  Scheduled out{import_and_optimize(b, name), {}};
  out.s = scheduler::schedule_tile_graph(out.g, scheduler::host_arch(), {});
  return out;
}

// The kernels of `sc` whose one phase quantize_slots matches.
std::vector<size_t> matching_kernels(const Scheduled& sc) {
  std::vector<size_t> found;
  for (size_t i = 0; i < sc.s.kernels.size(); ++i) {
    const std::vector<Op> phases = scheduler::phase_ops(sc.g, sc.s.kernels[i]);
    if (phases.size() == 1 && codegen::quantize_slots(sc.g, phases[0])) found.push_back(i);
  }
  return found;
}

// QuantizeLinear of x[2, 3, 37] (opset 13): with `scale_dims` {} one scale,
// {3} one per channel (axis 1); `zero_point` "u8", "i8" or "" (none: uint8 0);
// `reader` "Reshape" or "Transpose" puts that op between x and the quantize.
Scheduled quantize_graph(const std::string& name, std::vector<int64_t> scale_dims, const std::string& zero_point,
                         const std::string& reader = "") {
  OnnxModelBuilder b(13);
  b.input("x", 1, {2, 3, 37}).output("y", zero_point == "i8" ? 3 : 2);
  b.initializer_f("scale", scale_dims, std::vector<float>(scale_dims.empty() ? 1 : 3, 0.05f));
  std::vector<std::string> inputs = {"x", "scale"};
  if (!zero_point.empty()) {
    b.initializer_8bit("zp", zero_point == "i8" ? 3 : 2, scale_dims,
                       std::vector<int>(scale_dims.empty() ? 1 : 3, zero_point == "i8" ? -4 : 9));
    inputs.push_back("zp");
  }
  if (reader == "Reshape") {
    b.initializer_i64("to", {2}, {6, 37});
    b.node("Reshape", {"x", "to"}, {"xr"});
    inputs[0] = "xr";
  } else if (reader == "Transpose") {
    OnnxModelBuilder::attr_ints(b.node("Transpose", {"x"}, {"xr"}), "perm", {0, 2, 1});
    inputs[0] = "xr";
  }
  b.node("QuantizeLinear", inputs, {"y"});
  return schedule_for_host(b, name);
}

// One scale and zero point (uint8, int8, absent), x as it lies or through a
// Reshape: the micro-kernel's; per-channel scales, or x through a Transpose
// (not contiguous), keep the generated loop.
TEST(QuantizeUkernel, MatchesPerTensorQuantizationOfContiguousX) {
  struct Case {
    std::string name;
    std::vector<int64_t> scale_dims;
    std::string zero_point, reader;
    bool matches;
  };
  const std::vector<Case> cases = {
      {"u8", {}, "u8", "", true},
      {"i8", {}, "i8", "", true},
      {"no_zero_point", {}, "", "", true},
      {"reshaped", {}, "u8", "Reshape", true},
      {"per_channel", {3}, "u8", "", false},
      {"transposed", {}, "u8", "Transpose", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Scheduled sc = quantize_graph("quantize_" + c.name, c.scale_dims, c.zero_point, c.reader);
    EXPECT_EQ(matching_kernels(sc).size(), c.matches ? 1u : 0u);
  }
}

// DynamicQuantizeLinear of a ViT-B/16 activation (197 x 768): its quantize
// step, a kernel of its own after the one computing the scale and zero point
// (split_reductions' per-row partials), is the micro-kernel's.
TEST(QuantizeUkernel, MatchesDynamicQuantizeLinearsQuantizeStep) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {197, 768}).output("y", 2).output("scale", 1).output("zp", 2);
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  const Scheduled sc = schedule_for_host(b, "dynamic_quantize");
  const std::vector<size_t> found = matching_kernels(sc);
  ASSERT_EQ(found.size(), 1u);
  const Op op = scheduler::phase_ops(sc.g, sc.s.kernels[found[0]]).front();
  const std::optional<codegen::QuantizeSlots> slots = codegen::quantize_slots(sc.g, op);
  ASSERT_TRUE(slots.has_value());
  EXPECT_EQ(sc.g.tensor(op.inputs[static_cast<size_t>(slots->x)]).shape, (Shape{197, 768}));
  EXPECT_EQ(sc.g.tensor(op.inputs[static_cast<size_t>(slots->scale)]).dtype, DType::kF32);
  EXPECT_EQ(sc.g.tensor(op.inputs[static_cast<size_t>(slots->zero_point)]).dtype, DType::kU8);
}

// The kernel: a parallel loop over runs of 8192 elements (222 = 2 x 3 x 37
// elements: one run), each one call on x and y at the run's start with the
// run's length, the scale and the zero point as int32.
TEST(QuantizeUkernel, KernelCallsTheMicroKernelPerRun) {
  const Scheduled sc = quantize_graph("calls", {}, "i8");
  const std::vector<size_t> found = matching_kernels(sc);
  ASSERT_EQ(found.size(), 1u);
  const scheduler::KernelSchedule& ks = sc.s.kernels[found[0]];
  const Op op = scheduler::phase_ops(sc.g, ks).front();
  const codegen::Kernel k =
      codegen::lower_quantize_kernel(sc.g, ks, op, *codegen::quantize_slots(sc.g, op), "avx2");
  EXPECT_EQ(k.ukernel, "quantize_avx2");
  EXPECT_EQ(k.name, op.name);
  std::vector<codegen::Stmt> calls;
  testing::calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_quantize::linear<int8_t>");
  ASSERT_EQ(calls[0]->args.size(), 5u);
  ASSERT_EQ(k.body->kind, codegen::StmtKind::kFor);
  EXPECT_EQ(k.body->loop, codegen::LoopKind::kParallel);
  int64_t runs = 0, length = 0;
  ASSERT_TRUE(is_const_int(k.body->extent, &runs));
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(is_const_int(simplify(substitute_vars(calls[0]->args[1].value, {int_imm(0)}), {}), &length));
  EXPECT_EQ(length, 222);
  EXPECT_GE(calls[0]->args[0].buffer, 0);  // x: a pointer
  EXPECT_LT(calls[0]->args[2].buffer, 0);  // scale, zero point, length: scalars
  EXPECT_EQ(calls[0]->args[3].value->dtype, DType::kI32);
  EXPECT_GE(calls[0]->args[4].buffer, 0);  // y
  // On the host, lower_kernel takes this form where the CPU has AVX2 or AVX-512.
  const std::string variant = codegen::quantize_variant_for(scheduler::host_arch());
  const codegen::Kernel hosted = codegen::lower_kernel(sc.g, ks, scheduler::host_arch(), {});
  EXPECT_EQ(hosted.ukernel, variant.empty() ? "" : "quantize_" + variant);
}

}  // namespace
}  // namespace tilegraph

namespace tilegraph {
namespace {

// DynamicQuantizeLinear of x (`shape`) through a Reshape to `view` when given:
// its scheduled kernels.
Scheduled dynamic_quantize_graph(const std::string& name, std::vector<int64_t> shape, std::vector<int64_t> view = {}) {
  OnnxModelBuilder b(13);
  b.input("x", 1, shape).output("y", 2).output("scale", 1).output("zp", 2);
  std::string x = "x";
  if (!view.empty()) {
    b.initializer_i64("to", {static_cast<int64_t>(view.size())}, view);
    b.node("Reshape", {"x", "to"}, {"xr"});
    x = "xr";
  }
  b.node("DynamicQuantizeLinear", {x}, {"y", "scale", "zp"});
  return schedule_for_host(b, name);
}

// The range kernel of a DynamicQuantizeLinear, cut into per-row partials
// (197 x 768 and 1 x 197 x 768) or not (2 x 50000; a 64 x 8 one is fused whole with its
// quantize step: then the phase after the range is the quantize, over 512
// values, and the kernel keeps the block loops): where it matches, the range
// is the extremes phase 1 or 0, and x (phase 0's one input) the whole activation.
TEST(QuantizeUkernel, MatchesDynamicQuantizeLinearsRange) {
  struct Case {
    std::string name;
    std::vector<int64_t> shape, view;
    int extremes_phase;  // -1: no match
  };
  const std::vector<Case> cases = {
      {"vit", {197, 768}, {}, 1},
      {"vit3", {1, 197, 768}, {}, 1},
      {"reshaped", {197, 12, 64}, {197, 768}, 1},
      {"unsplit", {2, 50000}, {}, 0},
      {"whole", {64, 8}, {}, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Scheduled sc = dynamic_quantize_graph("range_" + c.name, c.shape, c.view);
    int found = -1;
    for (const scheduler::KernelSchedule& ks : sc.s.kernels) {
      const std::vector<Op> phases = scheduler::phase_ops(sc.g, ks);
      if (const std::optional<codegen::QuantizeRange> r = codegen::quantize_range(sc.g, phases)) {
        EXPECT_EQ(found, -1) << "two range kernels";
        found = r->extremes_phase;
        // x, phase 0's one input: the whole activation.
        ASSERT_EQ(phases.front().inputs.size(), 1u);
        EXPECT_EQ(num_elements(sc.g.tensor(phases.front().inputs.front()).shape), num_elements(c.shape));
      }
    }
    EXPECT_EQ(found, c.extremes_phase);
  }
}

// The kernel: one task, one extremes call over all of x into a local pair,
// then the scale (an extra output, read by the quantize kernel) and the zero
// point (the root) stored from it.
TEST(QuantizeUkernel, RangeKernelCallsExtremesThenStoresScaleAndZeroPoint) {
  const Scheduled sc = dynamic_quantize_graph("range_calls", {197, 768});
  for (const scheduler::KernelSchedule& ks : sc.s.kernels) {
    const std::vector<Op> phases = scheduler::phase_ops(sc.g, ks);
    const std::optional<codegen::QuantizeRange> range = codegen::quantize_range(sc.g, phases);
    if (!range) continue;
    const codegen::Kernel k = codegen::lower_quantize_range_kernel(sc.g, ks, phases, *range, "avx512");
    EXPECT_EQ(k.ukernel, "quantize_avx512");
    EXPECT_EQ(k.name, phases.back().name);
    std::vector<codegen::Stmt> calls;
    testing::calls_in(k.body, &calls);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0]->callee, "tg_quantize::extremes");
    int64_t n = 0;
    ASSERT_EQ(calls[0]->args.size(), 3u);
    ASSERT_TRUE(is_const_int(calls[0]->args[1].value, &n));
    EXPECT_EQ(n, 197 * 768);
    const codegen::Buffer& pair = k.buffers[static_cast<size_t>(calls[0]->args[2].buffer)];
    EXPECT_EQ(pair.scope, codegen::MemoryScope::kLocal);
    EXPECT_EQ(pair.elements, 2);
    int written = 0;
    for (const codegen::Buffer& b : k.buffers) written += b.written;
    EXPECT_EQ(written, 2);  // the scale and the zero point
    const codegen::Kernel hosted = codegen::lower_kernel(sc.g, ks, scheduler::host_arch(), {});
    const std::string variant = codegen::quantize_variant_for(scheduler::host_arch());
    EXPECT_EQ(hosted.ukernel, variant.empty() ? "" : "quantize_" + variant);
    return;
  }
  FAIL() << "no range kernel";
}

}  // namespace
}  // namespace tilegraph
