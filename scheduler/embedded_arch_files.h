// The arch specs (scheduler/arch/*.json in the tilegraph tree) compiled into
// the compiler by cmake/embed_files.cmake, so --arch never depends on the
// source tree. Parsed by arch_spec.cpp; nothing else should need this.
#pragma once
#include <string_view>
#include <vector>

namespace tilegraph::scheduler {

struct EmbeddedFile {
  std::string_view name;      // file name, e.g. "H100.json"
  std::string_view contents;
};

// Sorted by file name.
const std::vector<EmbeddedFile>& embedded_arch_files();

}  // namespace tilegraph::scheduler
