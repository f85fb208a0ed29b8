// The two error channels of tilegraph (STYLE.md §12).
//
// UserError: the model, a flag or an input file is wrong. The message is one
// line naming the culprit (node, op, file, flag); the CLI prints it after
// "error: " and exits non-zero.
// InternalError: a compiler invariant broke. TG_CHECK records file and line.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace tilegraph {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void internal_error(const char* file, int line, const std::string& what);

// Concatenates streamable values: str_cat("node ", name, " has ", n, " inputs").
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace tilegraph

#define TG_CHECK(cond, ...)                                                          \
  do {                                                                               \
    if (!(cond))                                                                     \
      ::tilegraph::internal_error(__FILE__, __LINE__,                                \
                                  ::tilegraph::str_cat("check failed: " #cond " ",   \
                                                       ##__VA_ARGS__));              \
  } while (0)
