// peak_memory.cpp — see peak_memory.h.
#include "peak_memory.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace tilegraph::rt {

int64_t parse_vm_hwm(const std::string& status_text) {
  std::istringstream lines(status_text);
  std::string line;
  const std::string key = "VmHWM:";
  while (std::getline(lines, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const char* p = line.c_str() + key.size();
    while (*p == ' ' || *p == '\t') ++p;
    if (!std::isdigit(static_cast<unsigned char>(*p))) return -1;
    char* end = nullptr;
    long long kib = std::strtoll(p, &end, 10);
    while (*end == ' ' || *end == '\t') ++end;
    if (std::string(end) != "kB") return -1;  // the kernel always writes kB
    if (kib < 0 || kib > std::numeric_limits<int64_t>::max() / 1024) return -1;
    return int64_t(kib) * 1024;
  }
  return -1;
}

int64_t peak_resident_bytes() {
  std::ifstream f("/proc/self/status");
  if (!f) return -1;
  std::stringstream text;
  text << f.rdbuf();
  return parse_vm_hwm(text.str());
}

}  // namespace tilegraph::rt
