#include "codegen/lowering/split_div_mod_loops.h"

#include <optional>

namespace tilegraph::codegen {

namespace {

bool is_div(const Expr& e) {
  return e->kind == ExprKind::kBinary && (e->binary_op == BinaryOp::kDiv || e->binary_op == BinaryOp::kFloorDiv);
}
bool is_mod(const Expr& e) {
  return e->kind == ExprKind::kBinary && (e->binary_op == BinaryOp::kRem || e->binary_op == BinaryOp::kFloorMod);
}

// The one divisor c with which `v` appears as v / c or v % c in e, 0 when v
// appears only bare (or not at all), nullopt when the uses disagree or a
// divisor is not a positive constant.
class DivisorOf {
 public:
  explicit DivisorOf(int v) : v_(v) {}
  void scan(const Expr& e) {
    if (!ok_) return;
    if ((is_div(e) || is_mod(e)) && e->args[0]->kind == ExprKind::kVar && e->args[0]->int_value == v_) {
      int64_t c = 0;
      if (!is_const_int(e->args[1], &c) || c <= 0 || (divisor_ != 0 && divisor_ != c)) {
        ok_ = false;
        return;
      }
      divisor_ = c;
      return;  // its children are v and c
    }
    for (const Expr& a : e->args) scan(a);
  }
  void scan(const Stmt& s) {
    for (const Expr* e : {&s->extent, &s->index, &s->value, &s->cond})
      if (*e) scan(*e);
    for (const CallArg& a : s->args)
      if (a.value) scan(a.value);
    for (const Stmt& c : s->body) scan(c);
  }
  std::optional<int64_t> divisor() const { return ok_ ? std::optional<int64_t>(divisor_) : std::nullopt; }

 private:
  int v_;
  int64_t divisor_ = 0;
  bool ok_ = true;
};

class Splitter {
 public:
  explicit Splitter(Kernel& k) : k_(k) {}

  Stmt stmt(const Stmt& s) {
    std::vector<Stmt> body;
    bool changed = false;
    for (const Stmt& c : s->body) {
      body.push_back(stmt(c));
      changed |= body.back() != c;
    }
    Stmt out = s;
    if (changed) {
      StmtNode n = *s;
      n.body = std::move(body);
      out = std::make_shared<const StmtNode>(std::move(n));
    }
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
        return is_div(x) ? var(vo) : var(vi);
      });
      return replace(split);
    };
    std::function<Stmt(const Stmt&)> rewrite_stmt = [&](const Stmt& t) {
      StmtNode n = *t;
      n.extent = rewrite_expr(n.extent);
      n.index = rewrite_expr(n.index);
      n.value = rewrite_expr(n.value);
      n.cond = rewrite_expr(n.cond);
      for (CallArg& a : n.args) a.value = rewrite_expr(a.value);
      for (Stmt& b : n.body) b = rewrite_stmt(b);
      return std::make_shared<const StmtNode>(std::move(n));
    };
    std::vector<Stmt> body;
    for (const Stmt& b : s->body) body.push_back(rewrite_stmt(b));
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
