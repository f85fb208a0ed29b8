#include "compiler/driver/pipeline.h"

#include "frontends/onnx/import.h"

namespace tilegraph::driver {

Graph import_and_optimize(const CompileOptions& options) {
  onnx_frontend::ImportOptions import_options;
  import_options.input_shapes = options.input_shapes;
  Graph g = onnx_frontend::import_model(options.model_path, import_options);
  verify(g);
  return g;
}

CompileReport compile(const CompileOptions& options) {
  CompileReport report;
  Graph g = import_and_optimize(options);
  report.num_kernels = static_cast<int>(g.ops.size());
  return report;
}

}  // namespace tilegraph::driver
