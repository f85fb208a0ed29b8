// ONNX model file → Graph with static shapes, shape subgraphs folded.
#pragma once
#include <map>
#include <string>

#include "compiler/ir/graph.h"

namespace tilegraph::onnx_frontend {

struct ImportOptions {
  // Overrides for graph input shapes (required for dynamic dimensions).
  std::map<std::string, Shape> input_shapes;
  // Graph inputs whose values are fixed at compile time (`tune --freeze-input`):
  // they become constants, so shapes they decide (Reshape's shape, Resize's
  // scales...) can be static. The tensor's dtype and shape must fit the input.
  std::map<std::string, Tensor> frozen_inputs;
};

// Throws UserError with a one-line cause for unreadable files, unsupported
// ops (all of them listed), dynamic shapes and malformed models.
Graph import_model(const std::string& path, const ImportOptions& options = {});

// The same from the file's bytes; `model_dir` resolves external data and
// `path` names the model in errors. (The fuzz target's entry point.)
Graph import_model_bytes(const std::string& bytes, const std::string& model_dir,
                         const std::string& path, const ImportOptions& options = {});

// Parses "1x3x224x224" (also "1,3,224,224"); throws UserError on bad syntax.
Shape parse_shape(const std::string& text);

}  // namespace tilegraph::onnx_frontend
