// libFuzzer target: arbitrary bytes as an ONNX model through the frontend and
// the graph passes. Bad models must end in a UserError — never a crash, a
// sanitizer report, or an InternalError (which aborts here so it is found).
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/passes/inline_index_maps.h"
#include "compiler/passes/materialize_outputs.h"
#include "compiler/passes/simplify_indices.h"
#include "frontends/onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    // External data may only resolve inside a folder that does not exist.
    tilegraph::Graph g = tilegraph::onnx_frontend::import_model_bytes(
        bytes, "/nonexistent-tilegraph-fuzz", "fuzz.onnx");
    g = tilegraph::passes::inline_index_maps(g);
    g = tilegraph::passes::simplify_indices(g);
    g = tilegraph::passes::materialize_outputs(g);
    tilegraph::verify(g);
  } catch (const tilegraph::UserError&) {
    // expected for malformed input
  } catch (const tilegraph::InternalError& e) {
    std::cerr << e.what() << "\n";
    std::abort();
  }
  return 0;
}
