// Inlining one op into a consumer: loads of the producer's output become the
// producer's body with its axes bound to the load's indices. Shared by the
// index-map pass and by register-level fusion (scheduler connections that
// keep an elementwise producer's values in the consumer's registers).
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// Rewrites `consumer` so that loads of `producer`'s output read the
// producer's inputs directly (producer must not be a reduction). Appends the
// producer's ONNX nodes to consumer.source_nodes. Returns whether the
// consumer read the producer at all.
bool inline_producer(Op& consumer, const Op& producer);

}  // namespace tilegraph::passes
