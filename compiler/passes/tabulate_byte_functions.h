// Elementwise functions of one 8-bit tensor become 256-entry tables.
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// A quantized model's activation between two quantized tensors (onnxruntime's
// QOperator GELU: QLinearMul/QLinearAdd around DequantizeLinear -> Erf ->
// QuantizeLinear; QLinearSigmoid; QDQ chains) computes, per element, a
// function of one int8/uint8 value: it has only 256 possible results. An
// elementwise op whose inlined chain of elementwise producers reads a single
// 8-bit tensor (every load of it at the same index) and otherwise only
// constants at constant indices is replaced by a lookup
//   out = table[i64(x) + (x is int8 ? 128 : 0)]
// where table is a new constant computed by the interpreter, so the kernel
// does one byte gather per element instead of the float chain (ViT-S
// QOperator GELU: ~40 float ops and an erf). The chain is followed as far back
// as a single 8-bit tensor is found; producers left unread are dead
// (eliminate_dead_ops). Only chains worth a table are rewritten: several ops
// or a transcendental, on at least 1024 elements. Returns g when nothing matched.
Graph tabulate_byte_functions(const Graph& g);

}  // namespace tilegraph::passes
