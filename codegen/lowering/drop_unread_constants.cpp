#include "codegen/lowering/drop_unread_constants.h"

#include <vector>

namespace tilegraph::codegen {

namespace {

void mark_read(const Stmt& s, std::vector<bool>& named) {
  auto name = [&](int buffer) {
    if (buffer >= 0 && buffer < static_cast<int>(named.size())) named[buffer] = true;
  };
  name(s->buffer);
  for (const CallArg& a : s->args) name(a.buffer);
  for (const Expr* e : {&s->extent, &s->index, &s->value, &s->cond})
    if (*e)
      visit(*e, [&](const Expr& n) {
        if (n->kind == ExprKind::kLoad) name(static_cast<int>(n->int_value));
      });
  for (const CallArg& a : s->args)
    if (a.value)
      visit(a.value, [&](const Expr& n) {
        if (n->kind == ExprKind::kLoad) name(static_cast<int>(n->int_value));
      });
  for (const Stmt& c : s->body) mark_read(c, named);
}

Stmt renumber(const Stmt& s, const std::vector<int>& to) {
  auto loads = [&](const Expr& e) {
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kLoad) return nullptr;
      ExprNode copy = *n;
      copy.int_value = to[n->int_value];
      return std::make_shared<const ExprNode>(std::move(copy));
    });
  };
  StmtNode n = *s;
  if (n.buffer >= 0) n.buffer = to[n.buffer];
  for (CallArg& a : n.args)
    if (a.buffer >= 0) a.buffer = to[a.buffer];
  for (Expr* e : {&n.extent, &n.index, &n.value, &n.cond})
    if (*e) *e = loads(*e);
  for (CallArg& a : n.args)
    if (a.value) a.value = loads(a.value);
  for (Stmt& c : n.body) c = renumber(c, to);
  return std::make_shared<const StmtNode>(std::move(n));
}

}  // namespace

Kernel drop_unread_constants(const Graph& g, Kernel k) {
  std::vector<bool> named(k.buffers.size(), false);
  mark_read(k.body, named);
  std::vector<int> to(k.buffers.size(), -1);
  std::vector<Buffer> kept;
  for (size_t b = 0; b < k.buffers.size(); ++b) {
    const Buffer& buffer = k.buffers[b];
    const bool unread_constant = !named[b] && buffer.scope == MemoryScope::kGlobal && buffer.tensor >= 0 &&
                                 g.tensor(buffer.tensor).kind == TensorKind::kConstant;
    if (unread_constant) continue;
    to[b] = static_cast<int>(kept.size());
    kept.push_back(buffer);
  }
  if (kept.size() == k.buffers.size()) return k;
  k.buffers = std::move(kept);
  k.body = renumber(k.body, to);
  return k;
}

}  // namespace tilegraph::codegen
