#include "driver/profile_topk.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "codegen/project/emit_profile_project.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/kernel_ir/verify_kernel.h"
#include "driver/cmake_build.h"
#include "driver/process.h"
#include "compiler/ir/error.h"
#include "compiler/ir/replace_file.h"
#include "scheduler/block_plan.h"
#include "scheduler/graph_connecting.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCacheFormat = "tilegraph-profile-cache/1";
// The harness process as a whole; a candidate that hangs forfeits the rest.
constexpr int kHarnessTimeoutSeconds = 600;

// What a profile is valid for: the arch and the device it ran on.
std::string device_of(const scheduler::ArchSpec& arch) {
  return arch.is_gpu() ? arch.name + " (" + arch.isa + ")" : arch.name + " (" + arch.description + ")";
}

// profile_cache.json: per tiling key, the chosen config and every
// candidate's measured seconds (negative: it failed).
struct ProfileCache {
  std::map<uint64_t, nlohmann::json> entries;

  void load(const std::string& path, const std::string& device) {
    std::ifstream in(path);
    if (!in) return;
    try {
      const nlohmann::json j = nlohmann::json::parse(in);
      if (j.value("format", "") != kCacheFormat || j.value("device", "") != device) return;
      for (const auto& [key, value] : j.at("entries").items()) {
        // The shape the choice step reads: a config name and a number per candidate.
        value.at("config").get<std::string>();
        value.at("seconds").get<std::vector<double>>();
        entries[std::stoull(key)] = value;
      }
    } catch (const std::exception& e) {
      // A damaged cache only costs a new profile: say so, and start cold.
      entries.clear();
      std::cerr << "warning: ignoring the damaged profile cache '" << path << "' (" << one_line(e.what())
                << "); it is rewritten after this tune" << std::endl;
    }
  }

  void save(const std::string& path, const std::string& device) const {
    nlohmann::json j = {{"format", kCacheFormat}, {"device", device}, {"entries", nlohmann::json::object()}};
    for (const auto& [key, value] : entries) j["entries"][std::to_string(key)] = value;
    replace_file(path, j.dump(1) + "\n");
  }
};

// The harness's `<index> <seconds>` lines, one per variant and round: the
// fastest round of each variant (a shared machine's load only slows one
// down), or its failure (negative) when no round succeeded.
std::map<int, double> read_results(const fs::path& path) {
  std::map<int, double> seconds;
  std::ifstream in(path);
  int index;
  double s;
  while (in >> index >> s) {
    auto [it, first] = seconds.emplace(index, s);
    if (!first && s > 0 && (it->second <= 0 || s < it->second)) it->second = s;
  }
  return seconds;
}

// Sets k's config to candidate `best`, with its plan's features and estimate.
void choose(const Graph& g, scheduler::KernelSchedule& k, size_t best, const std::vector<double>& measured,
            const scheduler::ArchSpec& arch) {
  k.config = k.candidates[best];
  k.measured_seconds = measured;
  k.features = scheduler::plan_block_kernel(g, k, k.config, arch).features;
  k.estimate = scheduler::estimate_cost(k.features, arch);
}

// The fastest successfully measured candidate; the cost model's first when none was.
size_t fastest(const std::vector<double>& measured) {
  size_t best = 0;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < measured.size(); ++c)
    if (measured[c] > 0 && measured[c] < best_seconds) best = c, best_seconds = measured[c];
  return best;
}

}  // namespace

bool nvidia_gpu_present() { return fs::exists("/dev/nvidia0") || fs::exists("/dev/nvidiactl"); }

