#include "driver/explain.h"

#include <cstdio>
#include <sstream>

namespace tilegraph::driver {

namespace {

// A block kernel's top-k tile candidates with the cost model's terms (the
// roofline's inputs: DRAM, L2, scratch, compute) and its prediction, as the
// search ranked them: what the model weighed, next to what
// `tune --profile-topk` measures of the same list.
nlohmann::json candidate_costs(const scheduler::KernelSchedule& k) {
  nlohmann::json list = nlohmann::json::array();
  if (k.kind != scheduler::KernelKind::kBlock || k.candidates.size() < 2 ||
      k.candidate_estimates.size() != k.candidates.size())
    return list;
  for (size_t i = 0; i < k.candidates.size(); ++i) {
    const scheduler::CostEstimate& c = k.candidate_estimates[i];
    list.push_back({{"config", k.candidates[i].to_string()},
                    {"predicted_ms", c.seconds * 1e3},
                    {"dram_ms", c.dram_seconds * 1e3},
                    {"l2_ms", c.l2_seconds * 1e3},
                    {"scratch_ms", c.shared_seconds * 1e3},
                    {"compute_ms", c.compute_seconds * 1e3}});
  }
  return list;
}

nlohmann::json kernel_json(const Graph& g, const scheduler::KernelSchedule& k) {
  nlohmann::json ops = nlohmann::json::array();
  for (int i : k.ops) {
    const Op& op = g.ops[i];
    ops.push_back({{"name", op.name},
                   {"onnx_nodes", op.source_nodes},
                   {"reduction", reduction_name(op.reduction)},
                   {"shape", g.tensor(op.output).shape}});
  }
  nlohmann::json edges = nlohmann::json::array();
  for (const scheduler::FusedEdge& e : k.edges)
    edges.push_back({{"from", g.ops[e.producer].name}, {"to", g.ops[e.consumer].name},
                     {"level", scheduler::connection_name(e.level)}});
  nlohmann::json outputs = nlohmann::json::array();
  for (int op : k.extra_outputs) outputs.push_back(g.ops[op].name);
  outputs.push_back(g.ops[k.ops.back()].name);
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& c : k.candidates) candidates.push_back(c.to_string());
  const scheduler::KernelFeatures& f = k.features;
  const scheduler::CostEstimate& c = k.estimate;
  nlohmann::json j = {{"name", g.ops[k.ops.back()].name},
                      {"kind", scheduler::kernel_kind_name(k.kind)},
                      {"ops", ops},
                      {"edges", edges},
                      {"outputs", outputs},
                      {"tile", k.config.tile},
                      {"threads", k.config.threads},
                      {"reduce_step", k.config.reduce_step},
                      {"config", k.config.to_string()},
                      {"candidates", candidates},
                      {"blocks", f.blocks},
                      {"dram_bytes", f.dram_bytes},
                      {"constant_bytes", f.constant_bytes},
                      {"shared_bytes", f.shared_bytes_per_block},
                      {"registers", f.registers_per_thread},
                      {"blocks_per_unit", c.blocks_per_unit},
                      {"occupancy", c.occupancy},
                      {"waves", c.waves},
                      {"predicted_ms", c.seconds * 1e3}};
  // The GEMM micro-kernel kinds' own terms, which `calibrate --refine` fits.
  if (c.ukernel_seconds > 0 || c.pack_seconds > 0) {
    j["ukernel_ms"] = c.ukernel_seconds * 1e3;
    j["pack_ms"] = c.pack_seconds * 1e3;
    j["compute_dtype"] = dtype_name(f.compute_dtype);
  }
  if (k.library_gemm)  // a cuBLASLt call; its tile and prediction are the fused kernel's, as a stand-in
    j["library"] = {{"name", "cublasLt"}, {"batch", k.library_gemm->batch}, {"m", k.library_gemm->m},
                    {"n", k.library_gemm->n}, {"k", k.library_gemm->k},
                    {"dtype", dtype_name(k.library_gemm->dtype)},
                    {"epilogue", k.library_gemm->epilogue_name()}};
  return j;
}

struct Totals {
  int64_t dram = 0;
  double ms = 0;
};

Totals totals(const scheduler::Schedule& s) {
  Totals t;
  for (const auto& k : s.kernels) {
    t.dram += k.features.dram_bytes;
    t.ms += k.estimate.seconds * 1e3;
  }
  return t;
}

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

std::string percent_change(double before, double after) {
  if (before <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f%%", 100.0 * (after - before) / before);
  return buf;
}

}  // namespace

nlohmann::json explain_json(const Graph& g, const scheduler::Schedule& fused,
                            const scheduler::Schedule& unfused, const scheduler::ArchSpec& arch) {
  nlohmann::json j;
  const Totals f = totals(fused), u = totals(unfused);
  j["arch"] = arch.name;
  // The numbers the predictions divide by (a calibrated spec's own: tune --arch-file).
  j["arch_spec"] = {{"description", arch.description},
                    {"compute_units", arch.compute_units},
                    {"peak_fp32_flops", arch.peak_fp32_flops},
                    {"peak_int8_ops", arch.peak_int8_ops},
                    {"dram_bandwidth_bytes_per_s", arch.dram().bandwidth_bytes_per_s},
                    {"kernel_launch_seconds", arch.kernel_launch_seconds},
                    {"parallel_region_seconds", arch.parallel_region_seconds},
                    {"block_overhead_seconds", arch.block_overhead_seconds}};
  j["kernels"] = fused.kernels.size();
  j["kernels_unfused"] = unfused.kernels.size();
  j["dram_bytes"] = f.dram;
  j["dram_bytes_unfused"] = u.dram;
  j["predicted_ms"] = f.ms;
  j["predicted_ms_unfused"] = u.ms;
  j["subgraphs"] = nlohmann::json::array();
  for (const auto& k : fused.kernels) {
    nlohmann::json kernel = kernel_json(g, k);
    if (nlohmann::json costs = candidate_costs(k); !costs.empty()) kernel["candidate_costs"] = costs;
    j["subgraphs"].push_back(kernel);
  }
  j["subgraphs_unfused"] = nlohmann::json::array();
  for (const auto& k : unfused.kernels) j["subgraphs_unfused"].push_back(kernel_json(g, k));
  return j;
}

std::string explain_text(const nlohmann::json& e, bool no_fusion, bool candidates) {
  std::ostringstream out;
  const nlohmann::json& list = e.at(no_fusion ? "subgraphs_unfused" : "subgraphs");
  out << "arch " << e.at("arch").get<std::string>() << (no_fusion ? " (one op per kernel)" : "") << "\n";
  if (const auto spec = e.find("arch_spec"); spec != e.end()) {
    char line[512];
    std::snprintf(line, sizeof line, "  %s: %d units, peak fp32 %.1f GFLOP/s, int8 %.1f GOP/s, DRAM %.1f GB/s\n",
                  spec->at("description").get<std::string>().c_str(), spec->at("compute_units").get<int>(),
                  spec->at("peak_fp32_flops").get<double>() / 1e9, spec->at("peak_int8_ops").get<double>() / 1e9,
                  spec->at("dram_bandwidth_bytes_per_s").get<double>() / 1e9);
    out << line;
  }
  out << "\n";
  int index = 0;
  for (const nlohmann::json& k : list) {
    char line[256];
    // The kind first: a kernel left in the loop nest where a micro-kernel was
    // expected is the usual reason for one slow kernel.
    std::snprintf(line, sizeof line, "#%d %s  %s  [%s]\n", index++, k.at("name").get<std::string>().c_str(),
                  k.at("kind").get<std::string>().c_str(), k.at("config").get<std::string>().c_str());
    out << line;
    if (const auto lib = k.find("library"); lib != k.end()) {
      const nlohmann::json& l = *lib;
      std::snprintf(line, sizeof line, "    library: cuBLASLt GEMM %s, batch %lld, %lld x %lld x %lld (m x n x k)%s\n",
                    l.at("dtype").get<std::string>().c_str(), static_cast<long long>(l.at("batch").get<int64_t>()),
                    static_cast<long long>(l.at("m").get<int64_t>()), static_cast<long long>(l.at("n").get<int64_t>()),
                    static_cast<long long>(l.at("k").get<int64_t>()),
                    l.value("epilogue", "none") == "none" ? "" : (", epilogue " + l.value("epilogue", "")).c_str());
      out << line;
    }
    out << "    ops:";
    for (const auto& op : k.at("ops")) {
      const auto& nodes = op.at("onnx_nodes");
      out << " " << op.at("name").get<std::string>();
      if (!nodes.empty()) out << "(" << nodes.front().get<std::string>() << (nodes.size() > 1 ? ",…" : "") << ")";
    }
    out << "\n";
    if (k.at("outputs").size() > 1) {
      out << "    outputs:";
      for (const auto& o : k.at("outputs")) out << " " << o.get<std::string>();
      out << "\n";
    }
    for (const auto& edge : k.at("edges"))
      out << "    edge " << edge.at("from").get<std::string>() << " -> " << edge.at("to").get<std::string>()
          << ": " << edge.at("level").get<std::string>() << "\n";
    std::snprintf(line, sizeof line,
                  "    blocks %lld x %d threads, shared %lld B, regs %d, occupancy %d blocks/unit (%.0f%%), "
                  "waves %.2f, DRAM %s, predicted %.4f ms\n",
                  static_cast<long long>(k.at("blocks").get<int64_t>()), k.at("threads").get<int>(),
                  static_cast<long long>(k.at("shared_bytes").get<int64_t>()), k.at("registers").get<int>(),
                  k.at("blocks_per_unit").get<int>(), 100.0 * k.at("occupancy").get<double>(),
                  k.at("waves").get<double>(), megabytes(k.at("dram_bytes").get<int64_t>()).c_str(),
                  k.at("predicted_ms").get<double>());
    out << line;
    if (const auto costs = k.find("candidate_costs"); candidates && costs != k.end()) {
      out << "    candidates, best first (ms): predicted = roofline of dram, l2, scratch, compute\n";
      for (const nlohmann::json& c : *costs) {
        std::snprintf(line, sizeof line, "      %-28s %9.4f   dram %.4f  l2 %.4f  scratch %.4f  compute %.4f\n",
                      c.at("config").get<std::string>().c_str(), c.at("predicted_ms").get<double>(),
                      c.at("dram_ms").get<double>(), c.at("l2_ms").get<double>(), c.at("scratch_ms").get<double>(),
                      c.at("compute_ms").get<double>());
        out << line;
      }
    }
  }
  const int64_t kf = e.at("kernels"), ku = e.at("kernels_unfused");
  const int64_t df = e.at("dram_bytes"), du = e.at("dram_bytes_unfused");
  const double mf = e.at("predicted_ms"), mu = e.at("predicted_ms_unfused");
  out << "\n            fused        one op per kernel   change\n";
  char row[160];
  std::snprintf(row, sizeof row, "kernels     %-12lld %-19lld %s\n", static_cast<long long>(kf),
                static_cast<long long>(ku), percent_change(static_cast<double>(ku), static_cast<double>(kf)).c_str());
  out << row;
  std::snprintf(row, sizeof row, "DRAM        %-12s %-19s %s\n", megabytes(df).c_str(), megabytes(du).c_str(),
                percent_change(static_cast<double>(du), static_cast<double>(df)).c_str());
  out << row;
  std::snprintf(row, sizeof row, "predicted   %-12.3f %-19.3f %s  (ms)\n", mf, mu, percent_change(mu, mf).c_str());
  out << row;
  return out.str();
}

}  // namespace tilegraph::driver
