#include "compiler/ir/error.h"

namespace tilegraph {

void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(str_cat("internal error at ", file, ":", line, ": ", what));
}

}  // namespace tilegraph
