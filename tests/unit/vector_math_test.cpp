// The CPU kernels' vectorizable float math (codegen/vector_math/
// tg_vector_math.h) against libm in double precision, its special values,
// and the printer choosing it for float (not double, not CUDA).
#include <cfenv>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "codegen/printing/c_printer.h"
#include "codegen/lowering/lower_cpu_kernel.h"
#include "codegen/vector_math/tg_vector_math.h"
#include "driver/process.h"
#include "codegen/printing/vector_math_prelude.h"
#include "frontends/onnx/import.h"
#include "scheduler/schedule.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

// Largest relative error of f against reference over [lo, hi] in steps of
// `step`, skipping reference values of magnitude below `floor` (denormals).
template <typename F, typename R>
double worst_relative_error(F f, R reference, double lo, double hi, double step, double floor = 1e-37) {
  double worst = 0;
  for (double v = lo; v <= hi; v += step) {
    const float x = static_cast<float>(v);
    const double want = reference(static_cast<double>(x));
    if (std::fabs(want) < floor || std::fabs(want) > std::numeric_limits<float>::max()) continue;
    worst = std::max(worst, std::fabs(double(f(x)) - want) / std::fabs(want));
  }
  return worst;
}

TEST(VectorMath, ExpWithin2e7OfLibmOverTheNormalRange) {
  EXPECT_LT(worst_relative_error(tg_exp, [](double x) { return std::exp(x); }, -87.3, 88.7, 1.7e-4), 2e-7);
}

// Softmax's masked entries (x - max near -10000, -3.4e38 or -inf) give 0
// without an underflowing multiply: on x86 each one costs a microcode assist.
TEST(VectorMath, ExpOfMaskedEntriesIsZeroWithoutUnderflow) {
  for (float v : {-104.5f, -1e4f, -std::numeric_limits<float>::max(), -std::numeric_limits<float>::infinity()}) {
    // volatile: computed at run time, between the two flag calls (GCC moves
    // float arithmetic across them otherwise)
    volatile float x = v;
    std::feclearexcept(FE_ALL_EXCEPT);
    volatile float e = tg_exp(x);
    const bool underflow = std::fetestexcept(FE_UNDERFLOW) != 0;
    EXPECT_EQ(e, 0.0f) << v;
    EXPECT_FALSE(underflow) << v;
  }
  // Where the result is a denormal it still underflows, as it must.
  volatile float x = -100.0f;
  std::feclearexcept(FE_ALL_EXCEPT);
  volatile float e = tg_exp(x);
  EXPECT_TRUE(std::fetestexcept(FE_UNDERFLOW) != 0);
  EXPECT_GT(e, 0.0f);
}

TEST(VectorMath, ErfWithin5e7OfLibmUpToAndPastTheSaturation) {
  // Across the fit's range (3.92) and beyond, where it returns +-1.
  EXPECT_LT(worst_relative_error(tg_erf, [](double x) { return std::erf(x); }, -6, 6, 3e-5), 5e-7);
  // Near 0, where an absolute error would be a large relative one: P and Q
  // are near 2/sqrt(pi) and 1 there, and their roundings, the product and the
  // quotient's come to about 4 half-ulps.
  EXPECT_LT(worst_relative_error(tg_erf, [](double x) { return std::erf(x); }, 1e-6, 1e-3, 1e-7), 2.5e-7);
}

TEST(VectorMath, TanhAndSigmoidWithin2e7OfLibm) {
  EXPECT_LT(worst_relative_error(tg_tanh, [](double x) { return std::tanh(x); }, -12, 12, 3e-5), 2.5e-7);
  EXPECT_LT(worst_relative_error(tg_sigmoid_vec, [](double x) { return 1 / (1 + std::exp(-x)); }, -80, 80, 1e-3),
            3e-7);
}

