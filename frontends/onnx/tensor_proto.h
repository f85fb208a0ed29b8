// TensorProto → constant Tensor, including external data (location, offset,
// length resolved relative to the model's folder).
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"

namespace tilegraph::onnx_frontend {

// `where` names the tensor's origin in errors ("initializer 'w'").
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& model_dir,
                         const std::string& where);

}  // namespace tilegraph::onnx_frontend
