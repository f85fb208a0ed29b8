// Hardware limits in one object (STYLE.md §8). For now the host CPU only; GPU
// specs (V100, A100, H100, ...) join when the tile-graph scheduler lands.
#pragma once
#include <cstdint>
#include <string>

namespace tilegraph::scheduler {

struct ArchSpec {
  std::string name;            // "host", ...
  std::string target;          // printer family: "cpu"
  int cores = 1;
  int vector_bytes = 32;       // widest SIMD register (AVX2: 32, AVX-512: 64, NEON: 16)
  int64_t l1_bytes = 32 << 10;
  int64_t l2_bytes = 1 << 20;
  int64_t l3_bytes = 8 << 20;
};

// The machine tilegraph runs on (cores from the OS, caches from sysfs).
ArchSpec host_arch();
// An arch by its --arch name; throws UserError listing the known names.
ArchSpec arch_by_name(const std::string& name);

}  // namespace tilegraph::scheduler
