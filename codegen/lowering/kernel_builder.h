// The state every lowering builder (lower_*_kernel.cpp) grows while it
// builds one Kernel: its loop variables with their bounds, and its buffers.
// Builders derive from KernelBuilder and add their own structure.
#pragma once
#include <string>
#include <vector>

#include "codegen/kernel_ir/kernel_exprs.h"
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/interval.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

class KernelBuilder {
 protected:
  explicit KernelBuilder(const Graph& g) : g_(g) {}

  // A new loop variable named `name` ranging over [0, extent); returns its id.
  int new_var(const std::string& name, int64_t extent) {
    kernel_.var_names.push_back(name);
    bounds_.push_back(Interval::range(extent));
    return static_cast<int>(kernel_.var_names.size() - 1);
  }

  // Graph tensor `id` as the kernel's next global buffer (add_global_buffer).
  int add_global(TensorId id, bool written) { return add_global_buffer(kernel_, g_, id, written); }

  // A per-thread scratch buffer (add_local_buffer).
  int add_local(const std::string& name, DType dtype, int64_t elements, int alignment = 0) {
    return add_local_buffer(kernel_, name, dtype, elements, alignment);
  }

  // The start of a GEMM micro-kernel kernel (int and float): named after
  // the root phase with every phase's ONNX nodes, the GEMM phase's inputs as
  // global buffers in slot order (so buffer id = slot), then the epilogue
  // phase's other inputs. Returns the epilogue slots' buffers (-1: the
  // GEMM's accumulator).
  std::vector<int> begin_gemm_kernel(const std::vector<Op>& phases, const scheduler::KernelSchedule& ks,
                                     const std::string& ukernel) {
    const Op& gemm = phases.front();
    kernel_.name = phases.back().name;
    for (const Op& p : phases)
      kernel_.source_nodes.insert(kernel_.source_nodes.end(), p.source_nodes.begin(), p.source_nodes.end());
    kernel_.schedule = ks;
    kernel_.ukernel = ukernel;
    for (TensorId t : gemm.inputs) add_global(t, false);
    std::vector<int> epilogue_buffers;
    if (phases.size() == 2)
      for (TensorId t : phases[1].inputs) epilogue_buffers.push_back(t == gemm.output ? -1 : add_global(t, false));
    return epilogue_buffers;
  }

  const Graph& g_;
  Kernel kernel_;
  std::vector<Interval> bounds_;  // per kernel var (kernel_.var_names)
};

}  // namespace tilegraph::codegen
