// Library GEMMs (`tune --skip-dot`): float matrix products that a GPU
// project hands to cuBLASLt instead of generating a kernel for them.
//
// An op qualifies when it is a strided-batched GEMM
//   out[b.., i.., j..] = sum over k.. A(b.., i.., k..) * B(b.., k.., j..)
// in float32 or float16 (A, B and the output of that one dtype; the sum is
// accumulated in float32). Concretely: Sum over a body Mul(Load x, Load y),
// and each load's flat element offset (its index linearized over the input's
// row-major shape, then simplified) is affine in the op's variables with
// non-negative integer coefficients. Layout ops (Transpose, Reshape, Slice)
// were inlined into those indices by the passes, so q @ k^T after a head
// split reads its operands at offsets like 64*h + 256*j + d: still affine.
// An index that stays non-affine (floordiv/floormod of a variable, a gather)
// leaves the op to the fused path.
//
// Roles of the axes (those of extent 1 take none): an output axis read by
// both operands is a batch axis, one read by only one operand a row (A's) or
// column (B's) axis; every reduce axis must be read by both (k). Each role
// may hold several axes, provided they flatten to one stride in every
// operand that reads them (stride of the outer = stride x extent of the
// inner), as for the output's row-major layout; otherwise the op is not a
// library GEMM. So one GEMM call covers the op: there is no loop over outer
// batches. Each matrix then needs one unit stride (cuBLASLt's row- or
// column-major layouts) and a leading dimension covering the other extent.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "compiler/ir/graph.h"

namespace tilegraph::scheduler {

// One matrix operand of a library GEMM, in elements of its tensor.
struct GemmMatrix {
  int64_t offset = 0;        // of element (0, 0) of batch 0
  int64_t batch_stride = 0;  // to the next batch's matrix (0 when batch == 1)
  bool row_major = true;     // element (r, c) at r * ld + c; else r + c * ld
  int64_t ld = 1;            // leading dimension (>= cols row-major, >= rows column-major)
};

// C[b] (m x n) = A[b] (m x k) * B[b] (k x n) for b < batch.
struct LibraryGemm {
  DType dtype = DType::kF32;  // of A, B and C: kF32 or kF16
  int64_t batch = 1, m = 1, n = 1, k = 1;
  int a_slot = 0, b_slot = 1;  // the op's input slots read as A and B
  GemmMatrix a, b, c;          // c: the op's output
  // A bias epilogue (cuBLASLt's CUBLASLT_EPILOGUE_BIAS): the GEMM's only
  // consumer adds a constant vector over the columns, C[r][c] += bias[c], and
  // is computed by the library call; the kernel then writes the consumer's
  // output (laid out as c). bias_op: the consumer (Graph::ops index), -1: none.
  int bias_op = -1;
  int bias_slot = -1;          // the consumer's input slot of the bias vector
  // A ReLU epilogue (CUBLASLT_EPILOGUE_RELU / RELU_BIAS): the only consumer
  // of the GEMM (or of its bias add) is max(x, 0); -1: none.
  int relu_op = -1;
  // "none", "bias", "relu" or "bias+relu".
  std::string epilogue_name() const;
  // The ops of the kernel after the GEMM: its bias add, then its ReLU, as present.
  int epilogue_ops() const { return (bias_op >= 0) + (relu_op >= 0); }
};

// The library GEMM `op` computes, or nullopt when it is not one (see above).
std::optional<LibraryGemm> match_library_gemm(const Graph& g, const Op& op);

// Is `consumer` (the only reader of `gemm_op`'s output) a bias epilogue of
// the library GEMM `gemm`: out = gemm_out + bias (either order), gemm_out
// read at the consumer's own index (same shape and dtype), bias a constant
// indexed by the last axis only, which is the GEMM's whole column range of a
// row-major C? Returns the bias's input slot, or -1. (A bias over the rows
// of a column-major C has no cuBLASLt epilogue.)
int match_bias_epilogue(const Graph& g, const Op& consumer, TensorId gemm_out, const LibraryGemm& gemm);

// Is `consumer` max(x, 0) of `in` (read at the consumer's own index, same
// shape and dtype), the only reader of in?
bool is_relu_epilogue(const Graph& g, const Op& consumer, TensorId in);

// Element (row, col) of batch `batch` of a matrix: its offset in the tensor.
int64_t gemm_element_offset(const GemmMatrix& x, int64_t batch, int64_t row, int64_t col);

}  // namespace tilegraph::scheduler
