// GlobalAveragePool's lowering (frontends/onnx/ops/conv_pool.cpp): the
// spatial sum is one reduce axis over the flattened plane (contiguous loads),
// and the averages match a direct computation for 3-D, 4-D and 5-D inputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;

// GlobalAveragePool over x of `shape` (values i * 0.37 - 3, i = 0, 1, ...):
// the lowered graph's outputs and its sum op's reduce extents.
struct GlobalAverage {
  std::vector<double> averages, expected;
  std::vector<int64_t> reduce_extents;
};

GlobalAverage global_average(const std::string& name, const Shape& shape) {
  OnnxModelBuilder b(17);
  b.input("x", 1, shape).output("y");
  b.node("GlobalAveragePool", {"x"}, {"y"});
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> x;
  for (int64_t i = 0; i < n; ++i) x.push_back(static_cast<float>(i) * 0.37f - 3.0f);
  const testing::LoweredModel m =
      testing::run_lowered(b, testing::test_model_path("global_pool", name), {testing::bytes_of(x)});
  GlobalAverage r;
  r.averages = m.outputs.at(0);
  const int64_t planes = shape[0] * shape[1], plane = n / planes;
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < plane; ++i) sum += x[static_cast<size_t>(p * plane + i)];
    r.expected.push_back(sum / static_cast<double>(plane));
  }
  for (const Op& op : m.graph.ops)
    if (!op.reduce_extents.empty()) r.reduce_extents = op.reduce_extents;
  return r;
}

TEST(GlobalAveragePool, SumsEachPlaneOverOneFlatAxis) {
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"rank3", {2, 3, 5}}, {"rank4", {2, 3, 7, 7}}, {"rank4_odd", {1, 2, 3, 5}}, {"rank5", {1, 2, 2, 3, 4}}}) {
    const GlobalAverage r = global_average(name, shape);
    int64_t plane = 1;
    for (size_t d = 2; d < shape.size(); ++d) plane *= shape[d];
    EXPECT_EQ(r.reduce_extents, (std::vector<int64_t>{plane})) << name;
    ASSERT_EQ(r.averages.size(), r.expected.size()) << name;
    for (size_t i = 0; i < r.expected.size(); ++i) EXPECT_NEAR(r.averages[i], r.expected[i], 1e-5) << name << " " << i;
  }
}

}  // namespace
}  // namespace tilegraph
