// json_writer.h — a small streaming JSON writer.
//
// The generated project may depend on nothing but a C++17 compiler, so
// main_test's --export-json cannot use a JSON library. This writes
// pretty-printed JSON with correct string escaping; containers opened
// "compact" stay on one line (shapes, node lists, sample arrays).
//
//   JsonWriter j;
//   j.begin_object();
//   j.field("name", "x");
//   j.key("shape"); j.begin_array(true); j.value(2); j.value(3); j.end_array();
//   j.end_object();
//   j.str()  ->  {\n  "name": "x",\n  "shape": [2, 3]\n}\n
//
// Non-finite doubles become null (JSON has no inf/NaN). Strings are written
// byte for byte apart from escapes, so they must be UTF-8 (ONNX names are).
// Misuse (a value where a key is due, unbalanced end_*) is not diagnosed.
#ifndef TILEGRAPH_RT_JSON_WRITER_H
#define TILEGRAPH_RT_JSON_WRITER_H

#include <string>
#include <type_traits>
#include <vector>

namespace tilegraph::rt {

class JsonWriter {
 public:
  void begin_object(bool compact = false) { open('{', compact); }
  void end_object() { close('}'); }
  void begin_array(bool compact = false) { open('[', compact); }
  void end_array() { close(']'); }

  void key(const std::string& k);
  void value(const std::string& s);
  void value(const char* s) { value(std::string(s)); }
  void value(bool b);
  void value(double v);
  void null();
  // Every integer type, printed exactly (no detour through double).
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  void value(T v) {
    separator();
    out_ += std::to_string(v);
  }

  template <typename T>
  void field(const std::string& k, const T& v) {
    key(k);
    value(v);
  }

  const std::string& str() const { return out_; }

 private:
  struct Level {
    bool compact;
    bool empty;
  };
  void separator();
  void open(char c, bool compact);
  void close(char c);
  void newline();
  void string_literal(const std::string& s);

  std::string out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_JSON_WRITER_H
