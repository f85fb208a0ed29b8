// The two error channels of tilegraph (STYLE.md §12).
//
// UserError: the model, a flag or an input file is wrong. The message is one
// line naming the culprit (node, op, file, flag); the CLI prints it after
// "error: " and exits non-zero. Names in it come from untrusted models, so the
// constructor escapes control characters (a newline in a node name shows as
// \n): the message stays one line and cannot drive the user's terminal.
// InternalError: a compiler invariant broke. TG_CHECK records file and line.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace tilegraph {

// message with control characters escaped (\n, \t, \x1b ...): one printable line.
std::string one_line(const std::string& message);

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(one_line(message)) {}
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
