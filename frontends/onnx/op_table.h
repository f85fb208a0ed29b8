// The ONNX ops tilegraph lowers, and where each lowering lives. One family of
// ops per file under frontends/onnx/ops/; each family appends its entries in
// its add_*_ops function, and op_table() lists the families explicitly.
#pragma once
#include <string>
#include <vector>

#include "frontends/onnx/lowering_context.h"

namespace tilegraph::onnx_frontend {

struct OpLowering {
  std::string op_type;
  int since_opset;  // the lowering handles this op for opset >= since_opset
  LowerFn lower;
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

const OpTable& op_table();
// The lowering of op_type at `opset` (default domain), or nullptr.
const OpLowering* find_lowering(const std::string& op_type, int opset);
// Sorted, unique op types with a lowering.
std::vector<std::string> supported_op_types();

}  // namespace tilegraph::onnx_frontend
