// The harness of top-k profiling (tune --profile-topk): a throwaway CMake
// project that times candidate kernels on this machine's device.
//
// Every variant runs on zero-filled buffers of its parameters' sizes (zeros
// are valid everywhere: gather indices, divisors become inf/NaN but the
// arithmetic and memory traffic are the same), once to warm up, then in
// samples of enough repetitions to last about half a millisecond; its time
// is the median sample divided by the repetitions. CUDA variants are timed
// with CUDA events around their launches on the default stream, CPU
// variants (OpenMP over blocks) with steady_clock. All variants are timed
// in a few rounds, one round after another, so a burst of load from other
// processes slows one round rather than some variants; the program prints
// one line per variant and round as it finishes, `<index> <seconds>` (a
// negative time: the launch failed), so a crash or a timeout loses only
// what follows. Readers keep each variant's fastest round.
#pragma once
#include <string>
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// Writes the harness into dir (CMakeLists.txt from the project target table,
// profile.h, main and the variant sources, 64 per file so they compile in
// parallel, and from runtime/model/ tg_profile_timing.h and for CUDA the
// device shim). `cuda_arch`:
// the CMake CUDA architecture ("90") for CUDA kernels, "" for host CPU ones.
// Variant names must be unique; the printed index is the position in variants.
void emit_profile_project(const std::vector<Kernel>& variants, const std::string& cuda_arch,
                          const std::string& dir);

}  // namespace tilegraph::codegen
