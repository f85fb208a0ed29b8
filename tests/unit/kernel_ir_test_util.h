// Kernel IR queries shared by the lowering pass tests.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::testing {

// Each For of s as (extent, kind), outside in (constant extents).
inline void collect_loops(const codegen::Stmt& s, std::vector<std::pair<int64_t, codegen::LoopKind>>* loops) {
  if (s->kind == codegen::StmtKind::kFor) loops->emplace_back(s->extent->int_value, s->loop);
  for (const codegen::Stmt& c : s->body) collect_loops(c, loops);
}

}  // namespace tilegraph::testing
