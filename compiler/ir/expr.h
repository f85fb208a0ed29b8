// Expr: the scalar and index expressions of tilegraph's tensor-expression IR.
//
// Semantics (every consumer — interpreter, printers, simplifier — follows these):
//  * An Expr is an immutable tree; nodes are shared (Expr is a shared_ptr to const).
//  * Var(id) names an axis of the enclosing Op: ids [0, rank) are the output's
//    spatial axes, ids [rank, rank + reduce_rank) its reduce axes. Vars are int64.
//  * Load(slot, indices...) reads element `indices` of the Op's input `slot`.
//    Indices are int64 and must be in bounds whenever the Load is evaluated;
//    out-of-bounds reads (padding, concat) are guarded by Select, which is lazy:
//    only the chosen branch is evaluated. (Kernel IR speculates Selects
//    instead, except those marked guarded: codegen/kernel_ir/kernel_ir.h.)
//  * Index arithmetic is int64 and never overflows for tensors < 2^62 elements.
//    FloorDiv / FloorMod round toward negative infinity (Python semantics);
//    Div on integers truncates toward zero and Rem takes the dividend's sign
//    (C semantics, ONNX Div / Mod fmod=1); Div on floats is IEEE division.
//  * Integer Div, Rem, FloorDiv and FloorMod are total and never trap (a model
//    file is untrusted): x / 0 = 0 and x % 0 = 0; MIN / -1 = MIN (two's
//    complement wrap-around, as Neg) and MIN % -1 = 0, MIN the dtype's minimum.
//    uint64 divides unsigned. Interpreter, constant folding and every printer
//    dialect compute exactly this (compiler/ir/scalar.h, the printer prelude).
//  * Float arithmetic is IEEE in the expression's dtype; the interpreter may
//    evaluate in double and round on store (constant folding only).
//  * CheckIndex(x, dim; site) validates an index read from a runtime tensor
//    (Gather, GatherND, Scatter*...): x in [0, dim) gives x, x in [-dim, 0)
//    gives x + dim (ONNX negative indices); anything else is an error of the
//    run, reported as Graph::index_checks[site] names it (the interpreter
//    throws a UserError; generated code sets a flag that tg_model_run turns
//    into an error) while the value is clamped into [0, dim), so no read
//    leaves the tensor even before the flag is seen. It is never folded away
//    while x may be out of range, and its bounds are [0, dim - 1].
//  * Comparisons and And/Or/Not produce bool; Select's condition is bool.
//  * Cast converts like C++ static_cast (float→int truncates; ONNX Cast
//    semantics for in-range values), to bool means != 0.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"

namespace tilegraph {

// The node kinds, declared once (STYLE.md §1).
#define TG_EXPR_KINDS(X) \
  X(IntImm)              \
  X(FloatImm)            \
  X(Var)                 \
  X(Load)                \
  X(Unary)               \
  X(Binary)              \
  X(Select)              \
  X(Cast)                \
  X(CheckIndex)

enum class ExprKind {
#define TG_ENUM(name) k##name,
  TG_EXPR_KINDS(TG_ENUM)
#undef TG_ENUM
};

#define TG_UNARY_OPS(X) \
  X(Neg)  X(Not)  X(Abs)  X(Exp)  X(Log)  X(Sqrt)  X(Erf)  X(Tanh)  X(Sigmoid) \
  X(Floor) X(Ceil) X(Round) X(Sin) X(Cos) X(Tan) X(Asin) X(Acos) X(Atan) X(Sinh) \
  X(Cosh) X(Asinh) X(Acosh) X(Atanh) X(Sign) X(IsNaN) X(IsInf) X(Softplus)

#define TG_BINARY_OPS(X) \
  X(Add) X(Sub) X(Mul) X(Div) X(FloorDiv) X(FloorMod) X(Rem) X(Min) X(Max) X(Pow) \
  X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(And) X(Or) X(Xor) X(BitAnd) X(BitOr)    \
  X(BitXor) X(Shl) X(Shr)

enum class UnaryOp {
#define TG_ENUM(name) k##name,
  TG_UNARY_OPS(TG_ENUM)
#undef TG_ENUM
};

enum class BinaryOp {
#define TG_ENUM(name) k##name,
  TG_BINARY_OPS(TG_ENUM)
#undef TG_ENUM
};

const char* expr_kind_name(ExprKind k);
const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);
bool is_comparison(BinaryOp op);  // Eq..Ge: result is bool
bool is_logical(BinaryOp op);     // And, Or, Xor on bools

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  DType dtype;
  int64_t int_value = 0;     // IntImm: the value; Var: axis id; Load: input slot;
                             // Select: kGuardedSelect or 0 (guarded_select)
  double float_value = 0.0;  // FloatImm
  UnaryOp unary_op = UnaryOp::kNeg;
  BinaryOp binary_op = BinaryOp::kAdd;
  std::vector<Expr> args;    // Load: indices; Unary: x; Binary: a, b; Select: c, t, f; Cast: x;
                             // CheckIndex: x, IntImm(dim) (int_value: the site)
};

