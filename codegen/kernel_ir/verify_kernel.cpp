#include "codegen/kernel_ir/verify_kernel.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "codegen/lowering/lower_library_gemm.h"
#include "compiler/ir/error.h"
#include "compiler/ir/interval.h"
#include "compiler/ir/scalar.h"

namespace tilegraph::codegen {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Bytes of one element where the printers keep it (half computes as float).
int64_t compute_size(DType t) { return dtype_size(compute_dtype(t)); }

// Evaluates an index expression (integers, no Loads) at var values; false
// where it cannot.
bool evaluate_index(const Expr& e, const std::vector<int64_t>& values, Scalar* out) {
  if (is_float(e->dtype)) return false;
  Scalar a, b, c;
  switch (e->kind) {
    case ExprKind::kIntImm: out->i = e->int_value; return true;
    case ExprKind::kVar: out->i = values[static_cast<size_t>(e->int_value)]; return true;
    case ExprKind::kUnary:
      if (!evaluate_index(e->args[0], values, &a)) return false;
      *out = scalar_unary(e->unary_op, e->args[0]->dtype, a);
      return true;
    case ExprKind::kBinary:
      if (!evaluate_index(e->args[0], values, &a) || !evaluate_index(e->args[1], values, &b)) return false;
      *out = scalar_binary(e->binary_op, e->args[0]->dtype, a, b);
      return true;
    case ExprKind::kSelect:
      if (!evaluate_index(e->args[0], values, &c)) return false;
      return evaluate_index(e->args[c.i ? 1 : 2], values, out);
    case ExprKind::kCast:
      if (!evaluate_index(e->args[0], values, &a)) return false;
      *out = scalar_cast(a, e->args[0]->dtype, e->dtype);
      return true;
    default: return false;
  }
}

// e as constant + the sum of coefficient x var (integer constants, vars,
// Add, Sub, Mul by a constant), each term scaled by `scale`; false where e
// has another form.
bool linear_form(const Expr& e, int64_t scale, std::map<int, int64_t>* coefficients, int64_t* constant) {
  int64_t c = 0;
  if (is_const_int(e, &c)) {
    *constant += scale * c;
    return true;
  }
  if (e->kind == ExprKind::kVar) {
    (*coefficients)[static_cast<int>(e->int_value)] += scale;
    return true;
  }
  if (e->kind != ExprKind::kBinary || !is_integer(e->dtype)) return false;
  const Expr &x = e->args[0], &y = e->args[1];
  switch (e->binary_op) {
    case BinaryOp::kAdd:
      return linear_form(x, scale, coefficients, constant) && linear_form(y, scale, coefficients, constant);
    case BinaryOp::kSub:
      return linear_form(x, scale, coefficients, constant) && linear_form(y, -scale, coefficients, constant);
    case BinaryOp::kMul:
      if (is_const_int(y, &c)) return linear_form(x, scale * c, coefficients, constant);
      if (is_const_int(x, &c)) return linear_form(y, scale * c, coefficients, constant);
      return false;
    default:
      return false;
  }
}

// Index expressions of at most this many points (values of the variables
// they use) are bounded exactly, by evaluating them everywhere.
constexpr int64_t kMaxEvaluatedPoints = int64_t{1} << 12;

enum class Fit { kInside, kOutside, kUnknown };

// The values of one WarpMma fragment a thread holds (kernel_ir.h): A, B, C.
constexpr int64_t kFragmentValues[3] = {8, 4, 4};

class Verifier {
 public:
  explicit Verifier(const Kernel& k)
      : k_(k), bound_(k.var_names.size(), false), var_bounds_(k.var_names.size()), attained_(k.var_names.size(), false),
        allocated_(k.buffers.size(), false), in_scope_(k.buffers.size(), false),
        written_(k.buffers.size(), false) {}

