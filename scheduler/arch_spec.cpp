#include "scheduler/arch_spec.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "compiler/ir/error.h"

namespace tilegraph::scheduler {

namespace {

// Reads e.g. "/sys/devices/system/cpu/cpu0/cache/index2/size" ("1024K").
int64_t read_cache_size(int index, int64_t fallback) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string text;
  if (!(in >> text) || text.empty()) return fallback;
  int64_t value = std::atoll(text.c_str());
  if (text.back() == 'K') value <<= 10;
  if (text.back() == 'M') value <<= 20;
  return value > 0 ? value : fallback;
}

}  // namespace

ArchSpec host_arch() {
  ArchSpec a;
  a.name = "host";
  a.target = "cpu";
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  a.cores = cores > 0 ? static_cast<int>(cores) : 1;
  // index0 = L1d, index2 = L2, index3 = L3 on Linux x86 and most ARM kernels.
  a.l1_bytes = read_cache_size(0, a.l1_bytes);
  a.l2_bytes = read_cache_size(2, a.l2_bytes);
  a.l3_bytes = read_cache_size(3, a.l3_bytes);
#if defined(__AVX512F__)
  a.vector_bytes = 64;
#elif defined(__aarch64__)
  a.vector_bytes = 16;
#else
  a.vector_bytes = 32;
#endif
  return a;
}

ArchSpec arch_by_name(const std::string& name) {
  if (name == "host" || name == "x86" || name == "cpu") return host_arch();
  throw UserError(str_cat("unknown --arch '", name, "'; known: host"));
}

}  // namespace tilegraph::scheduler
