// The CPU printer reads a simd loop's loads from the block's scratch at an
// index the loop does not vary (softmax's row max and sum) into consts before
// the loop (c_printer.cpp, hoist_scratch_loads). The tests check which loads
// are hoisted and which stay, and build and run a masked softmax block kernel
// (Conformer's Where + Softmax: exp of a select over an int64 compare minus
// the row max) against values computed here, over odd rows and columns.
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/printing/c_printer.h"
#include "tests/unit/cpu_test_program.h"
#include "tests/unit/global_buffer.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

using namespace codegen;

constexpr int64_t kRowsPerBlock = 2, kBlocks = 3, kRows = kRowsPerBlock * kBlocks, kCols = 37;
constexpr float kFill = -1e9f;

// Buffers: 0 x (rows x cols), 1 pos (cols, int64), 2 len (1, int64), 3 out,
// 4 m (shared: the block's row maxima), 5 e (shared: its exponentials).
// Vars: 0 b (block), 1 r (row of the block), 2 c (column).
enum { kX, kPos, kLen, kOut, kMax, kExp };

Buffer shared(const std::string& name, int64_t elements, int64_t offset) {
  Buffer s;
  s.name = name;
  s.elements = elements;
  s.scope = MemoryScope::kShared;
  s.offset = offset;
  return s;
}

Expr at(int buf, const Expr& index) { return load(buf, DType::kF32, {index}); }

// For each block b, row r of it and column c:
//   v = pos[c] < len[0] ? x[row, c] : kFill       (Where over a compare)
//   m[r] = max over c of v                        (serial)
//   e[r, c] = exp(v - m[r])                       (simd: m[r] hoisted)
//   out[row, c] = e[r, c] * (1 + m[r] * 0)        (simd: m[r] hoisted)
Kernel masked_softmax_kernel(LoopKind simd = LoopKind::kVectorized) {
  Kernel k;
  k.name = "masked_exp";
  k.buffers = {testing::global_buffer("x", kRows * kCols, 0, false),
               testing::global_buffer("pos", kCols, 1, false, DType::kI64),
               testing::global_buffer("len", 1, 2, false, DType::kI64),
               testing::global_buffer("out", kRows * kCols, 3, true),
               shared("m", kRowsPerBlock, 0),
               shared("e", kRowsPerBlock * kCols, 64)};
  k.var_names = {"b", "r", "c"};
  k.grid = kBlocks;
  k.threads = 1;
  k.shared_bytes = 64 + kRowsPerBlock * kCols * 4;
  const Expr row = var(0) * kRowsPerBlock + var(1);
  const Expr v = select(lt(load(kPos, DType::kI64, {var(2)}), load(kLen, DType::kI64, {int_imm(0)})),
                        at(kX, row * kCols + var(2)), float_imm(kFill));
  const Expr row_max = at(kMax, var(1));
  const Expr e_at = var(1) * kCols + var(2);
  std::vector<Stmt> block = {
      make_for(1, int_imm(kRowsPerBlock), LoopKind::kSerial, {make_store(kMax, var(1), float_imm(-INFINITY))}),
      make_for(1, int_imm(kRowsPerBlock), LoopKind::kSerial,
               {make_for(2, int_imm(kCols), LoopKind::kSerial, {make_store(kMax, var(1), max(row_max, v))})}),
      make_for(1, int_imm(kRowsPerBlock), LoopKind::kSerial,
               {make_for(2, int_imm(kCols), simd,
                         {make_store(kExp, e_at, unary(UnaryOp::kExp, binary(BinaryOp::kSub, v, row_max)))})}),
      make_for(1, int_imm(kRowsPerBlock), LoopKind::kSerial,
               {make_for(2, int_imm(kCols), simd,
                         {make_store(kOut, row * kCols + var(2),
                                     binary(BinaryOp::kMul, at(kExp, e_at),
                                            binary(BinaryOp::kAdd, float_imm(1.0),
                                                   binary(BinaryOp::kMul, row_max, float_imm(0.0)))))})})};
  k.body = make_for(0, int_imm(kBlocks), LoopKind::kBlocks,
                    {make_allocate(kMax, {make_allocate(kExp, std::move(block))})});
  return k;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HoistScratchLoads, RowValueIsReadOnceBeforeEachSimdLoop) {
  const Kernel k = masked_softmax_kernel();
  verify(k);
  const std::string text = print_kernel(k, cpu_dialect());
  // One const per simd loop, declared right before its pragma, and the loop
  // body reads the const: m[r] stays only in the serial max loop.
  EXPECT_EQ(count(text, "const float tg_row"), 2u) << text;
  for (const std::string name : {"tg_row0", "tg_row1"}) {
    const size_t decl = text.find("const float " + name + " = m[r];\n");
    ASSERT_NE(decl, std::string::npos) << text;
    EXPECT_EQ(text.substr(text.find_first_not_of(' ', text.find('\n', decl) + 1), 16), "#pragma omp simd") << text;
  }
  EXPECT_NE(text.find("- tg_row0"), std::string::npos) << text;
  EXPECT_NE(text.find("(tg_row1 * 0.0f)"), std::string::npos) << text;
  EXPECT_EQ(count(text, "m[r]"), 5u) << text;  // the init, the max loop (read, write) and the two hoists
  // Global loads (x, len) are the kernel's restrict parameters: left alone.
  EXPECT_EQ(count(text, "len[INT64_C(0)]"), 2u) << text;
}

