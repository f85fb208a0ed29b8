// Integer GEMMs for the int8 micro-kernels (codegen/ukernels): recognizing
// them, and fusing each one's elementwise consumer into it as the epilogue,
// so int32 accumulators never reach memory.
//
// The canonical form (what the ONNX frontend emits for MatMulInteger and
// QLinearMatMul, and compiler/passes/quantize_matmul for QDQ matmuls):
//   out[v0..vr-1] = sum_k (i32(EA) - ZA) * (i32(EB) - ZB)        (int32)
// EA / EB are int8 or uint8 expressions (usually a load; a fused quantize
// producer also fits: packing evaluates it once per element), ZA / ZB the
// zero points (absent means 0). The output's last axis is the GEMM's N; the
// leading axes B depends on are batch axes; the axes between form M
// (flattened). EA may not depend on N, EB not on M; ZA not on k or N, ZB not
// on k or M.
#pragma once
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::scheduler {

struct IntGemm {
  Expr a, b;            // EA, EB (dtype int8 / uint8), over the op's vars
  Expr za, zb;          // int32 zero points (IntImm 0 when absent)
  int batch_axes = 0;   // output axes [0, batch_axes) are batch
  int k_var = -1;       // the reduce axis' var id (= output rank)
  int64_t k = 0;        // reduce extent
  Shape out_shape;
  int64_t batches() const;  // product of the batch extents
  int64_t rows() const;     // M: product of the axes in [batch_axes, rank - 1)
  int64_t cols() const { return out_shape.back(); }
};

// The int GEMM `op` computes, if it has the canonical form.
std::optional<IntGemm> match_int_gemm(const Graph& g, const Op& op);

// Is op a sum of products of int8/uint8 values (an integer matmul or conv,
// or a float one over dequantized int8 operands)? For the manifest's check
// that every quantized product takes the micro-kernel path.
bool is_int8_contraction(const Graph& g, const Op& op);

// For a CPU schedule: marks each kernel whose op is an int GEMM for the
// micro-kernel path, and merges into it the kernel of its only consumer when
// that is one elementwise op of the same shape reading the accumulator at
// its own index (requantize, scale + bias, activation). Returns how many
// kernels use the micro-kernel path.
int use_int_gemm_ukernels(const Graph& g, Schedule& schedule);

}  // namespace tilegraph::scheduler
