// The ONNX ops tilegraph lowers, and where each lowering lives. One family of
// ops per file under frontends/onnx/ops/; each family appends its entries in
// its add_*_ops function, and op_table() lists the families explicitly.
//
// An op is named by its domain and type: the default domain (ONNX's own ops,
// spelled "" or "ai.onnx" in models; "" here) or onnxruntime's contrib ops
// ("com.microsoft"). `since_opset` counts in the model's opset_import version
// for the op's domain.
#pragma once
#include <string>
#include <vector>

#include "frontends/onnx/lowering_context.h"

namespace tilegraph::onnx_frontend {

// onnxruntime's contrib operator domain.
inline constexpr const char* kMsDomain = "com.microsoft";
// The newest opset version of each domain whose operator definitions the
// lowerings follow; a model importing a newer one is refused up front (its
// ops may mean something else).
inline constexpr int kMaxDefaultOpset = 21;
inline constexpr int kMaxMsOpset = 1;

struct OpLowering {
  std::string op_type;
  int since_opset;  // the lowering handles this op for opset >= since_opset (of its domain)
  LowerFn lower;
  std::string domain = "";  // "" (ai.onnx) or kMsDomain
};

using OpTable = std::vector<OpLowering>;

void add_elementwise_ops(OpTable& table);     // ops/elementwise.cpp
void add_layout_ops(OpTable& table);          // ops/layout.cpp
void add_shape_ops(OpTable& table);           // ops/shape.cpp
void add_reduction_ops(OpTable& table);       // ops/reduction.cpp
void add_normalization_ops(OpTable& table);   // ops/normalization.cpp
void add_linalg_ops(OpTable& table);          // ops/linalg.cpp
void add_conv_pool_ops(OpTable& table);       // ops/conv_pool.cpp
void add_resize_ops(OpTable& table);          // ops/resize.cpp
void add_quantization_ops(OpTable& table);    // ops/quantization.cpp
void add_quantization_contrib_ops(OpTable& table);  // ops/quantization_contrib.cpp (com.microsoft)

const OpTable& op_table();
// A node's domain as the table spells it: "ai.onnx" becomes "".
std::string normalize_domain(const std::string& domain);
// The lowering of op_type in `domain` (normalized) at that domain's `opset`, or nullptr.
const OpLowering* find_lowering(const std::string& op_type, int opset, const std::string& domain = "");
// Sorted, unique op types with a lowering; contrib ops as "com.microsoft.QLinearAdd".
std::vector<std::string> supported_op_types();

}  // namespace tilegraph::onnx_frontend
