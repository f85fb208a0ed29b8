#include "codegen/lowering/split_piecewise_loops.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/interval.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

// x with Var(v) replaced by `value`.
Expr with_var(const Expr& x, int v, const Expr& value) {
  return rewrite(x, [&](const Expr& n) -> Expr {
    return n->kind == ExprKind::kVar && n->int_value == v ? value : nullptr;
  });
}

// f0 when x, an expression of v alone, is v + f0 over [0, extent); nullopt
// otherwise (another var, a load, a clamp or a slope other than 1).
std::optional<int64_t> offset_of_v(const Expr& x, int v, int64_t extent) {
  if (!uses_var(x, v) || has_load(x) ||
      any_node(x, [&](const Expr& n) { return n->kind == ExprKind::kVar && n->int_value != v; }))
    return std::nullopt;
  int64_t at[3];
  const int64_t points[3] = {0, 1, extent - 1};
  for (int i = 0; i < 3; ++i)
    if (!is_const_int(simplify(with_var(x, v, int_imm(points[i])), {}), &at[i])) return std::nullopt;
  if (at[1] - at[0] != 1 || at[2] - at[0] != extent - 1) return std::nullopt;
  return at[0];
}

// The values of v in (0, extent) at which some comparison, min or max of
// `v + c` against a constant changes its outcome.
class CutPoints {
 public:
  CutPoints(int v, int64_t extent) : v_(v), extent_(extent) {}

  void scan(const Stmt& s) {
    visit_stmt_exprs(s, [&](const Expr& e) {
      visit(e, [&](const Expr& n) {
        if (n->kind == ExprKind::kBinary && n->args.size() == 2 && is_integer(n->args[0]->dtype)) add(n);
      });
    });
  }
  const std::set<int64_t>& cuts() const { return cuts_; }

 private:
  void add(const Expr& e) {
    BinaryOp op = e->binary_op;
    const bool is_min_max = op == BinaryOp::kMin || op == BinaryOp::kMax;
    if (!is_min_max && !is_comparison(op)) return;
    Expr x = e->args[0];
    int64_t k = 0;
    if (!is_const_int(e->args[1], &k)) {
      if (!is_const_int(e->args[0], &k)) return;
      x = e->args[1];
      // k OP x as x OP' k (min and max are symmetric).
      if (op == BinaryOp::kLt) op = BinaryOp::kGt;
      else if (op == BinaryOp::kGt) op = BinaryOp::kLt;
      else if (op == BinaryOp::kLe) op = BinaryOp::kGe;
      else if (op == BinaryOp::kGe) op = BinaryOp::kLe;
    }
    const std::optional<int64_t> c = offset_of_v(x, v_, extent_);
    if (!c) return;
    // x < k holds for v < k - c; x <= k for v < k + 1 - c; min(x, k) is x
    // up to x = k, max(x, k) is x from x = k on.
    switch (op) {
      case BinaryOp::kLt: case BinaryOp::kGe: case BinaryOp::kMax: cut(k - *c); break;
      case BinaryOp::kLe: case BinaryOp::kGt: case BinaryOp::kMin: cut(k + 1 - *c); break;
      default: cut(k - *c); cut(k + 1 - *c); break;  // Eq, Ne
    }
  }
  void cut(int64_t at) {
    if (at > 0 && at < extent_) cuts_.insert(at);
  }

  int v_;
  int64_t extent_;
  std::set<int64_t> cuts_;
};

// Where a vectorized loop's first or last few iterations clamp an index:
// max(2 * v + r - 1, 0) of a stride-2, padded window (ResNet's max pool)
// is inactive from v = 1 on, whatever the outer r. Every lane evaluates the
// clamp, so the index is not affine in v and the compiler gathers. Peeling
// the iterations where it may act leaves a loop the simplifier proves
// clamp-free: one strided (permuted) load per vector. The peel points are
// found by interval bounds at single values of v, so any expression of v
// and outer vars qualifies; a wrong guess only costs a split.
class ClampPeels {
 public:
  ClampPeels(int v, int64_t extent, const std::vector<Interval>& bounds) : v_(v), extent_(extent), bounds_(bounds) {}

