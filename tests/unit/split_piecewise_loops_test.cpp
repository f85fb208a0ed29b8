// split_piecewise_loops (codegen/lowering/split_piecewise_loops.h): a simd or
// reduce loop reading a Concat along its var (selects on v < c, each piece's
// index clamped with min/max) becomes one loop per piece, each free of the
// selects and clamps; one whose first or last iterations clamp a strided
// index (a padded window) has them peeled. The tests check the loop structure, leave the loops it
// must not touch alone, and build and run the split kernel against values
// computed here.
#include "codegen/lowering/split_piecewise_loops.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/printing/c_printer.h"
#include "tests/unit/cpu_test_program.h"
#include "tests/unit/global_buffer.h"
#include "tests/unit/kernel_ir_test_util.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

using namespace codegen;
using testing::collect_loops;

constexpr int64_t kRows = 3;

// Concat of rows x widths[i] tensors (buffers 0..n-1) along the columns,
// read at row var r, column var c the way the frontend's Concat reads:
// c < w0 ? in0[r, min(c, w0 - 1)] : c < w0 + w1 ? in1[r, clamp(c - w0)] : ...
Expr concat_load(const std::vector<int64_t>& widths, int r, int c) {
  Expr value;
  int64_t end = 0;
  for (int64_t w : widths) end += w;
  for (size_t i = widths.size(); i-- > 0;) {
    end -= widths[i];
    const int64_t first = end;
    Expr column = first == 0 ? var(c) : max(var(c) - int_imm(first), int_imm(0));
    if (i + 1 < widths.size()) column = min(column, int_imm(widths[i] - 1));
    const Expr piece = load(static_cast<int>(i), DType::kF32, {var(r) * widths[i] + column});
    value = value ? select(lt(var(c), int_imm(first + widths[i])), piece, value) : piece;
  }
  return value;
}

int64_t total(const std::vector<int64_t>& widths) {
  int64_t t = 0;
  for (int64_t w : widths) t += w;
  return t;
}

// for r < rows: out[r * cols + c] = concat[r, c] * 2 (simd over c), and
//               rowsum[r] = sum over c of concat[r, c] (reduce over c).
// Buffers: the pieces, then out, rowsum. Vars: 0 r, 1 c, 2 c2.
Kernel concat_kernel(const std::vector<int64_t>& widths) {
  Kernel k;
  k.name = "concat_rows";
  const int n = static_cast<int>(widths.size());
  const int64_t cols = total(widths);
  for (int i = 0; i < n; ++i)
    k.buffers.push_back(testing::global_buffer("in" + std::to_string(i), kRows * widths[static_cast<size_t>(i)], i, false));
  k.buffers.push_back(testing::global_buffer("out", kRows * cols, n, true));
  k.buffers.push_back(testing::global_buffer("rowsum", kRows, n + 1, true));
  k.var_names = {"r", "c", "c2"};
  const Stmt scale = make_for(1, int_imm(cols), LoopKind::kVectorized,
                              {make_store(n, var(0) * cols + var(1), concat_load(widths, 0, 1) * float_imm(2))});
  const Stmt init = make_store(n + 1, var(0), float_imm(0));
  const Stmt reduce = make_for(2, int_imm(cols), LoopKind::kReduce,
                               {make_store(n + 1, var(0), load(n + 1, DType::kF32, {var(0)}) + concat_load(widths, 0, 2))});
  k.body = make_for(0, int_imm(kRows), LoopKind::kSerial, {scale, init, reduce});
  return k;
}

// Whether s's indices and values still select, or clamp an integer.
bool selects_or_clamps(const Stmt& s) {
  bool found = false;
  for (const Expr* e : {&s->index, &s->value})
    if (*e) visit(*e, [&](const Expr& x) {
      found |= x->kind == ExprKind::kSelect ||
               (x->kind == ExprKind::kBinary && (x->binary_op == BinaryOp::kMin || x->binary_op == BinaryOp::kMax) &&
                is_integer(x->dtype));
    });
  for (const Stmt& c : s->body) found |= selects_or_clamps(c);
  return found;
}

