#include "codegen/printing/vector_math_prelude.h"

#include "compiler/ir/error.h"

namespace tilegraph::codegen {

std::string_view vector_math_prelude() {
  for (const EmbeddedFile& f : embedded_vector_math_files())
    if (f.name == "tg_vector_math.h") return f.contents;
  TG_CHECK(false, "tg_vector_math.h is not embedded in the compiler");
  return {};
}

}  // namespace tilegraph::codegen
