#include "codegen/printing/source_text.h"

#include <cstdio>

namespace tilegraph::codegen {

std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 32 || c >= 127 || c == '?') {
      // '?' too: "??/" is a trigraph for a backslash in pre-C++17 dialects.
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string comment_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) out += c >= 32 && c < 127 && c != '\\' ? static_cast<char>(c) : '?';
  return out;
}

}  // namespace tilegraph::codegen