  void run() {
    buffers_and_names();
    if (k_.threads < 1) fail("a block has at least one thread (Kernel::threads)", str_cat(k_.threads));
    if (k_.grid < 0 || k_.shared_bytes < 0) fail("launch sizes are non-negative", str_cat(k_.grid, " blocks, ", k_.shared_bytes, " shared bytes"));
    if (k_.grid == 0 && (k_.threads != 1 || k_.shared_bytes != 0))
      fail("a kernel without launch grid (Kernel::grid 0) has one thread and no shared arena",
           str_cat(k_.threads, " threads, ", k_.shared_bytes, " shared bytes"));
    if (!k_.body) fail("the kernel has a body", "");
    stmt(k_.body, Context{});
    if (k_.grid > 0 && blocks_ < 0) fail("a block kernel (Kernel::grid > 0) has a kBlocks loop", "");
    if (blocks_ >= 0 && blocks_ != k_.grid)
      fail("Kernel::grid is the product of the kBlocks loops' extents", str_cat(k_.grid, " vs ", blocks_));
    if (k_.tensor_cores && !warp_mma_)
      fail("Kernel::tensor_cores is set only on a kernel with WarpMma steps", "");
    for (size_t i = 0; i < k_.buffers.size(); ++i)
      if (k_.buffers[i].scope == MemoryScope::kGlobal && k_.buffers[i].written && !written_[i])
        fail("every output buffer is written (by a Store or a Call)", k_.buffers[i].name);
    if (is_library_gemm(k_) && (k_.grid != 0 || k_.body->kind != StmtKind::kCall || k_.body->callee != kLibraryGemmCallee))
      fail("a library GEMM kernel is one tg_gemm Call and no launch grid", "");
  }

 private:
  // Where a statement is: inside the launch grid, inside a thread loop.
  struct Context {
    bool in_blocks = false;
    bool in_threads = false;
  };

  [[noreturn]] void fail(const std::string& invariant, const std::string& where) const {
    throw InternalError(str_cat("Kernel IR of kernel '", k_.name, "': ", invariant, where.empty() ? "" : ": ", where));
  }

  // Block-level code runs in every thread of the block: with several threads
  // it may not write (kernel_ir.h). A block of one thread has no kThreads
  // loops; its block level is that thread.
  bool at_block_level_of_many_threads(const Context& c) const {
    return c.in_blocks && !c.in_threads && k_.threads > 1;
  }

  void buffers_and_names() {
    std::set<std::string> names;
    bool past_globals = false;
    for (const Buffer& b : k_.buffers) {
      if (!is_identifier(b.name)) fail("buffer names are C identifiers", "'" + b.name + "'");
      if (!names.insert(b.name).second) fail("buffer and variable names are unique", b.name);
      if (b.elements <= 0) fail("a buffer holds at least one element", str_cat(b.name, "[", b.elements, "]"));
      if (b.scope == MemoryScope::kGlobal) {
        if (past_globals) fail("global buffers (the parameters) come before Local and Shared ones", b.name);
        if (b.tensor < 0) fail("a global buffer is a graph tensor", b.name);
        continue;
      }
      past_globals = true;
      if (b.written) fail("only global buffers are outputs (Buffer::written)", b.name);
      if (b.scope == MemoryScope::kShared) {
        const int64_t end = b.offset + b.elements * compute_size(b.dtype);
        if (b.offset < 0 || b.offset % compute_size(b.dtype) != 0 || end > k_.shared_bytes)
          fail("a Shared buffer lies aligned inside the block's arena (Kernel::shared_bytes)",
               str_cat(b.name, " at bytes [", b.offset, ", ", end, ") of ", k_.shared_bytes));
      }
    }
    for (const std::string& v : k_.var_names) {
      if (!is_identifier(v)) fail("variable names are C identifiers", "'" + v + "'");
      if (!names.insert(v).second) fail("buffer and variable names are unique", v);
    }
  }

  // ------------------------------------------------------------ statements

  void stmt(const Stmt& s, Context c) {
    if (!s) fail("statements are not null", "");
    if (k_.grid > 0 && !c.in_blocks && s->kind != StmtKind::kSeq && s->kind != StmtKind::kAllocate &&
        !(s->kind == StmtKind::kFor && s->loop == LoopKind::kBlocks))
      fail("a block kernel's statements are inside its kBlocks loop", describe(s));
    switch (s->kind) {
      case StmtKind::kFor: return for_loop(s, c);
      case StmtKind::kStore: return store(s, c);
      case StmtKind::kSeq:
        for (const Stmt& b : s->body) stmt(b, c);
        return;
      case StmtKind::kAllocate: return allocate(s, c);
      case StmtKind::kIf:
        expr(s->cond, "an If's condition");
        if (s->cond->dtype != DType::kBool) fail("an If's condition is a bool", to_string(s->cond));
        guards_.push_back(s->cond);
        for (const Stmt& b : s->body) stmt(b, c);
        guards_.pop_back();
        return;
      case StmtKind::kBarrier:
        if (!c.in_blocks || c.in_threads)
          fail("a Barrier is at block level (inside kBlocks, outside kThreads: every thread reaches it)", "");
        return;
      case StmtKind::kCall: return call(s, c);
      case StmtKind::kWarpMma: return warp_mma(s, c);
    }
    fail("a statement has one of the kinds of TG_STMT_KINDS", str_cat(static_cast<int>(s->kind)));
  }

