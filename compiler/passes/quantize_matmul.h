// QDQ matmuls to integer GEMMs (Jacob et al. 2017, arXiv:1712.05877 §2.3).
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// A float matmul, batch matmul or convolution whose operands are dequantized int8/uint8
// values, sum_k (sa*(a - za)) * (sb*(b - zb)) with scales and zero points
// constant along k (per tensor, per row of A, per column of B), becomes
//   acc = sum_k (i32(a) - za) * (i32(b) - zb)      (int32, scheduler/int_gemm.h)
//   out = f32(acc) * sa * sb
// so the product runs on the int8 micro-kernel and the scale (with whatever
// follows: bias, requantize) is its epilogue. The DequantizeLinear ops it no
// longer reads are left to eliminate_dead_ops. Returns g when nothing matched.
Graph quantize_matmul(const Graph& g);

}  // namespace tilegraph::passes
