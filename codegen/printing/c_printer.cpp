#include "codegen/printing/c_printer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "codegen/project/embedded_sanitizer.h"
#include "codegen/printing/source_text.h"
#include "codegen/printing/vector_math_prelude.h"
#include "compiler/ir/error.h"

namespace tilegraph::codegen {

namespace {

// One lane's mma.sync: packs its fragment values into half pairs (the lower
// index in the low half, as the PTX fragment tables list them).
constexpr const char* kCudaWarpMma = R"PRELUDE(#include <cuda_fp16.h>
static __device__ inline uint32_t tg_half2_bits(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
static __device__ inline void tg_mma_m16n8k16(const float* a, const float* b, float* c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(tg_half2_bits(a[0], a[1])), "r"(tg_half2_bits(a[2], a[3])), "r"(tg_half2_bits(a[4], a[5])),
        "r"(tg_half2_bits(a[6], a[7])), "r"(tg_half2_bits(b[0], b[1])), "r"(tg_half2_bits(b[2], b[3])));
#else
  __trap();
#endif
}
)PRELUDE";

// The CPU emulation of a block's warps running one WarpMma: gathers each
// warp's 32 lanes' fragments into A (16 x 16) and B (16 x 8) by the PTX
// ISA's lane mapping, multiplies the half-rounded values in float and
// scatters D = A B + C back to the lanes. Thread t's fragment values start
// at t * stride.
constexpr const char* kEmulatedWarpMma = R"PRELUDE(
static inline void tg_warp_mma_m16n8k16(const float* a, int64_t a_stride, const float* b, int64_t b_stride,
                                        float* c, int64_t c_stride, int64_t threads) {
  for (int64_t w = 0; w < threads / 32; ++w) {
    float A[16][16], B[16][8];
    for (int64_t lane = 0; lane < 32; ++lane) {
      const int64_t g = lane / 4, q = lane % 4, t = w * 32 + lane;
      for (int v = 0; v < 8; ++v)  // a0,a1: row g; a2,a3: row g+8; a4..a7: the same, columns + 8
        A[g + 8 * ((v / 2) % 2)][2 * q + v % 2 + 8 * (v / 4)] = tg_round_half(a[t * a_stride + v]);
      for (int v = 0; v < 4; ++v)  // b0,b1: rows 2q, 2q+1; b2,b3: rows + 8; column g
        B[2 * q + v % 2 + 8 * (v / 2)][g] = tg_round_half(b[t * b_stride + v]);
    }
    for (int64_t lane = 0; lane < 32; ++lane) {
      const int64_t g = lane / 4, q = lane % 4, t = w * 32 + lane;
      for (int v = 0; v < 4; ++v) {  // c0,c1: row g; c2,c3: row g+8; columns 2q, 2q+1
        const int64_t row = g + 8 * (v / 2), col = 2 * q + v % 2;
        float sum = c[t * c_stride + v];
        for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
        c[t * c_stride + v] = sum;
      }
    }
  }
}
)PRELUDE";

// The CPU record of a run's first out-of-range data-dependent index: site + 1
// (0: none) and the index. Only the bad case writes it; tg_model_run reads
// and clears it after the kernels (model.cpp).
constexpr const char* kCpuIndexError = R"PRELUDE(#include <atomic>
// Hidden: two model libraries in one process keep their own records.
__attribute__((visibility("hidden"))) inline std::atomic<long long> tg_index_error_site{0};
__attribute__((visibility("hidden"))) inline std::atomic<long long> tg_index_error_value{0};
__attribute__((noinline, cold)) static void tg_report_index_error(int site, long long index) {
  long long none = 0;
  if (tg_index_error_site.compare_exchange_strong(none, site + 1LL)) tg_index_error_value.store(index);
}
)PRELUDE";

// The GPU record: one per source file (kernels_NNN.cu), read back and cleared
// once per run by that file's tg_take_index_error_NNN (emit_cuda_project.cpp).
constexpr const char* kGpuIndexError = R"PRELUDE(static __device__ unsigned long long tg_index_error[2];
static __host__ __device__ inline void tg_report_index_error(int site, long long index) {
#ifdef __CUDA_ARCH__
  if (atomicCAS(&tg_index_error[0], 0ull, (unsigned long long)site + 1ull) == 0ull)
    tg_index_error[1] = (unsigned long long)index;
#else
  (void)site;
  (void)index;
#endif
}
)PRELUDE";

}  // namespace

const Dialect& cpu_dialect() {
  static const Dialect d{
      "cpu",
      "void",
      "__restrict",
      "#pragma omp parallel for schedule(static)",
      "#pragma omp simd",
      "#pragma GCC unroll 8",
      false,
      "",
      "",
      "",
      "unsigned char* tg_smem = tg_block_scratch(%lld);",
      "static inline",
      true,
      kEmulatedWarpMma,
      kCpuIndexError,
  };
  return d;
}

const Dialect& cuda_dialect() {
  static const Dialect d{
      "cuda",
      "__global__ void",
      "__restrict__",
      "",
      "",
      "#pragma unroll",
      true,
      "blockIdx.x",
      "threadIdx.x",
      "__syncthreads();",
      "extern __shared__ __align__(16) unsigned char tg_smem[];",
      "static __host__ __device__ inline",
      false,
      kCudaWarpMma,
      kGpuIndexError,
  };
  return d;
}

const Dialect& hip_dialect() {
  // HIP kernels spell everything the CUDA way (hipcc accepts __global__,
  // __syncthreads, blockIdx...); only the project around them differs.
  static const Dialect d = [] {
    Dialect hip = cuda_dialect();
    hip.name = "hip";
    hip.warp_mma_prelude = "";  // no mma.sync (the scheduler plans MMA for CUDA sm_80+ only)
    return hip;
  }();
  return d;
}

