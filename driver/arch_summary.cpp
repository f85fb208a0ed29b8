#include "driver/arch_summary.h"

#include <cstdio>

#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace {

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// 32 KiB, 1.5 MiB, 80 GiB: capacities span bytes to gigabytes.
std::string bytes_text(int64_t bytes) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return fixed(v, v == static_cast<int64_t>(v) ? 0 : 1) + " " + units[u];
}

const char* scope_text(scheduler::LevelScope s) {
  switch (s) {
    case scheduler::LevelScope::kDevice: return "device";
    case scheduler::LevelScope::kBlock: return "per compute unit";
    default: return "per thread";
  }
}

}  // namespace

std::string arch_summary(const scheduler::ArchSpec& a) {
  std::string s = str_cat(a.name, ": ", a.description, "\n", "  target ", a.target, ", ISA ", a.isa, ", ",
                          a.compute_units, a.is_gpu() ? " compute units (SMs / CUs)" : a.compute_units == 1 ? " core" : " cores", "\n");
  s += str_cat("  peak fp32 ", fixed(a.peak_fp32_flops / 1e9, 1), " GFLOP/s, fp16 ", fixed(a.peak_fp16_flops / 1e9, 1),
               " GFLOP/s", a.is_gpu() ? (a.tensor_cores ? " (tensor cores)" : " (tensor cores off)") : "",
               ", int8 ", fixed(a.peak_int8_ops / 1e9, 1), " GOP/s\n");
  for (const scheduler::MemoryLevel& l : a.levels)
    s += str_cat("  ", l.name, ": ", bytes_text(l.capacity_bytes), " ", scope_text(l.scope), ", ",
                 fixed(l.bandwidth_bytes_per_s / 1e9, 1), " GB/s\n");
  return s;
}

}  // namespace tilegraph::driver
