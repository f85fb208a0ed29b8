// kernel_profile.h — read and print the per-kernel profile of tilegraph_model.h
// (main_test --profile).
#ifndef TILEGRAPH_RT_KERNEL_PROFILE_H
#define TILEGRAPH_RT_KERNEL_PROFILE_H

#include "tilegraph_model.h"

#include <cstddef>
#include <string>
#include <vector>

namespace tilegraph::rt {

struct KernelTime {
  int index = 0;                   // k of tg_kernel_name(k)
  std::string name;
  std::vector<std::string> nodes;  // the ONNX nodes fused into the kernel
  double total_ms = 0;             // tg_kernel_time_ms: summed since the last reset
  // The median of its per-run times (kernel_times_of_runs): a run in which
  // another process held the core shows in the total of whichever kernel was
  // running then (0.09 ms kernels read 0.66 ms on average), not in the median.
  double median_ms = 0;
};

// The kernels from their times in each run, ms_per_run[k][r] the time of
// kernel k in run r (tg_kernel_time_ms after a tg_reset_profile and one
// run): total and median per kernel, slowest median first (ties keep kernel
// order).
std::vector<KernelTime> kernel_times_of_runs(const std::vector<std::vector<double>>& ms_per_run);

// "a, b ,c" -> {"a", "b", "c"}; empty pieces and NULL give nothing.
std::vector<std::string> split_node_list(const char* comma_separated);

// The table main_test prints: rank, kernel, total ms, ms/iter (the mean),
// the median ms of one run, the share of the summed kernel time, and the
// fused nodes (as many as fit in 60 columns, then "... (+K more)"), followed by the kernel total against `mean_ms`, the
// end-to-end mean measured without profiling.
std::string format_profile_table(const std::vector<KernelTime>& kernels, size_t iterations, double mean_ms);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_KERNEL_PROFILE_H