  void scan(const Stmt& s) {
    visit_stmt_exprs(s, [&](const Expr& e) {
      visit(e, [&](const Expr& n) {
        if (n->kind == ExprKind::kBinary && n->args.size() == 2 && is_integer(n->args[0]->dtype) &&
            (n->binary_op == BinaryOp::kMin || n->binary_op == BinaryOp::kMax))
          add(n);
      });
    });
  }
  int64_t front() const { return front_; }  // iterations [0, front) peeled
  int64_t back() const { return back_; }    // iterations [extent - back, extent) peeled

 private:
  void add(const Expr& e) {
    int64_t k = 0;
    Expr x = e->args[0];
    if (!is_const_int(e->args[1], &k)) {
      if (!is_const_int(e->args[0], &k)) return;
      x = e->args[1];
    }
    if (!uses_var(x, v_) || has_load(x)) return;
    // The clamp is inactive at v when every value of x there is on x's side.
    const bool is_max = e->binary_op == BinaryOp::kMax;
    auto inactive = [&](int64_t at) {
      const Interval b = bound_of(with_var(x, v_, int_imm(at)), bounds_);
      return is_max ? b.lo >= k : b.hi <= k;
    };
    // Peel at most kMinPieceRun - 1 iterations at the one end where it may
    // act; the rest must be clamp-free (an index monotonic in v).
    const bool at_head = !inactive(0), at_tail = !inactive(extent_ - 1);
    if (at_head == at_tail) return;  // nowhere, or at both ends
    for (int64_t n = 1; n < kMinPieceRun && n < extent_; ++n) {
      if (at_head && inactive(n)) {
        front_ = std::max(front_, n);
        return;
      }
      if (at_tail && inactive(extent_ - 1 - n)) {
        back_ = std::max(back_, n);
        return;
      }
    }
  }

  int v_;
  int64_t extent_;
  const std::vector<Interval>& bounds_;
  int64_t front_ = 0, back_ = 0;
};

class Splitter {
 public:
  explicit Splitter(Kernel& k) : k_(k), bounds_(k.var_names.size()) {}

  Stmt stmt(const Stmt& s) {
    const std::optional<Interval> saved = enter(s);
    const Stmt out = map_body(s, [&](const Stmt& c) { return stmt(c); });
    if (saved) bound(s->var) = *saved;
    if (Stmt split = try_split(out)) return split;
    return out;
  }

 private:
  // Binds a For's var to [0, extent) while its body is visited; returns the
  // bound to restore after it (none for other statements).
  std::optional<Interval> enter(const Stmt& s) {
    int64_t extent = 0;
    if (s->kind != StmtKind::kFor || s->var < 0 || !is_const_int(s->extent, &extent) || extent <= 0)
      return std::nullopt;
    const Interval saved = bound(s->var);
    bound(s->var) = Interval::range(extent);
    return saved;
  }

  Interval& bound(int v) {
    if (static_cast<size_t>(v) >= bounds_.size()) bounds_.resize(static_cast<size_t>(v) + 1);
    return bounds_[static_cast<size_t>(v)];
  }

