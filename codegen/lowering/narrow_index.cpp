#include "codegen/lowering/narrow_index.h"

#include <cstdint>
#include <limits>
#include <memory>

namespace tilegraph::codegen {

namespace {

bool fits_i32(const Interval& b) {
  return b.within(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
}

bool narrowable_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kRem:
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod:
    case BinaryOp::kMin:
    case BinaryOp::kMax:
    case BinaryOp::kEq:
    case BinaryOp::kNe:
    case BinaryOp::kLt:
    case BinaryOp::kLe:
    case BinaryOp::kGt:
    case BinaryOp::kGe:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
      return true;
    default:
      return false;
  }
}

// The node with new args and, for an int64 node, int32 type. Copied rather
// than rebuilt: the builders would fold what the int64 expression already
// folded, and the node's meaning is the same at either width once its
// values fit.
Expr with_args(const Expr& e, std::vector<Expr> args) {
  auto copy = std::make_shared<ExprNode>(*e);
  copy->args = std::move(args);
  if (copy->dtype == DType::kI64) copy->dtype = DType::kI32;
  return copy;
}

}  // namespace

Expr narrow_index_to_i32(const Expr& e, const std::vector<Interval>& var_bounds) {
  if (e->dtype != DType::kI64 && e->dtype != DType::kBool) return nullptr;
  if (e->dtype == DType::kI64 && !fits_i32(bound_of(e, var_bounds))) return nullptr;
  switch (e->kind) {
    case ExprKind::kIntImm:
      return e->dtype == DType::kBool ? e : int_imm(e->int_value, DType::kI32);
    case ExprKind::kVar:
      return e->dtype == DType::kI64 ? cast(DType::kI32, e) : nullptr;
    case ExprKind::kBinary:
    case ExprKind::kUnary:
    case ExprKind::kSelect: {
      if (e->kind == ExprKind::kBinary && !narrowable_op(e->binary_op)) return nullptr;
      if (e->kind == ExprKind::kUnary && e->unary_op != UnaryOp::kNot) return nullptr;
      std::vector<Expr> args;
      for (const Expr& a : e->args) {
        Expr n = narrow_index_to_i32(a, var_bounds);
        if (!n) return nullptr;
        args.push_back(std::move(n));
      }
      return with_args(e, std::move(args));
    }
    default:
      return nullptr;
  }
}

}  // namespace tilegraph::codegen
