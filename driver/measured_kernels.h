// Predicted vs measured time per kernel (`tilegraph explain --measured`).
//
// The measured side is main_test's per-kernel profile (--profile
// --export-json): either a file the user already has from
// `tilegraph run PREFIX --profile --export-json FILE`, or one this module
// makes by running the project's main_test itself (no shell: run_process).
// Runtime kernel k is explain's subgraph k (the code generator lowers the
// schedule's kernels one to one, in order), so the two join by index.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilegraph::driver {

struct MeasuredKernel {
  int index = 0;           // tg_kernel_name(index)
  std::string name;
  // One run's time: the median over the profiled runs (main_test's
  // median_ms), or their mean (ms_per_iter) in an export without medians.
  // The median leaves out the runs in which another process held the core.
  double ms = 0;
};

// The kernels of a main_test --export-json document's "profile"; throws
// UserError naming `origin` when it has none or is malformed.
std::vector<MeasuredKernel> read_kernel_profile_json(const nlohmann::json& report, const std::string& origin);

// Runs `main_test` of the project in `project_dir` with --profile and
// returns its per-kernel times; the export lands in `export_path`.
std::vector<MeasuredKernel> profile_project_kernels(const std::string& project_dir, const std::string& export_path,
                                                    int iterations);

// Adds the measured times to an explain report: per subgraph "measured_ms"
// and "ratio" (predicted / measured); top level "measured" (the subgraphs'
// indices and numbers, largest error first: |log ratio|), "measured_ms" (the
// kernels' sum) and "prediction_error" (geometric mean over the kernels of
// max(ratio, 1 / ratio): 1 is a perfect model). Throws UserError when the
// profile's kernels are not the report's.
void add_measured_times(nlohmann::json& explain, const std::vector<MeasuredKernel>& measured);

// The measured part of explain_text: one line per kernel, largest error first.
std::string measured_text(const nlohmann::json& explain);

}  // namespace tilegraph::driver
