#include "codegen/lowering/narrow_index.h"

#include <gtest/gtest.h>

#include "compiler/ir/scalar.h"

namespace tilegraph::codegen {
namespace {

// e's value with Var(id) = vars[id], each node in its own dtype (an int32
// node wraps as int32 would).
int64_t eval(const Expr& e, const std::vector<int64_t>& vars) {
  switch (e->kind) {
    case ExprKind::kIntImm: return e->int_value;
    case ExprKind::kVar: return vars.at(static_cast<size_t>(e->int_value));
    case ExprKind::kCast:
      return scalar_cast({0.0, eval(e->args[0], vars)}, e->args[0]->dtype, e->dtype).i;
    case ExprKind::kUnary: return scalar_unary(e->unary_op, e->args[0]->dtype, {0.0, eval(e->args[0], vars)}).i;
    case ExprKind::kBinary: {
      const Scalar r = scalar_binary(e->binary_op, e->args[0]->dtype, {0.0, eval(e->args[0], vars)},
                                     {0.0, eval(e->args[1], vars)});
      return scalar_cast(r, e->dtype, e->dtype).i;
    }
    case ExprKind::kSelect: return eval(e->args[0], vars) ? eval(e->args[1], vars) : eval(e->args[2], vars);
    default: ADD_FAILURE() << "unexpected node"; return 0;
  }
}

bool any_i64(const Expr& e) {
  if (e->dtype == DType::kI64 && e->kind != ExprKind::kVar) return true;
  for (const Expr& a : e->args)
    if (any_i64(a)) return true;
  return false;
}

// A 3x3 pad-1 conv's column terms over a 56-wide output: the input offset of
// column j of panel nb at window (kh, kw), clamped, and its padding test.
struct ConvTerms {
  Expr pixel = var(0) * 32 + var(1);  // nb * 32 + j
  Expr ih = floordiv(pixel, 56) + var(2) - 1;
  Expr iw = floormod(pixel, 56) + var(3) - 1;
  Expr offset = min(max(ih, int_imm(0)), int_imm(55)) * 56 + min(max(iw, int_imm(0)), int_imm(55));
  Expr inside = logical_and(logical_and(ge(ih, int_imm(0)), lt(ih, int_imm(56))),
                            logical_and(ge(iw, int_imm(0)), lt(iw, int_imm(56))));
};

const std::vector<Interval> kConvBounds = {Interval::range(98), Interval::range(32), Interval::range(3),
                                           Interval::range(3)};

TEST(NarrowIndex, ConvColumnTermsComputeAlikeInInt32) {
  const ConvTerms t;
  const Expr offset = narrow_index_to_i32(t.offset, kConvBounds);
  const Expr inside = narrow_index_to_i32(t.inside, kConvBounds);
  ASSERT_TRUE(offset && inside);
  EXPECT_EQ(offset->dtype, DType::kI32);
  EXPECT_EQ(inside->dtype, DType::kBool);
  EXPECT_FALSE(any_i64(offset));
  EXPECT_FALSE(any_i64(inside));
  int padded = 0;
  for (int64_t nb : {0, 1, 50, 97})
    for (int64_t j = 0; j < 32; ++j)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) {
          const std::vector<int64_t> at = {nb, j, kh, kw};
          ASSERT_EQ(eval(offset, at), eval(t.offset, at));
          ASSERT_EQ(eval(inside, at), eval(t.inside, at));
          padded += eval(inside, at) == 0;
        }
  EXPECT_GT(padded, 0);  // the padding test was exercised both ways
  // Row 0 of the image, column 0, window (0, 0): padding; the offset clamps to 0.
  EXPECT_EQ(eval(inside, {0, 0, 0, 0}), 0);
  EXPECT_EQ(eval(offset, {0, 0, 1, 1}), 0);
  EXPECT_EQ(eval(offset, {97, 31, 2, 2}), 55 * 56 + 55);
}

TEST(NarrowIndex, ValuesPastInt32StayInt64) {
  // An offset into a tensor of more than 2^31 elements does not narrow.
  EXPECT_TRUE(narrow_index_to_i32(var(0) * (int64_t{1} << 20), {Interval::range(2048)}));
  EXPECT_FALSE(narrow_index_to_i32(var(0) * (int64_t{1} << 20), {Interval::range(4096)}));
  // An intermediate past int32 is enough, even where the result fits.
  const Expr wide = floordiv(var(0) * (int64_t{1} << 24), int64_t{1} << 20);
  EXPECT_FALSE(narrow_index_to_i32(wide, {Interval::range(1024)}));
  // Unbounded vars never narrow.
  EXPECT_FALSE(narrow_index_to_i32(var(0) + 1, {Interval::everything()}));
}

TEST(NarrowIndex, LoadsAndFloatsDoNotNarrow) {
  EXPECT_FALSE(narrow_index_to_i32(load(0, DType::kI64, {var(0)}) + 1, {Interval::range(8)}));
  EXPECT_FALSE(narrow_index_to_i32(float_imm(1.0), {}));
  EXPECT_FALSE(narrow_index_to_i32(cast(DType::kI64, load(0, DType::kF32, {var(0)})) + var(0), {Interval::range(8)}));
}

}  // namespace
}  // namespace tilegraph::codegen
