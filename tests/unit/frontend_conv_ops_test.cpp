// Convolution, pooling and resize lowerings (frontends/onnx/ops/conv_pool.cpp,
// resize.cpp): small models imported and run with the reference interpreter,
// checked against brute-force loops written here (conv, transposed conv,
// pools) or values computed by hand / by onnxruntime (resize), plus the
// user errors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "frontends/onnx/tensor_proto.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using testing::OnnxModelBuilder;
constexpr int kFloat = 1, kUint8 = 2, kInt64 = 7;

using testing::bytes_of;
using Result = testing::LoweredModel;

Result run(const OnnxModelBuilder& b, const std::string& name,
           const std::vector<std::vector<uint8_t>>& inputs) {
  return testing::run_lowered(b, testing::test_model_path("conv_ops", name), inputs);
}

std::string import_error(const OnnxModelBuilder& b, const std::string& name) {
  return testing::import_error_of(b, testing::test_model_path("conv_ops", name));
}

std::string model_path(const std::string& name) { return testing::test_model_path("conv_ops", name); }

// Deterministic values in [-1, 1) with few significant digits.
std::vector<float> pseudo_random(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int>((seed >> 8) % 2000) - 1000) / 1000.0f;
  }
  return v;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// ---- brute-force references (NCHW; a 1-D case is H = 1)

struct Conv2d {
  int64_t n, c, h, w, m, kh, kw, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // pads top, left, bottom, right
  int64_t oh() const { return (h + pt + pb - (dh * (kh - 1) + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - (dw * (kw - 1) + 1)) / sw + 1; }
};

std::vector<double> conv_reference(const Conv2d& p, const std::vector<float>& x, const std::vector<float>& wt,
                                   const std::vector<float>& bias) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<double> out;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t m = 0; m < p.m; ++m)
      for (int64_t oy = 0; oy < p.oh(); ++oy)
        for (int64_t ox = 0; ox < p.ow(); ++ox) {
          double acc = bias.empty() ? 0.0 : bias[m];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = oy * p.sh - p.pt + ky * p.dh, ix = ox * p.sw - p.pl + kx * p.dw;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                const int64_t c = (m / mg) * cg + ci;
                acc += x[((n * p.c + c) * p.h + iy) * p.w + ix] * wt[((m * cg + ci) * p.kh + ky) * p.kw + kx];
              }
          out.push_back(acc);
        }
  return out;
}

TEST(FrontendConvOps, ConvStridedPaddedGroupedDilatedWithBias) {
  Conv2d p{.n = 1, .c = 4, .h = 6, .w = 5, .m = 6, .kh = 3, .kw = 2, .group = 2,
           .sh = 2, .sw = 1, .dh = 1, .dw = 2, .pt = 1, .pl = 0, .pb = 2, .pr = 1};
  const auto x = pseudo_random(1 * 4 * 6 * 5, 1), w = pseudo_random(6 * 2 * 3 * 2, 2), bias = pseudo_random(6, 3);
  OnnxModelBuilder b(17);
  b.input("x", kFloat, {1, 4, 6, 5}).output("y");
  b.initializer_f("w", {6, 2, 3, 2}, w).initializer_f("b", {6}, bias);
  auto& n = b.node("Conv", {"x", "w", "b"}, {"y"});
  OnnxModelBuilder::attr_int(n, "group", 2);
  OnnxModelBuilder::attr_ints(n, "strides", {2, 1});
  OnnxModelBuilder::attr_ints(n, "dilations", {1, 2});
  OnnxModelBuilder::attr_ints(n, "pads", {1, 0, 2, 1});
  const Result r = run(b, "conv_grouped", {bytes_of(x)});
  EXPECT_EQ(r.shape(0), (Shape{1, 6, p.oh(), p.ow()}));
  EXPECT_EQ(r.shape(0), (Shape{1, 6, 4, 4}));
  expect_near_all(r.outputs[0], conv_reference(p, x, w, bias));
}

