// bench_stats.h — latency statistics for main_test's timed iterations.
//
// Percentiles use linear interpolation between closest ranks (numpy's default,
// np.percentile(x, p, method="linear")): with the n samples sorted ascending
// and h = (n - 1) * p / 100, the value is x[floor(h)] + (h - floor(h)) *
// (x[floor(h) + 1] - x[floor(h)]). So p50 is the usual median and p0 / p100
// are min / max. stddev is the population standard deviation (np.std, ddof=0).
#ifndef TILEGRAPH_RT_BENCH_STATS_H
#define TILEGRAPH_RT_BENCH_STATS_H

#include <cstddef>
#include <string>
#include <vector>

namespace tilegraph::rt {

struct LatencyStats {
  size_t count = 0;  // number of samples
  double min = 0, max = 0, mean = 0, stddev = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0;  // p50 is the median
  double throughput = 0;  // inferences per second: 1000 / mean (0 if mean == 0)
};

// Statistics of per-iteration latencies in milliseconds. Throws
// std::invalid_argument on an empty vector or a non-finite sample.
LatencyStats compute_latency_stats(const std::vector<double>& latencies_ms);

// The p-th percentile (0 <= p <= 100) of an ascending, non-empty vector, by
// the interpolation above. Throws std::invalid_argument otherwise.
double percentile_sorted(const std::vector<double>& sorted, double p);

// Milliseconds with useful digits from microseconds to seconds: 4 decimals
// below 10 ms, 3 below 1000 ms, 1 above ("0.0123", "12.346", "1234.6").
std::string format_ms(double ms);

// main_test's summary, three lines:
//   latency (ms): min X  median X  p90 X  p95 X  p99 X  mean X  max X  (N iters)
//   latency stddev (ms): X
//   throughput: X inferences/s
std::string format_latency_summary(const LatencyStats& s);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_BENCH_STATS_H
