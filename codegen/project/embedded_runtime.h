// The runtime sources (runtime/ in the tilegraph tree) compiled into the
// compiler, so that project emission never depends on the source tree.
#pragma once
#include <string_view>
#include <vector>

namespace tilegraph::codegen {

struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

const std::vector<EmbeddedFile>& embedded_runtime_files();

// The host side of the model library (runtime/model/: the CPU and GPU model
// runtimes, the device shims), each project taking the files of its target.
const std::vector<EmbeddedFile>& embedded_model_runtime_files();

}  // namespace tilegraph::codegen
