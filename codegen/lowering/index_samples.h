// Indices at which a micro-kernel matcher evaluates an op's body (the pool
// and softmax matchers of codegen/lowering): an axis' ends, their neighbours
// and its middle, where a wrong index map or a border case shows.
#pragma once
#include <cstdint>
#include <set>
#include <vector>

namespace tilegraph::codegen {

inline std::vector<int64_t> sample_indices(int64_t extent) {
  std::set<int64_t> s;
  for (int64_t v : {int64_t{0}, int64_t{1}, extent / 2, extent - 2, extent - 1})
    if (v >= 0 && v < extent) s.insert(v);
  return {s.begin(), s.end()};
}

}  // namespace tilegraph::codegen
