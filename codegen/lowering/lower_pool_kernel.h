// Max pools on the pooling micro-kernel (codegen/ukernels/maxpool_<variant>.h)
// instead of the generated loop nest: a CPU loop-nest kernel of one op that
// is ONNX MaxPool with a 3 x 3 window, strides 2 and padding 1 over an NCHW
// float tensor (ResNet's stem pool), whose stride-2 window columns the loop
// nest reads a lane at a time. Other pools keep lower_cpu_kernel.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// The input plane of a max pool the micro-kernel computes.
struct MaxPoolPlane {
  int64_t height = 0;
  int64_t width = 0;
};

// `op`'s plane when it reads, for every output (n, c, oh, ow), exactly the
// window rows 2 * oh - 1 .. 2 * oh + 1 and columns 2 * ow - 1 .. 2 * ow + 1
// of input (n, c) that lie inside it, the others giving -inf: checked on the
// op's own body at the plane's borders and inside, every channel-batch
// corner, all nine taps (the body is the frontend's compute definition, not
// a tag, so a pool reaches the kernel only as what it computes).
std::optional<MaxPoolPlane> max_pool_3x3_s2_plane(const Graph& g, const Op& op);

// The kernel: one parallel loop over the N x C planes, each a call of the
// micro-kernel `tg_maxpool::plane_3x3_s2<H, W>` (Kernel::ukernel
// "maxpool_<variant>").
Kernel lower_max_pool_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const Op& op,
                             const MaxPoolPlane& plane, const std::string& variant);

}  // namespace tilegraph::codegen
