#include "frontends/onnx/import.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"
#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/schema_check.h"
#include "frontends/onnx/tensor_proto.h"

namespace tilegraph::onnx_frontend {

namespace {

onnx::ModelProto parse_model_proto(const std::string& bytes, const std::string& path) {
  onnx::ModelProto model;
  if (bytes.empty()) throw UserError(str_cat("model file '", path, "' is empty"));
  if (bytes.size() > (size_t{2} << 30) - 1 || !model.ParseFromString(bytes))
    throw UserError(str_cat("'", path, "' is not a valid ONNX model (protobuf parse failed; ",
                            "truncated or not an .onnx file?)"));
  if (!model.has_graph() || model.ir_version() <= 0)
    throw UserError(str_cat("'", path, "' is not an ONNX model (no graph or ir_version)"));
  return model;
}

// The model's opset_import: version per (normalized) domain. A default-domain
// version is required unless the model imports nothing (then opset 1).
class OpsetVersions {
 public:
  OpsetVersions(const onnx::ModelProto& model, const std::string& path) {
    for (const auto& o : model.opset_import()) {
      const std::string domain = normalize_domain(o.domain());
      const std::string shown = domain.empty() ? "ai.onnx (default)" : domain;
      const int newest = domain.empty() ? kMaxDefaultOpset : domain == kMsDomain ? kMaxMsOpset : 0;
      if (o.version() < 1 || (newest > 0 && o.version() > newest))
        throw UserError(str_cat("'", path, "' imports opset ", o.version(), " of domain ", shown,
                                "; tilegraph supports versions 1 to ", newest,
                                newest > 0 ? " (re-export the model with an older opset)" : ""));
      if (const auto [it, added] = versions_.emplace(domain, static_cast<int>(o.version()));
          !added && it->second != o.version())
        throw UserError(str_cat("'", path, "' imports domain ", shown, " twice (opsets ", it->second, " and ",
                                o.version(), ")"));
    }
    if (model.opset_import_size() == 0) versions_[""] = 1;
    if (!versions_.count(""))
      throw UserError(str_cat("'", path, "' imports no default-domain opset"));
  }
  // The version of `domain` (normalized); 0 when the model does not import it.
  int of(const std::string& domain) const {
    auto it = versions_.find(domain);
    return it == versions_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, int> versions_;
};

std::string node_label(const onnx::NodeProto& node) {
  return node.name().empty() ? (node.output_size() ? node.output(0) : std::string("?")) : node.name();
}

void check_all_ops_supported(const onnx::GraphProto& graph, const OpsetVersions& opsets) {
  std::vector<std::string> unsupported;
  std::set<std::string> types;
  for (const auto& node : graph.node()) {
    const std::string domain = normalize_domain(node.domain());
    const int opset = opsets.of(domain);
    if (find_lowering(node.op_type(), opset, domain)) continue;
    std::string type = domain.empty() ? node.op_type() : domain + "." + node.op_type();
    unsupported.push_back(str_cat("node '", node_label(node), "' (", type, ", opset ", opset, ")"));
    types.insert(type);
  }
  if (unsupported.empty()) return;
  std::string list;
  for (const std::string& u : unsupported) list += (list.empty() ? "" : "; ") + u;
  std::string type_list;
  for (const std::string& t : types) type_list += (type_list.empty() ? "" : ", ") + t;
  throw UserError(str_cat(unsupported.size(), " unsupported node(s) [op types: ", type_list,
                          "]: ", list));
}

Shape declared_shape(const onnx::ValueInfoProto& info, bool* dynamic, std::string* shown) {
  Shape shape;
  *dynamic = false;
  const auto& tensor_shape = info.type().tensor_type().shape();
  for (const auto& dim : tensor_shape.dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      *shown += (shown->empty() ? "" : "x") + std::to_string(dim.dim_value());
    } else {
      *dynamic = true;
      shape.push_back(-1);
      *shown += (shown->empty() ? "" : "x") +
                (dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param() : std::string("?"));
    }
  }
  return shape;
}

// The constant standing in for a frozen graph input, checked against the
// input's declared element type and static dimensions.
Tensor frozen_input(const onnx::ValueInfoProto& info, const Tensor& value) {
  DType declared;
  if (info.type().has_tensor_type() &&
      dtype_from_onnx(info.type().tensor_type().elem_type(), &declared) && declared != value.dtype)
    throw UserError(str_cat("--freeze-input ", info.name(), ": value is ", dtype_name(value.dtype),
                            ", the input is ", dtype_name(declared)));
  bool dynamic = false;
  std::string shown;
  const Shape shape = declared_shape(info, &dynamic, &shown);
  bool fits = shape.size() == value.shape.size();
  for (size_t d = 0; fits && d < shape.size(); ++d) fits = shape[d] < 0 || shape[d] == value.shape[d];
  if (!fits && !shape.empty())
    throw UserError(str_cat("--freeze-input ", info.name(), ": value has shape ",
                            shape_to_string(value.shape), ", the input is [", shown, "]"));
  Tensor t = value;
  t.name = info.name();
  t.kind = TensorKind::kConstant;
  return t;
}

// Every value is defined once: by an initializer or graph input, or as the
// output of exactly one node. Two definitions make the graph ambiguous.
void check_single_definitions(const onnx::GraphProto& graph) {
  std::unordered_map<std::string, std::string> defined_by;
  for (const auto& init : graph.initializer()) defined_by.emplace(init.name(), "an initializer");
  for (const auto& input : graph.input()) defined_by.emplace(input.name(), "a graph input");
  for (const auto& node : graph.node())
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      const std::string self = str_cat("node '", node_label(node), "' (", node.op_type(), ")");
      if (const auto [it, added] = defined_by.emplace(out, self); !added)
        throw UserError(str_cat(self, " writes '", out, "', which ", it->second, " already defines"));
    }
}

// Nodes in an order where every input is produced before use (ONNX requires
// topological order, but exporters and hand edits get it wrong).
std::vector<int> topological_order(const onnx::GraphProto& graph,
                                   const std::set<std::string>& available) {
  std::set<std::string> ready = available;
  std::vector<int> order;
  std::vector<bool> done(static_cast<size_t>(graph.node_size()), false);
  bool progress = true;
  while (progress && static_cast<int>(order.size()) < graph.node_size()) {
    progress = false;
    for (int i = 0; i < graph.node_size(); ++i) {
      if (done[i]) continue;
      const auto& node = graph.node(i);
      bool ok = true;
      for (const auto& in : node.input()) ok &= in.empty() || ready.count(in) > 0;
      if (!ok) continue;
      for (const auto& out : node.output()) ready.insert(out);
      done[i] = true;
      order.push_back(i);
      progress = true;
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    if (done[i]) continue;
    const auto& node = graph.node(i);
    for (const auto& in : node.input())
      if (!in.empty() && !ready.count(in))
        throw UserError(str_cat("node '", node_label(node), "' (", node.op_type(),
                                ") reads '", in, "', which no node, input or initializer defines"));
  }
  return order;
}

}  // namespace

Shape parse_shape(const std::string& text) {
  Shape shape;
  std::string token;
  std::istringstream in(text);
  while (std::getline(in, token, text.find(',') != std::string::npos ? ',' : 'x')) {
    try {
      size_t used = 0;
      long long v = std::stoll(token, &used);
      if (used != token.size() || v < 0) throw std::invalid_argument(token);
      shape.push_back(v);
    } catch (const std::exception&) {
      throw UserError(str_cat("bad shape '", text, "': expected dimensions like 1x3x224x224"));
    }
  }
  if (shape.empty() && text != "scalar") throw UserError(str_cat("bad shape '", text, "'"));
  return shape;
}

Graph import_model(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw UserError(str_cat("model file '", path, "' is not a regular file (a directory?)"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(str_cat("cannot open model file '", path, "'"));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return import_model_bytes(bytes, std::filesystem::path(path).parent_path().string(), path, options);
}

Graph import_model_bytes(const std::string& bytes, const std::string& model_dir,
                         const std::string& path, const ImportOptions& options) {
  const onnx::ModelProto model = parse_model_proto(bytes, path);
  const onnx::GraphProto& gp = model.graph();
  const OpsetVersions opsets(model, path);
  check_all_ops_supported(gp, opsets);
  check_single_definitions(gp);

  Graph graph;
  graph.name = gp.name().empty() ? std::filesystem::path(path).stem().string() : gp.name();
  std::unordered_map<std::string, TensorId> values;

  for (const auto& init : gp.initializer()) {
    Tensor t = tensor_from_proto(init, model_dir, str_cat("initializer '", init.name(), "'"));
    values[init.name()] = graph.add_tensor(std::move(t));
  }

  std::set<std::string> used_overrides;
  std::vector<std::string> dynamic_inputs;
  for (const auto& info : gp.input()) {
    if (values.count(info.name())) continue;  // an initializer with a default value
    if (auto frozen = options.frozen_inputs.find(info.name()); frozen != options.frozen_inputs.end()) {
      values[info.name()] = graph.add_tensor(frozen_input(info, frozen->second));
      continue;
    }
    Tensor t;
    t.name = info.name();
    t.kind = TensorKind::kInput;
    if (!info.type().has_tensor_type())
      throw UserError(str_cat("input '", info.name(), "' is not a tensor (sequences and maps are not supported)"));
    if (!dtype_from_onnx(info.type().tensor_type().elem_type(), &t.dtype))
      throw UserError(str_cat("input '", info.name(), "' has unsupported element type ",
                              info.type().tensor_type().elem_type()));
    bool dynamic = false;
    std::string shown;
    t.shape = declared_shape(info, &dynamic, &shown);
    if (auto it = options.input_shapes.find(info.name()); it != options.input_shapes.end()) {
      used_overrides.insert(info.name());
      if (it->second.size() != t.shape.size())
        throw UserError(str_cat("--input-shape ", info.name(), "=", shape_to_string(it->second),
                                " has rank ", it->second.size(), " but the model declares [", shown,
                                "] (rank ", t.shape.size(), ")"));
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d] >= 0 && t.shape[d] != it->second[d])
          throw UserError(str_cat("--input-shape ", info.name(), "=", shape_to_string(it->second),
                                  " conflicts with the model's static shape [", shown, "]"));
      t.shape = it->second;
    } else if (dynamic) {
      dynamic_inputs.push_back(str_cat(info.name(), " [", shown, "]"));
    }
    if (!dynamic && num_elements(t.shape) > kMaxTensorElements)
      throw UserError(str_cat("input '", info.name(), "' has an impossibly large shape ",
                              shape_to_string(t.shape)));
    TensorId id = graph.add_tensor(std::move(t));
    values[info.name()] = id;
    graph.inputs.push_back(id);
  }
  if (!dynamic_inputs.empty()) {
    std::string list;
    for (const auto& d : dynamic_inputs) list += (list.empty() ? "" : ", ") + d;
    throw UserError(str_cat("dynamic input dimensions: ", list,
                            "; give static shapes with --input-shape NAME=1x128 (one per input)"));
  }
  for (const auto& [name, shape] : options.input_shapes)
    if (!used_overrides.count(name))
      throw UserError(str_cat("--input-shape names '", name, "', which is not an input of the model"));
  for (const auto& [name, tensor] : options.frozen_inputs)
    if (!values.count(name) || graph.tensor(values.at(name)).kind != TensorKind::kConstant)
      throw UserError(str_cat("--freeze-input names '", name, "', which is not an input of the model"));

  std::set<std::string> available;
  for (const auto& [name, id] : values) available.insert(name);
  for (int index : topological_order(gp, available)) {
    const auto& node = gp.node(index);
    std::vector<TensorId> inputs;
    for (const auto& in : node.input()) inputs.push_back(in.empty() ? -1 : values.at(in));
    const std::string domain = normalize_domain(node.domain());
    LoweringContext ctx(graph, node, opsets.of(domain), inputs);
    check_against_schema(ctx);
    const OpLowering* lowering = find_lowering(node.op_type(), ctx.opset(), domain);
    TG_CHECK(lowering, "op checked as supported has no lowering: ", node.op_type());
    const TensorId first_new = static_cast<TensorId>(graph.tensors.size());
    std::vector<TensorId> outputs;
    try {
      outputs = lowering->lower(ctx);
    } catch (const InternalError& e) {
      // Expression invariants (operand types, ranks) broken while lowering one
      // node mean the node's inputs contradict its schema: a bad model.
      ctx.fail(str_cat("inputs inconsistent with the operator (", e.what(), ")"));
    }
    std::set<TensorId> renamed;
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string& name = node.output(o);
      if (name.empty()) continue;
      if (o >= static_cast<int>(outputs.size()) || outputs[o] < 0)
        ctx.fail(str_cat("output ", o, " ('", name, "') is not supported"));
      Tensor& t = graph.tensor(outputs[o]);
      // Give fresh results the ONNX name users see in errors, profiles and the C API.
      if (outputs[o] >= first_new && renamed.insert(outputs[o]).second) t.name = name;
      values[name] = outputs[o];
    }
  }

  for (const auto& out : gp.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      throw UserError(str_cat("graph output '", out.name(), "' is not produced by any node"));
    graph.outputs.push_back(it->second);
    graph.output_names.push_back(out.name());
  }
  return graph;
}

}  // namespace tilegraph::onnx_frontend