TEST(FrontendConvOps, DepthwiseConv1dSameLower) {
  // SAME_LOWER with an odd total padding (3) puts the extra element first.
  Conv2d p{.n = 2, .c = 3, .h = 1, .w = 7, .m = 3, .kh = 1, .kw = 4, .group = 3, .sw = 2, .pl = 2, .pr = 1};
  const auto x = pseudo_random(2 * 3 * 7, 4), w = pseudo_random(3 * 4, 5);
  OnnxModelBuilder b(17);
  b.input("x", kFloat, {2, 3, 7}).output("y");
  b.initializer_f("w", {3, 1, 4}, w);
  auto& n = b.node("Conv", {"x", "w"}, {"y"});
  OnnxModelBuilder::attr_int(n, "group", 3);
  OnnxModelBuilder::attr_ints(n, "strides", {2});
  OnnxModelBuilder::attr_string(n, "auto_pad", "SAME_LOWER");
  const Result r = run(b, "conv_depthwise_same", {bytes_of(x)});
  EXPECT_EQ(r.shape(0), (Shape{2, 3, 4}));
  expect_near_all(r.outputs[0], conv_reference(p, x, w, {}));
}

TEST(FrontendConvOps, PointwiseConvIsAGuardFreeChannelReduction) {
  OnnxModelBuilder b(17);
  b.input("x", kFloat, {1, 8, 3, 3}).output("y");
  b.initializer_f("w", {4, 8, 1, 1}, pseudo_random(32, 6));
  b.node("Conv", {"x", "w"}, {"y"});
  const std::string path = model_path("conv_pointwise");
  b.save(path);
  const Graph g = onnx_frontend::import_model(path);
  ASSERT_EQ(g.ops.size(), 1u);
  const Op& op = g.ops[0];
  EXPECT_EQ(op.reduction, Reduction::kSum);
  // Size-1 kernel axes are not reduce axes: a GEMM over the 8 channels.
  EXPECT_EQ(op.reduce_extents, (std::vector<int64_t>{8}));
  ASSERT_EQ(op.body->kind, ExprKind::kBinary);
  EXPECT_EQ(op.body->binary_op, BinaryOp::kMul);
  EXPECT_EQ(op.body->args[0]->kind, ExprKind::kLoad);  // no padding guard
  EXPECT_EQ(op.body->args[1]->kind, ExprKind::kLoad);
}

TEST(FrontendConvOps, ConvTransposeGroupedStridedDilatedPadded) {
  const int64_t c = 4, group = 2, mg = 2, h = 3, w = 2, kh = 3, kw = 2, sh = 2, sw = 3, dh = 2, dw = 1;
  const int64_t pt = 1, pl = 0, pb = 0, pr = 1, oph = 1, opw = 2;
  const int64_t cg = c / group, m = mg * group;
  const int64_t oh = sh * (h - 1) + oph + (kh - 1) * dh + 1 - pt - pb;
  const int64_t ow = sw * (w - 1) + opw + (kw - 1) * dw + 1 - pl - pr;
  const auto x = pseudo_random(c * h * w, 7), wt = pseudo_random(c * mg * kh * kw, 8), bias = pseudo_random(m, 9);
  // Scatter form: every input element adds X * W to the outputs it reaches.
  std::vector<double> want(static_cast<size_t>(m * oh * ow), 0.0);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < oh * ow; ++i) want[o * oh * ow + i] = bias[o];
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t iy = 0; iy < h; ++iy)
      for (int64_t ix = 0; ix < w; ++ix)
        for (int64_t j = 0; j < mg; ++j)
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t oy = iy * sh + ky * dh - pt, ox = ix * sw + kx * dw - pl;
              if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
              const int64_t mo = (ci / cg) * mg + j;
              want[(mo * oh + oy) * ow + ox] +=
                  x[(ci * h + iy) * w + ix] * wt[((ci * mg + j) * kh + ky) * kw + kx];
            }
  OnnxModelBuilder b(17);
  b.input("x", kFloat, {1, c, h, w}).output("y");
  b.initializer_f("w", {c, mg, kh, kw}, wt).initializer_f("b", {m}, bias);
  auto& n = b.node("ConvTranspose", {"x", "w", "b"}, {"y"});
  OnnxModelBuilder::attr_int(n, "group", group);
  OnnxModelBuilder::attr_ints(n, "strides", {sh, sw});
  OnnxModelBuilder::attr_ints(n, "dilations", {dh, dw});
  OnnxModelBuilder::attr_ints(n, "pads", {pt, pl, pb, pr});
  OnnxModelBuilder::attr_ints(n, "output_padding", {oph, opw});
  const Result r = run(b, "conv_transpose_grouped", {bytes_of(x)});
  EXPECT_EQ(r.shape(0), (Shape{1, m, oh, ow}));
  expect_near_all(r.outputs[0], want);
}

