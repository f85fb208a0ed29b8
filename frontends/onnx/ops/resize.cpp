#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"

namespace tilegraph::onnx_frontend {

void add_resize_ops(OpTable& t) {}

}  // namespace tilegraph::onnx_frontend