// tg_exp reads its power of two from the bits of the rounding sum: every
// result down to the denormals (n = -150) and up to the overflow, and NaN of
// either sign and any payload (whose bits give an arbitrary n) stays NaN.
TEST(VectorMath, ExpScalesByItsPowerOfTwoAcrossTheWholeRange) {
  for (double v = -103.9; v <= 88.7; v += 3.1e-3) {
    const float x = static_cast<float>(v);
    const double want = std::exp(static_cast<double>(x));
    EXPECT_NEAR(tg_exp(x), want, 2e-7 * want + 1.5e-45) << x;
  }
  for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FA12345u}) {
    float nan;
    std::memcpy(&nan, &bits, 4);
    EXPECT_TRUE(std::isnan(tg_exp(nan))) << std::hex << bits;
    EXPECT_TRUE(std::isnan(tg_sigmoid_vec(nan))) << std::hex << bits;
  }
}

// tg_sigmoid_vec's own exp (one power of two, -x clamped to [-20, 89]) gives
// bitwise the results of the general tg_exp down to x = -88.37, and 0 below
// -88.73, where 1 / (1 + tg_exp(-x)) is a denormal under 5e-39 or also 0.
TEST(VectorMath, SigmoidIsBitwiseThroughTgExpDownToTheDenormals) {
  auto bits = [](float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; };
  auto same = [&](float x) {
    const float through_exp = 1.0f / (1.0f + tg_exp(-x));
    return bits(tg_sigmoid_vec(x)) == bits(through_exp);
  };
  // Every 1009th float of [-88.37, 300] (both signs, the clamp at -x = -20),
  // and every float near the ends and the clamp.
  int64_t checked = 0;
  for (uint32_t b = 0; b < bits(300.0f); b += 1009, ++checked) ASSERT_TRUE(same(tg_bits_to_float(b))) << b;
  for (uint32_t b = 0x80000000u; b < bits(-88.37f); b += 1009, ++checked) ASSERT_TRUE(same(tg_bits_to_float(b))) << b;
  for (float lo : {-88.37f, -1.01f, 19.99f, 299.99f})
    for (float x = lo; x < lo + 0.02f; x = std::nextafter(x, 1e9f), ++checked) ASSERT_TRUE(same(x)) << x;
  EXPECT_GT(checked, 2000000);
  for (float x = -88.37f; x > -89.0f; x = std::nextafter(x, -90.0f)) {
    const float through_exp = 1.0f / (1.0f + tg_exp(-x));
    EXPECT_LT(through_exp, 5e-39f) << x;
    EXPECT_LE(tg_sigmoid_vec(x), through_exp) << x;
    EXPECT_GE(tg_sigmoid_vec(x), 0.0f) << x;
  }
  for (float x : {-88.73f, -100.0f, -1e30f, -std::numeric_limits<float>::max()}) EXPECT_EQ(tg_sigmoid_vec(x), 0.0f) << x;
  EXPECT_EQ(tg_sigmoid_vec(0.0f), 0.5f);
  EXPECT_EQ(tg_sigmoid_vec(20.0f), 1.0f);
  EXPECT_EQ(tg_sigmoid_vec(1e30f), 1.0f);
  EXPECT_NEAR(tg_sigmoid_vec(-10.0f), 1 / (1 + std::exp(10.0)), 2e-7 * 4.54e-5);
  EXPECT_NEAR(tg_sigmoid_vec(-87.0f), 1 / (1 + std::exp(87.0)), 2e-7 * 1.65e-38);
}

TEST(VectorMath, SaturatesAndPropagatesNaNLikeLibm) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(tg_exp(-inf), 0.0f);    // softmax's masked entries
  EXPECT_EQ(tg_exp(-200.0f), 0.0f);
  EXPECT_EQ(tg_exp(inf), inf);
  EXPECT_EQ(tg_exp(89.0f), inf);
  EXPECT_EQ(tg_exp(0.0f), 1.0f);
  EXPECT_NEAR(tg_exp(-100.0f), std::exp(-100.0f), 1e-45);  // a denormal result
  EXPECT_EQ(tg_erf(inf), 1.0f);
  EXPECT_EQ(tg_erf(-inf), -1.0f);
  EXPECT_EQ(tg_tanh(-inf), -1.0f);
  EXPECT_EQ(tg_sigmoid_vec(-inf), 0.0f);
  EXPECT_EQ(tg_sigmoid_vec(inf), 1.0f);
  EXPECT_TRUE(std::isnan(tg_exp(nan)));
  EXPECT_TRUE(std::isnan(tg_erf(nan)));
  EXPECT_TRUE(std::isnan(tg_tanh(nan)));
}

