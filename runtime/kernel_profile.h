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
};

// The model's profile counters, slowest kernel first; ties keep kernel order
// so the table is deterministic.
std::vector<KernelTime> read_kernel_profile(const tg_model* model);

// "a, b ,c" -> {"a", "b", "c"}; empty pieces and NULL give nothing.
std::vector<std::string> split_node_list(const char* comma_separated);

// The table main_test prints: rank, kernel, total ms, ms/iter, share of the
// summed kernel time, and the fused nodes (as many as fit in 60 columns, then
// "... (+K more)"), followed by the kernel total against `mean_ms`, the
// end-to-end mean measured without profiling.
std::string format_profile_table(const std::vector<KernelTime>& kernels, size_t iterations, double mean_ms);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_KERNEL_PROFILE_H