const Dialect& cpu_pool_dialect() {
  static const Dialect d = [] {
    Dialect pool = cpu_dialect();
    pool.pool_parallel_loops = true;
    return pool;
  }();
  return d;
}

Dialect sanitizer_dialect(int warp_size) {
  Dialect d = cpu_dialect();
  d.name = "cpu-sanitizer";
  d.parallel_pragma = "";  // the shadow state is one block's: blocks in turn
  d.sanitizer_warp_size = warp_size;
  return d;
}

namespace {

// The C type values of dtype t are computed in (half is computed as float).
const char* compute_type(DType t) { return dtype_c_type(compute_dtype(t)); }

// A global buffer as a kernel's (or a pool task's) pointer parameter:
// const unless written, __restrict unless it shares bytes with another
// (Buffer::may_alias: an in-place output and the input it overwrites).
std::string global_buffer_param(const Buffer& b, const Dialect& d) {
  return str_cat(b.written ? "" : "const ", storage_c_type(b.dtype), "* ",
                 b.may_alias ? "" : str_cat(d.restrict_qualifier, " "), b.name);
}

std::string float_literal(double v, DType t) {
  const bool f32 = t != DType::kF64;
  if (std::isnan(v)) return f32 ? "NAN" : "(double)NAN";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f32 ? "INFINITY" : "(double)INFINITY");
  char buf[64];
  std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return f32 ? s + "f" : s;
}

bool has_reduce_loop(const Stmt& s) {
  if (s->kind == StmtKind::kFor && s->loop == LoopKind::kReduce) return true;
  for (const Stmt& c : s->body)
    if (has_reduce_loop(c)) return true;
  return false;
}

std::string int_literal(int64_t v, DType t) {
  if (t == DType::kBool) return v ? "1" : "0";
  if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
  if (t == DType::kI64 || t == DType::kU64) return "INT64_C(" + std::to_string(v) + ")";
  return std::to_string(v);
}

