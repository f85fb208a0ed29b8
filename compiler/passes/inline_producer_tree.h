// Inlining a whole tree of elementwise producers into one consumer, in time
// linear in the size of the result.
//
// Register-level fusion turns a kernel's chain of elementwise ops into one
// expression. Inlining one producer at a time (inline_producer) rewrites the
// consumer's whole body at each step, so a chain of n ops costs O(n^2) time
// and, with every intermediate body kept, O(n^2) memory: a 20k-op chain of
// Adds from an untrusted model exhausted 4 GB. This builds the same op in one
// rewrite of each body.
#pragma once
#include <functional>
#include <vector>

#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// The op `root` (an index into g.ops) with its producer tree inlined:
// producers_of(op) lists the ops inlined into op (each elementwise, read by
// op, earlier in g.ops), in the order inline_producer would take them.
// The result is the op that calling inline_producer(op, inlined producer)
// for every op of the tree, leaves first, would give: the same body, the
// same input slots in the same order, the same source_nodes. Where the
// one-pass construction cannot promise that (a load that an inlined constant
// folds away, an input the body never loads, a producer read from outside
// its consumer), it inlines step by step instead.
Op inline_producer_tree(const Graph& g, int root, const std::function<std::vector<int>(int)>& producers_of);

}  // namespace tilegraph::passes
