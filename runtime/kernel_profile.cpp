// kernel_profile.cpp — see kernel_profile.h.
#include "kernel_profile.h"

#include "bench_stats.h"

#include <algorithm>
#include <cstdio>

namespace tilegraph::rt {
namespace {

constexpr size_t kMaxNameWidth = 40;
constexpr size_t kNodesWidth = 60;

std::string truncate(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

// As many whole node names as fit in `width`, then "... (+K more)". The
// first name is always shown, even when longer.
std::string node_summary(const std::vector<std::string>& nodes, size_t width) {
  std::string out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string piece = (i > 0 ? ", " : "") + nodes[i];
    bool last = i + 1 == nodes.size();
    std::string rest = " ... (+" + std::to_string(nodes.size() - i) + " more)";
    if (i > 0 && out.size() + piece.size() + (last ? 0 : rest.size()) > width) return out + rest;
    out += piece;
  }
  return out;
}

}  // namespace

std::vector<std::string> split_node_list(const char* comma_separated) {
  std::vector<std::string> out;
  if (comma_separated == nullptr) return out;
  std::string piece;
  for (const char* p = comma_separated;; ++p) {
    if (*p == ',' || *p == '\0') {
      size_t b = piece.find_first_not_of(' '), e = piece.find_last_not_of(' ');
      if (b != std::string::npos) out.push_back(piece.substr(b, e - b + 1));
      piece.clear();
      if (*p == '\0') break;
    } else {
      piece += *p;
    }
  }
  return out;
}

namespace {

KernelTime kernel_named(int k) {
  KernelTime t;
  t.index = k;
  const char* name = tg_kernel_name(k);
  t.name = name ? name : "kernel_" + std::to_string(k);
  t.nodes = split_node_list(tg_kernel_nodes(k));
  return t;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void slowest_first(std::vector<KernelTime>& kernels) {
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.median_ms > b.median_ms; });
}

}  // namespace

std::vector<KernelTime> kernel_times_of_runs(const std::vector<std::vector<double>>& ms_per_run) {
  std::vector<KernelTime> kernels;
  for (size_t k = 0; k < ms_per_run.size(); ++k) {
    KernelTime t = kernel_named(int(k));
    for (double ms : ms_per_run[k]) t.total_ms += ms;
    t.median_ms = median(ms_per_run[k]);
    kernels.push_back(std::move(t));
  }
  slowest_first(kernels);
  return kernels;
}

std::string format_profile_table(const std::vector<KernelTime>& kernels, size_t iterations, double mean_ms) {
  if (kernels.empty()) return "profile: the model reports no kernels\n";
  double total = 0;
  size_t name_width = 6;  // "kernel"
  for (const KernelTime& k : kernels) {
    total += k.total_ms;
    name_width = std::max(name_width, std::min(k.name.size(), kMaxNameWidth));
  }
  double iters = double(std::max<size_t>(iterations, 1));
  char line[512];
  std::string out = "profile (" + std::to_string(iterations) + " iterations, " + std::to_string(kernels.size()) +
                    " kernels):\n";
  std::snprintf(line, sizeof line, "%4s  %-*s  %10s  %10s  %10s  %6s  %s\n", "rank", int(name_width), "kernel",
                "total ms", "ms/iter", "median ms", "%", "onnx nodes");
  out += line;
  for (size_t r = 0; r < kernels.size(); ++r) {
    const KernelTime& k = kernels[r];
    double pct = total > 0 ? 100.0 * k.total_ms / total : 0.0;
    std::snprintf(line, sizeof line, "%4zu  %-*s  %10s  %10s  %10s  %5.1f%%  ", r + 1, int(name_width),
                  truncate(k.name, kMaxNameWidth).c_str(), format_ms(k.total_ms).c_str(),
                  format_ms(k.total_ms / iters).c_str(), format_ms(k.median_ms).c_str(), pct);
    out += line + node_summary(k.nodes, kNodesWidth) + "\n";
  }
  out += "kernel total: " + format_ms(total / iters) + " ms/iter (end-to-end mean without profiling: " +
         format_ms(mean_ms) + " ms)\n";
  return out;
}

}  // namespace tilegraph::rt
