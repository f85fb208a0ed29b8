#include "frontends/onnx/schema_check.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"

namespace tilegraph::onnx_frontend {

namespace {

// The newest opset whose schemas Debian's onnx 1.12 ships.
constexpr int kNewestKnownOpset = 17;

// ONNX spells types in schemas as "tensor(float)"; DType codes are ONNX's.
std::string onnx_type_string(DType dtype) {
  std::string name = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(dtype));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "tensor(" + name + ")";
}

// The schema's type parameter named type_str ("T"), or null where a formal
// parameter names a concrete type such as tensor(int64).
const onnx::OpSchema::TypeConstraintParam* type_parameter(const onnx::OpSchema& schema,
                                                          const std::string& type_str) {
  for (const auto& param : schema.typeConstraintParams())
    if (param.type_param_str == type_str) return &param;
  return nullptr;
}

bool type_allowed(const onnx::OpSchema& schema, const std::string& type_str,
                  const std::string& actual) {
  const auto* param = type_parameter(schema, type_str);
  if (!param) return type_str == actual;
  return std::find(param->allowed_type_strs.begin(), param->allowed_type_strs.end(), actual) !=
         param->allowed_type_strs.end();
}

void check_input_types(const LoweringContext& ctx, const onnx::OpSchema& schema) {
  const auto& formals = schema.inputs();
  if (formals.empty()) return;
  // First input bound to each type parameter, to compare the others with.
  std::map<std::string, int> first_bound;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const size_t f = std::min(static_cast<size_t>(i), formals.size() - 1);
    const auto& formal = formals[f];
    // Past the formal list only a variadic last parameter takes more inputs.
    if (static_cast<size_t>(i) >= formals.size() &&
        formal.GetOption() != onnx::OpSchema::Variadic)
      return;
    const std::string& type_str = formal.GetTypeStr();
    const std::string actual = onnx_type_string(ctx.dtype(i));
    if (!type_allowed(schema, type_str, actual))
      ctx.fail(str_cat("input ", i, " ('", ctx.node().input(i), "', ", formal.GetName(),
                       ") is ", actual, ", which the operator does not accept for ", type_str));
    const bool heterogeneous_variadic =
        formal.GetOption() == onnx::OpSchema::Variadic && !formal.GetIsHomogeneous();
    if (heterogeneous_variadic || !type_parameter(schema, type_str)) continue;
    auto [it, inserted] = first_bound.emplace(type_str, i);
    if (!inserted && ctx.dtype(it->second) != ctx.dtype(i))
      ctx.fail(str_cat("inputs ", it->second, " ('", ctx.node().input(it->second), "', ",
                       onnx_type_string(ctx.dtype(it->second)), ") and ", i, " ('",
                       ctx.node().input(i), "', ", actual, ") share type ", type_str,
                       " and must have the same element type"));
  }
}

}  // namespace

void check_against_schema(const LoweringContext& ctx) {
  // onnx ships schemas for its own domain only; contrib ops are checked by
  // their lowerings.
  const std::string& domain = ctx.node().domain();
  if (!domain.empty() && domain != "ai.onnx") return;
  if (ctx.opset() > kNewestKnownOpset) {
    // Newer versions only add optional inputs, attributes and types, so the
    // newest known schema's required inputs are still a floor.
    const auto* newest = onnx::OpSchemaRegistry::Schema(ctx.op_type(), kNewestKnownOpset, "");
    const int required = newest ? newest->min_input() : 0;
    for (int i = 0; i < required; ++i)
      if (i >= ctx.node().input_size() || ctx.node().input(i).empty())
        ctx.fail(str_cat("needs at least ", required, " inputs, input ", i, " is missing"));
    return;
  }
  const auto* schema = onnx::OpSchemaRegistry::Schema(ctx.op_type(), ctx.opset(), "");
  if (!schema) return;
  try {
    schema->Verify(ctx.node());
  } catch (const std::exception& e) {
    std::string what = e.what();
    // Exporters leave required-but-unused inputs empty (Resize's roi at opset
    // 11); the lowering reports a truly missing input itself.
    if (what.find("has an empty string in the graph") == std::string::npos) {
      for (char& c : what)
        if (c == '\n') c = ' ';
      ctx.fail("does not match the operator's schema: " + what);
    }
  }
  check_input_types(ctx, *schema);
}

}  // namespace tilegraph::onnx_frontend
