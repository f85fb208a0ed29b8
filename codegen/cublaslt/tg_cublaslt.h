// cuBLASLt GEMMs of a generated CUDA project (tune --skip-dot). Included by
// model.cu only; header-only so projects without library GEMMs never see it.
//
// tg_blas_create makes everything at model load: the handle, one workspace
// in device memory, and per GEMM its descriptors and the heuristic's algorithm.
// tg_blas_gemm then only enqueues cublasLtMatmul on the model's stream, which
// allocates nothing and so can be captured into the model's CUDA graph.
//
// Geometry (the same as the CPU emulation's tg_gemm): C[b] = A[b] * B[b],
// C m x n, A m x k, B k x n for b < batch; element (r, c) of a matrix at
// r * ld + c when row-major, else r + c * ld, plus b times its batch stride.
// cuBLASLt is column-major: a row-major matrix is its transpose in column
// order, and a row-major C is computed as C^T = B^T * A^T.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

struct tg_gemm_matrix {
  int row_major;
  int64_t ld, batch_stride;
  uint32_t alignment;  // of its device pointer (bytes, a power of two <= 256)
};

struct tg_gemm_shape {
  int half;  // 1: A, B, C are float16 (CUDA_R_16F); 0: float32
  int64_t batch, m, n, k;
  tg_gemm_matrix a, b, c;
  int epilogue;  // bit 0: C[r][c] += bias[c] (C row-major); bit 1: then max(C, 0)
};

struct tg_gemm_plan {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t first, second, out;  // cuBLASLt's A, B and C (= D)
  cublasLtMatmulAlgo_t algo;
  int swapped;  // computes C^T = B^T A^T: cuBLASLt's A is our B
};

struct tg_blas {
  cublasLtHandle_t handle;
  void* workspace;
  size_t workspace_bytes;
  tg_gemm_plan* plans;
  int num_plans;
};

namespace tg_cublaslt {

// 32 MiB: NVIDIA's recommended cuBLASLt workspace on Hopper (more than enough before).
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

inline std::string status_text(cublasStatus_t s) { return cublasLtGetStatusString(s); }

// A layout of a rows x cols column-major matrix, batched.
inline cublasStatus_t make_layout(cublasLtMatrixLayout_t* layout, cudaDataType type, int64_t rows, int64_t cols,
                                  int64_t ld, int64_t batch, int64_t batch_stride) {
  cublasStatus_t s = cublasLtMatrixLayoutCreate(layout, type, (uint64_t)rows, (uint64_t)cols, ld);
  if (s != CUBLAS_STATUS_SUCCESS || batch == 1) return s;
  const int32_t count = (int32_t)batch;
  s = cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  return cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                          sizeof batch_stride);
}

// An operand of logical shape rows x cols: a column-major one as it is
// (CUBLAS_OP_N); a row-major one is its transpose in column order (CUBLAS_OP_T).
inline cublasStatus_t make_operand(cublasLtMatrixLayout_t* layout, cublasOperation_t* op, cudaDataType type,
                                   int64_t rows, int64_t cols, const tg_gemm_matrix& x, int64_t batch) {
  *op = x.row_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  return x.row_major ? make_layout(layout, type, cols, rows, x.ld, batch, x.batch_stride)
                     : make_layout(layout, type, rows, cols, x.ld, batch, x.batch_stride);
}

// The transpose of x (a row-major matrix's transpose is column-major with the same ld).
inline tg_gemm_matrix transposed(tg_gemm_matrix x) {
  x.row_major = !x.row_major;
  return x;
}

