// Tests of runtime/bench_stats: statistics of known vectors, checked against
// the values numpy gives (np.percentile linear interpolation, np.std ddof=0).
#include "bench_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

using namespace tilegraph::rt;

namespace {

TEST(LatencyStats, FiveSamplesInAnyOrder) {
  LatencyStats s = compute_latency_stats({5, 1, 3, 2, 4});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.0));  // np.std([1,2,3,4,5])
  EXPECT_DOUBLE_EQ(s.p50, 3);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);   // h = 0.9 * 4 = 3.6 -> 4 + 0.6 * (5 - 4)
  EXPECT_DOUBLE_EQ(s.p95, 4.8);
  EXPECT_DOUBLE_EQ(s.p99, 4.96);
  EXPECT_DOUBLE_EQ(s.throughput, 1000.0 / 3);
}

TEST(LatencyStats, OneToHundred) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  LatencyStats s = compute_latency_stats(v);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);   // even count: average of the middle two
  EXPECT_NEAR(s.p90, 90.1, 1e-12);  // np.percentile(np.arange(1, 101), 90)
  EXPECT_NEAR(s.p95, 95.05, 1e-12);
  EXPECT_NEAR(s.p99, 99.01, 1e-12);
  EXPECT_NEAR(s.stddev, 28.866070047722118, 1e-12);
  EXPECT_DOUBLE_EQ(s.throughput, 1000.0 / 50.5);
}

TEST(LatencyStats, SingleSample) {
  LatencyStats s = compute_latency_stats({2.5});
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.min, 2.5);
  EXPECT_DOUBLE_EQ(s.max, 2.5);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p99, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.throughput, 400);
}

TEST(LatencyStats, TailOutlierShowsOnlyInHighPercentiles) {
  std::vector<double> v(99, 1.0);
  v.push_back(101.0);
  LatencyStats s = compute_latency_stats(v);
  EXPECT_DOUBLE_EQ(s.p50, 1.0);
  EXPECT_DOUBLE_EQ(s.p95, 1.0);
  EXPECT_NEAR(s.p99, 2.0, 1e-12);  // h = 98.01: 1 + 0.01 * 100
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 101.0);
}

TEST(LatencyStats, ZeroMeanGivesZeroThroughput) {
  EXPECT_DOUBLE_EQ(compute_latency_stats({0, 0}).throughput, 0);
}

TEST(LatencyStats, RejectsEmptyAndNonFinite) {
  EXPECT_THROW(compute_latency_stats({}), std::invalid_argument);
  EXPECT_THROW(compute_latency_stats({1, NAN}), std::invalid_argument);
  EXPECT_THROW(compute_latency_stats({INFINITY}), std::invalid_argument);
}

TEST(Percentile, EndpointsAndInterpolation) {
  std::vector<double> v = {10, 20, 40};
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0), 10);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 100), 40);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 25), 15);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 75), 30);
  EXPECT_THROW(percentile_sorted(v, 101), std::invalid_argument);
  EXPECT_THROW(percentile_sorted(v, -1), std::invalid_argument);
  EXPECT_THROW(percentile_sorted({}, 50), std::invalid_argument);
}

TEST(LatencyFormat, DigitsFollowMagnitude) {
  EXPECT_EQ(format_ms(0.01234), "0.0123");
  EXPECT_EQ(format_ms(9.99994), "9.9999");
  EXPECT_EQ(format_ms(12.3456), "12.346");
  EXPECT_EQ(format_ms(1234.56), "1234.6");
}

TEST(LatencyFormat, SummaryLines) {
  EXPECT_EQ(format_latency_summary(compute_latency_stats({5, 1, 3, 2, 4})),
            "latency (ms): min 1.0000  median 3.0000  p90 4.6000  p95 4.8000  p99 4.9600  mean 3.0000  "
            "max 5.0000  (5 iters)\n"
            "latency stddev (ms): 1.4142\n"
            "throughput: 333.33 inferences/s\n");
}

}  // namespace