TEST(SplitPiecewiseLoops, SplitsSimdAndReduceLoopsAtTheConcatsPieces) {
  const std::vector<int64_t> widths = {16, 24, 8};
  const Kernel k = split_piecewise_loops(concat_kernel(widths));
  verify(k);
  std::vector<std::pair<int64_t, LoopKind>> loops;
  collect_loops(k.body, &loops);
  const std::vector<std::pair<int64_t, LoopKind>> expected = {
      {kRows, LoopKind::kSerial},    {16, LoopKind::kVectorized}, {24, LoopKind::kVectorized},
      {8, LoopKind::kVectorized},    {16, LoopKind::kReduce},     {24, LoopKind::kReduce},
      {8, LoopKind::kReduce}};
  EXPECT_EQ(loops, expected);
  EXPECT_FALSE(selects_or_clamps(k.body)) << to_string(k);
}

TEST(SplitPiecewiseLoops, LeavesLoopsWithoutPiecesOrWithShortOnesAlone) {
  // A piece shorter than a vector's lanes.
  const Kernel short_piece = concat_kernel({16, 4, 12});
  EXPECT_EQ(split_piecewise_loops(short_piece).body, short_piece.body);
  // A test of the loop var against another var (a tile's bounds guard).
  Kernel guarded = concat_kernel({16, 16});
  guarded.body = make_for(1, int_imm(32), LoopKind::kVectorized,
                          {make_store(2, var(1), select(lt(var(1) + var(0), int_imm(20)), float_imm(1), float_imm(0)))});
  EXPECT_EQ(split_piecewise_loops(guarded).body, guarded.body);
  // A serial loop is not vectorized: nothing to gain.
  Kernel serial = concat_kernel({16, 16});
  serial.body = make_for(1, int_imm(32), LoopKind::kSerial, {make_store(2, var(1), concat_load({16, 16}, 0, 1))});
  EXPECT_EQ(split_piecewise_loops(serial).body, serial.body);
}

// A stride-2 window with padding, as a 3x3 stride-2 max pool reads its
// input: for r < 3: for c < 32 (simd): out[r * 32 + c] =
// in[max(2c + r - 1, 0)] + in[min(2c + r, 63)]. The first clamp acts at
// c = 0 only, the second at c = 31 only (r = 2), whatever r.
// Buffers: in (64), out (96). Vars: 0 r, 1 c.
Kernel strided_window_kernel() {
  Kernel k;
  k.name = "strided_window";
  k.buffers.push_back(testing::global_buffer("in", 64, 0, false));
  k.buffers.push_back(testing::global_buffer("out", 96, 1, true));
  k.var_names = {"r", "c"};
  const Expr left = max(var(1) * int_imm(2) + var(0) - int_imm(1), int_imm(0));
  const Expr right = min(var(1) * int_imm(2) + var(0), int_imm(63));
  const Expr value = load(0, DType::kF32, {left}) + load(0, DType::kF32, {right});
  k.body = make_for(0, int_imm(3), LoopKind::kSerial,
                    {make_for(1, int_imm(32), LoopKind::kVectorized, {make_store(1, var(0) * 32 + var(1), value)})});
  return k;
}

TEST(SplitPiecewiseLoops, PeelsTheIterationsWhereAStridedIndexIsClamped) {
  const Kernel k = split_piecewise_loops(strided_window_kernel());
  verify(k);
  std::vector<std::pair<int64_t, LoopKind>> loops;
  collect_loops(k.body, &loops);
  const std::vector<std::pair<int64_t, LoopKind>> expected = {
      {3, LoopKind::kSerial}, {1, LoopKind::kVectorized}, {30, LoopKind::kVectorized}, {1, LoopKind::kVectorized}};
  ASSERT_EQ(loops, expected) << to_string(k);
  // The middle loop indexes without a clamp: one strided load per vector.
  const Stmt& middle = k.body->body[0]->body[1];
  EXPECT_FALSE(selects_or_clamps(middle)) << to_string(k);
  EXPECT_TRUE(selects_or_clamps(k.body->body[0]->body[0])) << to_string(k);
  // A serial loop is not peeled.
  Kernel serial = strided_window_kernel();
  serial.body = make_for(0, int_imm(3), LoopKind::kSerial,
                         {make_for(1, int_imm(32), LoopKind::kSerial, serial.body->body[0]->body)});
  EXPECT_EQ(split_piecewise_loops(serial).body, serial.body);
}