  void for_loop(const Stmt& s, Context c) {
    const std::string& name = var_name(s->var, "a For's variable");
    if (bound_[s->var]) fail("a For does not rebind the variable of an enclosing For", name);
    expr(s->extent, "a For's extent");
    if (!is_integer(s->extent->dtype)) fail("a For's extent is an integer", name);
    if (s->collapse < 1) fail("a For collapses at least itself (collapse >= 1)", name);
    if (s->collapse > 1 && s->loop != LoopKind::kParallel && s->loop != LoopKind::kBlocks)
      fail("only kParallel and kBlocks loops collapse", name);
    // The loops a collapse binds: perfectly nested, rectangular, of the outer
    // loop's kind (kBlocks) or plain (kParallel: a pragma between them would
    // break OpenMP's collapse).
    std::vector<const StmtNode*> nest = {s.get()};
    for (int i = 1; i < s->collapse; ++i) {
      const StmtNode* outer = nest.back();
      if (outer->body.size() != 1 || !outer->body[0] || outer->body[0]->kind != StmtKind::kFor)
        fail("a For with collapse n has n-1 Fors perfectly nested directly inside it", name);
      const StmtNode* inner = outer->body[0].get();
      const LoopKind want = s->loop == LoopKind::kBlocks ? LoopKind::kBlocks : LoopKind::kSerial;
      if (inner->loop != want || inner->collapse != 1)
        fail(s->loop == LoopKind::kBlocks ? "the loops a kBlocks collapse binds are kBlocks loops"
                                          : "the loops a kParallel collapse binds are kSerial loops",
             name);
      for (const StmtNode* l : nest)
        if (inner->extent && uses_var(inner->extent, l->var))
          fail("the loops a collapse binds have extents independent of each other", name);
      nest.push_back(inner);
    }
    if (s->loop == LoopKind::kBlocks) return blocks(nest, c);
    if (s->loop == LoopKind::kThreads) {
      if (!c.in_blocks || c.in_threads)
        fail("a kThreads loop is at block level (inside kBlocks, not inside another kThreads)", name);
      int64_t extent = 0;
      if (!is_const_int(s->extent, &extent) || extent != k_.threads)
        fail("a kThreads loop has extent Kernel::threads",
             str_cat(name, " < ", to_string(s->extent), " in a block of ", k_.threads));
      c.in_threads = true;
    }
    bind(s->var, s->extent);
    // The run var (how many iterations ran before on the thread): under the
    // nest's flattened extent.
    if (s->run_var >= 0) {
      const std::string& run = var_name(s->run_var, "a parallel For's run variable");
      if (s->loop != LoopKind::kParallel) fail("only kParallel loops bind a run variable", run);
      if (bound_[s->run_var] || s->run_var == s->var) fail("a For does not rebind the variable of an enclosing For", run);
      Expr iterations = s->extent;
      for (size_t i = 1; i < nest.size(); ++i) iterations = iterations * nest[i]->extent;
      bind(s->run_var, iterations);
    }
    // An extent that varies (a tail panel's columns) bounds the variable
    // more tightly than its interval: evaluation sees it as a guard.
    const bool varies = !is_const(s->extent);
    if (varies) guards_.push_back(lt(var(s->var), s->extent));
    for (const Stmt& b : s->body) stmt(b, c);
    if (varies) guards_.pop_back();
    bound_[s->var] = false;
    if (s->run_var >= 0) bound_[s->run_var] = false;
  }

