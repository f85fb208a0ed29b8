// Sliding-window geometry shared by Conv and the pooling ops: kernel, strides,
// dilations, explicit or automatic padding, and the output size they imply.
//
// Along spatial dim d, output position o with kernel tap k reads input
//   i = o * strides[d] - pads_begin[d] + k * dilations[d],
// which may fall into the padding (i < 0 or i >= in[d]); window_guard() builds
// the bounds test for exactly the dims where that can happen, so a convolution
// without padding keeps a guard-free (purely affine) body.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/onnx/lowering_context.h"

namespace tilegraph::onnx_frontend {

struct WindowGeometry {
  std::vector<int64_t> in;          // input spatial extents
  std::vector<int64_t> kernel;      // taps per dim
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  std::vector<int64_t> out;         // output spatial extents
  std::string auto_pad;             // NOTSET, VALID, SAME_UPPER or SAME_LOWER

  int dims() const { return static_cast<int>(in.size()); }
  // The input coordinate read by output position `o` and tap `k` along dim d.
  Expr input_index(int d, const Expr& o, const Expr& k) const;
  // Can some (o, k) read below 0, or at/after in[d]?
  bool reads_before(int d) const { return pads_begin[d] > 0; }
  bool reads_after(int d) const;
};

// Reads and checks kernel_shape (unless `kernel` is given: ops that infer it
// from their weight), strides, dilations, auto_pad and pads (zeros unless
// auto_pad is NOTSET); leaves `out` empty. ConvTranspose derives its own
// output size from these.
WindowGeometry read_window_attrs(const LoweringContext& ctx, const Shape& in_spatial,
                                 const std::vector<int64_t>& kernel);

// read_window_attrs, then the output size (and for SAME_* the pads) of Conv
// and the pools. ceil_mode rounds the output size up as ONNX pooling does (the
// last window must start inside the input or its begin padding).
struct WindowOptions {
  std::vector<int64_t> kernel;  // empty: read the kernel_shape attribute (required)
  bool ceil_mode = false;
};
WindowGeometry window_geometry(const LoweringContext& ctx, const Shape& in_spatial,
                               const WindowOptions& options);

// `AND_d 0 <= index[d] < in[d]` over the dims where a window can leave the
// input, or nullptr when every read is in bounds.
Expr window_guard(const WindowGeometry& g, const std::vector<Expr>& index);

// Reduce-axis bookkeeping: an op's reduce axes are the logical ones with
// extent > 1; an extent-1 axis becomes the constant 0 and is not a reduce axis
// (a 1x1 convolution reduces over channels only, like a GEMM).
class ReduceAxes {
 public:
  explicit ReduceAxes(int out_rank) : next_var_(out_rank) {}
  // A Var for a new reduce axis of this extent, or 0 when the extent is 1.
  Expr add(int64_t extent);
  const std::vector<int64_t>& extents() const { return extents_; }

 private:
  int next_var_;
  std::vector<int64_t> extents_;
};

// Emits `body` as a reduction over `axes` (or as a plain map when every
// logical reduce axis had extent 1).
TensorId emit_reduction(LoweringContext& ctx, const std::string& kind, const Shape& shape,
                        DType dtype, std::vector<TensorId> inputs, Expr body, Reduction reduction,
                        const ReduceAxes& axes);

}  // namespace tilegraph::onnx_frontend