TEST(FrontendConvOps, ConvTransposeOutputShapeAndSamePadding) {
  // x = [1 2 3], w = [1 10 100]: the full output is [1 12 123 230 300];
  // expected values from onnxruntime.
  auto model = [](const std::string& attr, std::vector<int64_t> value, int64_t stride) {
    OnnxModelBuilder b(17);
    b.input("x", kFloat, {1, 1, 3}).output("y");
    b.initializer_f("w", {1, 1, 3}, {1, 10, 100});
    auto& n = b.node("ConvTranspose", {"x", "w"}, {"y"});
    OnnxModelBuilder::attr_ints(n, "strides", {stride});
    if (attr == "output_shape") OnnxModelBuilder::attr_ints(n, attr, value);
    else OnnxModelBuilder::attr_string(n, "auto_pad", attr);
    return b;
  };
  const auto x = bytes_of({1, 2, 3});
  // output_shape 4 crops one element, at the begin (the spec's NOTSET rule).
  expect_near_all(run(model("output_shape", {4}, 1), "convt_output_shape", {x}).outputs[0], {12, 123, 230, 300});
  // Larger than the full output: the tail gets no contributions.
  expect_near_all(run(model("output_shape", {8}, 2), "convt_output_shape_big", {x}).outputs[0],
                  {1, 10, 102, 20, 203, 30, 300, 0});
  expect_near_all(run(model("SAME_UPPER", {}, 2), "convt_same_upper", {x}).outputs[0], {1, 10, 102, 20, 203, 30});
  expect_near_all(run(model("SAME_LOWER", {}, 2), "convt_same_lower", {x}).outputs[0], {10, 102, 20, 203, 30, 300});
}

struct Pool2d {
  int64_t c, h, w, kh, kw, sh, sw, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0, oh, ow;
};

TEST(FrontendConvOps, MaxPoolCeilModeWithIndices) {
  const Pool2d p{.c = 2, .h = 5, .w = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .oh = 3, .ow = 3};
  auto x = pseudo_random(p.c * p.h * p.w, 10);
  for (size_t i = 0; i < x.size(); ++i) x[i] += static_cast<float>(i) * 1e-4f;  // no ties
  std::vector<double> values, rows, cols;  // indices: row-major, and column-major (storage_order 1)
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        double best = -INFINITY;
        int64_t by = 0, bx = 0;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = oy * p.sh - p.pt + ky, ix = ox * p.sw - p.pl + kx;
            if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
            if (x[(c * p.h + iy) * p.w + ix] > best) best = x[(c * p.h + iy) * p.w + ix], by = iy, bx = ix;
          }
        values.push_back(best);
        rows.push_back(static_cast<double>((c * p.h + by) * p.w + bx));
        cols.push_back(static_cast<double>(c * p.h * p.w + bx * p.h + by));
      }
  for (int64_t storage_order : {0, 1}) {
    OnnxModelBuilder b(12);
    b.input("x", kFloat, {1, p.c, p.h, p.w}).output("y").output("i", kInt64);
    auto& n = b.node("MaxPool", {"x"}, {"y", "i"});
    OnnxModelBuilder::attr_ints(n, "kernel_shape", {3, 3});
    OnnxModelBuilder::attr_ints(n, "strides", {2, 2});
    OnnxModelBuilder::attr_ints(n, "pads", {1, 1, 0, 0});
    OnnxModelBuilder::attr_int(n, "ceil_mode", 1);
    OnnxModelBuilder::attr_int(n, "storage_order", storage_order);
    const Result r = run(b, "maxpool_indices_" + std::to_string(storage_order), {bytes_of(x)});
    EXPECT_EQ(r.shape(0), (Shape{1, p.c, p.oh, p.ow}));
    expect_near_all(r.outputs[0], values);
    expect_near_all(r.outputs[1], storage_order ? cols : rows, 0);
  }
}

