// A 64-bit content hash (FNV-1a) for caches and project identity: stable
// across runs, platforms and compilers, which std::hash does not promise.
// Not a cryptographic hash: it tells versions apart, it does not resist
// someone forging a collision.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tilegraph {

class ContentHash {
 public:
  ContentHash& add(std::string_view bytes) {
    for (unsigned char c : bytes) h_ = (h_ ^ c) * 1099511628211ull;
    return *this;
  }
  uint64_t value() const { return h_; }

 private:
  // The offset basis the schedule cache's keys have always used (it differs
  // from FNV's published basis in its last digit; any odd seed serves).
  uint64_t h_ = 1469598103934665603ull;
};

inline uint64_t content_hash(std::string_view bytes) { return ContentHash().add(bytes).value(); }

// 16 lower-case hex digits.
std::string hash_hex(uint64_t hash);

}  // namespace tilegraph
