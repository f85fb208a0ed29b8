// The explain report: per fused kernel the ops in it, the connection level
// of each internal edge, the tile / reduce step / block size, and the cost
// model's predictions; for the model, kernel count and predicted DRAM
// traffic fused vs one op per kernel. Stored in manifest.json ("explain")
// and printed by `tilegraph explain`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::driver {

// Top level: kernels, kernels_unfused, dram_bytes, dram_bytes_unfused,
// predicted_ms, predicted_ms_unfused, arch, subgraphs (per kernel list; a
// block kernel with several tile candidates also has candidate_costs: per
// candidate, best first, its predicted_ms and the dram_ms, l2_ms, scratch_ms
// and compute_ms terms), subgraphs_unfused.
nlohmann::json explain_json(const Graph& g, const scheduler::Schedule& fused,
                            const scheduler::Schedule& unfused, const scheduler::ArchSpec& arch);

// The human-readable form of explain_json's output (no_fusion: list the
// one-op-per-kernel schedule's kernels instead of the fused ones; candidates:
// under each block kernel, its top-k tile candidates with the cost model's
// terms, from "candidate_costs").
std::string explain_text(const nlohmann::json& explain, bool no_fusion, bool candidates = false);

}  // namespace tilegraph::driver