TEST(SplitPiecewiseLoops, PeeledKernelComputesTheSameValues) {
  const Kernel k = split_piecewise_loops(strided_window_kernel());
  std::ostringstream src;
  src << kernel_prelude(cpu_dialect()) << "namespace tg_kernels {\n" << print_kernel(k, cpu_dialect()) << "}\n"
      << "#include <cstdio>\nint main() {\n"
      << "  static float in[64], out[96];\n"
      << "  for (int j = 0; j < 64; ++j) in[j] = std::sin((float)j);\n"
      << "  tg_kernels::strided_window(in, out);\n"
      << "  for (float v : out) std::printf(\"%.9g\\n\", v);\n  return 0;\n}\n";
  std::string out;
  ASSERT_TRUE(testing::run_cpu_test_program(testing::unit_temp_dir() / "split_strided_window", src.str(), &out));
  std::istringstream printed(out);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 32; ++c) {
      const int64_t left = std::max<int64_t>(2 * c + r - 1, 0), right = std::min<int64_t>(2 * c + r, 63);
      float v = 0;
      ASSERT_TRUE(printed >> v);
      EXPECT_FLOAT_EQ(v, std::sin(static_cast<float>(left)) + std::sin(static_cast<float>(right)))
          << "out[" << r << ", " << c << "]";
    }
}

// Builds the split kernel into a program that fills in_i[j] = sin(j + 100 i)
// and prints out and rowsum, and compares with the values computed here.
TEST(SplitPiecewiseLoops, SplitKernelComputesTheSameValues) {
  const std::vector<int64_t> widths = {16, 24, 8};
  const Kernel k = split_piecewise_loops(concat_kernel(widths));
  const int64_t cols = total(widths);
  std::ostringstream src;
  src << kernel_prelude(cpu_dialect()) << "namespace tg_kernels {\n" << print_kernel(k, cpu_dialect()) << "}\n"
      << "#include <cstdio>\nint main() {\n";
  for (size_t i = 0; i < widths.size(); ++i)
    src << "  static float in" << i << "[" << kRows * widths[i] << "];\n"
        << "  for (int j = 0; j < " << kRows * widths[i] << "; ++j) in" << i << "[j] = std::sin((float)(j + "
        << 100 * i << "));\n";
  src << "  static float out[" << kRows * cols << "], rowsum[" << kRows << "];\n"
      << "  tg_kernels::concat_rows(in0, in1, in2, out, rowsum);\n"
      << "  for (float v : out) std::printf(\"%.9g\\n\", v);\n"
      << "  for (float v : rowsum) std::printf(\"%.9g\\n\", v);\n  return 0;\n}\n";
  std::string out;
  ASSERT_TRUE(testing::run_cpu_test_program(testing::unit_temp_dir() / "split_piecewise_loops", src.str(), &out));
  std::istringstream printed(out);
  auto in = [&](int64_t r, int64_t c) {
    size_t i = 0;
    while (c >= widths[i]) c -= widths[i++];
    return std::sin(static_cast<float>(r * widths[i] + c + 100 * static_cast<int64_t>(i)));
  };
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = 0;
      ASSERT_TRUE(printed >> v);
      EXPECT_FLOAT_EQ(v, in(r, c) * 2) << "out[" << r << ", " << c << "]";
    }
  for (int64_t r = 0; r < kRows; ++r) {
    float expected = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) expected += in(r, c);
    ASSERT_TRUE(printed >> v);
    EXPECT_NEAR(v, expected, 1e-5f) << "rowsum[" << r << "]";
  }
}

}  // namespace
}  // namespace tilegraph
