#include "codegen/kernel_ir/kernel_ir.h"

#include <sstream>

namespace tilegraph::codegen {

namespace {

Stmt make(StmtNode n) { return std::make_shared<const StmtNode>(std::move(n)); }

void dump(const Kernel& k, const Stmt& s, int depth, std::ostringstream& out) {
  const std::string pad(static_cast<size_t>(depth) * 2, ' ');
  switch (s->kind) {
    case StmtKind::kFor:
      out << pad << "for " << k.var_names[s->var] << " < " << to_string(s->extent)
          << (s->loop == LoopKind::kParallel ? " parallel" : s->loop == LoopKind::kVectorized ? " vector"
              : s->loop == LoopKind::kUnrolled ? " unrolled" : s->loop == LoopKind::kBlocks ? " blocks"
              : s->loop == LoopKind::kThreads ? " threads" : s->loop == LoopKind::kReduce ? " reduce" : "")
          << (s->run_var >= 0 ? " run " + k.var_names[s->run_var] : "")
          << (s->grain > 1 ? " grain " + std::to_string(s->grain) : "") << "\n";
      for (const Stmt& c : s->body) dump(k, c, depth + 1, out);
      break;
    case StmtKind::kStore:
      out << pad << k.buffers[s->buffer].name << "[" << to_string(s->index) << "] = " << to_string(s->value) << "\n";
      break;
    case StmtKind::kSeq:
      for (const Stmt& c : s->body) dump(k, c, depth, out);
      break;
    case StmtKind::kAllocate:
      out << pad << (k.buffers[s->buffer].scope == MemoryScope::kShared ? "shared " : "local ")
          << k.buffers[s->buffer].name << "[" << k.buffers[s->buffer].elements << "]\n";
      for (const Stmt& c : s->body) dump(k, c, depth, out);
      break;
    case StmtKind::kIf:
      out << pad << "if " << to_string(s->cond) << "\n";
      for (const Stmt& c : s->body) dump(k, c, depth + 1, out);
      break;
    case StmtKind::kBarrier:
      out << pad << "barrier\n";
      break;
    case StmtKind::kCall:
      out << pad << "call " << s->callee << "(";
      for (size_t i = 0; i < s->args.size(); ++i)
        out << (i ? ", " : "") << (s->args[i].buffer >= 0 ? "&" + k.buffers[s->args[i].buffer].name + "[" : "")
            << to_string(s->args[i].value) << (s->args[i].buffer >= 0 ? "]" : "");
      out << ")\n";
      break;
    case StmtKind::kWarpMma:
      out << pad << "warp_mma_m16n8k16";
      for (const CallArg& a : s->args) out << " " << k.buffers[a.buffer].name << "+" << to_string(a.value);
      out << "\n";
      break;
  }
}

}  // namespace

Stmt make_for(int var, Expr extent, LoopKind loop, std::vector<Stmt> body, int collapse) {
  StmtNode n{StmtKind::kFor};
  n.var = var;
  n.extent = std::move(extent);
  n.loop = loop;
  n.collapse = collapse;
  n.body = std::move(body);
  return make(std::move(n));
}

Stmt make_parallel_for(int var, Expr extent, std::vector<Stmt> body, int collapse, int run_var, int64_t grain) {
  StmtNode n{StmtKind::kFor};
  n.var = var;
  n.extent = std::move(extent);
  n.loop = LoopKind::kParallel;
  n.collapse = collapse;
  n.run_var = run_var;
  n.grain = grain;
  n.body = std::move(body);
  return make(std::move(n));
}

Stmt make_store(int buffer, Expr index, Expr value) {
  StmtNode n{StmtKind::kStore};
  n.buffer = buffer;
  n.index = std::move(index);
  n.value = std::move(value);
  return make(std::move(n));
}

Stmt make_seq(std::vector<Stmt> body) {
  StmtNode n{StmtKind::kSeq};
  n.body = std::move(body);
  return make(std::move(n));
}

Stmt make_allocate(int buffer, std::vector<Stmt> body) {
  StmtNode n{StmtKind::kAllocate};
  n.buffer = buffer;
  n.body = std::move(body);
  return make(std::move(n));
}

Stmt make_if(Expr cond, std::vector<Stmt> body) {
  StmtNode n{StmtKind::kIf};
  n.cond = std::move(cond);
  n.body = std::move(body);
  return make(std::move(n));
}

Stmt make_barrier() { return make(StmtNode{StmtKind::kBarrier}); }

Stmt make_call(std::string callee, std::vector<CallArg> args) {
  StmtNode n{StmtKind::kCall};
  n.callee = std::move(callee);
  n.args = std::move(args);
  return make(std::move(n));
}

Stmt rewrite_stmt_exprs(const Stmt& s, const std::function<Expr(const Expr&)>& f) {
  StmtNode n = *s;
  auto apply = [&](Expr& e) {
    if (e) e = f(e);
  };
  apply(n.extent);
  apply(n.index);
  apply(n.value);
  apply(n.cond);
  for (CallArg& a : n.args) apply(a.value);
  for (Stmt& b : n.body) b = rewrite_stmt_exprs(b, f);
  return std::make_shared<const StmtNode>(std::move(n));
}

void visit_stmt_exprs(const Stmt& s, const std::function<void(const Expr&)>& f) {
  for (const Expr* e : {&s->extent, &s->index, &s->value, &s->cond})
    if (*e) f(*e);
  for (const CallArg& a : s->args)
    if (a.value) f(a.value);
  for (const Stmt& c : s->body) visit_stmt_exprs(c, f);
}

Stmt map_body(const Stmt& s, const std::function<Stmt(const Stmt&)>& f) {
  std::vector<Stmt> body;
  bool changed = false;
  for (const Stmt& c : s->body) {
    body.push_back(f(c));
    changed |= body.back() != c;
  }
  if (!changed) return s;
  StmtNode n = *s;
  n.body = std::move(body);
  return std::make_shared<const StmtNode>(std::move(n));
}

Stmt make_warp_mma(CallArg a, CallArg b, CallArg c) {
  StmtNode n{StmtKind::kWarpMma};
  n.args = {std::move(a), std::move(b), std::move(c)};
  return make(std::move(n));
}

std::string to_string(const Kernel& k) {
  std::ostringstream out;
  out << "kernel " << k.name << "\n";
  dump(k, k.body, 1, out);
  return out.str();
}

}  // namespace tilegraph::codegen
