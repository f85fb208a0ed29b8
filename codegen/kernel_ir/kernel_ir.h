// Kernel IR: a kernel is a structured loop nest over flat buffers.
//
// Semantics:
//  * Buffers are 1-D; Expr loads in a kernel are Load(buffer, {flat index}).
//    Global buffers are the kernel's parameters (graph tensors); Local
//    buffers are per-thread scratch (registers / stack: accumulator tiles).
//  * Loop variables are Expr Vars whose ids index Kernel::var_names; a For
//    runs its var over [0, extent). Loop kinds are hints printers map to the
//    target (OpenMP parallel/simd on CPU; grid/block binding on GPUs).
//  * A kParallel or kBlocks For with collapse = n binds itself and the n-1
//    For loops perfectly nested directly inside it as one parallel iteration
//    space (kBlocks: the launch grid, one block per iteration).
//  * Block-level code (inside kBlocks, outside kThreads) runs once per block
//    on the CPU and uniformly in every thread of the block on a GPU: it may
//    only hold loops, Ifs, Allocates, Barriers, WarpMmas and kThreads loops —
//    no Stores or Calls. (A block of one thread has no kThreads loops: its
//    block level is that thread.) A block kernel has one kBlocks loop nest,
//    with constant extents whose product is Kernel::grid, and nothing that
//    runs outside it. A kThreads For has extent Kernel::threads and binds the thread index;
//    it never contains a Barrier or another kThreads loop. A Barrier orders
//    everything the block's threads did before it (shared memory writes)
//    before everything after it.
//  * Shared buffers live for a block, at Buffer::offset bytes into the
//    block's shared arena of Kernel::shared_bytes. Local buffers are per
//    thread: allocated at block level they keep their values across Barriers
//    (registers on a GPU; the CPU emulation gives each thread its own copy:
//    expand_thread_locals makes them Shared arrays of threads x elements).
//  * A Var is used only inside the For that binds it, a Local or Shared
//    buffer only inside its Allocate (one per buffer).
//  * Every Load is in bounds whatever Select branch is taken (codegen clamps
//    indices of guarded loads), so printers may evaluate Select eagerly;
//    except in the true branch of a guarded Select (guarded_select,
//    compiler/ir/expr.h), whose Loads are in bounds where its condition
//    holds and which printers evaluate only there (C's ?:, which GCC turns
//    into masked loads in a vectorized loop). An If guards its body as in C.
//  * A Call runs a micro-kernel (codegen/ukernels) on pointers into buffers:
//    callee(arg...), each arg either &buffer[offset] or a scalar value.
//  * A WarpMma is a warp-collective tensor-core step (sm_80 mma.sync
//    m16n8k16, f16 inputs, f32 accumulators) at block level: for each warp
//    w of the block and lane l, thread 32w + l holds in its Local buffers
//    args[0] (from offset value) 8 values of A (16 x 16), args[1] 4 values of
//    B (16 x 8) and args[2] 4 accumulators of C (16 x 8), laid out as the
//    PTX ISA's fragment figures say (g = l / 4, q = l % 4):
//      a0,a1 = A[g][2q..2q+1]    a2,a3 = A[g+8][2q..]   a4,a5 = A[g][2q+8..]
//      a6,a7 = A[g+8][2q+8..]    b0,b1 = B[2q..2q+1][g] b2,b3 = B[2q+8..][g]
//      c0,c1 = C[g][2q..2q+1]    c2,c3 = C[g+8][2q..]
//    and every lane's C becomes A·B + C, A and B rounded to half, products
//    summed in float. Kernel::threads is a multiple of 32; the offsets are
//    the same in every thread.
//  * Integer Div/Rem/FloorDiv/FloorMod follow expr.h (total: no trap on a
//    zero divisor or MIN / -1). Index arithmetic divides by positive
//    constants; codegen rewrites its FloorDiv/FloorMod of non-negative
//    numerators to Div/Rem, which print as C's / and %.
//  codegen/kernel_ir/verify_kernel.h checks these after every lowering.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

#define TG_STMT_KINDS(X) \
  X(For)                 \
  X(Store)               \
  X(Seq)                 \
  X(Allocate)            \
  X(If)                  \
  X(Barrier)             \
  X(Call)                \
  X(WarpMma)

enum class StmtKind {
#define TG_ENUM(name) k##name,
  TG_STMT_KINDS(TG_ENUM)
#undef TG_ENUM
};

// kReduce: a loop whose body is one store `acc[i] = acc[i] OP v` (OP: +, *,
// min, max) with i independent of the loop variable. The CPU printer keeps
// acc[i] in a scalar across the loop and vectorizes it as an OpenMP simd
// reduction (reordering float sums); anything else prints as kSerial.
enum class LoopKind { kSerial, kParallel, kVectorized, kUnrolled, kBlocks, kThreads, kReduce };
enum class MemoryScope { kGlobal, kShared, kLocal };

