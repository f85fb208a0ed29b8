// GEMMs for the micro-kernels (codegen/ukernels): recognizing them, and
// fusing each one's elementwise consumer into it as the epilogue, so
// accumulators never reach memory. Two element types share the matcher and
// the axis roles: int8 (qgemm_*.h) and float32 (sgemm_*.h).
//
// float32: out[v..] = sum over the reduce axes EA * EB, EA and EB float32
// expressions (a load; a Transpose/Reshape index map; a convolution window
// with its padding select; an inlined elementwise producer), no zero points.
//
// int8: the canonical form (what the ONNX frontend emits for MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv, and compiler/passes/
// quantize_matmul for QDQ matmuls and convs):
//   out[v..] = sum over the reduce axes (i32(EA) - ZA) * (i32(EB) - ZB)   (int32)
// EA / EB are int8 or uint8 expressions (a load; a fused quantize producer or
// a convolution window with its padding select fit too: packing evaluates
// them once per element), ZA / ZB the zero points (absent means 0).
// B (the column operand) of a float32 GEMM is the factor reading the
// output's innermost axis, so that a register tile's rows are contiguous in
// the output (when that makes 128 columns or more; else as in int8); an
// int8 GEMM's B is the operand of constant weights if there
// is one (it is packed at compile time), else the one reading the last axis
// (a matmul's columns). Output axes split three ways: N axes (read by B, not
// by A), batch axes (read by both), M axes (not read by B). A GEMM is then,
// per flattened batch, rows = flattened M axes x cols = flattened N axes,
// and K = all reduce axes flattened: a matmul [.., M, N] has N = its last
// axis; an NCHW conv [n, f, oh, ow] has, in float32 (n * oh * ow >= 128),
// M = {f} (the weights are A) and N = {n, oh, ow}, in int8 N = {f} and
// M = {n, oh, ow}. ZA may
// not read k or N axes, ZB not k or M axes.
#pragma once
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"
#include "scheduler/winograd_conv.h"

namespace tilegraph::scheduler {

struct Gemm {
  DType element = DType::kI8;    // of the products: kI8 (int8/uint8 operands, int32 sums) or kF32
  Expr a, b;                     // EA, EB (dtype int8 / uint8, or float32), over the op's vars
  Expr za, zb;                   // int32 zero points (IntImm 0 when absent; float: unused)
  std::vector<int> batch_axes;   // output axes of each role, in axis order
  std::vector<int> row_axes;
  std::vector<int> col_axes;
  std::vector<int64_t> k_extents;  // the reduce axes (vars rank, rank+1, ...)
  int64_t k = 0;                 // product of k_extents
  Shape out_shape;
  int64_t batches() const { return extent(batch_axes); }
  int64_t rows() const { return extent(row_axes); }
  int64_t cols() const { return extent(col_axes); }
  int64_t extent(const std::vector<int>& axes) const;
};

// Does e (an expression of op) load only constant tensors? (A GEMM operand
// that does is packed at compile time.)
bool reads_only_constants(const Graph& g, const Op& op, const Expr& e);

// The GEMM `op` computes (int8 or float32), if it has a canonical form.
std::optional<Gemm> match_gemm(const Graph& g, const Op& op);
// The int8 one only.
std::optional<Gemm> match_int_gemm(const Graph& g, const Op& op);

// Does a float32 GEMM of this shape gain from the micro-kernel? Not when it
// has too few columns to fill a register tile (a depthwise conv's single
// column per channel: the direct kernel, scheduler/direct_conv.h), nor too
// few rows (a vector's dot products with an activation: the loop nest)
// unless A is constant (constant_a: a conv's filters, whose windows the
// loop nest gathers) or B is and holds a MiB or more (constant_b: a
// classifier's weights, whose panels packed at compile time stream in order).
bool float_gemm_pays(const Gemm& m, bool constant_a = false, bool constant_b = false);

// Is op a sum of products of two factors that both read int8/uint8 tensors
// (an integer matmul or conv, or a float one over dequantized int8
// operands)? For the manifest's check
// that every quantized product takes the micro-kernel path.
bool is_int8_contraction(const Graph& g, const Op& op);

// The dimensions of extent other than 1, in order.
std::vector<int> non_unit_dims(const Shape& shape);

// The epilogue's variables (one per dimension of epilogue_shape) for the
// accumulator element at acc_coords, the two shapes being equal up to
// dimensions of extent 1 (a Reshape that adds or drops them: [50,1536] ->
// [1,50,1536]).
std::vector<Expr> epilogue_coords(const std::vector<Expr>& acc_coords, const Shape& acc_shape,
                                  const Shape& epilogue_shape);

// Cache blocking of an int8 GEMM on the micro-kernel, from the arch's cache
// sizes. A row block packs its A panels (MR rows x all of K) once and keeps
// them in L2; each B panel (NR columns) is then swept over all of the row
// block's A panels one kc block at a time, so that the kc slice of the B
// panel stays in L1 while every A panel uses it. (Without kc blocks, the
// ViT-B/16 fc2's 96 KiB B panels, K = 3072, came from L2 for every tile.)
struct IntGemmBlocking {
  int64_t kc_groups = 1;       // k groups per micro-kernel call (K blocks are balanced; the last may be shorter)
  int64_t k_blocks = 1;        // ceil(k_groups / kc_groups)
  int64_t max_row_panels = 1;  // A panels one row block may pack
};
// k_groups = ceil(K / KU); a_panel_bytes: one packed A panel (MR rows, all of K).
IntGemmBlocking int_gemm_blocking(const ArchSpec& arch, int64_t k_groups, int nr, int ku, int64_t a_panel_bytes);

struct GemmUkernelCounts {
  int int_gemms = 0;
  int float_gemms = 0;
  int direct_convs = 0;
  int winograd_convs = 0;
};

// For a CPU schedule: marks each kernel whose op is an int GEMM (and, with
// float_gemms, a float32 GEMM that float_gemm_pays) for the micro-kernel
// path, or (with float_gemms) a depthwise or small-channel convolution for
// the direct kernel
// (scheduler/direct_conv.h), or (with winograd.filter_multiple > 0: a target
// that runs Winograd convs) a stride-1 3x3 conv for the
// Winograd kernel where winograd_conv_pays (scheduler/winograd_conv.h), and merges into it the kernel of its only consumer when that is one
// elementwise op of the same shape (up to unit dimensions) reading the
// accumulator at its own index (requantize, scale + bias, activation,
// residual add). Returns how many kernels use each micro-kernel path.
GemmUkernelCounts use_gemm_ukernels(const Graph& g, Schedule& schedule, bool float_gemms,
                                    const WinogradTarget& winograd = {});

}  // namespace tilegraph::scheduler
