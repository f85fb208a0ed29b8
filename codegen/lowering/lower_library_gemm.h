// Lowers a library GEMM kernel (scheduler/library_gemm.h, `tune
// --skip-dot`) to Kernel IR: a body of one Call and no launch grid (grid 0),
//   tg_gemm(&A[a.offset], &B[b.offset], &C[0], batch, m, n, k,
//           a_row_major, lda, a_batch_stride, b_row_major, ldb, b_batch_stride,
//           c_row_major, ldc, c_batch_stride, &bias[0] (or &C[0]), epilogue)
// C[b] (m x n) = A[b] (m x k) * B[b] (k x n), element (r, c) of a matrix at
// r * ld + c (row-major) or r + c * ld, plus its batch stride times b; all in
// elements of the kernel's buffers. The epilogue (LibraryGemm::bias_op,
// relu_op; bits 1 and 2) adds bias[c] to column c, then applies a ReLU; C is
// then the epilogue's output.
// The CUDA project turns the call into a cuBLASLt matmul
// (codegen/project/emit_cuda_project.cpp, cublaslt/tg_cublaslt.h);
// the CPU emulation calls library_gemm_reference_source()'s tg_gemm.
#pragma once
#include <string>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// The name of the Call a library GEMM kernel makes.
inline constexpr const char* kLibraryGemmCallee = "tg_gemm";

// `schedule.library_gemm` must be set; its op is the kernel's only op.
Kernel lower_library_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& schedule);

// Is k a library GEMM (a Call, no launch grid)?
bool is_library_gemm(const Kernel& k);

// C++ defining tg_gemm for float and half (uint16_t) storage: a plain
// reference GEMM accumulating in float, OpenMP-parallel over batches and
// rows. Needs the kernel prelude (tg_h2f, tg_f2h) before it.
std::string library_gemm_reference_source();

}  // namespace tilegraph::codegen
