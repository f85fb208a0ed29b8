// bench_stats.cpp — see bench_stats.h.
#include "bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tilegraph::rt {

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) throw std::invalid_argument("percentile of an empty sample");
  if (!(p >= 0.0 && p <= 100.0)) throw std::invalid_argument("percentile outside [0, 100]");
  double h = double(sorted.size() - 1) * p / 100.0;
  size_t lo = size_t(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  double frac = h - double(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

LatencyStats compute_latency_stats(const std::vector<double>& latencies_ms) {
  if (latencies_ms.empty()) throw std::invalid_argument("latency statistics of zero iterations");
  for (double v : latencies_ms) {
    if (!std::isfinite(v)) throw std::invalid_argument("non-finite latency sample");
  }
  std::vector<double> sorted = latencies_ms;
  std::sort(sorted.begin(), sorted.end());

  LatencyStats s;
  s.count = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / double(s.count);
  // Two-pass variance: the samples are close to each other, and subtracting
  // the mean first avoids the cancellation of sum(x^2) - n * mean^2.
  double sq = 0;
  for (double v : sorted) sq += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(sq / double(s.count));
  s.p50 = percentile_sorted(sorted, 50);
  s.p90 = percentile_sorted(sorted, 90);
  s.p95 = percentile_sorted(sorted, 95);
  s.p99 = percentile_sorted(sorted, 99);
  s.throughput = s.mean > 0 ? 1000.0 / s.mean : 0.0;
  return s;
}

std::string format_ms(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.4f" : ms < 1000 ? "%.3f" : "%.1f", ms);
  return buf;
}

std::string format_latency_summary(const LatencyStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.2f", s.throughput);
  return "latency (ms): min " + format_ms(s.min) + "  median " + format_ms(s.p50) + "  p90 " + format_ms(s.p90) +
         "  p95 " + format_ms(s.p95) + "  p99 " + format_ms(s.p99) + "  mean " + format_ms(s.mean) + "  max " +
         format_ms(s.max) + "  (" + std::to_string(s.count) + " iters)\n" +
         "latency stddev (ms): " + format_ms(s.stddev) + "\n" +
         "throughput: " + buf + " inferences/s\n";
}

}  // namespace tilegraph::rt
