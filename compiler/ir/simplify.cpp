#include "compiler/ir/simplify.h"

#include <algorithm>
#include <numeric>

#include "compiler/ir/scalar.h"

namespace tilegraph {

namespace {

// sum of coef * term, plus constant (int64 index expressions).
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void add(const Expr& term, int64_t coef) {
    if (coef == 0) return;
    for (auto& [t, c] : terms)
      if (same_expr(t, term)) {
        c += coef;
        return;
      }
    terms.emplace_back(term, coef);
  }
};

bool is_index(const Expr& e) { return e->dtype == DType::kI64; }

void to_linear(const Expr& e, int64_t scale, Linear& out) {
  int64_t c;
  if (is_const_int(e, &c)) {
    out.constant += scale * c;
    return;
  }
  if (e->kind == ExprKind::kBinary) {
    const Expr& a = e->args[0];
    const Expr& b = e->args[1];
    switch (e->binary_op) {
      case BinaryOp::kAdd: to_linear(a, scale, out); to_linear(b, scale, out); return;
      case BinaryOp::kSub: to_linear(a, scale, out); to_linear(b, -scale, out); return;
      case BinaryOp::kMul:
        if (is_const_int(b, &c)) { to_linear(a, scale * c, out); return; }
        if (is_const_int(a, &c)) { to_linear(b, scale * c, out); return; }
        break;
      default: break;
    }
  }
  out.add(e, scale);
}

Expr from_linear(const Linear& l) {
  Expr sum;
  for (const auto& [t, c] : l.terms) {
    if (c == 0) continue;
    Expr term = c == 1 ? t : t * c;
    sum = sum ? sum + term : term;
  }
  if (!sum) return int_imm(l.constant);
  return l.constant == 0 ? sum : sum + l.constant;
}

// q*c * floordiv(x, c) + q * floormod(x, c) = q * x: a flat index split
// into coordinates and flattened again (a GEMM's column as output pixel
// (oh, ow), stored at oh * W + ow).
void fold_div_mod_pairs(Linear& l) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < l.terms.size() && !changed; ++i) {
      const Expr mod = l.terms[i].first;
      const int64_t q = l.terms[i].second;
      int64_t c;
      if (q == 0 || mod->kind != ExprKind::kBinary || mod->binary_op != BinaryOp::kFloorMod ||
          !is_const_int(mod->args[1], &c) || c <= 0)
        continue;
      for (size_t j = 0; j < l.terms.size(); ++j) {
        const Expr div = l.terms[j].first;
        const int64_t qc = l.terms[j].second;
        if (j == i || qc != q * c || div->kind != ExprKind::kBinary || div->binary_op != BinaryOp::kFloorDiv ||
            !same_expr(div->args[0], mod->args[0]) || !same_expr(div->args[1], mod->args[1]))
          continue;
        const Expr x = mod->args[0];
        l.terms[i].second = 0;
        l.terms[j].second = 0;
        to_linear(x, q, l);
        changed = true;
        break;
      }
    }
  }
}

Interval bound_linear(const Linear& l, const std::vector<Interval>& vb) {
  return bound_of(from_linear(l), vb);
}

// floordiv / floormod of a linear form by c > 0.
Expr divmod(const Expr& numerator, int64_t c, bool want_div, const std::vector<Interval>& vb) {
  Linear l;
  to_linear(numerator, 1, l);
  Linear quotient, rest;
  for (const auto& [t, coef] : l.terms) {
    if (coef % c == 0) quotient.add(t, coef / c);
    else rest.add(t, coef);
  }
  quotient.constant = floor_div(l.constant, c);
  rest.constant = floor_mod(l.constant, c);
  const Interval r = bound_linear(rest, vb);
  if (!(r.bounded() && floor_div(r.lo, c) == floor_div(r.hi, c))) {
    // rest = g * big + small with g | c and small in [0, g): then
    // floordiv(rest, c) = floordiv(big, c/g) and floormod(rest, c) =
    // floormod(big, c/g) * g + small (a flat column nb*32 + j split by a
    // row of 256: floordiv(nb, 8), floormod(nb, 8) * 32 + j).
    for (const auto& term : rest.terms) {
      const int64_t g = std::gcd(term.second, c);
      if (g <= 1 || g == c) continue;
      Linear big, small;
      for (const auto& [t2, coef2] : rest.terms) {
        if (coef2 % g == 0) big.add(t2, coef2 / g);
        else small.add(t2, coef2);
      }
      small.constant = rest.constant;
      const Interval sr = bound_linear(small, vb);
      if (!sr.bounded() || sr.lo < 0 || sr.hi >= g) continue;
      const Expr big_expr = from_linear(big);
      if (want_div) {
        quotient.add(binary(BinaryOp::kFloorDiv, big_expr, int_imm(c / g)), 1);
        return from_linear(quotient);
      }
      small.add(binary(BinaryOp::kFloorMod, big_expr, int_imm(c / g)), g);
      return from_linear(small);
    }
  }
  if (r.bounded() && floor_div(r.lo, c) == floor_div(r.hi, c)) {
    const int64_t k = floor_div(r.lo, c);
    if (want_div) {
      quotient.constant += k;
      return from_linear(quotient);
    }
    rest.constant -= k * c;
    return from_linear(rest);
  }
  const Expr rest_expr = from_linear(rest);
  if (want_div) {
    quotient.constant = 0;
    Expr inner = binary(BinaryOp::kFloorDiv, rest_expr, int_imm(c));
    quotient.add(inner, 1);
    quotient.constant = floor_div(l.constant, c);
    return from_linear(quotient);
  }
  return binary(BinaryOp::kFloorMod, rest_expr, int_imm(c));
}