inline cublasStatus_t make_plan(cublasLtHandle_t handle, const tg_gemm_shape& g, size_t workspace_bytes,
                                tg_gemm_plan* p) {
  const cudaDataType type = g.half ? CUDA_R_16F : CUDA_R_32F;
  // cuBLASLt computes column-major D = op(first) * op(second); a row-major C
  // is the column-major C^T = B^T * A^T.
  p->swapped = g.c.row_major;
  const int64_t m = p->swapped ? g.n : g.m, n = p->swapped ? g.m : g.n;
  const tg_gemm_matrix first = p->swapped ? transposed(g.b) : g.a, second = p->swapped ? transposed(g.a) : g.b;
  cublasOperation_t op_first, op_second;
  cublasStatus_t s = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (s == CUBLAS_STATUS_SUCCESS) s = make_operand(&p->first, &op_first, type, m, g.k, first, g.batch);
  if (s == CUBLAS_STATUS_SUCCESS) s = make_operand(&p->second, &op_second, type, g.k, n, second, g.batch);
  if (s == CUBLAS_STATUS_SUCCESS) s = make_layout(&p->out, type, m, n, g.c.ld, g.batch, g.c.batch_stride);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second);
  // The bias epilogue adds one value per row of cuBLASLt's D: with a
  // row-major C (swapped), D's rows are our columns. The pointer is set per call.
  if (s == CUBLAS_STATUS_SUCCESS && g.epilogue) {
    const bool bias = g.epilogue & 1, relu = g.epilogue & 2;
    if (bias && !p->swapped) return CUBLAS_STATUS_NOT_SUPPORTED;
    const cublasLtEpilogue_t epilogue =
        bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_RELU;
    s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  }
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  // The heuristic's first choice for these layouts, pointer alignments and workspace.
  cublasLtMatmulPreference_t pref = nullptr;
  s = cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t workspace = workspace_bytes;
  const uint32_t align_first = p->swapped ? g.b.alignment : g.a.alignment;
  const uint32_t align_second = p->swapped ? g.a.alignment : g.b.alignment;
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_first},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_second},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g.c.alignment},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.c.alignment}};
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof workspace);
  for (const auto& [attribute, bytes] : alignments)
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, attribute, &bytes, sizeof bytes);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(handle, p->op, p->first, p->second, p->out, p->out, pref, 1, &result, &found);
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (found == 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  p->algo = result.algo;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace tg_cublaslt

inline void tg_blas_destroy(tg_blas* blas) {
  for (int i = 0; i < blas->num_plans; ++i) {
    tg_gemm_plan& p = blas->plans[i];
    if (p.out) cublasLtMatrixLayoutDestroy(p.out);
    if (p.second) cublasLtMatrixLayoutDestroy(p.second);
    if (p.first) cublasLtMatrixLayoutDestroy(p.first);
    if (p.op) cublasLtMatmulDescDestroy(p.op);
  }
  delete[] blas->plans;
  if (blas->workspace) cudaFree(blas->workspace);
  if (blas->handle) cublasLtDestroy(blas->handle);
  *blas = tg_blas{};
}

// Creates the handle, the workspace and a plan per shape. Returns "" or what
// failed; *failed_shape is the shape's index (-1: not a shape's fault).
inline std::string tg_blas_create(tg_blas* blas, const tg_gemm_shape* shapes, int count, int* failed_shape) {
  *blas = tg_blas{};
  *failed_shape = -1;
  cublasStatus_t s = cublasLtCreate(&blas->handle);
  if (s != CUBLAS_STATUS_SUCCESS) return "creating the cuBLASLt handle: " + tg_cublaslt::status_text(s);
  const cudaError_t e = cudaMalloc(&blas->workspace, tg_cublaslt::kWorkspaceBytes);
  if (e != cudaSuccess) {
    blas->workspace = nullptr;
    return "allocating the cuBLASLt workspace: " + std::string(cudaGetErrorString(e));
  }
  blas->workspace_bytes = tg_cublaslt::kWorkspaceBytes;
  blas->plans = new tg_gemm_plan[count]();
  blas->num_plans = count;
  for (int i = 0; i < count; ++i) {
    s = tg_cublaslt::make_plan(blas->handle, shapes[i], blas->workspace_bytes, &blas->plans[i]);
    if (s != CUBLAS_STATUS_SUCCESS) {
      *failed_shape = i;
      return "preparing its cuBLASLt matmul: " + tg_cublaslt::status_text(s);
    }
  }
  return "";
}

// Enqueues GEMM `plan` on `stream`: C = A * B (alpha 1, beta 0), plus
// `bias` per column when the plan has the bias epilogue (else nullptr).
inline cublasStatus_t tg_blas_gemm(const tg_blas* blas, int plan, const void* A, const void* B, void* C,
                                   const void* bias, cudaStream_t stream) {
  const tg_gemm_plan& p = blas->plans[plan];
  const float alpha = 1.0f, beta = 0.0f;
  if (bias) {
    const cublasStatus_t s = cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return cublasLtMatmul(blas->handle, p.op, &alpha, p.swapped ? B : A, p.first, p.swapped ? A : B, p.second, &beta,
                        C, p.out, C, p.out, &p.algo, blas->workspace, blas->workspace_bytes, stream);
}