class Printer {
 public:
  Printer(const Kernel& k, const Dialect& d) : k_(k), d_(d) {}

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm: return int_literal(e->int_value, e->dtype);
      case ExprKind::kFloatImm: return float_literal(e->float_value, e->dtype);
      case ExprKind::kVar: return k_.var_names.at(static_cast<size_t>(e->int_value));
      case ExprKind::kLoad: {
        for (const auto& [load, name] : hoisted_loads_)
          if (same_expr(load, e)) return name;
        const Buffer& b = k_.buffers.at(static_cast<size_t>(e->int_value));
        std::string access = b.name + "[" + checked_index("load", e->int_value, expr(e->args[0])) + "]";
        if (b.dtype == DType::kF16 && b.scope == MemoryScope::kGlobal) return "tg_h2f(" + access + ")";
        return access;
      }
      case ExprKind::kUnary: return unary(e);
      case ExprKind::kBinary: return binary(e);
      case ExprKind::kSelect:
        if (sanitizing()) return sanitized_select(e);
        if (is_guarded_select(e))
          return str_cat("(", condition(e->args[0]), " ? ", expr(e->args[1]), " : ", expr(e->args[2]), ")");
        // Eager: every load is in bounds (kernel_ir.h), and a call lets the
        // compiler if-convert and vectorize where a ?: with loads would not.
        return str_cat("tg_select<", compute_type(e->dtype), ">(", expr(e->args[0]), ", ",
                       expr(e->args[1]), ", ", expr(e->args[2]), ")");
      case ExprKind::kCast: return cast(e);
      case ExprKind::kCheckIndex:
        for (const auto& [check, name] : hoisted_checks_)
          if (same_expr(check, e)) return name;
        return str_cat("tg_check_index(", expr(e->args[0]), ", ", expr(e->args[1]), ", ", e->int_value, ")");
    }
    return "?";
  }

  void stmt(const Stmt& s, int depth, std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    switch (s->kind) {
      case StmtKind::kFor: {
        if (s->loop == LoopKind::kBlocks) return blocks(s, depth, out);
        if (s->loop == LoopKind::kThreads) return thread_loop(s, depth, out);
        if (s->loop == LoopKind::kReduce && !sanitizing() && reduce_loop(s, depth, out)) return;
        const bool innermost = s->body.size() == 1 && s->body[0]->kind != StmtKind::kFor &&
                               s->body[0]->kind != StmtKind::kAllocate;
        const size_t hoisted_before = hoisted_checks_.size();
        const size_t loads_before = hoisted_loads_.size();
        if (s->loop == LoopKind::kParallel && d_.pool_parallel_loops && splits_pay()) {
          std::vector<const StmtNode*> loops = {s.get()};
          while (static_cast<int>(loops.size()) < s->collapse) loops.push_back(loops.back()->body.at(0).get());
          if (innermost && s->collapse == 1) hoist_checks(s, pad, out);
          pool_loop(loops, depth, innermost && s->collapse == 1, "", out);
          hoisted_checks_.resize(hoisted_before);
          break;
        }
        if (s->loop == LoopKind::kParallel && *d_.parallel_pragma && !d_.pool_parallel_loops) {
          std::string pragma = d_.parallel_pragma;
          if (s->collapse > 1) pragma += " collapse(" + std::to_string(s->collapse) + ")";
          if (innermost && s->collapse == 1) {
            pragma.replace(pragma.find("for"), 3, "for simd");
            hoist_checks(s, pad, out);
          }
          out << pad << pragma << "\n";
        } else if (s->loop == LoopKind::kVectorized && *d_.simd_pragma) {
          hoist_checks(s, pad, out);
          hoist_scratch_loads(s, pad, out);
          out << pad << d_.simd_pragma << "\n";
        } else if (s->loop == LoopKind::kUnrolled && *d_.unroll_pragma && !has_reduce_loop(s)) {
          // (GCC's unroll pragma drops an inner `omp simd` loop to scalar code.)
          out << pad << d_.unroll_pragma << "\n";
        }
        if (s->run_var >= 0) {
          // Not split over a pool's runs: every iteration may be a thread's first.
          const StmtNode* innermost_loop = s.get();
          for (int i = 1; i < s->collapse; ++i) innermost_loop = innermost_loop->body.at(0).get();
          first_iteration_binds_[innermost_loop] = s->run_var;
        }
        const std::string& v = k_.var_names[s->var];
        out << pad << "for (int64_t " << v << " = 0; " << v << " < " << expr(s->extent) << "; ++" << v
            << ") {\n";
        if (auto bind = first_iteration_binds_.find(s.get()); bind != first_iteration_binds_.end())
          out << pad << "  const int64_t " << k_.var_names[bind->second] << " = 0;\n";
        for (const Stmt& c : s->body) stmt(c, depth + 1, out);
        out << pad << "}\n";
        hoisted_checks_.resize(hoisted_before);
        hoisted_loads_.resize(loads_before);
        break;
      }
      case StmtKind::kStore: {
        const Buffer& b = k_.buffers[s->buffer];
        std::string value = expr(s->value);
        if (b.scope == MemoryScope::kGlobal && b.dtype == DType::kF16) value = "tg_f2h(" + value + ")";
        else if (b.dtype == DType::kBool) value = "(uint8_t)(" + value + ")";
        out << pad << b.name << "[" << checked_index("store", s->buffer, expr(s->index)) << "] = " << value << ";\n";
        break;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : s->body) stmt(c, depth, out);
        break;
      case StmtKind::kAllocate: {
        const Buffer& b = k_.buffers[s->buffer];
        if (b.scope == MemoryScope::kShared)
          out << pad << "{\n" << pad << "  " << compute_type(b.dtype) << "* " << d_.restrict_qualifier << " "
              << b.name << " = reinterpret_cast<" << compute_type(b.dtype) << "*>(tg_smem + " << b.offset
              << ");\n";
        else if (b.scratch)
          out << pad << "{\n" << pad << "  " << compute_type(b.dtype) << "* " << d_.restrict_qualifier << " " << b.name
              << " = reinterpret_cast<" << compute_type(b.dtype) << "*>(tg_block_scratch("
              << b.elements * std::max<int64_t>(dtype_size(b.dtype), 4) << "));\n";
        else
          out << pad << "{\n" << pad << "  " << (b.alignment > 0 ? "alignas(" + std::to_string(b.alignment) + ") " : "")
              << compute_type(b.dtype) << " " << b.name << "[" << b.elements << "];\n";
        for (const Stmt& c : s->body) stmt(c, depth + 1, out);
        out << pad << "}\n";
        break;
      }
      case StmtKind::kIf:
        out << pad << "if (" << expr(s->cond) << ") {\n";
        for (const Stmt& c : s->body) stmt(c, depth + 1, out);
        out << pad << "}\n";
        break;
      case StmtKind::kBarrier:
        if (*d_.barrier) out << pad << d_.barrier << "\n";
        if (sanitizing()) out << pad << "tg_san::barrier();\n";
        break;
      case StmtKind::kWarpMma: {
        // A warp-collective step reads every lane's registers: a phase boundary.
        if (sanitizing()) out << pad << "tg_san::barrier();\n";
        auto fragment = [&](const CallArg& a) { return k_.buffers[a.buffer].name + " + " + expr(a.value); };
        if (d_.binds_hardware_threads) {
          out << pad << "tg_mma_m16n8k16(" << fragment(s->args[0]) << ", " << fragment(s->args[1]) << ", "
              << fragment(s->args[2]) << ");\n";
        } else {
          out << pad << "tg_warp_mma_m16n8k16(";
          // The fragments are the per-thread arrays of expand_thread_locals:
          // thread t's values start at t * (elements / threads).
          for (const CallArg& a : s->args) out << fragment(a) << ", " << k_.buffers[a.buffer].elements / k_.threads << ", ";
          out << k_.threads << ");\n";
        }
        if (sanitizing()) out << pad << "tg_san::barrier();\n";
        break;
      }
      case StmtKind::kCall: {
        out << pad << s->callee << "(";
        for (size_t i = 0; i < s->args.size(); ++i) {
          const CallArg& a = s->args[i];
          out << (i ? ", " : "");
          if (a.buffer >= 0) out << k_.buffers[a.buffer].name << " + " << expr(a.value);
          else out << expr(a.value);
        }
        out << ");\n";
        break;
      }
    }
  }

 private:
  // A runtime index check (CheckIndex) in a vectorized loop that does not
  // depend on the loop is computed once before it: its cold error call would
  // otherwise keep the compiler from vectorizing the loop (an embedding row
  // read along the hidden dimension). Only loops whose body is stores (under
  // Ifs) qualify, and checks reading what the loop writes stay inside.
  void hoist_checks(const Stmt& loop, const std::string& pad, std::ostringstream& out) {
    std::vector<Expr> exprs;
    std::vector<int> written;
    bool plain = true;
    std::function<void(const Stmt&)> collect = [&](const Stmt& s) {
      if (s->kind == StmtKind::kStore) {
        exprs.push_back(s->index);
        exprs.push_back(s->value);
        written.push_back(s->buffer);
      } else if (s->kind == StmtKind::kIf || s->kind == StmtKind::kSeq) {
        if (s->cond) exprs.push_back(s->cond);
        for (const Stmt& c : s->body) collect(c);
      } else {
        plain = false;
      }
    };
    for (const Stmt& c : loop->body) collect(c);
    if (!plain) return;
    auto reads_written = [&](const Expr& e) {
      return any_node(e, [&](const Expr& n) {
        return n->kind == ExprKind::kLoad &&
               std::find(written.begin(), written.end(), static_cast<int>(n->int_value)) != written.end();
      });
    };
    for (const Expr& e : exprs) {
      visit(e, [&](const Expr& n) {
        if (n->kind != ExprKind::kCheckIndex || uses_var(n, loop->var) || reads_written(n)) return;
        for (const auto& hoisted : hoisted_checks_)
          if (same_expr(hoisted.first, n)) return;
        const std::string name = str_cat("tg_index", hoisted_names_++);
        out << pad << "const int64_t " << name << " = " << expr(n) << ";\n";
        hoisted_checks_.emplace_back(n, name);
      });
    }
  }

  // A simd loop's loads from the block's scratch (Shared buffers, scratch
  // Locals) at an index the loop does not vary, read into consts before it:
  // softmax's row max and sum, layer norm's mean and deviation. Both the
  // loop's stores and these loads address the one scratch arena, so GCC
  // cannot tell a store from clobbering the row value and reloads it every
  // lane; in Conformer's masked softmax (exp of a Where over an int64
  // compare) that reload left the loop unvectorized ("control flow in
  // loop"), 10x slower than onnxruntime's softmax. Only loops of a positive
  // constant trip count whose body is plain stores, and only buffers the
  // loop does not store, so the hoisted read happens exactly when the loop's
  // first iteration would have made it, with the same value.
  void hoist_scratch_loads(const Stmt& loop, const std::string& pad, std::ostringstream& out) {
    if (loop->extent->kind != ExprKind::kIntImm || loop->extent->int_value <= 0) return;
    std::vector<int> written;
    for (const Stmt& c : loop->body) {
      if (c->kind != StmtKind::kStore) return;
      written.push_back(c->buffer);
    }
    auto hoistable = [&](const Expr& n) {
      if (n->kind != ExprKind::kLoad || uses_var(n, loop->var)) return false;
      const Buffer& b = k_.buffers.at(static_cast<size_t>(n->int_value));
      if (b.scope == MemoryScope::kGlobal || (b.scope == MemoryScope::kLocal && !b.scratch)) return false;
      return !any_node(n, [&](const Expr& x) {
        return x->kind == ExprKind::kLoad &&
               std::find(written.begin(), written.end(), static_cast<int>(x->int_value)) != written.end();
      });
    };
    for (const Stmt& c : loop->body) {
      for (const Expr& e : {c->index, c->value}) {
        visit(e, [&](const Expr& n) {
          if (!hoistable(n)) return;
          for (const auto& hoisted : hoisted_loads_)
            if (same_expr(hoisted.first, n)) return;
          const Buffer& b = k_.buffers.at(static_cast<size_t>(n->int_value));
          const std::string name = str_cat("tg_row", hoisted_names_++);
          out << pad << "const " << compute_type(b.dtype) << " " << name << " = " << expr(n) << ";\n";
          hoisted_loads_.emplace_back(n, name);
        });
      }
    }
  }

  // The launch grid: on a GPU the block index unflattened into the
  // collapsed loop vars; on the CPU the loops themselves, run in parallel,
  // each block with its scratch arena.
  void blocks(const Stmt& s, int depth, std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    std::vector<const StmtNode*> loops = {s.get()};
    while (static_cast<int>(loops.size()) < s->collapse) loops.push_back(loops.back()->body.at(0).get());
    const std::vector<Stmt>& body = loops.back()->body;
    char arena[160] = "";
    if (k_.shared_bytes > 0)
      std::snprintf(arena, sizeof arena, d_.shared_arena, static_cast<long long>(k_.shared_bytes));
    if (d_.binds_hardware_threads) {
      if (*arena) out << pad << arena << "\n";
      out << pad << "int64_t tg_block = " << d_.block_index << ";\n";
      for (size_t i = loops.size(); i-- > 0;) {
        const std::string& v = k_.var_names[loops[i]->var];
        const std::string e = expr(loops[i]->extent);
        out << pad << "const int64_t " << v << " = tg_block % " << e << ";\n";
        if (i > 0) out << pad << "tg_block /= " << e << ";\n";
      }
      for (const Stmt& c : body) stmt(c, depth, out);
      return;
    }
    if (d_.pool_parallel_loops && splits_pay()) return pool_loop(loops, depth, false, arena, out);
    if (*d_.parallel_pragma && !d_.pool_parallel_loops) {
      std::string pragma = d_.parallel_pragma;
      if (loops.size() > 1) pragma += " collapse(" + std::to_string(loops.size()) + ")";
      out << pad << pragma << "\n";
    }
    for (size_t i = 0; i < loops.size(); ++i) {
      const std::string& v = k_.var_names[loops[i]->var];
      out << std::string((depth + i) * 2, ' ') << "for (int64_t " << v << " = 0; " << v << " < "
          << expr(loops[i]->extent) << "; ++" << v << ") {\n";
    }
    const int inner = depth + static_cast<int>(loops.size());
    if (*arena) out << std::string(inner * 2, ' ') << arena << "\n";
    if (sanitizing()) {
      std::string flat = k_.var_names[loops[0]->var];
      for (size_t i = 1; i < loops.size(); ++i)
        flat = "(" + flat + ") * " + expr(loops[i]->extent) + " + " + k_.var_names[loops[i]->var];
      out << std::string(inner * 2, ' ') << "tg_san::begin_block(" << flat << ");\n";
    }
    for (const Stmt& c : body) stmt(c, inner, out);
    for (size_t i = loops.size(); i-- > 0;) out << std::string((depth + i) * 2, ' ') << "}\n";
  }

  // A kernel the cost model finds too small to split (Kernel::single_thread)
  // runs its parallel loop on the calling thread.
  bool splits_pay() const { return !k_.single_thread; }

  // A collapsed parallel loop nest (outermost first) as a tg_parallel_for
  // over its flattened iterations. The body is a lambda that takes the
  // kernel's global buffers again as __restrict parameters (shadowing the
  // kernel's own): captured by reference they would lose __restrict, and the
  // compiler would reload them after every byte store.
  void pool_loop(const std::vector<const StmtNode*>& loops, int depth, bool simd, const char* arena,
                 std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    std::string params, args;
    for (const Buffer& b : k_.buffers) {
      if (b.scope != MemoryScope::kGlobal) continue;
      params += ", " + global_buffer_param(b, d_);
      args += ", " + b.name;
    }
    std::string total = "(int64_t)(" + expr(loops[0]->extent) + ")";
    for (size_t i = 1; i < loops.size(); ++i) total += " * (" + expr(loops[i]->extent) + ")";
    out << pad << "{\n"
        << pad << "  auto tg_chunk = [&](int64_t tg_begin, int64_t tg_end" << params << ") {\n";
    const std::string inner_pad = pad + "      ";
    if (loops.size() == 1) {
      if (simd) out << pad << "    " << d_.simd_pragma << "\n";
      const std::string& v = k_.var_names[loops[0]->var];
      out << pad << "    for (int64_t " << v << " = tg_begin; " << v << " < tg_end; ++" << v << ") {\n";
    } else {
      out << pad << "    for (int64_t tg_it = tg_begin; tg_it < tg_end; ++tg_it) {\n"
          << inner_pad << "int64_t tg_rest = tg_it;\n";
      for (size_t i = loops.size(); i-- > 0;) {
        const std::string& v = k_.var_names[loops[i]->var];
        if (i == 0) {
          out << inner_pad << "const int64_t " << v << " = tg_rest;\n";
          break;
        }
        const std::string e = expr(loops[i]->extent);
        out << inner_pad << "const int64_t " << v << " = tg_rest % (" << e << ");\n"
            << inner_pad << "tg_rest /= (" << e << ");\n";
      }
    }
    if (loops[0]->run_var >= 0)
      out << inner_pad << "const int64_t " << k_.var_names[loops[0]->run_var] << " = "
          << (loops.size() == 1 ? k_.var_names[loops[0]->var] : std::string("tg_it")) << " - tg_begin;\n";
    if (*arena) out << inner_pad << arena << "\n";
    for (const Stmt& c : loops.back()->body) stmt(c, depth + 3, out);
    out << pad << "    }\n"
        << pad << "  };\n"
        << pad << "  tg_parallel_for(" << total << ", [&](int64_t tg_begin, int64_t tg_end) { tg_chunk(tg_begin, tg_end"
        << args << "); }" << (loops[0]->grain > 1 ? ", INT64_C(" + std::to_string(loops[0]->grain) + ")" : "") << ");\n"
        << pad << "}\n";
  }

  // A kReduce loop `for v: acc[i] = acc[i] OP x` as
  //   { T tg_red = acc[i]; #pragma omp simd reduction(OP:tg_red)
  //     for v: tg_red = tg_red OP x; acc[i] = tg_red; }
  // The scalar breaks the loop-carried dependence through memory and lets
  // the compiler keep one partial result per vector lane. False when the
  // body has another shape (printed as a serial loop then).
  bool reduce_loop(const Stmt& s, int depth, std::ostringstream& out) {
    // Loops of one iteration between the reduce loop and its store (a block
    // kernel's single-element tile) become constants.
    std::vector<int> unit_vars;
    const StmtNode* inner = s.get();
    while (inner->body.size() == 1 && inner->body[0]->kind == StmtKind::kFor && inner->body[0]->extent->kind == ExprKind::kIntImm &&
           inner->body[0]->extent->int_value == 1 && inner->body[0]->loop != LoopKind::kBlocks &&
           inner->body[0]->loop != LoopKind::kThreads) {
      inner = inner->body[0].get();
      unit_vars.push_back(inner->var);
    }
    if (inner->body.size() != 1 || inner->body[0]->kind != StmtKind::kStore) return false;
    const Stmt& store = inner->body[0];
    const Expr& v = store->value;
    const bool arithmetic = is_float(v->dtype) || v->dtype == DType::kI32 || v->dtype == DType::kI64;
    if (v->kind != ExprKind::kBinary || !arithmetic) return false;
    const char* clause = nullptr;
    switch (v->binary_op) {
      case BinaryOp::kAdd: clause = "+"; break;
      case BinaryOp::kMul: clause = "*"; break;
      case BinaryOp::kMin: clause = "min"; break;
      case BinaryOp::kMax: clause = "max"; break;
      default: return false;
    }
    auto is_acc = [&](const Expr& x) {
      return x->kind == ExprKind::kLoad && x->int_value == store->buffer && same_expr(x->args[0], store->index);
    };
    if (!is_acc(v->args[0]) || uses_var(store->index, s->var)) return false;
    const Buffer& b = k_.buffers[store->buffer];
    if (b.scope == MemoryScope::kGlobal && b.dtype == DType::kF16) return false;
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    const std::string type = compute_type(v->dtype), x = expr(v->args[1]);
    const std::string slot = b.name + "[" + expr(store->index) + "]";
    const std::string& lv = k_.var_names[s->var];
    out << pad << "{\n";
    for (int u : unit_vars) out << pad << "  const int64_t " << k_.var_names[u] << " = 0;\n";
    out << pad << "  " << type << " tg_red = " << slot << ";\n";
    if (*d_.simd_pragma) out << pad << "  " << d_.simd_pragma << " reduction(" << clause << ":tg_red)\n";
    out << pad << "  for (int64_t " << lv << " = 0; " << lv << " < " << expr(s->extent) << "; ++" << lv << ") {\n";
    out << pad << "    tg_red = ";
    if (*clause == '+' || *clause == '*') out << "tg_red " << clause << " " << x << ";\n";
    else out << "tg_" << clause << "<" << type << ">(tg_red, " << x << ");\n";
    out << pad << "  }\n" << pad << "  " << slot << " = tg_red;\n" << pad << "}\n";
    return true;
  }

  void thread_loop(const Stmt& s, int depth, std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    const std::string& v = k_.var_names[s->var];
    if (d_.binds_hardware_threads) {
      out << pad << "{\n";
      // A phase all threads run alike (one element per block) never reads
      // its index, and nvcc warns about the unused local.
      if (stmts_use_var(s->body, s->var)) out << pad << "  const int64_t " << v << " = " << d_.thread_index << ";\n";
    } else {
      out << pad << "for (int64_t " << v << " = 0; " << v << " < " << expr(s->extent) << "; ++" << v << ") {\n";
    }
    thread_var_ = s->var;
    for (const Stmt& c : s->body) stmt(c, depth + 1, out);
    thread_var_ = -1;
    out << pad << "}\n";
  }

  bool sanitizing() const { return d_.sanitizer_warp_size > 0; }

  // A bool as a C condition: a cast to bool compares without the uint8_t
  // (mixing an 8-bit mask into a loop of 32-bit values keeps GCC from
  // vectorizing a guarded Select's masked load).
  std::string condition(const Expr& c) {
    if (c->kind == ExprKind::kCast && c->dtype == DType::kBool && c->args[0]->dtype != DType::kBool)
      return str_cat("(", expr(c->args[0]), " != 0)");
    return expr(c);
  }

  // A GPU evaluates both branches of a Select (tg_select is a call), so every
  // load in either must be in bounds; but only the chosen branch's value is
  // used, so only its loads count as reads for racecheck and initcheck.
  // Prints (bounds checks of both branches' loads, c ? a : b).
  std::string sanitized_select(const Expr& e) {
    std::string checks;
    const bool outer = bounds_only_;
    bounds_only_ = true;
    for (int branch = 1; branch <= 2; ++branch)
      visit(e->args[static_cast<size_t>(branch)], [&](const Expr& n) {
        if (n->kind == ExprKind::kLoad) {
          const std::string index = checked_index("bounds", n->int_value, expr(n->args[0]));
          if (index.rfind("tg_san::", 0) == 0) checks += "(void)" + index + ", ";
        }
      });
    bounds_only_ = outer;
    return str_cat("(", checks, "(", expr(e->args[0]), " ? ", expr(e->args[1]), " : ", expr(e->args[2]), "))");
  }

  // A block kernel's shared or global access index, through the sanitizer's
  // check when sanitizing (thread -1: block-level code, run by every thread).
  std::string checked_index(const char* access, int64_t buffer, const std::string& index) const {
    const Buffer& b = k_.buffers.at(static_cast<size_t>(buffer));
    if (!sanitizing() || k_.grid == 0 || b.scope == MemoryScope::kLocal) return index;
    return str_cat("tg_san::", bounds_only_ ? "bounds" : access, "(", buffer, ", ", index, ", ",
                   thread_var_ >= 0 ? k_.var_names[static_cast<size_t>(thread_var_)] : "-1", ")");
  }

  static bool stmts_use_var(const std::vector<Stmt>& body, int id) {
    for (const Stmt& c : body) {
      for (const Expr* e : {&c->extent, &c->index, &c->value, &c->cond})
        if (*e && uses_var(*e, id)) return true;
      for (const CallArg& a : c->args)
        if (a.value && uses_var(a.value, id)) return true;
      if (stmts_use_var(c->body, id)) return true;
    }
    return false;
  }

  std::string call(const char* fn, const Expr& e) { return str_cat(fn, "(", expr(e->args[0]), ")"); }

  // float and half (computed as float) take the vectorizable helpers; double
  // keeps libm's precision.
  bool vector_math(const Expr& x) const {
    return d_.vector_math && (x->dtype == DType::kF32 || x->dtype == DType::kF16);
  }

  std::string unary(const Expr& e) {
    const Expr& x = e->args[0];
    const bool f = is_float(x->dtype);
    switch (e->unary_op) {
      case UnaryOp::kNeg: return "(-" + expr(x) + ")";
      case UnaryOp::kNot: return "(!" + expr(x) + ")";
      case UnaryOp::kAbs: return f ? call("std::fabs", e) : str_cat("tg_abs<", compute_type(x->dtype), ">(", expr(x), ")");
      case UnaryOp::kExp: return call(vector_math(x) ? "tg_exp" : "std::exp", e);
      case UnaryOp::kLog: return call("std::log", e);
      case UnaryOp::kSqrt: return call("std::sqrt", e);
      case UnaryOp::kErf: return call(vector_math(x) ? "tg_erf" : "std::erf", e);
      case UnaryOp::kTanh: return call(vector_math(x) ? "tg_tanh" : "std::tanh", e);
      case UnaryOp::kSigmoid: return call(vector_math(x) ? "tg_sigmoid_vec" : "tg_sigmoid", e);
      case UnaryOp::kFloor: return f ? call("std::floor", e) : expr(x);
      case UnaryOp::kCeil: return f ? call("std::ceil", e) : expr(x);
      case UnaryOp::kRound: return f ? call("std::nearbyint", e) : expr(x);
      case UnaryOp::kSin: return call("std::sin", e);
      case UnaryOp::kCos: return call("std::cos", e);
      case UnaryOp::kTan: return call("std::tan", e);
      case UnaryOp::kAsin: return call("std::asin", e);
      case UnaryOp::kAcos: return call("std::acos", e);
      case UnaryOp::kAtan: return call("std::atan", e);
      case UnaryOp::kSinh: return call("std::sinh", e);
      case UnaryOp::kCosh: return call("std::cosh", e);
      case UnaryOp::kAsinh: return call("std::asinh", e);
      case UnaryOp::kAcosh: return call("std::acosh", e);
      case UnaryOp::kAtanh: return call("std::atanh", e);
      case UnaryOp::kSign: return str_cat("tg_sign<", compute_type(x->dtype), ">(", expr(x), ")");
      case UnaryOp::kIsNaN: return f ? call("std::isnan", e) : "false";
      case UnaryOp::kIsInf: return f ? call("std::isinf", e) : "false";
      case UnaryOp::kSoftplus: return call("tg_softplus", e);
    }
    return "?";
  }

  std::string binary(const Expr& e) {
    const Expr& a = e->args[0];
    const Expr& b = e->args[1];
    const DType t = a->dtype;
    const bool f = is_float(t);
    const std::string x = expr(a), y = expr(b);
    const std::string ct = compute_type(t);
    auto infix = [&](const char* op) { return "(" + x + " " + op + " " + y + ")"; };
    int64_t c = 0;
    const bool positive_const = is_const_int(b, &c) && c > 0;
    switch (e->binary_op) {
      case BinaryOp::kAdd: return infix("+");
      case BinaryOp::kSub: return infix("-");
      case BinaryOp::kMul: return infix("*");
      case BinaryOp::kDiv:
        if (f || positive_const) return infix("/");
        return str_cat("tg_div<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kFloorDiv:
        if (f) return "std::floor(" + x + " / " + y + ")";
        return str_cat("tg_floordiv<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kFloorMod: return str_cat("tg_floormod<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kRem:
        if (f) return "std::fmod(" + x + ", " + y + ")";
        if (positive_const) return infix("%");
        return str_cat("tg_rem<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kMin: return str_cat("tg_min<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kMax: return str_cat("tg_max<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kPow:
        if (f) return "std::pow(" + x + ", " + y + ")";
        return str_cat("tg_ipow<", ct, ">(", x, ", ", y, ")");
      case BinaryOp::kEq: return infix("==");
      case BinaryOp::kNe: return infix("!=");
      case BinaryOp::kLt: return infix("<");
      case BinaryOp::kLe: return infix("<=");
      case BinaryOp::kGt: return infix(">");
      case BinaryOp::kGe: return infix(">=");
      case BinaryOp::kAnd: return "(" + x + " && " + y + ")";
      case BinaryOp::kOr: return "(" + x + " || " + y + ")";
      case BinaryOp::kXor: return "((" + x + " != 0) != (" + y + " != 0))";
      case BinaryOp::kBitAnd: return infix("&");
      case BinaryOp::kBitOr: return infix("|");
      case BinaryOp::kBitXor: return infix("^");
      case BinaryOp::kShl: return str_cat("(", ct, ")(", x, " << ", y, ")");
      case BinaryOp::kShr: return str_cat("(", ct, ")(", x, " >> ", y, ")");
    }
    return "?";
  }

  std::string cast(const Expr& e) {
    const DType from = e->args[0]->dtype, to = e->dtype;
    const std::string x = expr(e->args[0]);
    if (to == DType::kBool) return "(uint8_t)(" + x + " != 0)";
    if (to == DType::kF16) return "tg_round_half((float)(" + x + "))";
    if (from == DType::kF16 && to == DType::kF32) return x;
    if (is_float(from) && is_integer(to)) return str_cat("tg_float_to_int<", compute_type(to), ">(", x, ")");
    return str_cat("static_cast<", compute_type(to), ">(", x, ")");
  }

  const Kernel& k_;
  const Dialect& d_;
  int thread_var_ = -1;  // the kThreads loop being printed
  bool bounds_only_ = false;  // printing loads a GPU evaluates but whose values are unused
  // Checks computed before the loops being printed (hoist_checks), by name.
  std::vector<std::pair<Expr, std::string>> hoisted_checks_;
  // The innermost loop of a parallel nest printed without the pool (serial
  // or an OpenMP pragma) -> its run var, bound to 0 there.
  std::map<const StmtNode*, int> first_iteration_binds_;
  // Scratch loads read before the simd loop being printed (hoist_scratch_loads), by name.
  std::vector<std::pair<Expr, std::string>> hoisted_loads_;
  int hoisted_names_ = 0;  // names are never reused in a kernel (sibling loops share a scope)
};

// What the sanitizer knows of a block kernel's buffers, and its launch
// checks, at the top of the kernel's body.
std::string sanitizer_kernel_begin(const Kernel& k, const Dialect& d) {
  std::ostringstream out;
  std::string nodes;
  for (size_t i = 0; i < k.source_nodes.size(); ++i) nodes += (i ? ", " : "") + k.source_nodes[i];
  out << "  static const tg_san::BufferInfo tg_san_buffers[] = {\n";
  std::string globals;
  for (const Buffer& b : k.buffers) {
    const bool shared = b.scope == MemoryScope::kShared;
    const int elem_size = dtype_size(b.scope == MemoryScope::kGlobal ? b.dtype : compute_dtype(b.dtype));
    out << "    {" << c_string_literal(b.name) << ", " << b.elements << ", " << elem_size << ", "
        << shared << ", " << b.offset << "},\n";
    if (b.scope == MemoryScope::kGlobal) globals += (globals.empty() ? "" : ", ") + b.name;
  }
  out << "  };\n  const void* tg_san_globals[] = {" << (globals.empty() ? "nullptr" : globals) << "};\n"
      << "  tg_san::begin_kernel(" << c_string_literal(k.name) << ", " << c_string_literal(nodes)
      << ", tg_san_buffers, " << k.buffers.size() << ", tg_san_globals, " << k.shared_bytes << ", " << k.threads
      << ", " << (k.tensor_cores ? 1 : 0) << ", " << d.sanitizer_warp_size << ");\n";
  return out.str();
}

}  // namespace

const char* storage_c_type(DType t) { return t == DType::kF16 ? "uint16_t" : dtype_c_type(t); }

std::string print_kernel_signature(const Kernel& k, const Dialect& d) {
  std::ostringstream out;
  out << d.function_prefix << " " << k.name << "(";
  bool first = true;
  for (const Buffer& b : k.buffers) {
    if (b.scope != MemoryScope::kGlobal) continue;
    out << (first ? "" : ", ") << global_buffer_param(b, d);
    first = false;
  }
  out << ")";
  return out.str();
}

std::string print_kernel(const Kernel& k, const Dialect& d) {
  Printer p(k, d);
  std::ostringstream out;
  out << "// " << k.name << ": ";
  for (size_t i = 0; i < k.source_nodes.size(); ++i) out << (i ? ", " : "") << comment_text(k.source_nodes[i]);
  out << "\n" << print_kernel_signature(k, d) << " {\n";
  if (d.sanitizer_warp_size > 0 && k.grid > 0) out << sanitizer_kernel_begin(k, d);
  p.stmt(k.body, 1, out);
  out << "}\n";
  return out.str();
}

std::string kernel_prelude(const Dialect& d) {
  std::string text = R"PRELUDE(#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Helpers the generated kernels call. Semantics follow tilegraph's IR
// (compiler/ir/expr.h): floor division/modulo round toward -inf; integer
// division never traps: x / 0 = 0 and x % 0 = 0, INT_MIN / -1 = INT_MIN
// (wraps) and INT_MIN % -1 = 0.
template <typename T> static inline T tg_select(bool c, T a, T b) { return c ? a : b; }
template <typename T> static inline T tg_min(T a, T b) { return b < a ? b : a; }
template <typename T> static inline T tg_max(T a, T b) { return a < b ? b : a; }
template <typename T> static inline T tg_abs(T a) { return a < 0 ? T(-a) : a; }
template <typename T> static inline T tg_sign(T a) { return T((T(0) < a) - (a < T(0))); }
// b == -1 of a signed type: -a with wrap-around (the hardware traps on INT_MIN / -1).
template <typename T> static inline bool tg_minus_one(T b) { return T(-1) < T(0) && b == T(-1); }
template <typename T> static inline T tg_wrapping_neg(T a) { return T(0ull - (unsigned long long)a); }
template <typename T> static inline T tg_div(T a, T b) {
  if (b == 0) return T(0);
  return tg_minus_one(b) ? tg_wrapping_neg(a) : T(a / b);
}
template <typename T> static inline T tg_rem(T a, T b) { return b == 0 || tg_minus_one(b) ? T(0) : T(a % b); }
template <typename T> static inline T tg_floordiv(T a, T b) {
  if (b == 0) return T(0);
  if (tg_minus_one(b)) return tg_wrapping_neg(a);
  T q = T(a / b);
  return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
}
template <typename T> static inline T tg_floormod(T a, T b) {
  if (b == 0 || tg_minus_one(b)) return T(0);
  T m = T(a % b);
  return (m != 0 && ((m < 0) != (b < 0))) ? T(m + b) : m;
}
static inline float tg_floormod(float a, float b) {
  float m = std::fmod(a, b);
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
static inline double tg_floormod(double a, double b) {
  double m = std::fmod(a, b);
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
template <typename T> static inline T tg_ipow(T a, T b) {
  T r = 1;
  for (T i = 0; i < b && i < 64; ++i) r = T(r * a);
  return b < 0 ? T(0) : r;
}
template <typename T, typename F> static inline T tg_float_to_int(F x) {
  return std::isnan(x) ? T(0) : static_cast<T>(x);
}
static inline float tg_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
static inline double tg_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
static inline float tg_softplus(float x) { return x > 30.0f ? x : std::log1p(std::exp(x)); }
static inline double tg_softplus(double x) { return x > 60.0 ? x : std::log1p(std::exp(x)); }
static inline float tg_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, mant = h & 1023, bits;
  if (exp == 0) {
    if (mant == 0) { bits = sign; }
    else { float v = std::ldexp((float)mant, -24); return sign ? -v : v; }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
static inline uint16_t tg_f2h(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13), rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return (uint16_t)half;
}
static inline float tg_round_half(float f) { return tg_h2f(tg_f2h(f)); }
// CheckIndex (compiler/ir/expr.h): x wrapped into [0, dim); out of range, it
// reports `site` and reads the nearest end instead.
static inline int64_t tg_check_index(int64_t x, int64_t dim, int site) {
  if (x >= 0 && x < dim) return x;
  if (x < 0 && x >= -dim) return x + dim;
  tg_report_index_error(site, (long long)x);
  return x < 0 ? 0 : dim - 1;
}
)PRELUDE";
  text.insert(text.find("// Helpers the generated kernels call."), d.index_error_prelude);
  // Device targets qualify every helper for device code.
  const std::string plain = "static inline";
  for (size_t at = text.find(plain); at != std::string::npos; at = text.find(plain, at + 1)) {
    text.replace(at, plain.size(), d.helper_qualifier);
    at += std::string(d.helper_qualifier).size() - 1;
  }
  if (d.vector_math) text += vector_math_prelude();
  if (d.sanitizer_warp_size > 0)
    for (const EmbeddedFile& f : embedded_sanitizer_files()) text += f.contents;
  text += d.warp_mma_prelude;
  if (!d.binds_hardware_threads) text += R"PRELUDE(#include <cstdlib>
#include <memory>
// A block's shared arena on the CPU: per-thread scratch (cache resident),
// grown on demand and kept for the thread's lifetime.
static inline unsigned char* tg_block_scratch(size_t bytes) {
  thread_local std::unique_ptr<unsigned char, void (*)(void*)> buffer(nullptr, std::free);
  thread_local size_t capacity = 0;
  if (capacity < bytes) {
    capacity = (bytes + 63) / 64 * 64;
    buffer.reset(static_cast<unsigned char*>(std::aligned_alloc(64, capacity)));
  }
  return buffer.get();
}
// Brings [p, p + bytes) toward the cores' caches, a line at a time:
// locality 3 into the L1, 2 into the L2 (codegen/lowering/prefetch_next_tile.h).
template <int kLocality> static inline void tg_prefetch_bytes(const void* p, int64_t bytes) {
  for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(static_cast<const char*>(p) + i, 0, kLocality);
}
)PRELUDE";
  return text;
}

}  // namespace tilegraph::codegen
