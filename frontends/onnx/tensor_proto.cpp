#include "frontends/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"

namespace tilegraph::onnx_frontend {

namespace {

std::vector<uint8_t> read_external(const onnx::TensorProto& proto, const std::string& model_dir,
                                   int64_t expected_bytes, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (location.empty()) throw UserError(where + ": external data without a location");
  const std::filesystem::path path = std::filesystem::path(model_dir) / location;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(str_cat(where, ": cannot open external data file '", path.string(), "'"));
  in.seekg(0, std::ios::end);
  const int64_t file_size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = expected_bytes;
  if (length != expected_bytes)
    throw UserError(str_cat(where, ": external data length ", length, " but the shape needs ",
                            expected_bytes, " bytes"));
  if (offset < 0 || offset + length > file_size)
    throw UserError(str_cat(where, ": external data file '", path.string(), "' is too short (",
                            file_size, " bytes, need ", offset + length, ")"));
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
    data.resize(static_cast<size_t>(bytes));
    auto check_count = [&](int64_t have) {
      if (have != n)
        throw UserError(str_cat(where, ": has ", have, " values, shape ", shape_to_string(t.shape),
                                " needs ", n));
    };
    switch (t.dtype) {
      case DType::kF32:
        check_count(proto.float_data_size());
        if (bytes > 0) std::memcpy(data.data(), proto.float_data().data(), static_cast<size_t>(bytes));
        break;
      case DType::kF64:
        check_count(proto.double_data_size());
        if (bytes > 0) std::memcpy(data.data(), proto.double_data().data(), static_cast<size_t>(bytes));
        break;
      case DType::kI64:
        check_count(proto.int64_data_size());
        if (bytes > 0) std::memcpy(data.data(), proto.int64_data().data(), static_cast<size_t>(bytes));
        break;
      case DType::kU32: case DType::kU64:
        check_count(proto.uint64_data_size());
        for (int64_t i = 0; i < n; ++i)
          write_element(data.data(), t.dtype, i, Scalar{0, static_cast<int64_t>(proto.uint64_data(static_cast<int>(i)))});
        break;
      case DType::kF16:  // int32_data holds the raw 16-bit patterns
        check_count(proto.int32_data_size());
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
          std::memcpy(data.data() + 2 * i, &bits, 2);
        }
        break;
      default:  // int32, int16, int8, uint8, uint16, bool in int32_data
        check_count(proto.int32_data_size());
        for (int64_t i = 0; i < n; ++i)
          write_element(data.data(), t.dtype, i, Scalar{0, proto.int32_data(static_cast<int>(i))});
        break;
    }
  }
  t.data = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  return t;
}

}  // namespace tilegraph::onnx_frontend
