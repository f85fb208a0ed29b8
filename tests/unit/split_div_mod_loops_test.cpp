// split_div_mod_loops (codegen/lowering/split_div_mod_loops.h): a simd or
// reduce loop reading through v / c and v % c (a merged-heads layout) becomes
// an outer loop over v / c and an inner contiguous one over v % c. The tests
// check the loop structure, leave the loops it must not touch alone, and
// build and run the split kernel against values computed here.
#include "codegen/lowering/split_div_mod_loops.h"

#include <cmath>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/printing/c_printer.h"
#include "tests/unit/cpu_test_program.h"
#include "tests/unit/unit_temp_dir.h"
#include "tests/unit/global_buffer.h"
#include "tests/unit/kernel_ir_test_util.h"

namespace tilegraph {
namespace {

using namespace codegen;
using testing::collect_loops;

// Heads x rows x d, read as rows x (heads * d): d is the run the split finds.
constexpr int64_t kHeads = 3, kRows = 5, kD = 12, kCols = kHeads * kD;

// How the kernel reads in0 at row r, column c: the load (of var ids r and
// c) and the flat index it computes (for the expected values).
struct Layout {
  std::function<Expr(int r, int c)> load;
  std::function<int64_t(int64_t r, int64_t c)> at;
  int64_t cols;
};

// Heads x rows x d read as rows x (heads * d):
// in0[(c / d) * rows * d + r * d + c % d].
Layout merged_heads(int64_t d = kD) {
  return {[d](int r, int c) {
            return load(0, DType::kF32,
                        {binary(BinaryOp::kDiv, var(c), int_imm(d)) * (kRows * d) + var(r) * d +
                         binary(BinaryOp::kRem, var(c), int_imm(d))});
          },
          [d](int64_t r, int64_t c) { return c / d * kRows * d + r * d + c % d; }, kHeads * d};
}

// A 2 x 2 patch merge (Swin): [2 (dy), rows, 2 (dx), d] read as rows x 4d,
// column c = (dx * 2 + dy) * d + j: in0[(c / d % 2) * rows * 2d + r * 2d +
// (c / 2d) * d + c % d]. Divisors d and 2d.
Layout patch_merge(int64_t d = kD) {
  return {[d](int r, int c) {
            const Expr dy = binary(BinaryOp::kRem, binary(BinaryOp::kDiv, var(c), int_imm(d)), int_imm(2));
            return load(0, DType::kF32,
                        {dy * (kRows * 2 * d) + var(r) * (2 * d) + binary(BinaryOp::kDiv, var(c), int_imm(2 * d)) * d +
                         binary(BinaryOp::kRem, var(c), int_imm(d))});
          },
          [d](int64_t r, int64_t c) { return (c / d % 2) * kRows * 2 * d + r * 2 * d + c / (2 * d) * d + c % d; },
          4 * d};
}

// in0[merged] for row r, column c (var ids).
Expr merged_heads_load(int r, int c, int64_t d = kD) { return merged_heads(d).load(r, c); }

// for r < rows: out[r * cols + c] = in0[layout] * 2 (simd over c), and
//               rowmax[r] = max over c of in0[layout] (reduce over c).
// Buffers: 0 in0, 1 out, 2 rowmax. Vars: 0 r, 1 c, 2 c2.
Kernel layout_kernel(const Layout& layout) {
  Kernel k;
  k.name = "merged_heads";
  const int64_t cols = layout.cols;
  k.buffers = {testing::global_buffer("in0", kRows * cols, 0, false),
               testing::global_buffer("out", kRows * cols, 1, true),
               testing::global_buffer("rowmax", kRows, 2, true)};
  k.var_names = {"r", "c", "c2"};
  const Stmt scale = make_for(1, int_imm(cols), LoopKind::kVectorized,
                              {make_store(1, var(0) * cols + var(1), layout.load(0, 1) * float_imm(2))});
  const Stmt init = make_store(2, var(0), float_imm(-INFINITY));
  const Stmt reduce = make_for(2, int_imm(cols), LoopKind::kReduce,
                               {make_store(2, var(0), max(load(2, DType::kF32, {var(0)}), layout.load(0, 2)))});
  k.body = make_for(0, int_imm(kRows), LoopKind::kSerial, {scale, init, reduce});
  return k;
}

Kernel merged_heads_kernel(int64_t d = kD) { return layout_kernel(merged_heads(d)); }

bool has_div_or_mod(const Stmt& s) {
  bool found = false;
  for (const Expr* e : {&s->index, &s->value})
    if (*e) visit(*e, [&](const Expr& x) {
      found |= x->kind == ExprKind::kBinary && (x->binary_op == BinaryOp::kDiv || x->binary_op == BinaryOp::kRem);
    });
  for (const Stmt& c : s->body) found |= has_div_or_mod(c);
  return found;
}

// Whether a div or mod in s's indices and values has var v in its operands.
bool divides_var(const Stmt& s, int v) {
  bool found = false;
  for (const Expr* e : {&s->index, &s->value})
    if (*e) visit(*e, [&](const Expr& x) {
      found |= x->kind == ExprKind::kBinary && (x->binary_op == BinaryOp::kDiv || x->binary_op == BinaryOp::kRem) &&
               uses_var(x, v);
    });
  for (const Stmt& c : s->body) found |= divides_var(c, v);
  return found;
}

TEST(SplitDivModLoops, SplitsSimdAndReduceLoopsIntoHeadsAndContiguousRuns) {
  const Kernel k = split_div_mod_loops(merged_heads_kernel());
  verify(k);
  std::vector<std::pair<int64_t, LoopKind>> loops;
  collect_loops(k.body, &loops);
  const std::vector<std::pair<int64_t, LoopKind>> expected = {
      {kRows, LoopKind::kSerial}, {kHeads, LoopKind::kSerial}, {kD, LoopKind::kVectorized},
      {kHeads, LoopKind::kSerial}, {kD, LoopKind::kReduce}};
  EXPECT_EQ(loops, expected);
  EXPECT_FALSE(has_div_or_mod(k.body));
}

// Divisors d and 2d (a patch merge): split at d, the outer loop computing
// v / d % 2 and v / 2d, the inner one's loads free of div and mod.
TEST(SplitDivModLoops, SplitsAtTheSmallestOfDivisorsThatItDivides) {
  const Kernel k = split_div_mod_loops(layout_kernel(patch_merge()));
  verify(k);
  std::vector<std::pair<int64_t, LoopKind>> loops;
  collect_loops(k.body, &loops);
  const std::vector<std::pair<int64_t, LoopKind>> expected = {
      {kRows, LoopKind::kSerial}, {4, LoopKind::kSerial}, {kD, LoopKind::kVectorized},
      {4, LoopKind::kSerial}, {kD, LoopKind::kReduce}};
  EXPECT_EQ(loops, expected);
  for (const Stmt& outer : k.body->body)
    if (outer->kind == StmtKind::kFor) {
      const Stmt& inner = outer->body[0];
      EXPECT_FALSE(divides_var(inner, inner->var)) << "the inner loop's run is contiguous";
    }
}

TEST(SplitDivModLoops, LeavesLoopsWithoutOneDividingRunAlone) {
  // A run shorter than a vector's lanes.
  const Kernel short_run = merged_heads_kernel(4);
  EXPECT_EQ(split_div_mod_loops(short_run).body, short_run.body);
  // Two divisors of the same variable.
  Kernel mixed = merged_heads_kernel();
  const Expr other = load(0, DType::kF32, {binary(BinaryOp::kDiv, var(1), int_imm(9))});
  mixed.body = make_for(1, int_imm(kCols), LoopKind::kVectorized,
                        {make_store(1, var(1), merged_heads_load(1, 1) + other)});
  mixed.var_names = {"r", "c"};
  EXPECT_EQ(split_div_mod_loops(mixed).body, mixed.body);
  // A divisor that does not divide the extent.
  Kernel ragged = merged_heads_kernel();
  ragged.body = make_for(1, int_imm(kCols - 1), LoopKind::kVectorized,
                         {make_store(1, var(1), merged_heads_load(1, 1))});
  EXPECT_EQ(split_div_mod_loops(ragged).body, ragged.body);
}

void expect_split_computes_the_same(const Layout& layout) {
  const Kernel k = split_div_mod_loops(layout_kernel(layout));
  const int64_t cols = layout.cols;
  std::ostringstream src;
  src << kernel_prelude(cpu_dialect()) << "namespace tg_kernels {\n" << print_kernel(k, cpu_dialect()) << "}\n"
      << "#include <cstdio>\nint main() {\n"
      << "  static float in0[" << kRows * cols << "], out[" << kRows * cols << "], rowmax[" << kRows << "];\n"
      << "  for (int i = 0; i < " << kRows * cols << "; ++i) in0[i] = std::sin((float)i);\n"
      << "  tg_kernels::merged_heads(in0, out, rowmax);\n"
      << "  for (float v : out) std::printf(\"%.9g\\n\", v);\n"
      << "  for (float v : rowmax) std::printf(\"%.9g\\n\", v);\n  return 0;\n}\n";
  std::string out;
  ASSERT_TRUE(testing::run_cpu_test_program(testing::unit_temp_dir() / "split_div_mod_loops", src.str(), &out));
  std::istringstream printed(out);
  auto in = [&](int64_t r, int64_t c) { return std::sin(static_cast<float>(layout.at(r, c))); };
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = 0;
      ASSERT_TRUE(printed >> v);
      EXPECT_FLOAT_EQ(v, in(r, c) * 2) << "out[" << r << ", " << c << "]";
    }
  for (int64_t r = 0; r < kRows; ++r) {
    float expected = -INFINITY, v = 0;
    for (int64_t c = 0; c < cols; ++c) expected = std::max(expected, in(r, c));
    ASSERT_TRUE(printed >> v);
    EXPECT_EQ(v, expected) << "rowmax[" << r << "]";
  }
}

// Builds the split kernel into a program that fills in0[i] = sin(i) and
// prints out and rowmax, and compares with the values computed here: the
// merged heads and the patch merge.
TEST(SplitDivModLoops, SplitKernelComputesTheSameValues) {
  for (const Layout& layout : {merged_heads(), patch_merge()}) expect_split_computes_the_same(layout);
}

}  // namespace
}  // namespace tilegraph
