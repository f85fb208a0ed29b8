// npy.cpp — see npy.h. The format is specified in numpy's
// numpy/lib/format.py: magic "\x93NUMPY", major/minor version, a little-endian
// header length (uint16 in 1.0, uint32 in 2.0/3.0), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and a '\n', then the raw data.
#include "npy.h"

#include "tilegraph_model.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

// .npy data is little-endian; copying it verbatim into tensors is only right on
// a little-endian host (every target tilegraph emits for is one).
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "tilegraph runtime: big-endian hosts are not supported"
#endif

namespace tilegraph::rt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DtypeEntry {
  int code;
  size_t size;
  const char* name;
  const char* descr;  // as numpy writes it on a little-endian host
};

constexpr DtypeEntry kDtypes[] = {
    {TG_F32, 4, "float32", "<f4"}, {TG_F64, 8, "float64", "<f8"},
    {TG_F16, 2, "float16", "<f2"}, {TG_I8, 1, "int8", "|i1"},
    {TG_U8, 1, "uint8", "|u1"},    {TG_I16, 2, "int16", "<i2"},
    {TG_U16, 2, "uint16", "<u2"},  {TG_I32, 4, "int32", "<i4"},
    {TG_U32, 4, "uint32", "<u4"},  {TG_I64, 8, "int64", "<i8"},
    {TG_U64, 8, "uint64", "<u8"},  {TG_BOOL, 1, "bool", "|b1"},
};

const DtypeEntry* find_dtype(int code) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& what, const std::string& cause) {
  throw std::runtime_error(what + ": " + cause);
}

// The parsed header dict. numpy writes exactly these three keys.
struct Header {
  bool has_descr = false, has_order = false, has_shape = false;
  std::string descr;
  bool descr_is_string = true;  // false for structured dtypes (a list)
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A recursive-descent reader for the restricted Python literal numpy writes.
// Not a general Python parser: strings, True/False, tuples of ints, and (to
// name them in an error) lists for structured dtypes.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  Header parse() {
    Header h;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() == '[') {
          h.descr_is_string = false;
          skip_balanced('[', ']');
        } else {
          h.descr = parse_string();
        }
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        h.has_order = true;
      } else if (key == "shape") {
        h.shape = parse_int_tuple();
        h.has_shape = true;
      } else {
        bad("unexpected key '" + key + "' in header");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}' in header");
    }
    ++pos_;  // '}'
    if (!h.has_descr || !h.has_order || !h.has_shape) {
      bad("header lacks 'descr', 'fortran_order' or 'shape'");
    }
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& cause) { fail(what_, "malformed header: " + cause); }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string parse_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a quoted string");
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) out += s_[pos_++];
    if (pos_ >= s_.size()) bad("unterminated string");
    ++pos_;
    return out;
  }

  bool parse_bool() {
    skip_space();
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    bad("expected True or False");
  }

  std::vector<int64_t> parse_int_tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      dims.push_back(parse_int());
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        bad("expected ',' or ')' in shape");
      }
    }
    ++pos_;  // ')'
    return dims;
  }

  int64_t parse_int() {
    skip_space();
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (peek() < '0' || peek() > '9') bad("expected an integer in shape");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) bad("dimension too large");
      v = v * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 long suffix, found in old files
    return negative ? -v : v;
  }

  void skip_balanced(char open, char close) {
    int depth = 0;
    do {
      if (pos_ >= s_.size()) bad("unbalanced brackets");
      char c = s_[pos_++];
      if (c == open) ++depth;
      if (c == close) --depth;
    } while (depth > 0);
  }

  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

