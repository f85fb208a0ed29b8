#include "codegen/kernel_ir/emulate_threads.h"

#include <map>

#include "compiler/ir/error.h"

namespace tilegraph::codegen {

namespace {

class Expander {
 public:
  explicit Expander(Kernel& k) : k_(k) {}

  // Marks block-level Local allocations and moves them into the arena.
  Stmt rewrite_stmt(const Stmt& s, int thread_var) {
    StmtNode n = *s;
    if (n.kind == StmtKind::kAllocate && thread_var < 0 && k_.buffers[n.buffer].scope == MemoryScope::kLocal) {
      Buffer& b = k_.buffers[n.buffer];
      expanded_[n.buffer] = b.elements;
      const int64_t size = static_cast<int64_t>(sizeof(double)) * b.elements * k_.threads;
      b.offset = (k_.shared_bytes + 15) / 16 * 16;
      b.scope = MemoryScope::kShared;
      b.elements *= k_.threads;  // thread t's copy at [t * per-thread values, ...)
      k_.shared_bytes = b.offset + size;
    }
    if (n.kind == StmtKind::kFor && n.loop == LoopKind::kThreads) thread_var = n.var;
    if (n.kind == StmtKind::kStore && expanded_.count(n.buffer)) n.index = per_thread(n.buffer, n.index, thread_var);
    if (n.value) n.value = rewrite_loads(n.value, thread_var);
    if (n.cond) n.cond = rewrite_loads(n.cond, thread_var);
    for (Stmt& c : n.body) c = rewrite_stmt(c, thread_var);
    return std::make_shared<const StmtNode>(std::move(n));
  }

 private:
  Expr per_thread(int buffer, const Expr& index, int thread_var) {
    TG_CHECK(thread_var >= 0, "per-thread buffer ", k_.buffers[buffer].name, " used outside a thread loop");
    return var(thread_var) * expanded_.at(buffer) + index;
  }

  Expr rewrite_loads(const Expr& e, int thread_var) {
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kLoad || !expanded_.count(static_cast<int>(n->int_value))) return nullptr;
      return load(static_cast<int>(n->int_value), n->dtype, {per_thread(static_cast<int>(n->int_value), n->args[0], thread_var)});
    });
  }

  Kernel& k_;
  std::map<int, int64_t> expanded_;  // buffer -> its values per thread
};

}  // namespace

Kernel expand_thread_locals(const Kernel& k) {
  if (k.threads <= 1 || k.grid == 0) return k;
  Kernel out = k;
  out.body = Expander(out).rewrite_stmt(k.body, -1);
  return out;
}

}  // namespace tilegraph::codegen