  // The launch grid: one nest of constant-extent kBlocks loops.
  void blocks(const std::vector<const StmtNode*>& nest, Context c) {
    const std::string& name = k_.var_names[nest[0]->var];
    if (c.in_blocks || c.in_threads) fail("kBlocks loops are not nested (one launch grid; collapse binds several)", name);
    if (blocks_ >= 0) fail("a kernel has one kBlocks loop nest (its launch grid)", name);
    if (k_.grid == 0) fail("a kernel with kBlocks loops is a block kernel (Kernel::grid > 0)", name);
    int64_t grid = 1;
    for (const StmtNode* l : nest) {
      int64_t extent = 0;
      if (!is_const_int(l->extent, &extent) || extent < 1)
        fail("kBlocks loops have constant positive extents", k_.var_names[l->var]);
      grid *= extent;
    }
    blocks_ = grid;
    for (size_t i = 1; i < nest.size(); ++i) {
      const std::string& inner = var_name(nest[i]->var, "a kBlocks loop's variable");
      if (bound_[nest[i]->var]) fail("a For does not rebind the variable of an enclosing For", inner);
    }
    for (const StmtNode* l : nest) bind(l->var, l->extent);
    c.in_blocks = true;
    for (const Stmt& b : nest.back()->body) stmt(b, c);
    for (const StmtNode* l : nest) bound_[l->var] = false;
  }

  void store(const Stmt& s, const Context& c) {
    const Buffer& b = buffer(s->buffer, "a Store's buffer");
    if (b.scope == MemoryScope::kGlobal && !b.written)
      fail("a Store writes an output or a Local/Shared buffer, never a kernel input", b.name);
    if (at_block_level_of_many_threads(c))
      fail("no Store at block level (inside kBlocks, outside kThreads) of a block of several threads",
           describe(s));
    expr(s->index, "a Store's index");
    expr(s->value, "a stored value");
    if (!is_integer(s->index->dtype)) fail("indices are integers", describe(s));
    Interval at;
    if (fits(s->index, 0, b.elements - 1, &at) == Fit::kOutside)
      fail("a Store is inside its buffer", str_cat(describe(s), " writes [", at.lo, ", ", at.hi, "] of ", b.elements));
    written_[s->buffer] = true;
  }

  void allocate(const Stmt& s, const Context& c) {
    const int id = s->buffer;
    if (id < 0 || id >= static_cast<int>(k_.buffers.size()))
      fail("an Allocate names a buffer of the kernel", str_cat("buffer ", id));
    const Buffer& b = k_.buffers[id];
    if (b.scope == MemoryScope::kGlobal) fail("only Local and Shared buffers are allocated", b.name);
    if (allocated_[id]) fail("a buffer is allocated once", b.name);
    if (b.scope == MemoryScope::kShared && !c.in_blocks)
      fail("a Shared buffer is allocated inside the kBlocks loop (it lives for a block)", b.name);
    allocated_[id] = in_scope_[id] = true;
    for (const Stmt& child : s->body) stmt(child, c);
    in_scope_[id] = false;
  }

  void call(const Stmt& s, const Context& c) {
    if (s->callee.empty()) fail("a Call names its callee", "");
    if (at_block_level_of_many_threads(c))
      fail("no Call at block level (inside kBlocks, outside kThreads) of a block of several threads", s->callee);
    for (const CallArg& a : s->args) {
      if (a.buffer < -1 || a.buffer >= static_cast<int>(k_.buffers.size()))
        fail("a Call's argument is a buffer of the kernel (a pointer) or -1 (a scalar)",
             str_cat(s->callee, ": buffer ", a.buffer));
      if (a.buffer < 0) {
        expr(a.value, "a Call's scalar argument");
        continue;
      }
      const Buffer& b = buffer(a.buffer, "a Call's pointer argument");
      offset(a, 1, str_cat("a Call's pointer ", s->callee, "(&", b.name, "[...])"));
      written_[a.buffer] = true;  // the callee may write through it
    }
    if (s->callee == kLibraryGemmCallee) library_gemm(s);
  }

