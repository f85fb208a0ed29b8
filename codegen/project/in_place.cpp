#include "codegen/project/in_place.h"

#include "codegen/lowering/prefetch_next_tile.h"

namespace tilegraph::codegen {

namespace {

bool reads(const Expr& e, int buffer) {
  return e && any_node(e, [&](const Expr& n) { return n->kind == ExprKind::kLoad && n->int_value == buffer; });
}

// The float micro-kernel's prefetch hint (tg_sgemm::prefetch_tile, or its
// wide-panel form tg_sgemm::wide::prefetch_tile) and a block kernel's
// next-tile prefetch (prefetch_next_tile.h): they only bring lines toward
// the caches, so passing them the input is no read.
bool is_prefetch_hint(const std::string& callee) {
  const std::string prefix = "tg_sgemm::", name = "prefetch_tile";
  if (is_prefetch_call(callee)) return true;
  return callee.rfind(prefix, 0) == 0 && callee.size() >= prefix.size() + name.size() &&
         callee.compare(callee.size() - name.size(), name.size(), name) == 0;
}

// Every load of `in` in e is at `index` (one index per load: a flat buffer).
bool reads_only_at(const Expr& e, int in, const Expr& index) {
  return !any_node(e, [&](const Expr& n) {
    return n->kind == ExprKind::kLoad && n->int_value == in && (n->args.size() != 1 || !same_expr(n->args[0], index));
  });
}

bool in_place(const Stmt& s, int in, int out) {
  if (!s) return true;
  switch (s->kind) {
    case StmtKind::kStore:
      if (reads(s->index, in)) return false;
      if (s->buffer != out) return !reads(s->value, in);
      return reads_only_at(s->value, in, s->index);
    case StmtKind::kCall:
      for (const CallArg& a : s->args) {
        if (a.buffer == in && !is_prefetch_hint(s->callee)) return false;
        if (reads(a.value, in)) return false;
      }
      break;
    default:
      if (reads(s->extent, in) || reads(s->cond, in) || reads(s->index, in) || reads(s->value, in)) return false;
      break;
  }
  for (const Stmt& c : s->body)
    if (!in_place(c, in, out)) return false;
  return true;
}

}  // namespace

bool reads_only_in_place(const Kernel& k, int in, int out) { return in != out && in_place(k.body, in, out); }

}  // namespace tilegraph::codegen
