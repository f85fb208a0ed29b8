// The compile pipeline: one straight-line function (STYLE.md §5).
//   import (frontends/onnx) → passes → schedule → codegen → emit project → build
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tilegraph::driver {

struct CompileOptions {
  std::string model_path;                      // PREFIX/model.onnx
  std::string output_dir;                      // PREFIX/tilegraph_rt/<arch>
  std::string arch = "host";
  int topk = 20;
  std::map<std::string, Shape> input_shapes;
  std::map<std::string, Tensor> frozen_inputs;  // --freeze-input
  bool build = true;                           // run cmake + build after emitting
  int build_jobs = 0;                          // 0: all cores
  std::vector<std::string> dump_after;         // pass names ("import", "inline_index_maps", ...) or "all"
  bool verbose = false;
};

struct CompileReport {
  int num_kernels = 0;
  double seconds_frontend = 0, seconds_passes = 0, seconds_schedule = 0, seconds_codegen = 0,
         seconds_build = 0;
};

// Throws UserError for bad models/flags; prints progress to stderr.
CompileReport compile(const CompileOptions& options);

// The first two steps alone (for tools and tests that inspect the IR).
Graph import_graph(const CompileOptions& options);
Graph optimize_graph(const CompileOptions& options, const Graph& imported);

}  // namespace tilegraph::driver