  // tg_gemm(A, B, C, batch, m, n, k, a: row_major ld batch_stride, b: ..., c: ..., bias, epilogue)
  // (lower_library_gemm.h): every matrix element it touches is inside its buffer.
  void library_gemm(const Stmt& s) {
    const std::vector<CallArg>& a = s->args;
    if (a.size() != 18) fail("tg_gemm has 18 arguments", str_cat(a.size()));
    std::vector<int64_t> v(a.size(), 0);
    for (size_t i = 0; i < a.size(); ++i) {
      const bool pointer = i < 3 || i == 16;
      if ((a[i].buffer >= 0) != pointer || !is_const_int(a[i].value, &v[i]))
        fail("tg_gemm's A, B, C and bias are pointers at constant offsets, the rest constant scalars",
             str_cat("argument ", i));
    }
    if (!k_.buffers[a[2].buffer].written) fail("tg_gemm's C is an output of the kernel", k_.buffers[a[2].buffer].name);
    const int64_t batch = v[3], m = v[4], n = v[5], k = v[6];
    if (batch < 1 || m < 1 || n < 1 || k < 1) fail("tg_gemm's sizes are positive", str_cat(batch, "x", m, "x", n, "x", k));
    auto matrix = [&](const char* what, int arg, int first, int64_t rows, int64_t cols) {
      const int64_t row_step = v[first] ? v[first + 1] : 1, col_step = v[first] ? 1 : v[first + 1];
      const int64_t last = v[arg] + (batch - 1) * v[first + 2] + (rows - 1) * row_step + (cols - 1) * col_step;
      const Buffer& b = k_.buffers[a[arg].buffer];
      if (v[first + 1] < 1 || v[first + 2] < 0 || last >= b.elements)
        fail("tg_gemm reads and writes its matrices inside their buffers",
             str_cat(what, " in ", b.name, " reaches element ", last, " of ", b.elements));
    };
    matrix("A", 0, 7, m, k);
    matrix("B", 1, 10, k, n);
    matrix("C", 2, 13, m, n);
    if ((v[17] & 1) && v[16] + n > k_.buffers[a[16].buffer].elements)
      fail("tg_gemm reads its bias inside its buffer", k_.buffers[a[16].buffer].name);
  }

  void warp_mma(const Stmt& s, const Context& c) {
    warp_mma_ = true;
    if (!c.in_blocks || c.in_threads)
      fail("a WarpMma is at block level (warp-collective: inside kBlocks, outside kThreads)", describe(s));
    if (!k_.tensor_cores) fail("a kernel with WarpMma steps sets Kernel::tensor_cores", "");
    if (k_.threads % 32 != 0) fail("a WarpMma's block is whole warps (Kernel::threads a multiple of 32)", str_cat(k_.threads));
    if (s->args.size() != 3) fail("a WarpMma has three fragments (A, B, C)", str_cat(s->args.size()));
    for (int f = 0; f < 3; ++f) {
      const CallArg& a = s->args[f];
      const Buffer& b = buffer(a.buffer, "a WarpMma fragment");
      // Per-thread values: Local, or after expand_thread_locals a Shared
      // array of a copy per thread (the offsets are into one copy).
      const bool expanded = b.scope == MemoryScope::kShared && b.elements % k_.threads == 0;
      if ((b.scope != MemoryScope::kLocal && !expanded) || b.dtype != DType::kF32)
        fail("a WarpMma's fragments are per-thread float buffers", b.name);
      offset(a, kFragmentValues[f], str_cat("a WarpMma fragment in ", b.name), expanded ? k_.threads : 1);
    }
  }

  // A pointer argument: buffer[offset .. offset + values) inside the buffer
  // (inside one of its `copies` equal parts).
  void offset(const CallArg& a, int64_t values, const std::string& what, int64_t copies = 1) {
    expr(a.value, "an argument's offset");
    if (!is_integer(a.value->dtype)) fail("offsets are integers", what);
    const int64_t elements = k_.buffers[a.buffer].elements / copies;
    Interval at;
    if (fits(a.value, 0, elements - values, &at) == Fit::kOutside)
      fail("a pointer argument's values are inside its buffer",
           str_cat(what, " at [", at.lo, ", ", at.hi, "] + ", values, " of ", elements));
  }

  // ------------------------------------------------------------ expressions

  // Every Var bound, every Load of a buffer in scope at one in-bounds index
  // (kernel_ir.h: in bounds whatever the branch taken), integer Div/Rem of
  // index arithmetic on non-negative operands.
  void expr(const Expr& e, const char* what) {
    if (!e) fail("expressions are not null", what);
    node(e, what);
  }

