// Prints Kernel IR as C-like source. One printer; targets differ in a
// Dialect table (STYLE.md §6): type spellings, loop pragmas, qualifiers.
// Today: the CPU (C++ + OpenMP) dialect. CUDA/HIP/emulation add tables.
#pragma once
#include <string>

#include "codegen/kernel_ir.h"

namespace tilegraph::codegen {

struct Dialect {
  const char* name;
  const char* function_prefix;    // "void"
  const char* restrict_qualifier; // "__restrict"
  const char* parallel_pragma;    // "#pragma omp parallel for schedule(static)"
  const char* simd_pragma;        // "#pragma omp simd"
  const char* unroll_pragma;      // "#pragma GCC unroll 8"
};

const Dialect& cpu_dialect();

// The kernel as a function `void <name>(params...)`; parameters are the
// global buffers in order (inputs const).
std::string print_kernel(const Kernel& k, const Dialect& d);

// The kernel's declaration without a body or ';' (for headers).
std::string print_kernel_signature(const Kernel& k, const Dialect& d);

// Helper functions every printed kernel may call (tg_floordiv, tg_sigmoid,
// half conversions...), emitted once per generated source file.
std::string kernel_prelude(const Dialect& d);

}  // namespace tilegraph::codegen