TEST(FrontendConvOps, MaxPoolDilatedUint8) {
  // 4x4 uint8, kernel 2x2 dilated by 2: each output is the max of a 3x3 corner set.
  std::vector<uint8_t> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 37) % 251);
  OnnxModelBuilder b(12);
  b.input("x", kUint8, {1, 1, 4, 4}).output("y", kUint8);
  auto& n = b.node("MaxPool", {"x"}, {"y"});
  OnnxModelBuilder::attr_ints(n, "kernel_shape", {2, 2});
  OnnxModelBuilder::attr_ints(n, "dilations", {2, 2});
  const Result r = run(b, "maxpool_dilated_u8", {x});
  std::vector<double> want;
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox)
      want.push_back(std::max({x[oy * 4 + ox], x[oy * 4 + ox + 2], x[(oy + 2) * 4 + ox], x[(oy + 2) * 4 + ox + 2]}));
  EXPECT_EQ(r.shape(0), (Shape{1, 1, 2, 2}));
  expect_near_all(r.outputs[0], want, 0);
}

TEST(FrontendConvOps, AveragePoolCeilModeCountsPaddingOnlyWhenAsked) {
  // 4x4, kernel 3, stride 2, pads 1, ceil_mode: windows start at -1, 1, 3; the
  // last one covers 3 (input), 4 (end pad) and 5 (beyond the padded input).
  const auto x = pseudo_random(16, 11);
  for (int64_t include_pad : {0, 1}) {
    std::vector<double> want;
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 3; ++ox) {
        double sum = 0;
        int64_t count_y = 0, count_x = 0;
        for (int k = 0; k < 3; ++k) {
          const int iy = oy * 2 - 1 + k, ix = ox * 2 - 1 + k;
          count_y += include_pad ? (iy >= -1 && iy < 5) : (iy >= 0 && iy < 4);
          count_x += include_pad ? (ix >= -1 && ix < 5) : (ix >= 0 && ix < 4);
        }
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
            if (iy >= 0 && iy < 4 && ix >= 0 && ix < 4) sum += x[iy * 4 + ix];
          }
        want.push_back(sum / static_cast<double>(count_y * count_x));
      }
    OnnxModelBuilder b(19);
    b.input("x", kFloat, {1, 1, 4, 4}).output("y");
    auto& n = b.node("AveragePool", {"x"}, {"y"});
    OnnxModelBuilder::attr_ints(n, "kernel_shape", {3, 3});
    OnnxModelBuilder::attr_ints(n, "strides", {2, 2});
    OnnxModelBuilder::attr_ints(n, "pads", {1, 1, 1, 1});
    OnnxModelBuilder::attr_int(n, "ceil_mode", 1);
    OnnxModelBuilder::attr_int(n, "count_include_pad", include_pad);
    const Result r = run(b, "avgpool_ceil_" + std::to_string(include_pad), {bytes_of(x)});
    EXPECT_EQ(r.shape(0), (Shape{1, 1, 3, 3}));
    expect_near_all(r.outputs[0], want);
  }
}