  // e and its operands; a guarded Select's true branch under its condition.
  void node(const Expr& n, const char* what) {
    Interval range;
    switch (n->kind) {
      case ExprKind::kVar:
        if (n->int_value < 0 || n->int_value >= static_cast<int64_t>(bound_.size()) || !bound_[n->int_value])
          fail("every variable is bound by an enclosing For",
               str_cat(n->int_value >= 0 && n->int_value < static_cast<int64_t>(bound_.size())
                           ? k_.var_names[n->int_value] : "var " + std::to_string(n->int_value),
                       " in ", what));
        break;
      case ExprKind::kLoad: {
        const Buffer& b = buffer(static_cast<int>(n->int_value), "a Load's buffer");
        if (n->args.size() != 1 || !n->args[0] || !is_integer(n->args[0]->dtype))
          fail("a Load reads a buffer at one integer (flat) index", to_string(n));
        Interval at;
        if (fits(n->args[0], 0, b.elements - 1, &at) == Fit::kOutside)
          fail("every Load is in bounds whatever the branch taken",
               str_cat(to_string(n), " reads [", at.lo, ", ", at.hi, "] of ", b.name, "[", b.elements, "]"));
        break;
      }
      case ExprKind::kBinary:
        if ((n->binary_op == BinaryOp::kDiv || n->binary_op == BinaryOp::kRem) && is_integer(n->dtype) &&
            !has_load(n) &&
            (fits(n->args[0], 0, Interval::kPosInf, &range) == Fit::kOutside ||
             fits(n->args[1], 0, Interval::kPosInf, &range) == Fit::kOutside))
          fail("integer Div/Rem of index arithmetic has non-negative operands (else FloorDiv/FloorMod)",
               to_string(n));
        break;
      case ExprKind::kSelect:
        if (n->args[0]->dtype != DType::kBool) fail("a Select's condition is a bool", to_string(n));
        if (is_guarded_select(n)) {
          node(n->args[0], what);
          guards_.push_back(n->args[0]);
          node(n->args[1], what);
          guards_.pop_back();
          node(n->args[2], what);
          return;
        }
        break;
      default:
        break;
    }
    for (const Expr& a : n->args) {
      if (!a) fail("expressions are not null", what);
      node(a, what);
    }
  }

  // ------------------------------------------------------------ helpers

  // Whether index expression e stays in [lo, hi] where it is evaluated
  // (under the enclosing loops and If conditions). Interval arithmetic
  // first; where that is inconclusive, e is evaluated at every point of the
  // variables it and the relevant If conditions use, when there are at most
  // kMaxEvaluatedPoints: flattened indices lose the correlation of terms of
  // one variable in intervals ((x + 3) / 4 - x / 4 ...), and a guarded fast
  // path reads in bounds only under its If. *range: the values found.
  Fit fits(const Expr& e, int64_t lo, int64_t hi, Interval* range) const {
    *range = bound_of(e, var_bounds_);
    if (range->within(lo, hi)) return Fit::kInside;
    if (range->hi < lo || range->lo > hi) return Fit::kOutside;
    std::vector<int> vars;
    bool loads = false;
    auto collect = [&](const Expr& x) {
      visit(x, [&](const Expr& n) {
        loads |= n->kind == ExprKind::kLoad;
        if (n->kind == ExprKind::kVar && std::find(vars.begin(), vars.end(), n->int_value) == vars.end())
          vars.push_back(static_cast<int>(n->int_value));
      });
    };
    collect(e);
    if (loads) return Fit::kUnknown;
    // The If conditions on these variables (those readable without memory).
    std::vector<Expr> guards;
    bool guarded = false;
    for (const Expr& g : guards_) {
      bool related = false;
      visit(g, [&](const Expr& n) {
        related |= n->kind == ExprKind::kVar && std::find(vars.begin(), vars.end(), n->int_value) != vars.end();
      });
      guarded |= related;
      if (related && !has_load(g)) guards.push_back(g);
    }
    // Linear in variables that take every value of their loops (no If
    // narrows them): its interval is exact, however many points (a column
    // panel loop of the wrong extent read 5% past a conv's input, over more
    // points than are evaluated).
    if (!guarded) {
      std::map<int, int64_t> coefficients;
      int64_t constant = 0;
      if (linear_form(e, 1, &coefficients, &constant)) {
        Interval exact{constant, constant};
        bool attained = true;
        for (const auto& [v, c] : coefficients) {
          const Interval& r = var_bounds_[static_cast<size_t>(v)];
          attained &= attained_[static_cast<size_t>(v)] && r.bounded();
          if (!attained) break;
          exact.lo += std::min(c * r.lo, c * r.hi);
          exact.hi += std::max(c * r.lo, c * r.hi);
        }
        if (attained) {
          *range = exact;
          return exact.within(lo, hi) ? Fit::kInside : Fit::kOutside;
        }
      }
    }
    for (const Expr& g : guards) collect(g);
    int64_t points = 1;
    for (int v : vars) {
      const Interval& r = var_bounds_[static_cast<size_t>(v)];
      if (!r.bounded() || r.hi - r.lo + 1 > kMaxEvaluatedPoints / points) return Fit::kUnknown;
      points *= r.hi - r.lo + 1;
    }
    std::vector<int64_t> values(var_bounds_.size(), 0);
    for (int v : vars) values[static_cast<size_t>(v)] = var_bounds_[static_cast<size_t>(v)].lo;
    Interval exact{Interval::kPosInf, Interval::kNegInf};
    for (int64_t p = 0; p < points; ++p) {
      bool taken = true;
      for (const Expr& g : guards) {
        Scalar c;
        if (!evaluate_index(g, values, &c)) return Fit::kUnknown;
        taken &= c.i != 0;
      }
      Scalar x;
      if (taken && !evaluate_index(e, values, &x)) return Fit::kUnknown;
      if (taken) exact = {std::min(exact.lo, x.i), std::max(exact.hi, x.i)};
      for (int v : vars) {  // the next point (odometer)
        int64_t& value = values[static_cast<size_t>(v)];
        if (++value <= var_bounds_[static_cast<size_t>(v)].hi) break;
        value = var_bounds_[static_cast<size_t>(v)].lo;
      }
    }
    if (exact.lo > exact.hi) return Fit::kInside;  // never evaluated
    *range = exact;
    return exact.within(lo, hi) ? Fit::kInside : Fit::kOutside;
  }

