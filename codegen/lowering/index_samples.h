// Indices at which a micro-kernel matcher evaluates an op's body (the pool,
// softmax and quantize matchers of codegen/lowering): an axis' ends, their
// neighbours and its middle, where a wrong index map or a border case shows.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "compiler/ir/expr.h"

namespace tilegraph::codegen {

inline std::vector<int64_t> sample_indices(int64_t extent) {
  std::set<int64_t> s;
  for (int64_t v : {int64_t{0}, int64_t{1}, extent / 2, extent - 2, extent - 1})
    if (v >= 0 && v < extent) s.insert(v);
  return {s.begin(), s.end()};
}

// Calls `visit` with every point of the grid of sample_indices over `shape`'s
// axes (first axis outermost); stops at the first false. False, visiting
// nothing, where the grid has more than `max_points` points, so that a
// tensor's rank cannot make a matcher's time explode.
inline bool all_sample_points(const std::vector<int64_t>& shape, int64_t max_points,
                              const std::function<bool(const std::vector<int64_t>&)>& visit) {
  std::vector<std::vector<int64_t>> axes;
  int64_t points = 1;
  for (int64_t extent : shape) {
    axes.push_back(sample_indices(extent));
    if ((points *= static_cast<int64_t>(axes.back().size())) > max_points) return false;
  }
  std::vector<int64_t> point(axes.size(), 0);
  std::function<bool(size_t)> walk = [&](size_t d) {
    if (d == axes.size()) return visit(point);
    for (int64_t v : axes[d]) {
      point[d] = v;
      if (!walk(d + 1)) return false;
    }
    return true;
  };
  return walk(0);
}

// A point as constant index expressions (for substitute_vars or a load).
inline std::vector<Expr> constant_indices(const std::vector<int64_t>& point) {
  std::vector<Expr> values;
  for (int64_t v : point) values.push_back(int_imm(v));
  return values;
}

}  // namespace tilegraph::codegen