int64_t NpyArray::num_elements() const { return shape_num_elements(shape); }

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& what) {
  if (size < kMagicLen || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    fail(what, "not a .npy file (bad magic)");
  }
  if (size < kMagicLen + 2) fail(what, "truncated header");
  int major = bytes[6];
  int minor = bytes[7];
  if (major < 1 || major > 3) {
    fail(what, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  size_t len_bytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + len_bytes;
  if (size < prefix) fail(what, "truncated header");
  size_t header_len = read_le(bytes + kMagicLen + 2, len_bytes);
  if (size - prefix < header_len) fail(what, "truncated header");
  std::string text(reinterpret_cast<const char*>(bytes + prefix), header_len);
  Header h = HeaderParser(text, what).parse();

  if (!h.descr_is_string) fail(what, "unsupported dtype (structured arrays are not supported)");
  if (h.fortran_order) {
    fail(what, "fortran_order=True is not supported (save a C-order array, e.g. np.ascontiguousarray)");
  }
  NpyArray out;
  out.dtype = dtype_from_npy_descr(h.descr);
  if (out.dtype == 0) {
    bool big_endian = !h.descr.empty() && h.descr[0] == '>';
    fail(what, "unsupported dtype '" + h.descr + "'" +
                   (big_endian ? " (big-endian; use arr.astype(arr.dtype.newbyteorder('<')))" : ""));
  }
  for (int64_t d : h.shape) {
    if (d < 0) fail(what, "negative dimension in shape " + format_shape(h.shape));
  }
  out.shape = h.shape;
  int64_t count = 0;
  try {
    count = shape_num_elements(out.shape);
  } catch (const std::runtime_error& e) {
    fail(what, e.what());
  }
  size_t elem = dtype_size(out.dtype);
  if (uint64_t(count) > std::numeric_limits<size_t>::max() / elem) fail(what, "shape too large");
  size_t data_bytes = size_t(count) * elem;
  size_t available = size - prefix - header_len;
  if (available < data_bytes) {
    fail(what, "truncated data: shape " + format_shape(out.shape) + " of " + dtype_name(out.dtype) + " needs " +
                   std::to_string(data_bytes) + " bytes, file has " + std::to_string(available));
  }
  if (available > data_bytes) {
    // numpy would ignore these, but they mean the header and data disagree.
    fail(what, std::to_string(available - data_bytes) + " unexpected bytes after the data of shape " +
                   format_shape(out.shape));
  }
  const uint8_t* data = bytes + prefix + header_len;
  out.data.assign(data, data + data_bytes);
  return out;
}

NpyArray read_npy(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
  // Read in chunks rather than trusting a size from seek/tell, which pipes
  // and /proc files do not report.
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(size_t(1) << 16);
  size_t got;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), f)) > 0) {
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + std::ptrdiff_t(got));
  }
  bool error = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  if (error) fail(path, std::string("read error: ") + std::strerror(err));
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const NpyArray& array) {
  std::string descr = dtype_to_npy_descr(array.dtype);
  if (descr.empty()) fail(path, "cannot write dtype " + dtype_name(array.dtype) + " to .npy");
  size_t expected = size_t(shape_num_elements(array.shape)) * dtype_size(array.dtype);
  if (array.data.size() != expected) {
    fail(path, "data has " + std::to_string(array.data.size()) + " bytes but shape " + format_shape(array.shape) +
                   " of " + dtype_name(array.dtype) + " needs " + std::to_string(expected));
  }
  // numpy spells a 1-d shape "(3,)" and a scalar "()".
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(array.shape[i]);
  }
  if (array.shape.size() == 1) shape += ",";
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";

  // Pad with spaces so the data starts on a 64-byte boundary, ending in '\n'.
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 65535) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    total = (prefix + header.size() + 1 + 63) / 64 * 64;
  }
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string head(kMagic, kMagicLen);
  head += char(major);
  head += char(0);
  size_t len = header.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) head += char((len >> (8 * i)) & 0xff);
  head += header;

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  out.write(head.data(), std::streamsize(head.size()));
  out.write(reinterpret_cast<const char*>(array.data.data()), std::streamsize(array.data.size()));
  out.close();
  if (!out) fail(path, "write failed");
}

std::string sanitize_name(const std::string& onnx_name) {
  if (onnx_name.empty()) return "_";
  std::string out = onnx_name;
  for (char& c : out) {
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '.' || c == '-';
    if (!keep) c = '_';
  }
  return out;
}

size_t dtype_size(int dtype) {
  const DtypeEntry* e = find_dtype(dtype);
  return e ? e->size : 0;
}

std::string dtype_name(int dtype) {
  const DtypeEntry* e = find_dtype(dtype);
  return e ? e->name : "dtype(" + std::to_string(dtype) + ")";
}

bool dtype_is_float(int dtype) { return dtype == TG_F32 || dtype == TG_F64 || dtype == TG_F16; }

std::string dtype_to_npy_descr(int dtype) {
  const DtypeEntry* e = find_dtype(dtype);
  return e ? e->descr : "";
}

int dtype_from_npy_descr(const std::string& descr) {
  if (descr.size() < 2) return 0;
  char order = descr[0];
  if (order != '<' && order != '>' && order != '=' && order != '|') return 0;
  for (const DtypeEntry& e : kDtypes) {
    if (descr.compare(1, std::string::npos, e.descr + 1) != 0) continue;
    // Single-byte types have no byte order, so any order mark is fine. Wider
    // ones must be little-endian: '<', or '=' (native) given the #error above.
    if (e.size == 1 || order == '<' || order == '=') return e.code;
  }
  return 0;
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

int64_t shape_num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::runtime_error("negative dimension in shape " + format_shape(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      throw std::runtime_error("shape " + format_shape(shape) + " has too many elements");
    }
    n *= d;
  }
  return n;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf or NaN (payload kept)
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) {
    // Inf stays inf; NaN stays a (quiet) NaN.
    return uint16_t(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  }
  int32_t e = int32_t(exp) - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00);  // overflow rounds to inf
  if (e <= 0) {
    // Subnormal half: value = m * 2^-24 with m = (1.mant) >> (14 - e).
    if (e < -10) return uint16_t(sign);  // below half the smallest subnormal
    uint32_t full = mant | 0x800000;
    int shift = 14 - e;
    uint32_t m = full >> shift;
    uint32_t rem = full & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1))) ++m;  // may carry into the normal range: still right
    return uint16_t(sign | m);
  }
  uint32_t h = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry into the exponent rounds to inf correctly
  return uint16_t(h);
}

}  // namespace tilegraph::rt