TEST(FrontendConvOps, LpPoolAndGlobalPools) {
  // 1-D LpPool p=3, kernel 2, pads [1, 0]: windows {pad, 1}, {-2, 3}, {0.5, -1}.
  {
    OnnxModelBuilder b(18);
    b.input("x", kFloat, {1, 1, 4}).output("y");
    auto& n = b.node("LpPool", {"x"}, {"y"});
    OnnxModelBuilder::attr_ints(n, "kernel_shape", {2});
    OnnxModelBuilder::attr_ints(n, "strides", {2});
    OnnxModelBuilder::attr_ints(n, "pads", {1, 1});
    OnnxModelBuilder::attr_int(n, "p", 3);
    const Result r = run(b, "lppool", {bytes_of({1, -2, 3, 0.5})});
    EXPECT_EQ(r.shape(0), (Shape{1, 1, 3}));
    expect_near_all(r.outputs[0], {1.0, std::cbrt(8.0 + 27.0), std::cbrt(0.125)});
  }
  // Global pools over [1, 2, 2, 3].
  const std::vector<float> x{1, -2, 3, 4, 0, -6, /* channel 1 */ 2, 2, 2, 2, 2, -10};
  auto global = [&](const std::string& op) {
    OnnxModelBuilder b(17);
    b.input("x", kFloat, {1, 2, 2, 3}).output("y");
    b.node(op, {"x"}, {"y"});
    Result r = run(b, "global_" + op, {bytes_of(x)});
    EXPECT_EQ(r.shape(0), (Shape{1, 2, 1, 1})) << op;
    return r.outputs[0];
  };
  expect_near_all(global("GlobalAveragePool"), {0.0, 0.0});
  expect_near_all(global("GlobalMaxPool"), {4.0, 2.0});
  expect_near_all(global("GlobalLpPool"), {std::sqrt(66.0), std::sqrt(120.0)});
}

// ---- Resize / Upsample

// Resize(x, roi, scales | sizes) at `opset`; `values` is scales (float) or
// sizes (int64); `strings` and `ints` are attributes.
OnnxModelBuilder resize_model(int opset, Shape x_shape, const std::string& which, std::vector<double> values,
                              std::vector<std::pair<std::string, std::string>> strings,
                              std::vector<std::pair<std::string, int64_t>> ints = {}, int elem = kFloat) {
  OnnxModelBuilder b(opset);
  b.input("x", elem, x_shape).output("y", elem);
  if (which == "scales") b.initializer_f("scales", {static_cast<int64_t>(values.size())}, {values.begin(), values.end()});
  else b.initializer_i64("sizes", {static_cast<int64_t>(values.size())}, {values.begin(), values.end()});
  auto& n = b.node("Resize", which == "scales" ? std::vector<std::string>{"x", "", "scales"}
                                               : std::vector<std::string>{"x", "", "", "sizes"}, {"y"});
  for (const auto& [k, v] : strings) OnnxModelBuilder::attr_string(n, k, v);
  for (const auto& [k, v] : ints) OnnxModelBuilder::attr_int(n, k, v);
  return b;
}

