#include "compiler/driver/pipeline.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "codegen/emit_cpu_project.h"
#include "codegen/lower_cpu_kernel.h"
#include "codegen/memory_plan.h"
#include "compiler/ir/error.h"
#include "compiler/passes/eliminate_dead_ops.h"
#include "compiler/passes/inline_index_maps.h"
#include "compiler/passes/materialize_outputs.h"
#include "compiler/passes/simplify_indices.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool wants_dump(const CompileOptions& o, const std::string& pass) {
  for (const std::string& p : o.dump_after)
    if (p == pass || p == "all") return true;
  return false;
}

// Runs one named pass, logging whether it changed the graph and dumping it
// when asked (--dump-after=NAME).
Graph run_pass(const CompileOptions& o, const std::string& name, const Graph& g,
               Graph (*pass)(const Graph&)) {
  Graph result = pass(g);
  verify(result);
  if (o.verbose)
    std::cerr << "  pass " << name << ": " << g.ops.size() << " -> " << result.ops.size() << " ops\n";
  if (wants_dump(o, name)) std::cerr << "--- after " << name << " ---\n" << to_string(result);
  return result;
}

// One line per pipeline step, with the time since compile() started.
void progress(int step, int total, const std::string& what, Clock::time_point start) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f", seconds_since(start));
  std::cerr << "[" << step << "/" << total << " " << elapsed << " s] " << what << std::endl;
}

// Builds the generated project with CMake; the full log goes to build.log.
void build_project(const std::string& dir, int jobs) {
  const fs::path log = fs::path(dir) / "build.log";
  const std::string quoted_dir = "'" + dir + "'";
  const std::string configure = "cmake -S " + quoted_dir + " -B " + quoted_dir +
                                "/build -DCMAKE_BUILD_TYPE=Release > '" + log.string() + "' 2>&1";
  const std::string build = "cmake --build " + quoted_dir + "/build -j " + std::to_string(jobs) +
                            " >> '" + log.string() + "' 2>&1";
  if (std::system(configure.c_str()) != 0 || std::system(build.c_str()) != 0) {
    std::ifstream in(log);
    std::string line, first_error;
    while (std::getline(in, line))
      if (first_error.empty() && line.find("error") != std::string::npos) first_error = line;
    throw UserError(str_cat("building the generated project failed (see ", log.string(), ")",
                            first_error.empty() ? "" : ": " + first_error));
  }
}

}  // namespace

Graph import_graph(const CompileOptions& options) {
  onnx_frontend::ImportOptions import_options;
  import_options.input_shapes = options.input_shapes;
  import_options.frozen_inputs = options.frozen_inputs;
  Graph g = onnx_frontend::import_model(options.model_path, import_options);
  verify(g);
  if (wants_dump(options, "import")) std::cerr << "--- after import ---\n" << to_string(g);
  return g;
}

Graph optimize_graph(const CompileOptions& options, const Graph& imported) {
  Graph g = run_pass(options, "inline_index_maps", imported, passes::inline_index_maps);
  g = run_pass(options, "simplify_indices", g, passes::simplify_indices);
  g = run_pass(options, "eliminate_dead_ops", g, passes::eliminate_dead_ops);
  return run_pass(options, "materialize_outputs", g, passes::materialize_outputs);
}

CompileReport compile(const CompileOptions& options) {
  CompileReport report;
  const int steps = options.build ? 5 : 4;
  const scheduler::ArchSpec arch = scheduler::arch_by_name(options.arch);

  const auto start = Clock::now();
  auto t = start;
  progress(1, steps, "importing " + options.model_path, start);
  Graph g = import_graph(options);
  report.seconds_frontend = seconds_since(t);

  t = Clock::now();
  progress(2, steps, str_cat("optimizing graph (", g.ops.size(), " ops)"), start);
  g = optimize_graph(options, g);
  report.seconds_passes = seconds_since(t);

  t = Clock::now();
  progress(3, steps, str_cat("scheduling ", g.ops.size(), " ops for ", arch.name, " (", arch.cores,
                             " cores)"), start);
  const scheduler::Schedule schedule = scheduler::schedule_one_op_per_kernel(g, arch);
  report.seconds_schedule = seconds_since(t);

  t = Clock::now();
  progress(4, steps, str_cat("generating ", schedule.kernels.size(), " kernels into ", options.output_dir), start);
  std::vector<codegen::Kernel> kernels;
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    kernels.push_back(codegen::lower_cpu_kernel(g, schedule.kernels[k]));
    if (schedule.kernels.size() >= 200 && (k + 1) % 100 == 0)
      std::cerr << "      kernel " << k + 1 << "/" << schedule.kernels.size() << " ("
                << schedule.kernels.size() - k - 1 << " left)" << std::endl;
    if (options.verbose) std::cerr << codegen::to_string(kernels.back());
  }
  const codegen::MemoryPlan plan = codegen::plan_memory(g, kernels);
  codegen::ProjectInfo info;
  info.arch = options.arch;
  info.model_path = fs::path(options.model_path).filename().string();
  info.compile_stats = {{"kernels", kernels.size()}, {"ops_after_passes", g.ops.size()}};
  codegen::emit_cpu_project(g, kernels, plan, info, options.output_dir);
  report.num_kernels = static_cast<int>(kernels.size());
  report.seconds_codegen = seconds_since(t);

  if (options.build) {
    t = Clock::now();
    const int jobs = options.build_jobs > 0 ? options.build_jobs : arch.cores;
    progress(5, steps, str_cat("building with cmake (-j ", jobs, "), log in ", options.output_dir, "/build.log"), start);
    build_project(options.output_dir, jobs);
    report.seconds_build = seconds_since(t);
  }
  // Timings vary run to run: keep them out of the deterministic manifest.
  nlohmann::json stats = {{"kernels", report.num_kernels},
                          {"seconds", {{"frontend", report.seconds_frontend},
                                       {"passes", report.seconds_passes},
                                       {"schedule", report.seconds_schedule},
                                       {"codegen", report.seconds_codegen},
                                       {"build", report.seconds_build}}}};
  std::ofstream(fs::path(options.output_dir) / "compile_stats.json") << stats.dump(2) << "\n";
  return report;
}

}  // namespace tilegraph::driver
