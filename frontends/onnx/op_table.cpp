#include "frontends/onnx/op_table.h"

#include <algorithm>

namespace tilegraph::onnx_frontend {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_layout_ops(t);
    add_shape_ops(t);
    add_reduction_ops(t);
    add_normalization_ops(t);
    add_linalg_ops(t);
    add_conv_pool_ops(t);
    add_resize_ops(t);
    add_quantization_ops(t);
    add_quantization_contrib_ops(t);
    return t;
  }();
  return table;
}

std::string normalize_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

const OpLowering* find_lowering(const std::string& op_type, int opset, const std::string& domain) {
  const OpLowering* best = nullptr;
  for (const OpLowering& entry : op_table())
    if (entry.op_type == op_type && entry.domain == domain && entry.since_opset <= opset &&
        (!best || entry.since_opset > best->since_opset))
      best = &entry;
  return best;
}

std::vector<std::string> supported_op_types() {
  std::vector<std::string> names;
  for (const OpLowering& entry : op_table())
    names.push_back(entry.domain.empty() ? entry.op_type : entry.domain + "." + entry.op_type);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace tilegraph::onnx_frontend
