#include "codegen/lowering/prefetch_next_tile.h"

#include <memory>
#include <set>
#include <vector>

#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

Stmt with_body(const Stmt& s, std::vector<Stmt> body) {
  auto n = std::make_shared<StmtNode>(*s);
  n->body = std::move(body);
  return n;
}

class NextTilePrefetcher {
 public:
  NextTilePrefetcher(const Kernel& k, int64_t l1_bytes, int64_t l2_bytes)
      : k_(k), l1_bytes_(l1_bytes), l2_bytes_(l2_bytes), bounds_(k.var_names.size(), Interval::everything()) {}

  // The kBlocks nest with its innermost body rewritten; nullptr when k is not
  // a block kernel of one thread per block.
  Stmt run(const Stmt& blocks) {
    if (!blocks || blocks->kind != StmtKind::kFor || blocks->loop != LoopKind::kBlocks || k_.threads != 1) return nullptr;
    std::vector<Stmt> chain{blocks};
    while (static_cast<int>(chain.size()) < blocks->collapse) {
      const Stmt& inner = chain.back();
      if (inner->body.size() != 1 || inner->body[0]->kind != StmtKind::kFor) return nullptr;
      chain.push_back(inner->body[0]);
    }
    for (const Stmt& loop : chain) bound(loop);
    tile_var_ = chain.back()->var;
    Stmt rebuilt = with_body(chain.back(), statements(chain.back()->body, 1));
    for (int i = static_cast<int>(chain.size()) - 2; i >= 0; --i) rebuilt = with_body(chain[i], {rebuilt});
    return changed_ ? rebuilt : nullptr;
  }

 private:
  void bound(const Stmt& loop) {
    int64_t extent = 0;
    if (loop->var >= 0 && loop->var < static_cast<int>(bounds_.size()) && is_const_int(loop->extent, &extent))
      bounds_[loop->var] = Interval::range(extent);
  }

  // A body in program order; each statement sees the inputs the ones before
  // it read. `rows`: how many times the enclosing loops inside the tile run it.
  std::vector<Stmt> statements(const std::vector<Stmt>& body, int64_t rows) {
    std::vector<Stmt> out;
    for (const Stmt& s : body) {
      if (std::optional<Stmt> prefetch = prefetch_before(s, rows)) out.push_back(*prefetch);
      out.push_back(statement(s, rows));
    }
    return out;
  }

  // s with its body rewritten; notes the inputs it reads (a compound
  // statement's body notes its own, statement by statement).
  Stmt statement(const Stmt& s, int64_t rows) {
    if (s->body.empty() || is_run_loop(s)) {
      visit_stmt_exprs(s, [&](const Expr& e) { note_reads(e); });
      return s;
    }
    for (const Expr& own : {s->extent, s->cond})
      if (own) note_reads(own);
    int64_t extent = 1;
    if (s->kind == StmtKind::kFor) {
      if (!is_const_int(s->extent, &extent)) extent = 0;  // unknown: no footprint, no prefetch inside
      bound(s);
    }
    return with_body(s, statements(s->body, rows * extent));
  }

  static bool is_run_loop(const Stmt& s) {
    return s->kind == StmtKind::kFor && (s->loop == LoopKind::kVectorized || s->loop == LoopKind::kReduce);
  }

  void note_reads(const Expr& e) {
    visit(e, [&](const Expr& n) {
      if (n->kind == ExprKind::kLoad) read_.insert(static_cast<int>(n->int_value));
    });
  }

  // The prefetch of the next tile's run for the first input loop s re-reads
  // (read before, not yet prefetched, a contiguous run along s's variable).
  std::optional<Stmt> prefetch_before(const Stmt& s, int64_t rows) {
    int64_t run = 0;
    if (!is_run_loop(s) || rows <= 0 || !is_const_int(s->extent, &run) || run <= 0) return std::nullopt;
    bound(s);
    std::optional<Stmt> call;
    visit_stmt_exprs(s, [&](const Expr& e) {
      if (call) return;
      visit(e, [&](const Expr& n) {
        if (!call && n->kind == ExprKind::kLoad) call = prefetch_call(n, s->var, run, rows);
      });
    });
    return call;
  }

  std::optional<Stmt> prefetch_call(const Expr& load, int loop_var, int64_t run, int64_t rows) {
    const int buffer = static_cast<int>(load->int_value);
    if (buffer < 0 || buffer >= static_cast<int>(k_.buffers.size()) || load->args.size() != 1) return std::nullopt;
    const Buffer& b = k_.buffers[buffer];
    if (b.scope != MemoryScope::kGlobal || b.written || !read_.count(buffer) || prefetched_.count(buffer))
      return std::nullopt;
    const Expr& index = load->args[0];
    if (!uses_var(index, tile_var_) || has_load(index)) return std::nullopt;
    const Expr first = simplify(at(index, loop_var, int_imm(0)), bounds_);
    int64_t step = 0;
    if (!is_const_int(simplify(at(index, loop_var, int_imm(1)) - first, bounds_), &step) || step != 1)
      return std::nullopt;
    const int64_t bytes = run * dtype_size(b.dtype), footprint = rows * bytes;
    if (footprint > l2_bytes_ / 2 || run > b.elements) return std::nullopt;
    const int locality = footprint <= l1_bytes_ / 2 ? 3 : 2;
    // The last tile's next lies past the buffer: clamped (a prefetch never
    // faults, but a Call's pointer stays inside its buffer).
    const Expr next = simplify(min(at(first, tile_var_, var(tile_var_) + 1), int_imm(b.elements - run)), bounds_);
    prefetched_.insert(buffer);
    changed_ = true;
    return make_call(std::string(kPrefetchBytesCallee) + "<" + std::to_string(locality) + ">",
                     {CallArg{buffer, next}, CallArg{-1, int_imm(bytes)}});
  }

  Expr at(const Expr& e, int id, const Expr& value) const {
    std::vector<Expr> values(static_cast<size_t>(id) + 1);
    for (int i = 0; i < id; ++i) values[i] = var(i);
    values[id] = value;
    return substitute_vars(e, values);
  }

  const Kernel& k_;
  const int64_t l1_bytes_, l2_bytes_;
  std::vector<Interval> bounds_;
  int tile_var_ = -1;
  std::set<int> read_, prefetched_;
  bool changed_ = false;
};

}  // namespace

Kernel prefetch_next_tile(Kernel k, int64_t l1_bytes, int64_t l2_bytes) {
  if (k.grid <= 0 || !k.body) return k;
  NextTilePrefetcher p(k, l1_bytes, l2_bytes);
  if (Stmt body = p.run(k.body)) k.body = std::move(body);
  return k;
}

bool is_prefetch_call(const std::string& callee) { return callee.rfind(kPrefetchBytesCallee, 0) == 0; }

}  // namespace tilegraph::codegen
