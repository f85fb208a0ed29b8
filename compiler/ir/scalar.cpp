#include "compiler/ir/scalar.h"

#include <cmath>
#include <limits>

namespace tilegraph {

namespace {

// -a with two's-complement wrap-around: INT64_MIN stays INT64_MIN.
int64_t wrapping_neg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

}  // namespace

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrapping_neg(a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  const int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

int64_t trunc_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrapping_neg(a);
  return a / b;
}

int64_t trunc_rem(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}

Scalar scalar_of(double v, DType t) {
  // Through the float -> int cast rules (saturating, NaN -> 0): a huge or
  // NaN attribute value must not be undefined behaviour.
  return scalar_cast(Scalar{v, 0}, DType::kF64, t);
}

double scalar_as_double(Scalar s, DType t) { return is_float(t) ? s.f : static_cast<double>(s.i); }

namespace {

int64_t wrap_int(int64_t v, DType t) {
  switch (t) {
    case DType::kI8: return static_cast<int8_t>(v);
    case DType::kU8: return static_cast<uint8_t>(v);
    case DType::kI16: return static_cast<int16_t>(v);
    case DType::kU16: return static_cast<uint16_t>(v);
    case DType::kI32: return static_cast<int32_t>(v);
    case DType::kU32: return static_cast<uint32_t>(v);
    case DType::kBool: return v != 0;
    default: return v;
  }
}

int64_t unsigned_div(int64_t a, int64_t b) {
  const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
  return y == 0 ? 0 : static_cast<int64_t>(x / y);
}

int64_t unsigned_rem(int64_t a, int64_t b) {
  const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
  return y == 0 ? 0 : static_cast<int64_t>(x % y);
}

int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

Scalar scalar_cast(Scalar s, DType from, DType to) {
  Scalar r;
  if (is_float(to)) {
    double v = is_float(from) ? s.f : static_cast<double>(s.i);
    r.f = to == DType::kF64 ? v : static_cast<double>(static_cast<float>(v));
  } else if (to == DType::kBool) {
    r.i = is_float(from) ? (s.f != 0.0) : (s.i != 0);
  } else {
    r.i = wrap_int(is_float(from) ? float_to_int(s.f) : s.i, to);
  }
  return r;
}

Scalar scalar_unary(UnaryOp op, DType t, Scalar x) {
  Scalar r;
  if (!is_float(t)) {
    switch (op) {
      case UnaryOp::kNeg: r.i = -x.i; break;
      case UnaryOp::kNot: r.i = !x.i; break;
      case UnaryOp::kAbs: r.i = x.i < 0 ? -x.i : x.i; break;
      case UnaryOp::kSign: r.i = (x.i > 0) - (x.i < 0); break;
      case UnaryOp::kIsNaN: case UnaryOp::kIsInf: r.i = 0; return r;
      default: {  // float functions on integers: compute in double, truncate
        Scalar f{static_cast<double>(x.i), 0};
        return scalar_cast(scalar_unary(op, DType::kF64, f), DType::kF64, t);
      }
    }
    r.i = wrap_int(r.i, t);
    return r;
  }
  const double v = x.f;
  switch (op) {
    case UnaryOp::kNeg: r.f = -v; break;
    case UnaryOp::kNot: r.i = v == 0.0; return r;
    case UnaryOp::kAbs: r.f = std::fabs(v); break;
    case UnaryOp::kExp: r.f = std::exp(v); break;
    case UnaryOp::kLog: r.f = std::log(v); break;
    case UnaryOp::kSqrt: r.f = std::sqrt(v); break;
    case UnaryOp::kErf: r.f = std::erf(v); break;
    case UnaryOp::kTanh: r.f = std::tanh(v); break;
    case UnaryOp::kSigmoid: r.f = 1.0 / (1.0 + std::exp(-v)); break;
    case UnaryOp::kFloor: r.f = std::floor(v); break;
    case UnaryOp::kCeil: r.f = std::ceil(v); break;
    case UnaryOp::kRound: r.f = std::nearbyint(v); break;
    case UnaryOp::kSin: r.f = std::sin(v); break;
    case UnaryOp::kCos: r.f = std::cos(v); break;
    case UnaryOp::kTan: r.f = std::tan(v); break;
    case UnaryOp::kAsin: r.f = std::asin(v); break;
    case UnaryOp::kAcos: r.f = std::acos(v); break;
    case UnaryOp::kAtan: r.f = std::atan(v); break;
    case UnaryOp::kSinh: r.f = std::sinh(v); break;
    case UnaryOp::kCosh: r.f = std::cosh(v); break;
    case UnaryOp::kAsinh: r.f = std::asinh(v); break;
    case UnaryOp::kAcosh: r.f = std::acosh(v); break;
    case UnaryOp::kAtanh: r.f = std::atanh(v); break;
    case UnaryOp::kSign: r.f = (v > 0) - (v < 0); break;
    case UnaryOp::kIsNaN: r.i = std::isnan(v); return r;
    case UnaryOp::kIsInf: r.i = std::isinf(v); return r;
    case UnaryOp::kSoftplus: r.f = std::log1p(std::exp(v)); break;
  }
  return scalar_cast(r, DType::kF64, t);
}

Scalar scalar_binary(BinaryOp op, DType t, Scalar a, Scalar b) {
  Scalar r;
  if (is_comparison(op)) {
    double x = scalar_as_double(a, t), y = scalar_as_double(b, t);
    bool ints = !is_float(t);
    switch (op) {
      case BinaryOp::kEq: r.i = ints ? a.i == b.i : x == y; break;
      case BinaryOp::kNe: r.i = ints ? a.i != b.i : x != y; break;
      case BinaryOp::kLt: r.i = ints ? a.i < b.i : x < y; break;
      case BinaryOp::kLe: r.i = ints ? a.i <= b.i : x <= y; break;
      case BinaryOp::kGt: r.i = ints ? a.i > b.i : x > y; break;
      case BinaryOp::kGe: r.i = ints ? a.i >= b.i : x >= y; break;
      default: break;
    }
    return r;
  }
  if (is_float(t)) {
    const double x = a.f, y = b.f;
    switch (op) {
      case BinaryOp::kAdd: r.f = x + y; break;
      case BinaryOp::kSub: r.f = x - y; break;
      case BinaryOp::kMul: r.f = x * y; break;
      case BinaryOp::kDiv: r.f = x / y; break;
      case BinaryOp::kFloorDiv: r.f = std::floor(x / y); break;
      case BinaryOp::kFloorMod: {
        double m = std::fmod(x, y);
        r.f = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
        break;
      }
      case BinaryOp::kRem: r.f = std::fmod(x, y); break;
      case BinaryOp::kMin: r.f = std::isnan(x) || std::isnan(y) ? NAN : std::fmin(x, y); break;
      case BinaryOp::kMax: r.f = std::isnan(x) || std::isnan(y) ? NAN : std::fmax(x, y); break;
      case BinaryOp::kPow: r.f = std::pow(x, y); break;
      case BinaryOp::kAnd: r.f = (x != 0) && (y != 0); break;
      case BinaryOp::kOr: r.f = (x != 0) || (y != 0); break;
      case BinaryOp::kXor: r.f = (x != 0) != (y != 0); break;
      default: r.f = 0; break;  // bitwise ops are integer-only; the verifier rejects them
    }
    return scalar_cast(r, DType::kF64, t);
  }
  const int64_t x = a.i, y = b.i;
  switch (op) {
    case BinaryOp::kAdd: r.i = x + y; break;
    case BinaryOp::kSub: r.i = x - y; break;
    case BinaryOp::kMul: r.i = x * y; break;
    // Integer division by zero and INT_MIN / -1 follow expr.h's rule; uint64
    // values (stored as their bit pattern) divide unsigned, where both are exact.
    case BinaryOp::kDiv:
    case BinaryOp::kFloorDiv:
      r.i = t == DType::kU64 ? unsigned_div(x, y) : op == BinaryOp::kDiv ? trunc_div(x, y) : floor_div(x, y);
      break;
    case BinaryOp::kRem:
    case BinaryOp::kFloorMod:
      r.i = t == DType::kU64 ? unsigned_rem(x, y) : op == BinaryOp::kRem ? trunc_rem(x, y) : floor_mod(x, y);
      break;
    case BinaryOp::kMin: r.i = x < y ? x : y; break;
    case BinaryOp::kMax: r.i = x > y ? x : y; break;
    case BinaryOp::kPow: {
      int64_t p = 1;
      for (int64_t k = 0; k < y && k < 64; ++k) p *= x;
      r.i = y < 0 ? 0 : p;
      break;
    }
    case BinaryOp::kAnd: r.i = (x != 0) && (y != 0); break;
    case BinaryOp::kOr: r.i = (x != 0) || (y != 0); break;
    case BinaryOp::kXor: r.i = (x != 0) != (y != 0); break;
    case BinaryOp::kBitAnd: r.i = x & y; break;
    case BinaryOp::kBitOr: r.i = x | y; break;
    case BinaryOp::kBitXor: r.i = x ^ y; break;
    case BinaryOp::kShl: r.i = static_cast<int64_t>(static_cast<uint64_t>(x) << (y & 63)); break;
    case BinaryOp::kShr: r.i = static_cast<int64_t>(static_cast<uint64_t>(x) >> (y & 63)); break;
    default: break;
  }
  r.i = wrap_int(r.i, t);
  return r;
}

}  // namespace tilegraph