ProfileReport profile_topk(const Graph& g, scheduler::Schedule& schedule, const scheduler::ArchSpec& arch,
                           int topk, int search_budget, const std::string& work_dir, int jobs,
                           const std::string& compiler_launcher) {
  const auto start = std::chrono::steady_clock::now();
  ProfileReport report;
  const std::string device = device_of(arch);
  const std::string cache_path = (fs::path(work_dir) / "profile_cache.json").string();
  ProfileCache cache;
  cache.load(cache_path, device);

  // Kernels by tiling problem; the first of each is profiled for all.
  std::map<uint64_t, std::vector<size_t>> problems;
  for (size_t i = 0; i < schedule.kernels.size(); ++i) {
    const scheduler::KernelSchedule& k = schedule.kernels[i];
    if (k.kind != scheduler::KernelKind::kBlock || k.candidates.size() < 2) continue;
    // A block kernel the lowering hands to a micro-kernel (a softmax:
    // codegen/lowering/lower_softmax_kernel.h) runs the same code whatever
    // its tile config: nothing to choose between.
    if (!codegen::lower_kernel(g, k, arch).ukernel.empty()) continue;
    problems[scheduler::tiling_key(g, k, arch, topk, search_budget)].push_back(i);
  }
  std::vector<codegen::Kernel> variants;
  std::vector<std::pair<uint64_t, size_t>> variant_of;  // (problem, candidate)
  for (const auto& [key, kernels] : problems) {
    if (cache.entries.count(key)) {
      ++report.cache_hits;
      continue;
    }
    const scheduler::KernelSchedule& k = schedule.kernels[kernels.front()];
    for (size_t c = 0; c < k.candidates.size(); ++c) {
      scheduler::KernelSchedule variant = k;
      variant.config = k.candidates[c];
      // The pipeline's dispatch; a GEMM kind would pack its operands at run time.
      codegen::Kernel lowered = codegen::lower_kernel(g, variant, arch);
      codegen::verify(lowered);
      lowered.name = str_cat("v", variants.size(), "_", lowered.name);
      variants.push_back(std::move(lowered));
      variant_of.emplace_back(key, c);
    }
  }
  report.problems = static_cast<int>(problems.size());
  report.variants = static_cast<int>(variants.size());

  if (!variants.empty()) {
    const fs::path dir = fs::path(work_dir) / "profile";
    std::cerr << "      profiling " << variants.size() << " tile configs of " << problems.size() - report.cache_hits
              << " kernels on " << device << " (harness in " << dir.string() << ")" << std::endl;
    codegen::emit_profile_project(variants, arch.is_gpu() ? arch.isa.substr(3) : "", dir.string());
    build_project(dir.string(), jobs, "", compiler_launcher);
    const fs::path results = dir / "results.txt";
    ProcessOptions harness;
    harness.stdout_path = results.string();
    harness.stderr_path = (dir / "run.log").string();
    harness.timeout_seconds = kHarnessTimeoutSeconds;
    const ProcessResult ran = run_process({(dir / "build" / "profile").string()}, harness);
    if (!ran.ok())
      std::cerr << "note: the profiling harness stopped early (" << ran.describe(kHarnessTimeoutSeconds) << ", see "
                << harness.stderr_path << "); unmeasured configs keep the cost model's order" << std::endl;
    const std::map<int, double> seconds = read_results(results);
    std::map<uint64_t, std::vector<double>> measured;
    for (size_t v = 0; v < variant_of.size(); ++v) {
      const auto& [key, c] = variant_of[v];
      std::vector<double>& m = measured[key];
      m.resize(std::max(m.size(), c + 1), -1);
      if (auto it = seconds.find(static_cast<int>(v)); it != seconds.end()) m[c] = it->second;
    }
    for (const auto& [key, m] : measured) {
      if (std::none_of(m.begin(), m.end(), [](double x) { return x > 0; })) continue;  // nothing measured: not cached
      const scheduler::KernelSchedule& k = schedule.kernels[problems[key].front()];
      cache.entries[key] = {{"config", k.candidates[fastest(m)].to_string()}, {"seconds", m}};
    }
    cache.save(cache_path, device);
  }

  for (const auto& [key, kernels] : problems) {
    if (!cache.entries.count(key)) continue;  // the cost model's choice stands
    const nlohmann::json& entry = cache.entries.at(key);
    const std::vector<double> measured = entry.at("seconds").get<std::vector<double>>();
    for (size_t i : kernels) {
      scheduler::KernelSchedule& k = schedule.kernels[i];
      // A cached choice names its config: the candidates are the same
      // (same tiling key), but look it up rather than trust the position.
      size_t best = fastest(measured);
      for (size_t c = 0; c < k.candidates.size(); ++c)
        if (k.candidates[c].to_string() == entry.at("config").get<std::string>()) best = c;
      if (best >= k.candidates.size() || measured.size() != k.candidates.size()) continue;
      choose(g, k, best, measured, arch);
      ++report.kernels;
      report.changed += best != 0;
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tilegraph::driver