  const std::string& var_name(int id, const char* what) const {
    if (id < 0 || id >= static_cast<int>(k_.var_names.size()))
      fail("variables are ids into Kernel::var_names", str_cat(what, ": var ", id));
    return k_.var_names[id];
  }

  // A buffer a statement or Load uses: valid, and allocated around it unless Global.
  const Buffer& buffer(int id, const char* what) const {
    if (id < 0 || id >= static_cast<int>(k_.buffers.size())) fail("buffers are ids into Kernel::buffers", str_cat(what, ": buffer ", id));
    const Buffer& b = k_.buffers[id];
    if (b.scope != MemoryScope::kGlobal && !in_scope_[id])
      fail("a Local or Shared buffer is used only inside its Allocate", str_cat(what, " ", b.name));
    return b;
  }

  void bind(int var, const Expr& extent) {
    bound_[var] = true;
    int64_t constant = 0;
    attained_[var] = is_const_int(extent, &constant) && constant >= 1;
    const Interval e = bound_of(extent, var_bounds_);
    var_bounds_[var] = e.hi >= Interval::kPosInf ? Interval{0, Interval::kPosInf} : Interval{0, std::max<int64_t>(e.hi - 1, 0)};
  }

  // A statement in one line, for messages.
  std::string describe(const Stmt& s) const {
    switch (s->kind) {
      case StmtKind::kStore:
        return s->buffer >= 0 && s->buffer < static_cast<int>(k_.buffers.size())
                   ? str_cat(k_.buffers[s->buffer].name, "[", s->index ? to_string(s->index) : "?", "] = ...")
                   : "a Store";
      case StmtKind::kFor:
        return s->var >= 0 && s->var < static_cast<int>(k_.var_names.size()) ? "for " + k_.var_names[s->var] : "a For";
      case StmtKind::kCall: return "call " + s->callee;
      case StmtKind::kWarpMma: return "warp_mma";
      case StmtKind::kBarrier: return "barrier";
      case StmtKind::kIf: return "if";
      default: return "a statement";
    }
  }

  const Kernel& k_;
  std::vector<bool> bound_;            // var: bound by an enclosing For
  std::vector<Interval> var_bounds_;   // var: its values there
  std::vector<bool> attained_;         // var: its loop has a constant extent >= 1 (takes every value of var_bounds_)
  std::vector<Expr> guards_;           // the conditions of the enclosing Ifs (and varying extents)
  std::vector<bool> allocated_, in_scope_, written_;  // buffer
  int64_t blocks_ = -1;                // the kBlocks nest's blocks, once seen
  bool warp_mma_ = false;
};

}  // namespace

void verify(const Kernel& k) { Verifier(k).run(); }

}  // namespace tilegraph::codegen
