// Lowers a direct convolution kernel (scheduler/direct_conv.h: depthwise
// convs, and k x k convs over few input channels), with
// its fused elementwise epilogue if any (bias, Clip/Relu6, a residual add),
// to a direct vectorized loop nest instead of the generic reduction:
//   * one task per (image, channel) plane, split across threads;
//   * each output is its products (taps x channels) summed in one expression (the
//     window's loads and the weights stay in registers, no accumulator
//     buffer, no reduction loop), stored through the epilogue;
//   * the plane splits into the interior, where no tap reaches the padding,
//     and the border rows and columns: interior rows run their interior
//     columns as one vectorized loop over the output width, with neither a
//     padding select nor a clamped index (the simplifier proves them away
//     under the segment's bounds); only the border keeps the selects;
//   * the flat form, for a stride-1 conv whose input and output rows are as
//     wide (the 'same' convs of MobileNet): all interior rows are one
//     vectorized loop over the plane's flat index, the border columns it
//     passes over stored again afterwards. On MobileNetV2 (one thread,
//     per-kernel minima) its 13 stride-1 depthwise convs took 3-14% less
//     time than with a loop per row (7x7 maps: 51-54 -> 45-47 us; all 17
//     dw convs 1.37 -> 1.30 ms); a residual epilogue keeps the loop per
//     row (a position must be stored once), stride 2 the segments;
//   * the padded form, for a stride-1 conv on a plane at most 14 wide
//     (MobileNetV2's 14x14 and 7x7 maps, where the border is a third to a
//     half of the outputs): the task copies its input plane into a zeroed
//     local plane with the padding around it, computes every row in one
//     guard-free vectorized loop over the padded plane's flat index, and
//     stores the outputs row by row through the epilogue (a residual too).
//     Its 9 such convs: 10-15% less time than on the flat form (one thread,
//     three interleaved runs on a noisy machine). Where the depthwise
//     micro-kernel has no stride-1 form (AVX2) planes up to 112 wide take
//     it too; from 28 wide on, only the padding is zeroed and each output
//     row is one loop that sums and stores through the epilogue (no result
//     plane).
//   * the micro-kernel form, where the target has a depthwise micro-kernel
//     (codegen/ukernels/dwconv_<variant>.h: AVX-512; on AVX2 the stride-2
//     form, and planes8_same, eight channels per call, for 'same' planes
//     of at most 14 x 14 outputs): a stride-1
//     K x K 'same' conv on a plane of at most 56 x 56 outputs, or a 3 x 3
//     stride-2 conv padded by 1 at the top and left (at most 64 x 64
//     outputs: the result plane is a stack array), sums each plane's taps
//     in the micro-kernel (masked loads of the plane itself) and stores the
//     outputs through the epilogue in one flat loop. It replaces the padded
//     and flat forms there (the padded copy's unaligned reads of
//     just-stored values stall on store forwarding) and the segments of
//     stride 2 (a gather per tap and output vector).
// A separate kernel kind (KernelSchedule::direct_conv) rather than a loop
// schedule of lower_cpu_kernel: the generic nest keeps the taps as reduce
// loops around an accumulator tile, where every load needs its guard.
#pragma once
#include <string>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// depthwise_ukernel: the target's depthwise micro-kernel variant
// (depthwise_variant_for), or empty for the generated loops only.
Kernel lower_direct_conv_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                                const std::string& depthwise_ukernel = "");

}  // namespace tilegraph::codegen