  Stmt try_split(const Stmt& s) {
    if (s->kind != StmtKind::kFor || (s->loop != LoopKind::kVectorized && s->loop != LoopKind::kReduce)) return nullptr;
    int64_t extent = 0;
    if (!is_const_int(s->extent, &extent)) return nullptr;
    std::vector<int64_t> starts = piece_starts(s, extent);
    if (starts.size() < 2) starts = peel_starts(s, extent);
    if (starts.size() < 2) return nullptr;
    const std::string name = k_.var_names[static_cast<size_t>(s->var)];  // a copy: push_back below may move the names
    std::vector<Stmt> pieces;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t end = i + 1 < starts.size() ? starts[i + 1] : extent;
      const int piece = static_cast<int>(k_.var_names.size());
      k_.var_names.push_back(unique_name(name + "_s" + std::to_string(i)));
      bound(piece) = Interval::range(end - starts[i]);
      const Expr value = starts[i] == 0 ? var(piece) : var(piece) + int_imm(starts[i]);
      std::vector<Stmt> body;
      for (const Stmt& b : s->body) {
        Stmt moved = rewrite_stmt_exprs(b, [&](const Expr& e) { return with_var(e, s->var, value); });
        if (Stmt simple = simplified(moved)) body.push_back(simple);
      }
      pieces.push_back(make_for(piece, int_imm(end - starts[i]), s->loop, std::move(body)));
    }
    return make_seq(std::move(pieces));
  }

  // `base`, or base_2, base_3, ... where the kernel has it already (a loop
  // split in each branch of an If: the same var name twice).
  std::string unique_name(const std::string& base) const {
    auto taken = [&](const std::string& n) {
      return std::find(k_.var_names.begin(), k_.var_names.end(), n) != k_.var_names.end();
    };
    std::string name = base;
    for (int i = 2; taken(name); ++i) name = base + "_" + std::to_string(i);
    return name;
  }

  // The pieces' starts where s's body switches between Concat pieces
  // (CutPoints), each at least kMinPieceRun long; {0} when none.
  std::vector<int64_t> piece_starts(const Stmt& s, int64_t extent) const {
    if (extent < 2 * kMinPieceRun) return {0};
    CutPoints points(s->var, extent);
    for (const Stmt& c : s->body) points.scan(c);
    std::vector<int64_t> starts = {0};
    starts.insert(starts.end(), points.cuts().begin(), points.cuts().end());
    if (static_cast<int64_t>(starts.size()) > kMaxPieces) return {0};
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t end = i + 1 < starts.size() ? starts[i + 1] : extent;
      if (end - starts[i] < kMinPieceRun) return {0};
    }
    return starts;
  }

  // Vectorized loops only: the starts of a clamped head, the clamp-free
  // middle (at least kMinPieceRun long) and a clamped tail (ClampPeels);
  // {0} when nothing is peeled.
  std::vector<int64_t> peel_starts(const Stmt& s, int64_t extent) const {
    if (s->loop != LoopKind::kVectorized) return {0};
    ClampPeels peels(s->var, extent, bounds_);
    for (const Stmt& c : s->body) peels.scan(c);
    if (extent - peels.front() - peels.back() < kMinPieceRun) return {0};
    std::vector<int64_t> starts = {0};
    if (peels.front() > 0) starts.push_back(peels.front());
    if (peels.back() > 0) starts.push_back(extent - peels.back());
    return starts;
  }

  // s with its expressions simplified under the loop bounds (its own loops'
  // included); an If whose condition became a constant is its body or
  // nothing (nullptr).
  Stmt simplified(const Stmt& s) {
    const std::optional<Interval> saved = enter(s);
    StmtNode n = *s;
    for (Expr* e : {&n.index, &n.value, &n.cond})
      if (*e) *e = simplify(*e, bounds_);
    for (CallArg& a : n.args)
      if (a.value) a.value = simplify(a.value, bounds_);
    std::vector<Stmt> body;
    for (const Stmt& c : s->body)
      if (Stmt simple = simplified(c)) body.push_back(simple);
    n.body = std::move(body);
    if (saved) bound(s->var) = *saved;
    int64_t taken = 0;
    if (n.kind == StmtKind::kIf && is_const_int(n.cond, &taken))
      return taken ? make_seq(std::move(n.body)) : nullptr;
    return std::make_shared<const StmtNode>(std::move(n));
  }

  Kernel& k_;
  std::vector<Interval> bounds_;
};

}  // namespace

Kernel split_piecewise_loops(Kernel k) {
  if (!k.body) return k;
  Splitter splitter(k);
  k.body = splitter.stmt(k.body);
  return k;
}

}  // namespace tilegraph::codegen
