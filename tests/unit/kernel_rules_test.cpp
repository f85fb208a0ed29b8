// The rules every lowering shares, each written once (issue 14): the kernel
// kinds' names, compute dtypes, reduction combine, index clamps, FLOP counts.
#include <gtest/gtest.h>

#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/simplify.h"
#include "scheduler/schedule.h"

namespace tilegraph {
namespace {

TEST(KernelRules, KindNamesAreTheManifestSpelling) {
  using scheduler::KernelKind;
  EXPECT_STREQ(scheduler::kernel_kind_name(KernelKind::kLoopNest), "loop_nest");
  EXPECT_STREQ(scheduler::kernel_kind_name(KernelKind::kBlock), "block");
  EXPECT_STREQ(scheduler::kernel_kind_name(KernelKind::kIntGemm), "int_gemm");
  EXPECT_STREQ(scheduler::kernel_kind_name(KernelKind::kFloatGemm), "float_gemm");
  EXPECT_STREQ(scheduler::kernel_kind_name(KernelKind::kLibraryGemm), "library_gemm");
  EXPECT_EQ(scheduler::KernelSchedule{}.kind, KernelKind::kLoopNest);
}

TEST(KernelRules, HalfComputesAsFloat) {
  EXPECT_EQ(compute_dtype(DType::kF16), DType::kF32);
  for (DType t : {DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool})
    EXPECT_EQ(compute_dtype(t), t) << dtype_name(t);
}

TEST(KernelRules, ReductionCombineBesideItsInit) {
  EXPECT_EQ(reduction_combine_op(Reduction::kSum), BinaryOp::kAdd);
  EXPECT_EQ(reduction_combine_op(Reduction::kProd), BinaryOp::kMul);
  EXPECT_EQ(reduction_combine_op(Reduction::kMax), BinaryOp::kMax);
  EXPECT_EQ(reduction_combine_op(Reduction::kMin), BinaryOp::kMin);
  EXPECT_EQ(to_string(reduction_combine(Reduction::kMax, var(0), var(1))), to_string(max(var(0), var(1))));
}

TEST(KernelRules, IndexClamps) {
  EXPECT_EQ(to_string(codegen::clamp_index(var(0), 8)), to_string(min(max(var(0), int_imm(0)), int_imm(7))));
  EXPECT_EQ(to_string(codegen::clamp_to_last(var(0), 8)), to_string(min(var(0), int_imm(7))));
  const std::vector<Interval> v0_in_8 = {Interval::range(8)}, v0_in_9 = {Interval::range(9)};
  EXPECT_EQ(to_string(codegen::clamp_index_if_needed(var(0), 8, v0_in_8)), to_string(var(0)));
  EXPECT_EQ(to_string(codegen::clamp_index_if_needed(var(0), 8, v0_in_9)),
            to_string(codegen::clamp_index(var(0), 8)));
}

// A padded read x[v - 1], v in [0, 9) over x of 8: under its padding test
// the index stays as it is and the Select is a guarded one; an index the
// test does not bound (x[v + 1]) is clamped as to_kernel_loads does.
TEST(KernelRules, GuardedLoadsKeepTheIndexTheirSelectBounds) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.dtype = DType::kF32;
  x.shape = {8};
  Op op;
  op.inputs = {g.add_tensor(x)};
  const std::vector<Interval> v0_in_9 = {Interval::range(9)};
  const Expr at = var(0) - int_imm(1);
  const Expr padded = select(logical_and(ge(at, int_imm(0)), lt(at, int_imm(8))), load(0, DType::kF32, {at}),
                             float_imm(0.0));
  const Expr guarded = codegen::to_guarded_kernel_loads(g, op, padded, v0_in_9);
  ASSERT_TRUE(is_guarded_select(guarded)) << to_string(guarded);
  EXPECT_EQ(to_string(guarded->args[1]), to_string(load(0, DType::kF32, {simplify(at, v0_in_9)})));
  EXPECT_FALSE(is_guarded_select(codegen::to_kernel_loads(g, op, padded, v0_in_9)));
  // Rebuilt (a rewrite, the simplifier), it stays guarded.
  EXPECT_TRUE(is_guarded_select(simplify(substitute_vars(guarded, {var(0) + int_imm(0)}), v0_in_9)));
  EXPECT_NE(to_string(guarded).find("guarded_select("), std::string::npos);

  const Expr beyond = select(logical_and(ge(at, int_imm(0)), lt(at, int_imm(8))),
                             load(0, DType::kF32, {var(0) + int_imm(1)}), float_imm(0.0));
  const Expr clamped = codegen::to_guarded_kernel_loads(g, op, beyond, v0_in_9);
  EXPECT_FALSE(is_guarded_select(clamped)) << to_string(clamped);
  EXPECT_EQ(to_string(clamped), to_string(codegen::to_kernel_loads(g, op, beyond, v0_in_9)));
}

TEST(KernelRules, FlopCounts) {
  EXPECT_EQ(gemm_flops(2, 3, 4, 5), 2 * 2 * 3 * 4 * 5);
  Op op;  // sum over r of x[i, r] * 2 + i: one float mul, one integer add, the combine
  op.reduction = Reduction::kSum;
  op.reduce_extents = {3, 5};
  op.body = cast(DType::kF32, var(0) + int_imm(1)) + load(0, DType::kF32, {var(0), var(1)}) * float_imm(2.0);
  EXPECT_EQ(reduce_points(op), 15);
  EXPECT_EQ(arithmetic_per_point(op, FlopRule::kFloatArithmetic), 3);  // float add, float mul, combine
  EXPECT_EQ(arithmetic_per_point(op, FlopRule::kAllArithmetic), 4);    // and the integer add
  Op copy;  // a copy: no float arithmetic, but the cost model counts one per point
  copy.body = load(0, DType::kF32, {var(0)});
  EXPECT_EQ(arithmetic_per_point(copy, FlopRule::kFloatArithmetic), 0);
  EXPECT_EQ(arithmetic_per_point(copy, FlopRule::kAllArithmetic), 1);
}

}  // namespace
}  // namespace tilegraph
