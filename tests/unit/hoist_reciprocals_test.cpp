// hoist_reciprocals (codegen/lowering/hoist_reciprocals.h): inside a simd
// loop, a float division by a value the loop does not change becomes a
// multiplication by its reciprocal. The tests check which divisions are
// rewritten and which are left alone, and build and run the rewritten kernel
// against quotients computed here (within the one ulp the rewrite may cost).
#include "codegen/lowering/hoist_reciprocals.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/printing/c_printer.h"
#include "tests/unit/cpu_test_program.h"
#include "tests/unit/unit_temp_dir.h"
#include "tests/unit/global_buffer.h"

namespace tilegraph {
namespace {

using namespace codegen;

constexpr int64_t kRows = 4, kCols = 37;

Expr at(int buf, const Expr& index, DType t = DType::kF32) { return load(buf, t, {index}); }

// A softmax's normalization: for r < rows: for c < cols (simd):
//   out[r * cols + c] = in0[r * cols + c] / in1[r]
// Buffers: 0 in0, 1 in1 (row sums), 2 out. Vars: 0 r, 1 c.
Kernel row_scale_kernel(LoopKind inner = LoopKind::kVectorized) {
  Kernel k;
  k.name = "row_scale";
  k.buffers = {testing::global_buffer("in0", kRows * kCols, 0, false), testing::global_buffer("in1", kRows, 1, false),
               testing::global_buffer("out", kRows * kCols, 2, true)};
  k.var_names = {"r", "c"};
  const Expr flat = var(0) * kCols + var(1);
  k.body = make_for(0, int_imm(kRows), LoopKind::kSerial,
                    {make_for(1, int_imm(kCols), inner, {make_store(2, flat, at(0, flat) / at(1, var(0)))})});
  return k;
}

const Stmt& inner_store(const Kernel& k) { return k.body->body[0]->body[0]; }

TEST(HoistReciprocals, RowInvariantDivisorBecomesAReciprocalProduct) {
  const Kernel k = hoist_reciprocals(row_scale_kernel());
  verify(k);
  const Expr& v = inner_store(k)->value;
  ASSERT_EQ(v->kind, ExprKind::kBinary);
  EXPECT_EQ(v->binary_op, BinaryOp::kMul);
  EXPECT_TRUE(same_expr(v->args[0], at(0, var(0) * kCols + var(1))));
  const Expr& reciprocal = v->args[1];
  ASSERT_EQ(reciprocal->kind, ExprKind::kBinary);
  EXPECT_EQ(reciprocal->binary_op, BinaryOp::kDiv);
  EXPECT_TRUE(same_expr(reciprocal->args[0], float_imm(1.0)));
  EXPECT_TRUE(same_expr(reciprocal->args[1], at(1, var(0))));
  // A constant divisor folds to its reciprocal.
  Kernel scaled = row_scale_kernel();
  const Expr flat = var(0) * kCols + var(1);
  scaled.body = make_for(0, int_imm(kRows), LoopKind::kSerial,
                         {make_for(1, int_imm(kCols), LoopKind::kVectorized,
                                   {make_store(2, flat, at(0, flat) / float_imm(4.0))})});
  EXPECT_TRUE(same_expr(inner_store(hoist_reciprocals(scaled))->value, at(0, flat) * float_imm(0.25)));
}

TEST(HoistReciprocals, LeavesOtherDivisionsAlone) {
  const Expr flat = var(0) * kCols + var(1);
  auto with_value = [&](Kernel k, const Expr& value, LoopKind inner = LoopKind::kVectorized) {
    k.body = make_for(0, int_imm(kRows), LoopKind::kSerial,
                      {make_for(1, int_imm(kCols), inner, {make_store(2, flat, value)})});
    return k;
  };
  // Not inside a simd loop.
  const Kernel serial = row_scale_kernel(LoopKind::kSerial);
  EXPECT_EQ(hoist_reciprocals(serial).body, serial.body);
  // The divisor changes with the simd loop's variable.
  const Kernel per_element = with_value(row_scale_kernel(), at(0, flat) / at(0, var(1)));
  EXPECT_EQ(hoist_reciprocals(per_element).body, per_element.body);
  // The divisor reads the buffer the loop writes.
  const Kernel self = with_value(row_scale_kernel(), at(0, flat) / at(2, var(0)));
  EXPECT_EQ(hoist_reciprocals(self).body, self.body);
  // Integer and float16 division.
  Kernel ints = row_scale_kernel();
  for (Buffer& b : ints.buffers) b.dtype = DType::kI32;
  ints = with_value(ints, at(0, flat, DType::kI32) / at(1, var(0), DType::kI32));
  EXPECT_EQ(hoist_reciprocals(ints).body, ints.body);
  Kernel halves = row_scale_kernel();
  for (Buffer& b : halves.buffers) b.dtype = DType::kF16;
  halves = with_value(halves, at(0, flat, DType::kF16) / at(1, var(0), DType::kF16));
  EXPECT_EQ(hoist_reciprocals(halves).body, halves.body);
  // A quotient that is rounded, floored, compared or converted to an integer
  // (ONNX conformance: DynamicQuantizeLinear's round(x / scale) and Resize's
  // floor(coordinate / scale) each moved a result by one step).
  const Expr quotient = at(0, flat) / at(1, var(0));
  for (const Expr& discrete : {unary(UnaryOp::kRound, quotient), unary(UnaryOp::kFloor, quotient),
                               select(lt(quotient, float_imm(0.5)), float_imm(1.0), float_imm(0.0)),
                               cast(DType::kF32, cast(DType::kI32, quotient))}) {
    const Kernel k = with_value(row_scale_kernel(), discrete);
    EXPECT_EQ(hoist_reciprocals(k).body, k.body);
  }
}

// Builds the rewritten kernel into a program that prints out, and compares
// with in0 / in1 computed here: equal within one ulp (the reciprocal's
// rounding), and inf/NaN where the division gives them.
TEST(HoistReciprocals, RewrittenKernelComputesTheQuotients) {
  const Kernel k = hoist_reciprocals(row_scale_kernel());
  std::ostringstream src;
  src << kernel_prelude(cpu_dialect()) << "namespace tg_kernels {\n" << print_kernel(k, cpu_dialect()) << "}\n"
      << "#include <cstdio>\nint main() {\n"
      << "  static float in0[" << kRows * kCols << "], in1[" << kRows << "], out[" << kRows * kCols << "];\n"
      << "  for (int i = 0; i < " << kRows * kCols << "; ++i) in0[i] = std::sin((float)i) * 3.0f;\n"
      << "  in1[0] = 7.0f; in1[1] = -0.3f; in1[2] = 1e-30f; in1[3] = 0.0f;\n"
      << "  tg_kernels::row_scale(in0, in1, out);\n"
      << "  for (float v : out) std::printf(\"%.9g\\n\", v);\n  return 0;\n}\n";
  std::string out;
  ASSERT_TRUE(testing::run_cpu_test_program(testing::unit_temp_dir() / "hoist_reciprocals", src.str(), &out));
  std::istringstream printed(out);
  const float sums[kRows] = {7.0f, -0.3f, 1e-30f, 0.0f};
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) {
      std::string text;
      ASSERT_TRUE(printed >> text);
      const float v = std::strtof(text.c_str(), nullptr);
      const float expected = std::sin(static_cast<float>(r * kCols + c)) * 3.0f / sums[r];
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(v)) << "out[" << r << ", " << c << "] = " << text;
      } else if (std::isinf(expected)) {
        EXPECT_EQ(v, expected) << "out[" << r << ", " << c << "]";
      } else {
        EXPECT_NEAR(v, expected, std::fabs(expected) * 1.2e-7f) << "out[" << r << ", " << c << "]";
      }
    }
}

}  // namespace
}  // namespace tilegraph