// One argument of a Call: a pointer to buffer[value] (buffer >= 0), or the
// scalar `value` (buffer < 0).
struct CallArg {
  int buffer = -1;
  Expr value;
};

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  int var = -1;                 // For: loop variable id
  Expr extent;                  // For
  LoopKind loop = LoopKind::kSerial;
  int collapse = 1;             // For kParallel
  // For kParallel: a var bound at the top of the innermost collapsed loop's
  // body to how many iterations of the (flattened) nest the same thread ran
  // back to back just before this one, so a thread's scratch arena (Local
  // scratch buffers) still holds what the previous iteration left there
  // when it is > 0. A printer that cannot tell binds 0 (always safe).
  int run_var = -1;
  // For kParallel with a run_var: a thread takes the flattened iterations in
  // runs of whole multiples of grain, each starting at a multiple of grain,
  // so that a run covers the grain's iterations together (a chunk's row
  // blocks, which reuse its packed B: lower_float_gemm_kernel.cpp). A
  // scheduling hint; results never depend on it.
  int64_t grain = 1;
  int buffer = -1;              // Store, Allocate
  Expr index;                   // Store
  Expr value;                   // Store
  Expr cond;                    // If
  std::vector<Stmt> body;       // For, Seq, If, Allocate (scope of the buffer)
  std::string callee;           // Call
  std::vector<CallArg> args;    // Call; WarpMma: the A, B and C fragments
};

Stmt make_for(int var, Expr extent, LoopKind loop, std::vector<Stmt> body, int collapse = 1);
// A kParallel For whose body reads run_var (StmtNode::run_var), its
// iterations taken in runs of `grain` (StmtNode::grain).
Stmt make_parallel_for(int var, Expr extent, std::vector<Stmt> body, int collapse, int run_var, int64_t grain = 1);
Stmt make_store(int buffer, Expr index, Expr value);
Stmt make_seq(std::vector<Stmt> body);
Stmt make_allocate(int buffer, std::vector<Stmt> body);
Stmt make_if(Expr cond, std::vector<Stmt> body);
Stmt make_barrier();
Stmt make_call(std::string callee, std::vector<CallArg> args);
// Fragments: a Local buffer and the offset of this step's values in it.
Stmt make_warp_mma(CallArg a, CallArg b, CallArg c);

struct Buffer {
  std::string name;
  DType dtype = DType::kF32;
  int64_t elements = 0;
  MemoryScope scope = MemoryScope::kGlobal;
  int64_t offset = 0;     // Shared: byte offset into the block's arena
  int alignment = 0;      // Local: byte alignment (0: the element type's)
  // Local: held in the thread's scratch arena (CPU: tg_block_scratch), not on
  // the stack. A second array on the stack kept GCC from holding a register
  // tile's accumulators in registers (q @ k^T: 4x slower).
  bool scratch = false;
  TensorId tensor = -1;   // Global: the graph tensor
  bool written = false;   // Global: the kernel's output
  // Global: shares its bytes with another of the kernel's buffers (an
  // in-place output and the input it overwrites, codegen/project/in_place.h),
  // so it is printed without __restrict.
  bool may_alias = false;
};

struct Kernel {
  std::string name;
  std::vector<std::string> source_nodes;  // ONNX nodes computed (for --profile, explain)
  std::vector<Buffer> buffers;            // globals first (parameters, in order), then locals
  std::vector<std::string> var_names;
  Stmt body;
  scheduler::KernelSchedule schedule;
  int64_t flops = 0;                      // arithmetic per run (rough; for explain/stats)
  std::string ukernel;                    // the micro-kernel it calls ("qgemm_avx2"), if any
  // The blocking of the loops around it (tile shape, cache blocks: "mr", "kc", ...), for the manifest.
  std::vector<std::pair<std::string, int64_t>> ukernel_params;
  // CPU: too small for a split to pay (the cost model's min_parallel_seconds):
  // the thread pool's dialect runs its parallel loop on the calling thread.
  bool single_thread = false;
  // Block/thread kernels (a kBlocks loop at the top): launch shape.
  int64_t grid = 0;                       // blocks (0: not a block kernel)
  int threads = 1;                        // threads per block
  int64_t shared_bytes = 0;               // the block's shared arena
  bool tensor_cores = false;              // has WarpMma steps
};

std::string to_string(const Kernel& k);  // debug dump

// s with every expression in it (extents, indices, values, conditions, call
// arguments) replaced by f(expression), statements rebuilt bottom-up.
Stmt rewrite_stmt_exprs(const Stmt& s, const std::function<Expr(const Expr&)>& f);

// Calls f on every expression of s and of the statements in its body
// (extents, indices, values, conditions, call arguments), s's own first.
void visit_stmt_exprs(const Stmt& s, const std::function<void(const Expr&)>& f);

// s with each statement of its body replaced by f(statement); s itself
// (same pointer) when f changed none of them.
Stmt map_body(const Stmt& s, const std::function<Stmt(const Stmt&)>& f);

}  // namespace tilegraph::codegen
