#include "compiler/ir/error.h"

#include <cstdio>

namespace tilegraph {

std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(str_cat("internal error at ", file, ":", line, ": ", what));
}

}  // namespace tilegraph
