// The Calls of a Kernel IR statement tree, for the lowering tests that check
// which micro-kernels (or prefetches) a lowering emits.
#pragma once
#include <string>
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::testing {

// Appends every Call anywhere in s (s itself included) to found, in program order.
inline void calls_in(const codegen::Stmt& s, std::vector<codegen::Stmt>* found) {
  if (!s) return;
  if (s->kind == codegen::StmtKind::kCall) found->push_back(s);
  for (const codegen::Stmt& c : s->body) calls_in(c, found);
}

// The same, only the Calls of `callee`.
inline void calls_in(const codegen::Stmt& s, const std::string& callee, std::vector<codegen::Stmt>* found) {
  std::vector<codegen::Stmt> all;
  calls_in(s, &all);
  for (const codegen::Stmt& c : all)
    if (c->callee == callee) found->push_back(c);
}

}  // namespace tilegraph::testing
