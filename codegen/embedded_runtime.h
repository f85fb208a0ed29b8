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

}  // namespace tilegraph::codegen
