#include "compiler/ir/interval.h"

#include <algorithm>

#include "compiler/ir/scalar.h"

namespace tilegraph {

namespace {

int64_t sat_add(int64_t a, int64_t b) {
  if (a <= Interval::kNegInf || b <= Interval::kNegInf) return Interval::kNegInf;
  if (a >= Interval::kPosInf || b >= Interval::kPosInf) return Interval::kPosInf;
  return std::clamp(a + b, Interval::kNegInf, Interval::kPosInf);
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const bool inf = a <= Interval::kNegInf || a >= Interval::kPosInf || b <= Interval::kNegInf ||
                   b >= Interval::kPosInf;
  const bool negative = (a < 0) != (b < 0);
  if (inf) return negative ? Interval::kNegInf : Interval::kPosInf;
  __int128 p = static_cast<__int128>(a) * b;
  if (p <= Interval::kNegInf) return Interval::kNegInf;
  if (p >= Interval::kPosInf) return Interval::kPosInf;
  return static_cast<int64_t>(p);
}

Interval mul(Interval a, Interval b) {
  int64_t c[4] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

}  // namespace

Interval bound_of(const Expr& e, const std::vector<Interval>& vb) {
  if (e->dtype == DType::kBool) {
    if (e->kind == ExprKind::kIntImm) return Interval::point(e->int_value);
    return {0, 1};
  }
  if (is_float(e->dtype)) return Interval::everything();
  switch (e->kind) {
    case ExprKind::kIntImm: return Interval::point(e->int_value);
    case ExprKind::kVar:
      return e->int_value < static_cast<int64_t>(vb.size()) ? vb[e->int_value] : Interval::everything();
    case ExprKind::kBinary: {
      const Interval a = bound_of(e->args[0], vb), b = bound_of(e->args[1], vb);
      switch (e->binary_op) {
        case BinaryOp::kAdd: return {sat_add(a.lo, b.lo), sat_add(a.hi, b.hi)};
        case BinaryOp::kSub: return {sat_add(a.lo, -b.hi), sat_add(a.hi, -b.lo)};
        case BinaryOp::kMul: return mul(a, b);
        case BinaryOp::kMin: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
        case BinaryOp::kMax: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
        case BinaryOp::kDiv:  // C division equals floor division for a >= 0, b > 0
        case BinaryOp::kFloorDiv:
          if (e->binary_op == BinaryOp::kDiv && a.lo < 0) return Interval::everything();
          if (b.lo == b.hi && b.lo > 0 && a.bounded())
            return {floor_div(a.lo, b.lo), floor_div(a.hi, b.lo)};
          if (b.lo == b.hi && b.lo > 0) {
            return {a.lo <= Interval::kNegInf ? Interval::kNegInf : floor_div(a.lo, b.lo),
                    a.hi >= Interval::kPosInf ? Interval::kPosInf : floor_div(a.hi, b.lo)};
          }
          return Interval::everything();
        case BinaryOp::kRem:
        case BinaryOp::kFloorMod:
          if (e->binary_op == BinaryOp::kRem && a.lo < 0) return Interval::everything();
          if (b.lo == b.hi && b.lo > 0) {
            if (a.lo >= 0 && a.hi < b.lo) return a;
            return {0, b.lo - 1};
          }
          return Interval::everything();
        default: return Interval::everything();
      }
    }
    case ExprKind::kSelect: {
      const Interval a = bound_of(e->args[1], vb), b = bound_of(e->args[2], vb);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case ExprKind::kCast:
      if (!is_float(e->args[0]->dtype)) return bound_of(e->args[0], vb);
      return Interval::everything();
    case ExprKind::kCheckIndex: return {0, e->args[1]->int_value - 1};
    default:
      return Interval::everything();
  }
}

}  // namespace tilegraph
