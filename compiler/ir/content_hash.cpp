#include "compiler/ir/content_hash.h"

#include <cstdio>

namespace tilegraph {

std::string hash_hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace tilegraph