TEST(HoistScratchLoads, LeavesOtherLoadsAlone) {
  // Not a simd loop.
  EXPECT_EQ(count(print_kernel(masked_softmax_kernel(LoopKind::kSerial), cpu_dialect()), "tg_row"), 0u);
  // A load the loop varies, or of a buffer the loop stores.
  Kernel k = masked_softmax_kernel();
  k.body = make_for(0, int_imm(kBlocks), LoopKind::kBlocks,
                    {make_allocate(kMax, {make_allocate(kExp, {make_for(2, int_imm(kCols), LoopKind::kVectorized,
                                                                        {make_store(kExp, var(2), at(kExp, int_imm(0))),
                                                                         make_store(kOut, var(2), at(kExp, var(2)))})})})});
  EXPECT_EQ(count(print_kernel(k, cpu_dialect()), "tg_row"), 0u);
  // A loop that may not run: its loads must not happen before it.
  k.body = make_for(0, int_imm(kBlocks), LoopKind::kBlocks,
                    {make_allocate(kMax, {make_allocate(kExp, {make_for(2, int_imm(0), LoopKind::kVectorized,
                                                                        {make_store(kOut, var(2), at(kMax, int_imm(0)))})})})});
  EXPECT_EQ(count(print_kernel(k, cpu_dialect()), "tg_row"), 0u);
}

// The printed kernel run on values with some columns masked (and rows whose
// maximum is the fill, all masked) against the same arithmetic done here.
TEST(HoistScratchLoads, MaskedSoftmaxKernelComputesTheReference) {
  const Kernel k = masked_softmax_kernel();
  const int64_t len = 29;  // columns 29..36 masked
  std::ostringstream src;
  src << kernel_prelude(cpu_dialect()) << "namespace tg_kernels {\n" << print_kernel(k, cpu_dialect()) << "}\n"
      << "#include <cstdio>\nint main() {\n"
      << "  static float x[" << kRows * kCols << "], out[" << kRows * kCols << "];\n"
      << "  static int64_t pos[" << kCols << "], len[1] = {" << len << "};\n"
      << "  for (int i = 0; i < " << kRows * kCols << "; ++i) x[i] = std::sin((float)i) * 40.0f;\n"
      << "  for (int i = 0; i < " << kCols << "; ++i) pos[i] = i;\n"
      << "  tg_kernels::masked_exp(x, pos, len, out);\n"
      << "  for (float v : out) std::printf(\"%.9g\\n\", v);\n  return 0;\n}\n";
  std::string out;
  ASSERT_TRUE(testing::run_cpu_test_program(testing::unit_temp_dir() / "hoist_scratch_loads", src.str(), &out));
  std::istringstream printed(out);
  for (int64_t r = 0; r < kRows; ++r) {
    auto value = [&](int64_t c) { return c < len ? std::sin(static_cast<float>(r * kCols + c)) * 40.0f : kFill; };
    float m = -INFINITY;
    for (int64_t c = 0; c < kCols; ++c) m = std::max(m, value(c));
    for (int64_t c = 0; c < kCols; ++c) {
      std::string text;
      ASSERT_TRUE(printed >> text);
      const float v = std::strtof(text.c_str(), nullptr);
      const float expected = std::exp(value(c) - m);
      EXPECT_NEAR(v, expected, 2e-7f * expected + 1e-30f) << "out[" << r << ", " << c << "]";
      if (c >= len) {
        EXPECT_EQ(v, 0.0f) << "masked out[" << r << ", " << c << "]";
      }
    }
  }
}

}  // namespace
}  // namespace tilegraph
