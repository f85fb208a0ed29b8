// --cpu-features: which instruction-set extensions a CPU target may use.
#pragma once
#include <string>

#include "scheduler/arch_spec.h"

namespace tilegraph::scheduler {

// Applies a comma-separated list of "+feature" / "-feature" to a CPU arch's
// ISA string. AArch64 ISAs ("armv8.6-a+dotprod+i8mm") gain or lose
// "+dotprod", "+i8mm" (the generated project's -march follows, and so does
// the int8 micro-kernel). On the host (and x86) a feature can only be turned
// off: "-avx512vnni" records "~avx512vnni" in the ISA and the int8 GEMM falls
// back to avx2; "-avx512f" does the same for the float32 GEMM (and the int8
// one, which needs AVX-512F too). Unknown features, "+" on the host, x86 features on AArch64
// (and the reverse) and GPU archs are user errors.
void apply_cpu_features(ArchSpec& arch, const std::string& list);

// Was `feature` turned off by apply_cpu_features on this (host) arch?
bool cpu_feature_disabled(const ArchSpec& arch, const std::string& feature);

}  // namespace tilegraph::scheduler