Expr simplify_node(const Expr& e, const std::vector<Interval>& vb) {
  if (e->kind != ExprKind::kBinary) return nullptr;
  const Expr& a = e->args[0];
  const Expr& b = e->args[1];
  int64_t c;
  switch (e->binary_op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
    case BinaryOp::kMul: {
      if (!is_index(e)) return nullptr;
      Linear l;
      to_linear(e, 1, l);
      fold_div_mod_pairs(l);
      Expr r = from_linear(l);
      return same_expr(r, e) ? nullptr : r;
    }
    case BinaryOp::kFloorDiv:
      if (!is_index(e) || !is_const_int(b, &c) || c <= 0) return nullptr;
      if (a->kind == ExprKind::kBinary && a->binary_op == BinaryOp::kFloorDiv) {
        int64_t inner;
        if (is_const_int(a->args[1], &inner) && inner > 0)
          return divmod(a->args[0], inner * c, true, vb);
      }
      return divmod(a, c, true, vb);
    case BinaryOp::kFloorMod:
      if (!is_index(e) || !is_const_int(b, &c) || c <= 0) return nullptr;
      return divmod(a, c, false, vb);
    case BinaryOp::kMin:
    case BinaryOp::kMax: {
      if (!is_index(e)) return nullptr;
      const Interval x = bound_of(a, vb), y = bound_of(b, vb);
      const bool min = e->binary_op == BinaryOp::kMin;
      if (x.hi <= y.lo) return min ? a : b;
      if (y.hi <= x.lo) return min ? b : a;
      return nullptr;
    }
    case BinaryOp::kLt:
    case BinaryOp::kLe:
    case BinaryOp::kGt:
    case BinaryOp::kGe:
    case BinaryOp::kEq:
    case BinaryOp::kNe: {
      if (!is_index(a)) return nullptr;
      const Interval d = bound_of(a - b, vb);  // decide a ? b from a - b
      if (!(d.lo > Interval::kNegInf || d.hi < Interval::kPosInf)) return nullptr;
      auto decided = [](bool v) { return int_imm(v ? 1 : 0, DType::kBool); };
      switch (e->binary_op) {
        case BinaryOp::kLt: if (d.hi < 0) return decided(true); if (d.lo >= 0) return decided(false); break;
        case BinaryOp::kLe: if (d.hi <= 0) return decided(true); if (d.lo > 0) return decided(false); break;
        case BinaryOp::kGt: if (d.lo > 0) return decided(true); if (d.hi <= 0) return decided(false); break;
        case BinaryOp::kGe: if (d.lo >= 0) return decided(true); if (d.hi < 0) return decided(false); break;
        case BinaryOp::kEq: if (d.lo == 0 && d.hi == 0) return decided(true); if (d.lo > 0 || d.hi < 0) return decided(false); break;
        case BinaryOp::kNe: if (d.lo > 0 || d.hi < 0) return decided(true); if (d.lo == 0 && d.hi == 0) return decided(false); break;
        default: break;
      }
      return nullptr;
    }
    case BinaryOp::kAnd:
    case BinaryOp::kOr: {
      int64_t v;
      const bool is_and = e->binary_op == BinaryOp::kAnd;
      if (is_const_int(a, &v)) return (v != 0) == is_and ? b : a;
      if (is_const_int(b, &v)) return (v != 0) == is_and ? a : b;
      return nullptr;
    }
    default:
      return nullptr;
  }
}

}  // namespace

Expr simplify(const Expr& e, const std::vector<Interval>& var_bounds) {
  // Two rounds: a first pass exposes linear forms that the second folds.
  Expr result = e;
  for (int round = 0; round < 2; ++round) {
    Expr next = rewrite(result, [&](const Expr& n) { return simplify_node(n, var_bounds); });
    if (next == result) break;
    result = next;
  }
  return result;
}

}  // namespace tilegraph