// ---- constructors (fold constants and drop trivial identities like x+0, x*1)
Expr int_imm(int64_t v, DType t = DType::kI64);
Expr float_imm(double v, DType t = DType::kF32);
Expr const_of(double v, DType t);  // IntImm or FloatImm as t demands; bool: v != 0
Expr var(int id);
Expr load(int slot, DType t, std::vector<Expr> indices);
Expr unary(UnaryOp op, Expr x);
Expr binary(BinaryOp op, Expr a, Expr b);
Expr select(Expr cond, Expr t, Expr f);
// A Select whose true branch may read out of bounds where cond is false:
// kernel IR (which speculates plain Selects) evaluates that branch only
// where cond holds. Rebuilding a node (rewrite, simplify) keeps the mark.
constexpr int64_t kGuardedSelect = 1;
Expr guarded_select(Expr cond, Expr t, Expr f);
bool is_guarded_select(const Expr& e);
Expr cast(DType t, Expr x);
// CheckIndex (semantics above): x is an int64 index, dim > 0, site indexes
// Graph::index_checks. A constant x in [-dim, dim) folds to its wrapped value.
Expr check_index(Expr x, int64_t dim, int site);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // Div: IEEE for floats, truncating for integers
Expr operator+(Expr a, int64_t b);
Expr operator-(Expr a, int64_t b);
Expr operator*(Expr a, int64_t b);
Expr floordiv(Expr a, int64_t b);
Expr floormod(Expr a, int64_t b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
// The conjuncts of a guard `a && b && ...` (a non-And expression is its own).
std::vector<Expr> conjuncts(const Expr& guard);
// `lo <= x < hi` for an index x.
Expr in_range(Expr x, int64_t lo, int64_t hi);

bool is_const_int(const Expr& e, int64_t* v = nullptr);
bool is_const(const Expr& e);
bool same_expr(const Expr& a, const Expr& b);  // structural equality

// ---- traversal helpers
// Rebuilds e bottom-up: `rewrite` sees each node after its children were
// rebuilt and returns a replacement or nullptr to keep it. Each original node
// is offered to `rewrite` once; replacements are never revisited. Returns e
// itself (same pointer) when nothing changed (STYLE.md §4).
Expr rewrite(const Expr& e, const std::function<Expr(const Expr&)>& rewrite_node);
// Calls visit on every node, parents before children.
void visit(const Expr& e, const std::function<void(const Expr&)>& visit_node);
// Does any node of e (e itself included) satisfy pred? Stops at the first.
bool any_node(const Expr& e, const std::function<bool(const Expr&)>& pred);
// Replaces Var(id) by values[id] (ids beyond values.size() stay).
Expr substitute_vars(const Expr& e, const std::vector<Expr>& values);
// Number of Load nodes of input `slot` in e (each evaluation site counts).
int count_loads(const Expr& e, int slot);
// count_loads of every slot in [0, slots), in one walk of e (an op's per-slot
// questions must not walk its body once per slot: fused bodies get long).
std::vector<int> count_loads_by_slot(const Expr& e, size_t slots);
// Does e mention Var(id)?
bool uses_var(const Expr& e, int id);
// Does e read memory (contain a Load)?
bool has_load(const Expr& e);
// Does e contain a Load inside an index of another Load (data-dependent index)?
bool has_indirect_load(const Expr& e);

std::string to_string(const Expr& e);  // debug form: "load0[(v0 + 1), v1]"

}  // namespace tilegraph
