// Interval bounds of int64 index expressions — the interval arithmetic that
// the simplifier uses today and tile propagation (scheduler/) builds on.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/ir/expr.h"

namespace tilegraph {

struct Interval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min() / 4;
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max() / 4;
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;  // inclusive

  static Interval everything() { return {}; }
  static Interval point(int64_t v) { return {v, v}; }
  static Interval range(int64_t extent) { return {0, extent - 1}; }  // [0, extent)
  bool bounded() const { return lo > kNegInf && hi < kPosInf; }
  bool within(int64_t lo_incl, int64_t hi_incl) const { return lo >= lo_incl && hi <= hi_incl; }
};

// Bounds of an int64 (or bool) expression given bounds for Var(id) =
// var_bounds[id]. Loads and anything unknown are unbounded; bool results are [0,1].
Interval bound_of(const Expr& e, const std::vector<Interval>& var_bounds);

}  // namespace tilegraph
