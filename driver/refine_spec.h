// `tilegraph calibrate --refine PREFIX`: a calibrated spec corrected by the
// kernels of a model tuned with it and then measured (explain --measured's
// numbers: main_test --profile, run here or given as --profile-json).
//
// The micro-benchmarks time the GEMM micro-kernels on L1-resident panels;
// in a model they also wait on panels streaming from L2, tails of partial
// tiles and epilogues. Per micro-kernel dtype (float32, int8) the refinement
// takes each GEMM kernel's measured time less the cost model's other terms
// (predicted - ukernel - pack), the time left for the micro-kernel, and
// scales the spec's rate (ukernel_fp32_flops / ukernel_int8_ops) by the
// geometric mean of predicted / left over those kernels, clamped to
// [1/8, 8]: a model's kernels refine the numbers, they do not replace
// them. Kernels where less than a fifth of the measured time is left for
// the micro-kernel say little about its rate and are skipped.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "scheduler/arch_spec.h"

namespace tilegraph::driver {

struct Refinement {
  scheduler::ArchSpec spec;
  int kernels = 0;          // kernels that informed a term
  std::string summary;      // one line per term refined (or why none was)
};

// `explain`: an explain report with measured times (add_measured_times),
// of a model tuned with `spec`. Throws UserError when it has none.
Refinement refine_spec(const scheduler::ArchSpec& spec, const nlohmann::json& explain);

}  // namespace tilegraph::driver
