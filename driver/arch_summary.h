// `tilegraph arch`: an arch spec as a person reads it — what tune assumes the
// hardware can do (the roofline every cost-model prediction is measured
// against). `tilegraph arch --json` prints scheduler::arch_to_json instead.
#pragma once
#include <string>

#include "scheduler/arch_spec.h"

namespace tilegraph::driver {

// A few lines: name, target and ISA, compute units, peak rate per data type
// (GFLOP/s; TOP/s for int8) and, per memory level from DRAM inwards, its
// scope, capacity and bandwidth.
std::string arch_summary(const scheduler::ArchSpec& arch);

}  // namespace tilegraph::driver
