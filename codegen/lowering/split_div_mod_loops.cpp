#include "codegen/lowering/split_div_mod_loops.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace tilegraph::codegen {

namespace {

bool is_div(const Expr& e) {
  return e->kind == ExprKind::kBinary && (e->binary_op == BinaryOp::kDiv || e->binary_op == BinaryOp::kFloorDiv);
}
bool is_mod(const Expr& e) {
  return e->kind == ExprKind::kBinary && (e->binary_op == BinaryOp::kRem || e->binary_op == BinaryOp::kFloorMod);
}

// The divisors c with which `v` appears as v / c or v % c in e: their
// smallest, c0, when it divides all the others (a 2 x 2 patch merge reads
// [.., 2, .., 2, d] as 4d columns: v / d % 2, v / 2d and v % d), 0 when v
// appears only bare (or not at all), nullopt when the uses disagree or a
// divisor is not a positive constant.
class DivisorOf {
 public:
  explicit DivisorOf(int v) : v_(v) {}
  void scan(const Expr& e) {
    if (!ok_) return;
    if ((is_div(e) || is_mod(e)) && e->args[0]->kind == ExprKind::kVar && e->args[0]->int_value == v_) {
      int64_t c = 0;
      if (!is_const_int(e->args[1], &c) || c <= 0) {
        ok_ = false;
        return;
      }
      divisors_.push_back(c);
      return;  // its children are v and c
    }
    for (const Expr& a : e->args) scan(a);
  }
  void scan(const Stmt& s) {
    visit_stmt_exprs(s, [&](const Expr& e) { scan(e); });
  }
  std::optional<int64_t> divisor() const {
    if (!ok_) return std::nullopt;
    if (divisors_.empty()) return 0;
    const int64_t c0 = *std::min_element(divisors_.begin(), divisors_.end());
    for (int64_t c : divisors_)
      if (c % c0 != 0) return std::nullopt;
    return c0;
  }

 private:
  int v_;
  std::vector<int64_t> divisors_;
  bool ok_ = true;
};

class Splitter {
 public:
  explicit Splitter(Kernel& k) : k_(k) {}

  Stmt stmt(const Stmt& s) {
    const Stmt out = map_body(s, [&](const Stmt& c) { return stmt(c); });
    if (Stmt split = try_split(out)) return split;
    return out;
  }

 private:
  Stmt try_split(const Stmt& s) {
    if (s->kind != StmtKind::kFor || (s->loop != LoopKind::kVectorized && s->loop != LoopKind::kReduce)) return nullptr;
    int64_t extent = 0;
    if (!is_const_int(s->extent, &extent)) return nullptr;
    DivisorOf d(s->var);
    for (const Stmt& c : s->body) d.scan(c);
    const std::optional<int64_t> c = d.divisor();
    if (!c || *c == 0 || *c < kMinSplitRun || *c >= extent || extent % *c != 0) return nullptr;
    const std::string name = k_.var_names[static_cast<size_t>(s->var)];  // a copy: push_back below may move the names
    const int vo = static_cast<int>(k_.var_names.size());
    k_.var_names.push_back(name + "_o");
    const int vi = static_cast<int>(k_.var_names.size());
    k_.var_names.push_back(name + "_i");
    auto replace = [&](const Expr& e) {
      return rewrite(e, [&](const Expr& x) -> Expr {
        if (x->kind == ExprKind::kVar && x->int_value == s->var) return var(vo) * *c + var(vi);
        return nullptr;
      });
    };
    // Rewrites the div/mod nodes first (their operand is still v), then bare v.
    auto rewrite_expr = [&](const Expr& e) -> Expr {
      if (!e) return e;
      const Expr split = rewrite(e, [&](const Expr& x) -> Expr {
        const bool of_v = (is_div(x) || is_mod(x)) && x->args[0]->kind == ExprKind::kVar &&
                          x->args[0]->int_value == s->var;
        if (!of_v) return nullptr;
        // v = vo * c0 + vi with vi < c0 and c a multiple of c0 (v >= 0):
        // v / c = vo / (c / c0), v % c = vo % (c / c0) * c0 + vi.
        int64_t divisor = 0;
        is_const_int(x->args[1], &divisor);  // DivisorOf checked it
        const int64_t per = divisor / *c;
        if (is_div(x)) return per == 1 ? var(vo) : binary(x->binary_op, var(vo), int_imm(per));
        return per == 1 ? var(vi) : binary(x->binary_op, var(vo), int_imm(per)) * *c + var(vi);
      });
      return replace(split);
    };
    std::vector<Stmt> body;
    for (const Stmt& b : s->body) body.push_back(rewrite_stmt_exprs(b, rewrite_expr));
    const Stmt inner = make_for(vi, int_imm(*c), s->loop, std::move(body));
    return make_for(vo, int_imm(extent / *c), LoopKind::kSerial, {inner});
  }

  Kernel& k_;
};

}  // namespace

Kernel split_div_mod_loops(Kernel k) {
  if (!k.body) return k;
  Splitter splitter(k);
  k.body = splitter.stmt(k.body);
  return k;
}

}  // namespace tilegraph::codegen
