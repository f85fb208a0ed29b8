// Tests of runtime/tensor_compare: the float error metric, its NaN/inf rules,
// exact integer comparison, and the one-line summaries main_test prints.
#include "npy.h"
#include "tensor_compare.h"
#include "tilegraph_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

using namespace tilegraph::rt;

namespace {

template <typename T>
NpyArray make(int dtype, std::vector<int64_t> shape, std::vector<T> values) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = shape;
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(values.data());
  a.data.assign(bytes, bytes + values.size() * sizeof(T));
  return a;
}

TEST(TensorCompare, RelativeAboveOneAbsoluteBelow) {
  NpyArray want = make<float>(TG_F32, {2, 2}, {100.0f, 0.001f, -3.0f, 0.0f});
  NpyArray got = make<float>(TG_F32, {2, 2}, {100.01f, 0.00105f, -3.0f, 0.0f});
  Comparison c = compare_tensors(got, want, 1e-3);
  EXPECT_EQ(c.elements, 4u);
  EXPECT_NEAR(c.max_abs_err, 0.01, 1e-5);       // element 0
  EXPECT_NEAR(c.max_rel_err, 0.01 / 100, 1e-7);  // 1e-4: relative to 100
  EXPECT_EQ(c.worst, 0u);
  EXPECT_TRUE(c.ok());
  // Tighter than the 100 -> 100.01 error (1e-4) and the tiny element's 5e-5 (absolute below 1).
  c = compare_tensors(got, want, 6e-5);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_FALSE(c.ok());
}

TEST(TensorCompare, NanAndInfinityRules) {
  NpyArray want = make<float>(TG_F32, {4}, {NAN, INFINITY, -INFINITY, 1.0f});
  EXPECT_TRUE(compare_tensors(make<float>(TG_F32, {4}, {NAN, INFINITY, -INFINITY, 1.0f}), want, 0).ok());
  Comparison c = compare_tensors(make<float>(TG_F32, {4}, {0.0f, INFINITY, -INFINITY, NAN}), want, 1e9);
  EXPECT_EQ(c.mismatches, 2u);  // NaN vs number, both ways
  EXPECT_TRUE(std::isinf(c.max_rel_err));
  EXPECT_EQ(c.worst, 0u);
  c = compare_tensors(make<float>(TG_F32, {4}, {NAN, 1e30f, -INFINITY, 1.0f}), want, 1e9);
  EXPECT_EQ(c.mismatches, 1u);  // a finite value against inf
  EXPECT_EQ(c.worst, 1u);
}

TEST(TensorCompare, MixedFloatWidths) {
  NpyArray got = make<uint16_t>(TG_F16, {2}, {float_to_half(0.5f), float_to_half(1.0f / 3)});
  NpyArray want = make<double>(TG_F64, {2}, {0.5, 1.0 / 3});
  ASSERT_TRUE(comparable(got, want));
  Comparison c = compare_tensors(got, want, 1e-3);
  EXPECT_TRUE(c.ok());
  EXPECT_NEAR(c.max_abs_err, std::fabs(half_to_float(float_to_half(1.0f / 3)) - 1.0 / 3), 1e-12);
  EXPECT_FALSE(compare_tensors(got, want, 1e-5).ok());
}

TEST(TensorCompare, IntegersMustMatchExactly) {
  NpyArray want = make<int64_t>(TG_I64, {2, 2}, {1, -2, 3, 4});
  NpyArray got = make<int64_t>(TG_I64, {2, 2}, {1, -2, 5, 7});
  Comparison c = compare_tensors(got, want, 1e9);  // rtol does not apply
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_EQ(c.worst, 2u);  // the first difference
  EXPECT_EQ(summarize(c, got, want, 1e9), "2 of 4 elements differ  MISMATCH: first at [1,0]: got 5, expected 3");
  EXPECT_EQ(summarize(compare_tensors(want, want, 0), want, want, 0), "0 of 4 elements differ  ok");
}

TEST(TensorCompare, FloatSummaries) {
  NpyArray want = make<float>(TG_F32, {1, 3}, {1.0f, 2.0f, 4.0f});
  NpyArray got = make<float>(TG_F32, {1, 3}, {1.0f, 2.5f, 4.0f});
  Comparison c = compare_tensors(got, want, 1e-4);
  EXPECT_EQ(summarize(c, got, want, 1e-4),
            "max abs err 0.5  max rel err 0.25  MISMATCH: 1 of 3 elements exceed rtol 0.0001, worst at [0,1]: "
            "got 2.5, expected 2");
  EXPECT_EQ(summarize(compare_tensors(want, want, 0), want, want, 0), "max abs err 0  max rel err 0  ok");
}

TEST(TensorCompare, IncomparableTensorsThrow) {
  NpyArray a = make<float>(TG_F32, {2}, {1, 2});
  NpyArray b = make<int32_t>(TG_I32, {2}, {1, 2});
  NpyArray c = make<float>(TG_F32, {1, 2}, {1, 2});
  EXPECT_FALSE(comparable(a, b));
  EXPECT_FALSE(comparable(a, c));
  EXPECT_THROW(compare_tensors(a, b, 0), std::invalid_argument);
  EXPECT_THROW(compare_tensors(a, c, 0), std::invalid_argument);
}

TEST(TensorCompare, ElementAndIndexStrings) {
  int8_t i8 = -5;
  uint8_t u8 = 250;
  int16_t i16 = -300;
  uint32_t u32 = 4000000000u;
  int64_t i64 = -9000000000;
  uint64_t u64 = 18000000000000000000ull;
  uint8_t t = 1;
  double d = 0.1;
  EXPECT_EQ(element_to_string(TG_I8, reinterpret_cast<uint8_t*>(&i8)), "-5");
  EXPECT_EQ(element_to_string(TG_U8, &u8), "250");
  EXPECT_EQ(element_to_string(TG_I16, reinterpret_cast<uint8_t*>(&i16)), "-300");
  EXPECT_EQ(element_to_string(TG_U32, reinterpret_cast<uint8_t*>(&u32)), "4000000000");
  EXPECT_EQ(element_to_string(TG_I64, reinterpret_cast<uint8_t*>(&i64)), "-9000000000");
  EXPECT_EQ(element_to_string(TG_U64, reinterpret_cast<uint8_t*>(&u64)), "18000000000000000000");
  EXPECT_EQ(element_to_string(TG_BOOL, &t), "true");
  EXPECT_EQ(element_to_string(TG_F64, reinterpret_cast<uint8_t*>(&d)), "0.1");
  EXPECT_EQ(index_to_string(0, {}), "[]");
  EXPECT_EQ(index_to_string(23, {2, 3, 4}), "[1,2,3]");
  EXPECT_EQ(index_to_string(4, {2, 3}), "[1,1]");
}

}  // namespace