TEST(FrontendConvOps, ResizeNearestAsymmetricFloor) {
  auto b = resize_model(13, {1, 1, 2, 2}, "scales", {1, 1, 2, 3},
                        {{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"}, {"nearest_mode", "floor"}});
  const Result r = run(b, "resize_nearest", {bytes_of({1, 2, 3, 4})});
  EXPECT_EQ(r.shape(0), (Shape{1, 1, 4, 6}));
  expect_near_all(r.outputs[0], {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Nearest is a pure index map: no arithmetic on the data.
  ASSERT_EQ(r.graph.ops.size(), 1u);
  EXPECT_EQ(r.graph.ops[0].body->kind, ExprKind::kLoad);
}

TEST(FrontendConvOps, ResizeBilinearHalfPixelAndAlignCorners) {
  auto b = resize_model(13, {1, 1, 2, 2}, "scales", {1, 1, 2, 2}, {{"mode", "linear"}});
  const Result r = run(b, "resize_bilinear", {bytes_of({1, 2, 3, 4})});
  EXPECT_EQ(r.shape(0), (Shape{1, 1, 4, 4}));
  expect_near_all(r.outputs[0], {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  auto a = resize_model(11, {1, 1, 3}, "sizes", {1, 1, 5},
                        {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}});
  expect_near_all(run(a, "resize_align_corners", {bytes_of({0, 10, 20})}).outputs[0], {0, 5, 10, 15, 20});
}

TEST(FrontendConvOps, ResizeCubicAndAntialias) {
  // Expected values from onnxruntime 1.32.
  const auto x = bytes_of({0, 1, 4, 9, 16});
  auto cubic = resize_model(13, {1, 1, 1, 5}, "scales", {1, 1, 1, 1.6}, {{"mode", "cubic"}});
  expect_near_all(run(cubic, "resize_cubic", {x}).outputs[0],
                  {-0.09283447, 0.18756104, 1.17651367, 2.61938477, 5.44165039, 8.47143555, 13.39508057, 16.64984131}, 1e-4);
  // cubic_coeff_a is a float attribute: set it on a hand-built node.
  OnnxModelBuilder excl(13);
  excl.input("x", kFloat, {1, 1, 1, 5}).output("y");
  excl.initializer_f("scales", {4}, {1, 1, 1, 1.6f});
  auto& n = excl.node("Resize", {"x", "", "scales"}, {"y"});
  OnnxModelBuilder::attr_string(n, "mode", "cubic");
  OnnxModelBuilder::attr_int(n, "exclude_outside", 1);
  OnnxModelBuilder::attr_float(n, "cubic_coeff_a", -0.5f);
  expect_near_all(run(excl, "resize_cubic_exclude", {x}).outputs[0],
                  {-0.07195572, 0.24374929, 1.12890625, 2.84765625, 5.34765625, 8.62890625, 13.48818398, 16.50368881}, 1e-4);
  auto aa = resize_model(18, {1, 1, 1, 5}, "scales", {1, 1, 1, 0.6}, {{"mode", "linear"}}, {{"antialias", 1}});
  expect_near_all(run(aa, "resize_antialias", {x}).outputs[0], {0.375, 4.44444466, 13.375}, 1e-4);
}

TEST(FrontendConvOps, WideAntialiasFilterRunsAsAChainOfOps) {
  // Scale 0.2 stretches the linear filter to 10 taps per axis; 10 x 10 taps
  // exceed one op's budget, so each axis gets its own op. Expected: onnxruntime.
  auto b = resize_model(18, {1, 1, 10, 10}, "scales", {1, 1, 0.2, 0.2}, {{"mode", "linear"}}, {{"antialias", 1}});
  std::vector<float> x(100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 1.5f + static_cast<float>(i) / 10.0f;
  const Result r = run(b, "resize_antialias_chain", {bytes_of(x)});
  EXPECT_EQ(r.graph.ops.size(), 2u);
  EXPECT_EQ(r.shape(0), (Shape{1, 1, 2, 2}));
  expect_near_all(r.outputs[0], {6.7176, 7.2, 11.4408, 12.0744}, 1e-4);
}

TEST(FrontendConvOps, ResizeUint8LinearTruncatesLikeOnnxruntime) {
  auto b = resize_model(13, {1, 1, 1, 2}, "scales", {1, 1, 1, 4}, {{"mode", "linear"}}, {}, kUint8);
  const Result r = run(b, "resize_u8", {std::vector<uint8_t>{0, 255}});
  // Source x = (i + 0.5) / 4 - 0.5, clamped to [0, 1]: 255 * x, truncated.
  expect_near_all(r.outputs[0], {0, 0, 31, 95, 159, 223, 255, 255}, 0);
}

TEST(FrontendConvOps, ResizeAxesKeepAspectRatioAndCropExtrapolation) {
  // sizes 3x3 for a 4x6 image, not_larger: one scale 0.5 → 2x3, x = 2i + 0.5 → 2i.
  OnnxModelBuilder b(18);
  b.input("x", kFloat, {1, 1, 4, 6}).output("y");
  b.initializer_i64("sizes", {2}, {3, 3});
  auto& n = b.node("Resize", {"x", "", "", "sizes"}, {"y"});
  OnnxModelBuilder::attr_ints(n, "axes", {2, 3});
  OnnxModelBuilder::attr_string(n, "keep_aspect_ratio_policy", "not_larger");
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const Result r = run(b, "resize_axes_policy", {bytes_of(x)});
  EXPECT_EQ(r.shape(0), (Shape{1, 1, 2, 3}));
  expect_near_all(r.outputs[0], {0, 2, 4, 12, 14, 16});

  // tf_crop_and_resize over roi [-0.5, 1] of [0 1 2 3] to 5 samples: x = -1.5 + 1.125 i.
  OnnxModelBuilder c(13);
  c.input("x", kFloat, {1, 1, 4}).output("y");
  c.initializer_f("roi", {6}, {0, 0, -0.5f, 1, 1, 1});
  c.initializer_i64("sizes", {3}, {1, 1, 5});
  auto& cn = c.node("Resize", {"x", "roi", "", "sizes"}, {"y"});
  OnnxModelBuilder::attr_string(cn, "mode", "linear");
  OnnxModelBuilder::attr_string(cn, "coordinate_transformation_mode", "tf_crop_and_resize");
  OnnxModelBuilder::attr_float(cn, "extrapolation_value", 7.0f);
  expect_near_all(run(c, "resize_crop", {bytes_of({0, 1, 2, 3})}).outputs[0], {7, 7, 0.75, 1.875, 3});
}

TEST(FrontendConvOps, UpsampleAndResize10UseFloorUpAndCeilDown) {
  OnnxModelBuilder u7(7);
  u7.input("x", kFloat, {1, 1, 1, 2}).output("y");
  auto& n7 = u7.node("Upsample", {"x"}, {"y"});
  auto* scales = n7.add_attribute();
  scales->set_name("scales");
  scales->set_type(onnx::AttributeProto::FLOATS);
  for (float s : {1.0f, 1.0f, 2.0f, 3.0f}) scales->add_floats(s);
  const Result r7 = run(u7, "upsample7", {bytes_of({1, 2})});
  EXPECT_EQ(r7.shape(0), (Shape{1, 1, 2, 6}));
  expect_near_all(r7.outputs[0], {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});

  OnnxModelBuilder u9(9);
  u9.input("x", kFloat, {1, 1, 1, 2}).output("y");
  u9.initializer_f("s", {4}, {1, 1, 1, 2});
  OnnxModelBuilder::attr_string(u9.node("Upsample", {"x", "s"}, {"y"}), "mode", "linear");
  expect_near_all(run(u9, "upsample9", {bytes_of({1, 3})}).outputs[0], {1, 2, 3, 3});

  // Resize-10 downsampling by 0.6: x = i / 0.6 = 0, 1.67, 3.33 → ceil → 0, 2, 4.
  OnnxModelBuilder r10(10);
  r10.input("x", kFloat, {1, 1, 1, 5}).output("y");
  r10.initializer_f("s", {4}, {1, 1, 1, 0.6f});
  r10.node("Resize", {"x", "s"}, {"y"});
  expect_near_all(run(r10, "resize10", {bytes_of({0, 1, 2, 3, 4})}).outputs[0], {0, 2, 4});
}

// ---- user errors name the node and the problem

TEST(FrontendConvOps, UserErrors) {
  {
    OnnxModelBuilder b(17);
    b.input("x", kFloat, {1, 3, 4, 4}).output("y");
    b.initializer_f("w", {4, 2, 3, 3}, std::vector<float>(72, 1.0f));
    OnnxModelBuilder::attr_int(b.node("Conv", {"x", "w"}, {"y"}, "bad_conv"), "group", 2);
    const std::string e = import_error(b, "err_conv_group");
    EXPECT_NE(e.find("node 'bad_conv' (Conv, opset 17)"), std::string::npos) << e;
    EXPECT_NE(e.find("group 2 must divide the input channels (3)"), std::string::npos) << e;
  }
  {
    OnnxModelBuilder b(17);
    b.input("x", kFloat, {1, 1, 4, 4}).output("y");
    b.initializer_f("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    OnnxModelBuilder::attr_string(b.node("Conv", {"x", "w"}, {"y"}, "c"), "auto_pad", "SAME");
    EXPECT_NE(import_error(b, "err_auto_pad").find("auto_pad 'SAME' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER"),
              std::string::npos);
  }
  {
    OnnxModelBuilder b(17);
    b.input("x", kFloat, {1, 1, 4, 4}).output("y");
    b.node("MaxPool", {"x"}, {"y"}, "pool");
    // The schema check (libonnx) catches it before the lowering does.
    const std::string error = import_error(b, "err_kernel");
    EXPECT_NE(error.find("node 'pool' (MaxPool, opset 17)"), std::string::npos) << error;
    EXPECT_NE(error.find("kernel_shape"), std::string::npos) << error;
  }
  {
    OnnxModelBuilder b(17);
    b.input("x", kFloat, {1, 1, 2, 2}).output("y");
    OnnxModelBuilder::attr_ints(b.node("AveragePool", {"x"}, {"y"}, "pool"), "kernel_shape", {3, 3});
    EXPECT_NE(import_error(b, "err_window").find("larger than the padded input"), std::string::npos);
  }
  {  // scales fed at run time: the output shape would be data-dependent
    OnnxModelBuilder b(13);
    b.input("x", kFloat, {1, 1, 2, 2}).input("scales", kFloat, {4}).output("y");
    b.node("Resize", {"x", "", "scales"}, {"y"}, "up");
    const std::string e = import_error(b, "err_resize_runtime_scales");
    EXPECT_NE(e.find("node 'up' (Resize, opset 13)"), std::string::npos) << e;
    EXPECT_NE(e.find("scales"), std::string::npos) << e;
  }
  {
    auto b = resize_model(13, {1, 1, 2, 2}, "scales", {1, 1, 2, 2}, {{"mode", "area"}});
    EXPECT_NE(import_error(b, "err_resize_mode").find("mode 'area' must be nearest, linear or cubic"), std::string::npos);
  }
}

// ---- the ONNX backend node tests of Resize / Upsample, with scales, sizes
// and roi bound as initializers (the conformance harness feeds them as
// runtime inputs, which tilegraph rejects; see tests/conformance/skip_list.txt).

template <typename Proto>
Proto read_proto(const fs::path& p) {
  Proto t;
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!t.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + p.string());
  return t;
}

TEST(FrontendConvOps, ResizeNodeTestsWithConstantScales) {
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  // Their expected outputs use the fractional output width (scale * in) for
  // align_corners; the spec and onnxruntime (and tilegraph) use the integer one.
  const std::set<std::string> diverging{"test_resize_downsample_scales_cubic_align_corners",
                                        "test_resize_downsample_scales_linear_align_corners"};
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if ((name.rfind("test_resize", 0) != 0 && name.rfind("test_upsample", 0) != 0) || diverging.count(name)) continue;
    SCOPED_TRACE(name);
    auto model = read_proto<onnx::ModelProto>(entry.path() / "model.onnx");
    std::set<std::string> bind;  // Resize/Upsample inputs after X
    for (const auto& n : model.graph().node())
      for (int i = 1; i < n.input_size(); ++i) bind.insert(n.input(i));
    const fs::path data = entry.path() / "test_data_set_0";
    auto* g = model.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
    std::vector<std::vector<uint8_t>> inputs;
    for (int i = 0; i < g->input_size(); ++i) {
      auto value = read_proto<onnx::TensorProto>(data / ("input_" + std::to_string(i) + ".pb"));
      if (bind.count(g->input(i).name())) {
        value.set_name(g->input(i).name());
        *g->add_initializer() = value;
      } else {
        *kept.Add() = g->input(i);
        inputs.push_back(*onnx_frontend::tensor_from_proto(value, "", "input").data);
      }
    }
    g->mutable_input()->Swap(&kept);
    const std::string path = model_path(name);
    fs::create_directories(fs::path(path).parent_path());
    {
      std::ofstream out(path, std::ios::binary);
      model.SerializeToOstream(&out);
    }
    const Graph graph = onnx_frontend::import_model(path);
    const auto outputs = evaluate_graph(graph, inputs);
    const Tensor want = onnx_frontend::tensor_from_proto(read_proto<onnx::TensorProto>(data / "output_0.pb"), "", "output");
    const Tensor& got = graph.tensor(graph.outputs[0]);
    ASSERT_EQ(got.shape, want.shape);
    for (int64_t i = 0; i < num_elements(want.shape); ++i) {
      const double e = want.value_as_double(i);
      ASSERT_NEAR(scalar_as_double(read_element(outputs[0].data(), got.dtype, i), got.dtype), e,
                  1e-4 + 1e-3 * std::fabs(e)) << "element " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace tilegraph
