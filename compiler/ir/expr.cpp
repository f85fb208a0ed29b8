#include "compiler/ir/expr.h"

#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/ir/scalar.h"

namespace tilegraph {

const char* expr_kind_name(ExprKind k) {
  switch (k) {
#define TG_CASE(name) case ExprKind::k##name: return #name;
    TG_EXPR_KINDS(TG_CASE)
#undef TG_CASE
  }
  return "?";
}

const char* unary_op_name(UnaryOp op) {
  switch (op) {
#define TG_CASE(name) case UnaryOp::k##name: return #name;
    TG_UNARY_OPS(TG_CASE)
#undef TG_CASE
  }
  return "?";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
#define TG_CASE(name) case BinaryOp::k##name: return #name;
    TG_BINARY_OPS(TG_CASE)
#undef TG_CASE
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::kEq || op == BinaryOp::kNe || op == BinaryOp::kLt ||
         op == BinaryOp::kLe || op == BinaryOp::kGt || op == BinaryOp::kGe;
}

bool is_logical(BinaryOp op) {
  return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
}

namespace {

Expr make(ExprNode node) { return std::make_shared<const ExprNode>(std::move(node)); }

Scalar value_of(const Expr& e) {
  Scalar s;
  if (e->kind == ExprKind::kFloatImm) s.f = e->float_value;
  else s.i = e->int_value;
  return s;
}

Expr imm_of(Scalar s, DType t) {
  return is_float(t) ? float_imm(s.f, t) : int_imm(s.i, t);
}

bool is_const_value(const Expr& e, double v) {
  if (e->kind == ExprKind::kIntImm) return static_cast<double>(e->int_value) == v;
  if (e->kind == ExprKind::kFloatImm) return e->float_value == v;
  return false;
}

}  // namespace

Expr int_imm(int64_t v, DType t) {
  TG_CHECK(!is_float(t), "int_imm of float type");
  ExprNode n{ExprKind::kIntImm, t};
  n.int_value = v;
  return make(std::move(n));
}

Expr float_imm(double v, DType t) {
  TG_CHECK(is_float(t), "float_imm of non-float type");
  ExprNode n{ExprKind::kFloatImm, t};
  n.float_value = v;
  return make(std::move(n));
}

Expr const_of(double v, DType t) { return imm_of(scalar_of(v, t), t); }

Expr var(int id) {
  ExprNode n{ExprKind::kVar, DType::kI64};
  n.int_value = id;
  return make(std::move(n));
}

Expr load(int slot, DType t, std::vector<Expr> indices) {
  ExprNode n{ExprKind::kLoad, t};
  n.int_value = slot;
  n.args = std::move(indices);
  return make(std::move(n));
}

Expr unary(UnaryOp op, Expr x) {
  DType t = (op == UnaryOp::kNot || op == UnaryOp::kIsNaN || op == UnaryOp::kIsInf)
                ? DType::kBool
                : x->dtype;
  if (is_const(x)) {
    // Bool-valued operators (Not, IsNaN, IsInf) leave their result in .i.
    return imm_of(scalar_unary(op, x->dtype, value_of(x)), t);
  }
  ExprNode n{ExprKind::kUnary, t};
  n.unary_op = op;
  n.args = {std::move(x)};
  return make(std::move(n));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  TG_CHECK(a->dtype == b->dtype, "binary ", binary_op_name(op), " of ", dtype_name(a->dtype),
           " and ", dtype_name(b->dtype));
  const DType t = a->dtype;
  const DType result = is_comparison(op) ? DType::kBool : t;
  if (is_const(a) && is_const(b)) {
    Scalar r = scalar_binary(op, t, value_of(a), value_of(b));
    return imm_of(r, result);
  }
  // Identities that hold exactly (also for IEEE floats).
  switch (op) {
    case BinaryOp::kAdd:
      if (!is_float(t) && is_const_value(a, 0)) return b;
      if (!is_float(t) && is_const_value(b, 0)) return a;
      break;
    case BinaryOp::kSub:
      if (!is_float(t) && is_const_value(b, 0)) return a;
      break;
    case BinaryOp::kMul:
      if (is_const_value(a, 1)) return b;
      if (is_const_value(b, 1)) return a;
      if (!is_float(t) && (is_const_value(a, 0) || is_const_value(b, 0))) return int_imm(0, t);
      break;
    case BinaryOp::kDiv:
      if (is_const_value(b, 1)) return a;
      break;
    case BinaryOp::kFloorDiv:  // floor(x / 1) is not x for floats
      if (!is_float(t) && is_const_value(b, 1)) return a;
      break;
    case BinaryOp::kFloorMod:
      if (!is_float(t) && is_const_value(b, 1)) return int_imm(0, t);
      break;
    case BinaryOp::kAnd:
      if (t == DType::kBool && is_const_value(a, 1)) return b;
      if (t == DType::kBool && is_const_value(b, 1)) return a;
      break;
    default:
      break;
  }
  ExprNode n{ExprKind::kBinary, result};
  n.binary_op = op;
  n.args = {std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr select(Expr cond, Expr t, Expr f) {
  TG_CHECK(cond->dtype == DType::kBool, "select condition must be bool");
  TG_CHECK(t->dtype == f->dtype, "select branches differ: ", dtype_name(t->dtype), " vs ",
           dtype_name(f->dtype));
  if (is_const(cond)) return cond->int_value ? t : f;
  if (t == f) return t;
  ExprNode n{ExprKind::kSelect, t->dtype};
  n.args = {std::move(cond), std::move(t), std::move(f)};
  return make(std::move(n));
}

Expr guarded_select(Expr cond, Expr t, Expr f) {
  const Expr e = select(std::move(cond), std::move(t), std::move(f));
  if (e->kind != ExprKind::kSelect) return e;
  ExprNode n = *e;
  n.int_value = kGuardedSelect;
  return make(std::move(n));
}

bool is_guarded_select(const Expr& e) { return e->kind == ExprKind::kSelect && e->int_value == kGuardedSelect; }

Expr cast(DType t, Expr x) {
  if (x->dtype == t) return x;
  if (is_const(x)) return imm_of(scalar_cast(value_of(x), x->dtype, t), t);
  ExprNode n{ExprKind::kCast, t};
  n.args = {std::move(x)};
  return make(std::move(n));
}

Expr check_index(Expr x, int64_t dim, int site) {
  TG_CHECK(x->dtype == DType::kI64, "check_index of ", dtype_name(x->dtype));
  TG_CHECK(dim > 0, "check_index of an empty dimension");
  int64_t c;
  if (is_const_int(x, &c) && c >= -dim && c < dim) return int_imm(c < 0 ? c + dim : c);
  ExprNode n{ExprKind::kCheckIndex, DType::kI64};
  n.int_value = site;
  n.args = {std::move(x), int_imm(dim)};
  return make(std::move(n));
}

Expr operator+(Expr a, Expr b) { return binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(BinaryOp::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(BinaryOp::kMul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr operator+(Expr a, int64_t b) { return a + int_imm(b, a->dtype); }
Expr operator-(Expr a, int64_t b) { return a - int_imm(b, a->dtype); }
Expr operator*(Expr a, int64_t b) { return a * int_imm(b, a->dtype); }
Expr floordiv(Expr a, int64_t b) { return binary(BinaryOp::kFloorDiv, a, int_imm(b, a->dtype)); }
Expr floormod(Expr a, int64_t b) { return binary(BinaryOp::kFloorMod, a, int_imm(b, a->dtype)); }
Expr min(Expr a, Expr b) { return binary(BinaryOp::kMin, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(BinaryOp::kMax, std::move(a), std::move(b)); }
Expr lt(Expr a, Expr b) { return binary(BinaryOp::kLt, std::move(a), std::move(b)); }
Expr ge(Expr a, Expr b) { return binary(BinaryOp::kGe, std::move(a), std::move(b)); }
Expr logical_and(Expr a, Expr b) { return binary(BinaryOp::kAnd, std::move(a), std::move(b)); }

std::vector<Expr> conjuncts(const Expr& guard) {
  if (guard->kind == ExprKind::kBinary && guard->binary_op == BinaryOp::kAnd) {
    std::vector<Expr> all = conjuncts(guard->args[0]);
    for (const Expr& c : conjuncts(guard->args[1])) all.push_back(c);
    return all;
  }
  return {guard};
}

Expr in_range(Expr x, int64_t lo, int64_t hi) {
  return logical_and(ge(x, int_imm(lo)), lt(x, int_imm(hi)));
}

bool is_const_int(const Expr& e, int64_t* v) {
  if (e->kind != ExprKind::kIntImm) return false;
  if (v) *v = e->int_value;
  return true;
}

bool is_const(const Expr& e) {
  return e->kind == ExprKind::kIntImm || e->kind == ExprKind::kFloatImm;
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->dtype != b->dtype || a->int_value != b->int_value ||
      a->unary_op != b->unary_op || a->binary_op != b->binary_op ||
      a->args.size() != b->args.size())
    return false;
  if (a->kind == ExprKind::kFloatImm &&
      !(a->float_value == b->float_value ||
        (a->float_value != a->float_value && b->float_value != b->float_value)))
    return false;
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!same_expr(a->args[i], b->args[i])) return false;
  return true;
}

Expr rewrite(const Expr& e, const std::function<Expr(const Expr&)>& rewrite_node) {
  std::vector<Expr> args;
  bool changed = false;
  args.reserve(e->args.size());
  for (const Expr& a : e->args) {
    Expr na = rewrite(a, rewrite_node);
    changed |= na != a;
    args.push_back(std::move(na));
  }
  Expr rebuilt = e;
  if (changed) {
    switch (e->kind) {
      case ExprKind::kLoad: rebuilt = load(static_cast<int>(e->int_value), e->dtype, args); break;
      case ExprKind::kUnary: rebuilt = unary(e->unary_op, args[0]); break;
      case ExprKind::kBinary: rebuilt = binary(e->binary_op, args[0], args[1]); break;
      case ExprKind::kSelect:
        rebuilt = is_guarded_select(e) ? guarded_select(args[0], args[1], args[2]) : select(args[0], args[1], args[2]);
        break;
      case ExprKind::kCast: rebuilt = cast(e->dtype, args[0]); break;
      case ExprKind::kCheckIndex:
        rebuilt = check_index(args[0], e->args[1]->int_value, static_cast<int>(e->int_value));
        break;
      default: TG_CHECK(false, "leaf with args");
    }
  }
  // A constructor may simplify to one of the already rewritten children
  // (x + 0 -> x); that node was visited: rewriting it again would apply a
  // substitution twice.
  for (const Expr& a : args)
    if (changed && rebuilt == a) return rebuilt;
  Expr replaced = rewrite_node(rebuilt);
  return replaced ? replaced : rebuilt;
}

void visit(const Expr& e, const std::function<void(const Expr&)>& visit_node) {
  visit_node(e);
  for (const Expr& a : e->args) visit(a, visit_node);
}

bool any_node(const Expr& e, const std::function<bool(const Expr&)>& pred) {
  if (pred(e)) return true;
  for (const Expr& a : e->args)
    if (any_node(a, pred)) return true;
  return false;
}

Expr substitute_vars(const Expr& e, const std::vector<Expr>& values) {
  return rewrite(e, [&](const Expr& n) -> Expr {
    if (n->kind == ExprKind::kVar && n->int_value < static_cast<int64_t>(values.size()))
      return values[n->int_value];
    return nullptr;
  });
}

int count_loads(const Expr& e, int slot) {
  int n = 0;
  visit(e, [&](const Expr& x) { n += x->kind == ExprKind::kLoad && x->int_value == slot; });
  return n;
}

std::vector<int> count_loads_by_slot(const Expr& e, size_t slots) {
  std::vector<int> counts(slots, 0);
  visit(e, [&](const Expr& x) {
    if (x->kind == ExprKind::kLoad && x->int_value >= 0 && static_cast<size_t>(x->int_value) < slots)
      ++counts[static_cast<size_t>(x->int_value)];
  });
  return counts;
}

bool uses_var(const Expr& e, int id) {
  return any_node(e, [&](const Expr& x) { return x->kind == ExprKind::kVar && x->int_value == id; });
}

bool has_load(const Expr& e) {
  return any_node(e, [](const Expr& n) { return n->kind == ExprKind::kLoad; });
}

bool has_indirect_load(const Expr& e) {
  auto is_load = [](const Expr& m) { return m->kind == ExprKind::kLoad; };
  return any_node(e, [&](const Expr& n) {
    if (!is_load(n)) return false;
    for (const Expr& idx : n->args)
      if (any_node(idx, is_load)) return true;
    return false;
  });
}

std::string to_string(const Expr& e) {
  std::ostringstream out;
  switch (e->kind) {
    case ExprKind::kIntImm: out << e->int_value; break;
    case ExprKind::kFloatImm: out << e->float_value << "f"; break;
    case ExprKind::kVar: out << "v" << e->int_value; break;
    case ExprKind::kLoad:
      out << "load" << e->int_value << "[";
      for (size_t i = 0; i < e->args.size(); ++i) out << (i ? ", " : "") << to_string(e->args[i]);
      out << "]";
      break;
    case ExprKind::kUnary: out << unary_op_name(e->unary_op) << "(" << to_string(e->args[0]) << ")"; break;
    case ExprKind::kBinary:
      out << binary_op_name(e->binary_op) << "(" << to_string(e->args[0]) << ", "
          << to_string(e->args[1]) << ")";
      break;
    case ExprKind::kSelect:
      out << (is_guarded_select(e) ? "guarded_select(" : "select(") << to_string(e->args[0]) << ", " << to_string(e->args[1]) << ", "
          << to_string(e->args[2]) << ")";
      break;
    case ExprKind::kCast: out << dtype_name(e->dtype) << "(" << to_string(e->args[0]) << ")"; break;
    case ExprKind::kCheckIndex:  // without the site: schedule keys (graph_connecting) ignore which node it names
      out << "check(" << to_string(e->args[0]) << ", " << e->args[1]->int_value << ")";
      break;
  }
  return out.str();
}

}  // namespace tilegraph
