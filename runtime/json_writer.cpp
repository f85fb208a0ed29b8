// json_writer.cpp — see json_writer.h.
#include "json_writer.h"

#include <cmath>
#include <cstdio>

namespace tilegraph::rt {

void JsonWriter::key(const std::string& k) {
  separator();
  string_literal(k);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::value(const std::string& s) {
  separator();
  string_literal(s);
}

void JsonWriter::value(bool b) {
  separator();
  out_ += b ? "true" : "false";
}

void JsonWriter::value(double v) {
  separator();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  // %.17g round-trips every double; %.10g is plenty for timings and errors
  // and keeps 0.1 from printing as 0.10000000000000001.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  out_ += buf;
}

void JsonWriter::null() {
  separator();
  out_ += "null";
}

// What goes before a key or value: nothing right after a key; otherwise a
// comma unless first in its container, then a line break unless compact.
void JsonWriter::separator() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Level& level = stack_.back();
  if (!level.empty) out_ += level.compact ? ", " : ",";
  level.empty = false;
  if (!level.compact) newline();
}

void JsonWriter::open(char c, bool compact) {
  separator();
  out_ += c;
  bool inside_compact = !stack_.empty() && stack_.back().compact;
  stack_.push_back({compact || inside_compact, true});
}

void JsonWriter::close(char c) {
  Level level = stack_.back();
  stack_.pop_back();
  if (!level.empty && !level.compact) newline();
  out_ += c;
  if (stack_.empty()) out_ += '\n';
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * stack_.size(), ' ');
}

void JsonWriter::string_literal(const std::string& s) {
  out_ += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      case '\b': out_ += "\\b"; break;
      case '\f': out_ += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          out_ += buf;
        } else {
          out_ += char(c);
        }
    }
  }
  out_ += '"';
}

}  // namespace tilegraph::rt
