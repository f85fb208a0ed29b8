// compiler/ir/var_ranges.h: a Concat's select chain split into its ranges.
#include "compiler/ir/var_ranges.h"

#include <gtest/gtest.h>

namespace tilegraph {
namespace {

constexpr int kK = 1, kCol = 0;

Expr input(int slot, Expr k) { return load(slot, DType::kF32, {std::move(k)}); }

TEST(SplitVarRanges, ThreeWayConcatUnderAGuardKeepsTheGuardPerRange) {
  // select(col < 5, select(k < 3, A[k], select(k < 7, B[k - 3], C[k - 7])), 0) over k in [0, 10)
  const Expr chain = select(lt(var(kK), int_imm(3)), input(0, var(kK)),
                            select(lt(var(kK), int_imm(7)), input(1, var(kK) - int_imm(3)), input(2, var(kK) - int_imm(7))));
  const Expr guarded = select(lt(var(kCol), int_imm(5)), chain, float_imm(0));
  const std::vector<VarRange> ranges = split_var_ranges(guarded, kK, 10);
  ASSERT_EQ(ranges.size(), 3u);
  const int64_t begins[] = {0, 3, 7}, ends[] = {3, 7, 10};
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ranges[r].begin, begins[r]);
    EXPECT_EQ(ranges[r].end, ends[r]);
    ASSERT_EQ(ranges[r].value->kind, ExprKind::kSelect) << "range " << r << " lost the column guard";
    const Expr& inner = ranges[r].value->args[1];
    ASSERT_EQ(inner->kind, ExprKind::kLoad);
    EXPECT_EQ(inner->int_value, static_cast<int64_t>(r)) << "range " << r << " reads the wrong input";
  }
}

TEST(SplitVarRanges, NoChainOrBoundsOutsideTheExtentIsOneRange) {
  const Expr plain = input(0, var(kK));
  ASSERT_EQ(split_var_ranges(plain, kK, 8).size(), 1u);
  EXPECT_EQ(split_var_ranges(plain, kK, 8)[0].end, 8);
  // A select on another variable is no Concat along k.
  const Expr other = select(lt(var(kCol), int_imm(3)), input(0, var(kK)), input(1, var(kK)));
  EXPECT_EQ(split_var_ranges(other, kK, 8).size(), 1u);
  // A bound at the extent splits nothing.
  const Expr at_end = select(lt(var(kK), int_imm(8)), input(0, var(kK)), input(1, var(kK)));
  EXPECT_EQ(split_var_ranges(at_end, kK, 8).size(), 1u);
}

}  // namespace
}  // namespace tilegraph
