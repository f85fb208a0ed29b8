#include "frontends/onnx/tensor_proto.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"

namespace tilegraph::onnx_frontend {

namespace {

namespace fs = std::filesystem;


// An external-data field ("offset", "length") as a non-negative integer.
int64_t external_field(const std::string& value, const std::string& field, const std::string& where) {
  int64_t v = -1;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || v < 0)
    throw UserError(str_cat(where, ": external data ", field, " '", value, "' is not a non-negative integer"));
  return v;
}

// The file an external-data location names, confined to the model's folder:
// a relative path without "..", resolving (symlinks included) to a regular
// file inside that folder. A model must not read /etc/passwd into weights.bin,
// nor hang tune on a FIFO.
fs::path external_file(const std::string& location, const std::string& model_dir, const std::string& where) {
  const fs::path rel(location);
  if (location.empty()) throw UserError(where + ": external data without a location");
  if (location.find('\0') != std::string::npos || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw UserError(str_cat(where, ": external data location '", location,
                            "' must be a relative path inside the model's folder"));
  for (const fs::path& part : rel)
    if (part == "..")
      throw UserError(str_cat(where, ": external data location '", location, "' leaves the model's folder (..)"));
  std::error_code ec;
  const fs::path dir = fs::canonical(model_dir.empty() ? "." : model_dir, ec);
  if (ec) throw UserError(str_cat(where, ": cannot resolve the model's folder '", model_dir, "'"));
  const fs::path file = fs::weakly_canonical(dir / rel, ec);
  if (ec) throw UserError(str_cat(where, ": cannot resolve external data location '", location, "'"));
  const auto [stop, _] = std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
  if (stop != dir.end())
    throw UserError(str_cat(where, ": external data location '", location, "' resolves to '", file.string(),
                            "', outside the model's folder (a symlink?)"));
  const fs::file_status status = fs::status(file, ec);
  if (ec || !fs::exists(status))
    throw UserError(str_cat(where, ": external data file '", (dir / rel).string(), "' does not exist"));
  if (!fs::is_regular_file(status))
    throw UserError(str_cat(where, ": external data location '", location, "' is not a regular file"));
  return file;
}

std::vector<uint8_t> read_external(const onnx::TensorProto& proto, const std::string& model_dir,
                                   int64_t expected_bytes, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = external_field(kv.value(), "offset", where);
    else if (kv.key() == "length") length = external_field(kv.value(), "length", where);
  }
  const fs::path path = external_file(location, model_dir, where);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(str_cat(where, ": cannot open external data file '", path.string(), "'"));
  std::error_code ec;
  const int64_t file_size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) throw UserError(str_cat(where, ": cannot read the size of external data file '", path.string(), "'"));
  if (length < 0) length = expected_bytes;
  if (length != expected_bytes)
    throw UserError(str_cat(where, ": external data length ", length, " but the shape needs ",
                            expected_bytes, " bytes"));
  if (offset > file_size || length > file_size - offset)
    throw UserError(str_cat(where, ": external data file '", path.string(), "' is too short (",
                            file_size, " bytes, offset ", offset, " + length ", length, ")"));
  std::vector<uint8_t> bytes(static_cast<size_t>(length));
  in.seekg(offset);
  in.read(reinterpret_cast<char*>(bytes.data()), length);
  if (!in) throw UserError(str_cat(where, ": failed reading external data from '", path.string(), "'"));
  return bytes;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& model_dir,
                         const std::string& where) {
  Tensor t;
  t.name = proto.name();
  t.kind = TensorKind::kConstant;
  if (!dtype_from_onnx(proto.data_type(), &t.dtype))
    throw UserError(str_cat(where, ": unsupported tensor data type ", proto.data_type(),
                            " (strings and complex numbers are not supported)"));
  for (int64_t d : proto.dims()) {
    if (d < 0) throw UserError(str_cat(where, ": negative dimension ", d));
    t.shape.push_back(d);
  }
  if (num_elements(t.shape) > kMaxTensorElements)
    throw UserError(str_cat(where, ": impossibly large shape ", shape_to_string(t.shape)));
  const int64_t n = num_elements(t.shape);
  const int64_t bytes = t.bytes();
  std::vector<uint8_t> data;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    data = read_external(proto, model_dir, bytes, where);
  } else if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes)
      throw UserError(str_cat(where, ": raw_data has ", proto.raw_data().size(),
                              " bytes, shape ", shape_to_string(t.shape), " of ",
                              dtype_name(t.dtype), " needs ", bytes));
    data.assign(proto.raw_data().begin(), proto.raw_data().end());
  } else {
    // Count first, allocate after: a shape of 2^40 elements with no data is an error, not bad_alloc.
    const int64_t have = t.dtype == DType::kF32 ? proto.float_data_size()
                         : t.dtype == DType::kF64 ? proto.double_data_size()
                         : t.dtype == DType::kI64 ? proto.int64_data_size()
                         : t.dtype == DType::kU32 || t.dtype == DType::kU64 ? proto.uint64_data_size()
                                                                              : proto.int32_data_size();
    if (have != n)
      throw UserError(str_cat(where, ": has ", have, " values, shape ", shape_to_string(t.shape), " needs ", n));
    data.resize(static_cast<size_t>(bytes));
    switch (t.dtype) {
      case DType::kF32:
        if (bytes > 0) std::memcpy(data.data(), proto.float_data().data(), static_cast<size_t>(bytes));
        break;
      case DType::kF64:
        if (bytes > 0) std::memcpy(data.data(), proto.double_data().data(), static_cast<size_t>(bytes));
        break;
      case DType::kI64:
        if (bytes > 0) std::memcpy(data.data(), proto.int64_data().data(), static_cast<size_t>(bytes));
        break;
      case DType::kU32: case DType::kU64:
        for (int64_t i = 0; i < n; ++i)
          write_element(data.data(), t.dtype, i, Scalar{0, static_cast<int64_t>(proto.uint64_data(static_cast<int>(i)))});
        break;
      case DType::kF16:  // int32_data holds the raw 16-bit patterns
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
          std::memcpy(data.data() + 2 * i, &bits, 2);
        }
        break;
      default:  // int32, int16, int8, uint8, uint16, bool in int32_data
        for (int64_t i = 0; i < n; ++i)
          write_element(data.data(), t.dtype, i, Scalar{0, proto.int32_data(static_cast<int>(i))});
        break;
    }
  }
  t.data = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  return t;
}

}  // namespace tilegraph::onnx_frontend