std::string printed_gelu_kernel(int elem_type, const codegen::Dialect& d) {
  testing::OnnxModelBuilder b(13);
  b.input("x", elem_type, {4, 8}).output("y");
  b.node("Erf", {"x"}, {"e"});
  b.node("Exp", {"e"}, {"y"});
  const std::string path = (testing::unit_temp_dir() /
                            ("vector_math_" + std::to_string(elem_type)) / "model.onnx").string();
  b.save(path);
  const Graph g = onnx_frontend::import_model(path);
  const auto schedule = scheduler::schedule_one_op_per_kernel(g, scheduler::host_arch());
  std::string text;
  for (const auto& k : schedule.kernels) text += codegen::print_kernel(codegen::lower_cpu_kernel(g, k), d);
  return text;
}

TEST(VectorMath, CpuKernelsCallItForFloatOnly) {
  const std::string f32 = printed_gelu_kernel(1, codegen::cpu_dialect());
  EXPECT_NE(f32.find("tg_erf("), std::string::npos) << f32;
  EXPECT_NE(f32.find("tg_exp("), std::string::npos) << f32;
  const std::string f64 = printed_gelu_kernel(11, codegen::cpu_dialect());
  EXPECT_NE(f64.find("std::erf("), std::string::npos) << f64;
  EXPECT_EQ(f64.find("tg_erf("), std::string::npos) << f64;
  const std::string cuda = printed_gelu_kernel(1, codegen::cuda_dialect());
  EXPECT_EQ(cuda.find("tg_erf("), std::string::npos) << cuda;
  EXPECT_NE(codegen::kernel_prelude(codegen::cpu_dialect()).find("tg_erf(float x)"), std::string::npos);
  EXPECT_EQ(codegen::kernel_prelude(codegen::cuda_dialect()).find("tg_erf(float x)"), std::string::npos);
}


// The functions stay inlined, and their loops vectorized, where GCC inlines
// nothing it may decline: a kernel source of many kernels outgrows GCC's
// unit-growth limit, and a call left in an `omp simd` loop keeps it scalar
// (mobilevit's depthwise conv + SiLU kernels ran about 10x slower so).
TEST(VectorMath, LoopsVectorizeWhereGccDeclinesToInline) {
  const std::filesystem::path dir = testing::unit_temp_dir();
  const std::string source = codegen::kernel_prelude(codegen::cpu_dialect()) + R"(
void apply(const float* __restrict x, float* __restrict y, long n) {
#pragma omp simd
  for (long i = 0; i < n; ++i) y[i] = tg_erf(x[i]) + tg_tanh(x[i]) * tg_sigmoid_vec(x[i]) + tg_exp(x[i]);
}
)";
  std::filesystem::create_directories(dir);
  const std::string cpp = (dir / "loop.cpp").string();
  std::ofstream(cpp) << source;
  driver::ProcessOptions options;
  options.capture = true;
  options.timeout_seconds = 300;
  const driver::ProcessResult built = driver::run_process(
      {"g++", "-std=c++17", "-O3", "-mavx2", "-mfma", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math", "-w",
       "--param", "max-inline-insns-single=0", "--param", "max-inline-insns-auto=0", "--param",
       "early-inlining-insns=0", "--param", "inline-unit-growth=0", "-fopt-info-vec-optimized", "-c", "-o",
       (dir / "loop.o").string(), cpp},
      options);
  ASSERT_TRUE(built.ok()) << built.describe() << "\n" << built.output;
  // The one loop of apply() (its line in the source) is reported vectorized.
  const std::string loop_line = std::to_string(std::count(source.begin(), source.begin() + source.find("  for (long i"), '\n') + 1);
  EXPECT_NE(built.output.find("loop.cpp:" + loop_line + ":"), std::string::npos) << built.output;
  EXPECT_NE(built.output.find("loop vectorized"), std::string::npos) << built.output;
}

}  // namespace
}  // namespace tilegraph
