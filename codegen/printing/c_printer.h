// Prints Kernel IR as C-like source. One printer; targets differ in a
// Dialect table (STYLE.md §6): type spellings, loop pragmas, qualifiers,
// how blocks and threads are bound. Dialects: cpu (C++ + OpenMP; block
// kernels run blocks in parallel and threads as loops — the GPU emulation
// when a kernel has several threads), cuda, hip.
#pragma once
#include <string>

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

struct Dialect {
  const char* name;
  const char* function_prefix;    // "void"
  const char* restrict_qualifier; // "__restrict"
  const char* parallel_pragma;    // "#pragma omp parallel for schedule(static)"
  const char* simd_pragma;        // "#pragma omp simd"
  const char* unroll_pragma;      // "#pragma GCC unroll 8"
  // Block kernels.
  bool binds_hardware_threads;    // GPU: blocks/threads are blockIdx/threadIdx, not loops
  const char* block_index;        // "blockIdx.x"
  const char* thread_index;       // "threadIdx.x"
  const char* barrier;            // "__syncthreads();" ("" on the CPU: threads run phase by phase)
  const char* shared_arena;       // declares `unsigned char* tg_smem` (printf pattern: %lld = bytes)
  const char* helper_qualifier;   // prelude helpers: "static inline" / "static __host__ __device__ inline"
  // Float exp/erf/tanh/sigmoid through vector_math_prelude.h's vectorizable
  // versions (CPU) instead of the scalar std:: calls (GPUs have fast ones).
  bool vector_math;
  // Kernel IR WarpMma (kernel_ir.h): helpers appended to the prelude, and
  // whether a step is one lane's hardware instruction (GPU: every thread
  // passes its own fragments) or the emulation of the whole block's warps
  // over its per-thread arrays (CPU, after expand_thread_locals).
  const char* warp_mma_prelude;
  // Defines tg_report_index_error(int site, long long index), which a failed
  // CheckIndex (compiler/ir/expr.h) calls: it records the run's first bad
  // index where the model runtime reads it back once per run (CPU: atomics
  // in the library; GPU: a per-source-file device flag).
  const char* index_error_prelude;
  // The emulation's sanitizer mode (codegen/sanitizer/tg_sanitizer.h): > 0
  // routes every shared and global access of a block kernel through the
  // checks, runs blocks one at a time and Selects lazily; the value is the
  // emulated target's warp size. 0: no checks (every other dialect).
  int sanitizer_warp_size = 0;
  // CPU: parallel loops are tg_parallel_for calls on the project's one
  // thread pool (codegen/thread_pool/tg_thread_pool.h) instead of an OpenMP
  // fork/join per loop. Only host projects; the GPU emulation keeps OpenMP.
  bool pool_parallel_loops = false;
};

const Dialect& cpu_dialect();
// cpu_dialect with pool_parallel_loops: the host CPU project's kernels.
const Dialect& cpu_pool_dialect();
const Dialect& cuda_dialect();
const Dialect& hip_dialect();
// The CPU emulation of a GPU target whose warps have warp_size lanes, with
// the sanitizer's checks.
Dialect sanitizer_dialect(int warp_size);

// The C type a global buffer of dtype t is stored as (half: its bits in a
// uint16_t; kernels compute it as float).
const char* storage_c_type(DType t);

// The kernel as a function `void <name>(params...)`; parameters are the
// global buffers in order (inputs const).
std::string print_kernel(const Kernel& k, const Dialect& d);

// The kernel's declaration without a body or ';' (for headers).
std::string print_kernel_signature(const Kernel& k, const Dialect& d);

// Helper functions every printed kernel may call (tg_floordiv, tg_sigmoid,
// half conversions...), emitted once per generated source file.
std::string kernel_prelude(const Dialect& d);

}  // namespace tilegraph::codegen
