#include "driver/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "codegen/project/emit_cpu_project.h"
#include "codegen/project/emit_cuda_project.h"
#include "codegen/kernel_ir/emulate_threads.h"
#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/project/memory_plan.h"
#include "compiler/ir/error.h"
#include "compiler/passes/eliminate_dead_ops.h"
#include "compiler/passes/fold_constants.h"
#include "compiler/passes/inline_index_maps.h"
#include "compiler/passes/materialize_outputs.h"
#include "compiler/passes/quantize_matmul.h"
#include "compiler/passes/tabulate_byte_functions.h"
#include "compiler/passes/split_reductions.h"
#include "compiler/passes/to_half_precision.h"
#include "scheduler/cpu_features.h"
#include "scheduler/ukernel_features.h"
#include "compiler/passes/simplify_indices.h"
#include "frontends/onnx/import.h"
#include "driver/aarch64_target.h"
#include "driver/cmake_build.h"
#include "driver/compiler_launcher.h"
#include "driver/process.h"
#include "driver/profile_topk.h"
#include "driver/project_hash.h"
#include "driver/project_staging.h"
#include "compiler/ir/replace_file.h"
#include "driver/explain.h"
#include "driver/memory_budget.h"
#include "compiler/passes/split_batch.h"
#include "scheduler/arch_spec.h"
#include "scheduler/block_plan.h"
#include "scheduler/graph_connecting.h"
#include "scheduler/int_gemm.h"
#include "scheduler/schedule.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Flags with a range or a fixed vocabulary, checked before any work.
void check_options(const CompileOptions& o) {
  if (o.topk < 1) throw UserError(str_cat("--topk ", o.topk, ": keep at least 1 tile config"));
  if (o.sanitize && !o.emulate)
    throw UserError("--sanitize checks the CPU emulation of a GPU arch's kernels: add --emulate");
  if (o.memory_budget < 0) throw UserError(str_cat("--memory-budget ", o.memory_budget, ": give a positive size"));
  if (o.build_jobs < 0) throw UserError(str_cat("--jobs ", o.build_jobs, ": give a positive count, or 0 for all cores"));
  for (const std::string& p : o.dump_after) {
    const std::vector<std::string>& known = dump_points();
    if (p == "all" || std::find(known.begin(), known.end(), p) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += k + ", ";
    throw UserError(str_cat("--dump-after ", p, ": no such pass (", list, "all)"));
  }
}

bool wants_dump(const CompileOptions& o, const std::string& pass) {
  for (const std::string& p : o.dump_after)
    if (p == pass || p == "all") return true;
  return false;
}

// Runs one named pass, logging whether it changed the graph and dumping it
// when asked (--dump-after=NAME).
template <typename Pass>
Graph run_pass(const CompileOptions& o, const std::string& name, const Graph& g, const Pass& pass) {
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

}  // namespace

const std::vector<std::string>& dump_points() {
  static const std::vector<std::string> points = {
      "import", "inline_index_maps", "simplify_indices", "quantize_matmul", "fold_constants",
      "tabulate_byte_functions", "split_reductions", "eliminate_dead_ops", "materialize_outputs",
      "to_half_precision"};
  return points;
}

Graph import_graph(const CompileOptions& options) {
  onnx_frontend::ImportOptions import_options;
  import_options.input_shapes = options.input_shapes;
  import_options.frozen_inputs = options.frozen_inputs;
  Graph g = onnx_frontend::import_model(options.model_path, import_options);
  verify(g);
  if (wants_dump(options, "import")) std::cerr << "--- after import ---\n" << to_string(g);
  return g;
}

Graph optimize_graph(const CompileOptions& options, const Graph& imported, bool gpu) {
  passes::InlineIndexMapOptions inline_options;
  // Where contractions run on the float micro-kernels, whose packing reads
  // a Concat along K range by range (codegen/lowering/lower_float_gemm_kernel.h).
  inline_options.wide_into_contractions = !gpu && options.float_ukernels;
  Graph g = run_pass(options, "inline_index_maps", imported,
                     [&](const Graph& in) { return passes::inline_index_maps(in, inline_options); });
  g = run_pass(options, "simplify_indices", g, passes::simplify_indices);
  g = run_pass(options, "quantize_matmul", g, passes::quantize_matmul);
  g = run_pass(options, "fold_constants", g, passes::fold_constants);
  g = run_pass(options, "tabulate_byte_functions", g, passes::tabulate_byte_functions);
  g = run_pass(options, "split_reductions", g, passes::split_reductions);
  g = run_pass(options, "eliminate_dead_ops", g, passes::eliminate_dead_ops);
  g = run_pass(options, "materialize_outputs", g, passes::materialize_outputs);
  // Last: constants are folded and tables built in float32 first.
  if (options.fp16) g = run_pass(options, "to_half_precision", g, passes::to_half_precision);
  return g;
}

std::string emulation_dir(const std::string& output_dir) {
  return (fs::path(output_dir) / "emulation").string();
}

namespace {

// Lowers every kernel (codegen/lowering/lower_kernel.h; GEMM micro-kernel kernels
// first add their packed constant operands to g). Each is verified
// (codegen/kernel_ir/verify_kernel.h) as it comes out of its lowering.
std::vector<codegen::Kernel> lower_kernels(Graph& g, const scheduler::Schedule& schedule,
                                           const scheduler::ArchSpec& arch, bool verbose) {
  std::vector<codegen::Kernel> kernels;
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    const codegen::KernelPacks packs = codegen::pack_constant_operands(g, schedule.kernels[k], arch);
    kernels.push_back(codegen::lower_kernel(g, schedule.kernels[k], arch, packs));
    if (schedule.kernels.size() >= 200 && (k + 1) % 100 == 0)
      std::cerr << "      kernel " << k + 1 << "/" << schedule.kernels.size() << " ("
                << schedule.kernels.size() - k - 1 << " left)" << std::endl;
    if (verbose) std::cerr << codegen::to_string(kernels.back());
    codegen::verify(kernels.back());
  }
  return kernels;
}

bool on_path(const std::string& tool) { return !find_on_path(tool).empty(); }

// nvcc's supported architectures ("compute_75" ...) include the arch's ISA?
// (CUDA 13 dropped sm_70: a V100 project is generated but cannot be built.)
void check_nvcc_supports(const scheduler::ArchSpec& arch) {
  if (arch.target != "cuda" || arch.isa.rfind("sm_", 0) != 0) return;
  const std::string wanted = "compute_" + arch.isa.substr(3);
  ProcessOptions capture;
  capture.capture = true;
  capture.stderr_path = "/dev/null";
  capture.timeout_seconds = 60;
  const ProcessResult listing = run_process({"nvcc", "--list-gpu-arch"}, capture);
  const std::string& listed = listing.output;
  if (!listing.ok() || listed.empty() || listed.find(wanted + "\n") != std::string::npos) return;
  throw UserError(str_cat("this nvcc cannot build ", arch.isa, " for ", arch.name,
                          " (it lists ", listed.substr(0, listed.find('\n')), " and up); tune with --no-gpu-build "
                          "to write the project only, and --emulate to run the ", arch.name, " schedule on the CPU"));
}

// Whether to profile the top-k configs (CompileOptions::profile_topk) on
// this machine; an impossible "on" is a user error, said up front.
bool profiles_topk(const CompileOptions& o, const scheduler::ArchSpec& arch, bool build_gpu, bool cross) {
  if (o.profile_topk == "off") return false;
  if (o.profile_topk != "on" && o.profile_topk != "auto")
    throw UserError("--profile-topk takes on, off or auto, not '" + o.profile_topk + "'");
  const bool cuda_device = arch.target == "cuda" && build_gpu && nvidia_gpu_present();
  if (o.profile_topk == "auto") return cuda_device && o.topk > 1;
  if (!o.build) throw UserError("--profile-topk on builds and runs the candidates: drop --no-build");
  if (arch.target == "hip" || cross)
    throw UserError(str_cat("--profile-topk on: tilegraph profiles on the host CPU or an NVIDIA GPU, not on ",
                            arch.name));
  if (arch.target == "cuda" && !cuda_device)
    throw UserError(str_cat("--profile-topk on: ", build_gpu ? "no NVIDIA GPU is visible here"
                                                             : "the CUDA project is not built (nvcc or --no-gpu-build)",
                            "; without it the cost model chooses (--profile-topk auto)"));
  return o.topk > 1;
}

}  // namespace

namespace {

// What the options mean on this machine, decided once before any work, so a
// flag problem is reported up front and every stage reads the same answers.
struct ResolvedTarget {
  scheduler::ArchSpec arch;
  bool gpu = false;
  std::string gpu_compiler;  // nvcc or hipcc
  bool build_gpu = false;    // the GPU project is built here (compiler found, not --no-gpu-build)
  bool build_any = false;    // something is built: the CPU project, the GPU one or the emulation
  bool cross = false;        // an AArch64 arch on another host: cross-compiled
  bool profile = false;      // --profile-topk runs here
  int steps = 4;             // progress steps
  int build_jobs = 1;        // parallel build jobs (--jobs, 0: this machine's cores)
};

ResolvedTarget resolve_target(const CompileOptions& options) {
  ResolvedTarget t;
  t.arch = options.arch_file.empty() ? scheduler::arch_by_name(options.arch)
                                     : scheduler::arch_from_file(options.arch_file);
  scheduler::apply_cpu_features(t.arch, options.cpu_features);
  t.gpu = t.arch.is_gpu();
  if (!options.tensor_cores) {
    if (!t.gpu) throw UserError(str_cat("--no-tensor-cores is for GPU archs; --arch ", t.arch.name, " is not a GPU"));
    t.arch = scheduler::without_tensor_cores(t.arch);
  }
  if (options.skip_dot && t.arch.target != "cuda")
    throw UserError(str_cat("--skip-dot sends GEMMs to cuBLASLt, for CUDA archs; --arch ", t.arch.name, " is ",
                            t.gpu ? "a HIP GPU (no hipBLASLt path)" : "not a GPU"));
  t.gpu_compiler = t.arch.target == "hip" ? "hipcc" : "nvcc";
  t.build_gpu = t.gpu && options.build && options.build_gpu && on_path(t.gpu_compiler);
  t.build_any = options.build && (!t.gpu || t.build_gpu || options.emulate);
  if (t.build_gpu) check_nvcc_supports(t.arch);
  t.cross = needs_aarch64_cross(t.arch);
  if (t.cross && options.build) require_aarch64_cross_compiler(t.arch);
  t.profile = profiles_topk(options, t.arch, t.build_gpu, t.cross);
  t.steps = t.build_any ? 5 : 4;
  t.build_jobs = options.build_jobs > 0 ? options.build_jobs : scheduler::host_arch().cores;
  return t;
}

// The scheduler's decisions and what they predict.
struct Scheduled {
  scheduler::Schedule schedule;
  scheduler::GemmUkernelCounts ukernels;
  nlohmann::json explain;
  ProfileReport profiled;
  int64_t library_gemms = 0;
};

// Where stride-1 3x3 convs run as Winograd F(2x2, 3x3)
// (scheduler/winograd_conv.h). The micro-kernels with Winograd transforms
// (codegen/ukernels/winograd_f23_<variant>.h): AVX-512, K a multiple of its
// MR as measured (benchmarks/winograd_f23_probe.cpp), and AVX2, any K (its
// MR is 6: ResNet-50's 64 filters are 10 row panels and a last one of 4).
scheduler::WinogradTarget winograd_target(const CompileOptions& options, const scheduler::ArchSpec& arch) {
  scheduler::WinogradTarget t;
  if (!options.float_ukernels || !options.winograd) return t;
  const codegen::FloatGemmVariant v = codegen::float_gemm_variant_for(arch);
  t.filter_multiple = v.name == "avx512" ? v.mr : v.name == "avx2" ? 1 : 0;
  t.flops = scheduler::winograd_flops(arch);
  t.dram_bytes_per_s = arch.dram().bandwidth_bytes_per_s;
  return t;
}

Scheduled schedule_stage(const CompileOptions& options, const ResolvedTarget& target, Graph& g,
                         const std::string& out_dir, CompileReport& report) {
  const scheduler::ArchSpec& arch = target.arch;
  Scheduled s;
  const std::string cache_path = (fs::path(out_dir) / "schedule_cache.json").string();
  scheduler::ScheduleCache cache;
  cache.load(cache_path);
  scheduler::TileGraphOptions tg_options;
  tg_options.topk = options.topk;
  tg_options.fusion = options.fusion;
  tg_options.log_merges = options.verbose;
  tg_options.library_gemms = options.skip_dot;
  tg_options.float_gemm_epilogues = options.float_ukernels;
  scheduler::TileGraphOptions unfused_options = tg_options;
  unfused_options.fusion = scheduler::FusionLevel::kNone;
  s.schedule = scheduler::schedule_tile_graph(g, arch, tg_options, &cache);
  s.ukernels = target.gpu ? scheduler::GemmUkernelCounts{}
                          : scheduler::use_gemm_ukernels(g, s.schedule, options.float_ukernels,
                                                         winograd_target(options, arch));
  if (!target.gpu) scheduler::estimate_ukernel_kernels(g, s.schedule, arch);  // their cost is the micro-kernels'
  const scheduler::Schedule unfused = options.fusion != scheduler::FusionLevel::kNone
                                          ? scheduler::schedule_tile_graph(g, arch, unfused_options, &cache)
                                          : s.schedule;
  cache.save(cache_path);
  if (target.profile) {
    s.profiled = profile_topk(g, s.schedule, arch, options.topk, tg_options.search_budget, out_dir, target.build_jobs,
                              options.compiler_launcher);
    report.profiled_kernels = s.profiled.kernels;
    std::cerr << "      top-" << options.topk << " profiling: " << s.profiled.kernels << " kernels ("
              << s.profiled.problems << " distinct, " << s.profiled.cache_hits << " from profile_cache.json), "
              << s.profiled.changed << " faster than the cost model's first choice, " << s.profiled.seconds << " s"
              << std::endl;
  }
  s.library_gemms = std::count_if(s.schedule.kernels.begin(), s.schedule.kernels.end(),
                                  [](const scheduler::KernelSchedule& k) { return k.kind == scheduler::KernelKind::kLibraryGemm; });
  if (options.skip_dot)
    std::cerr << "      " << s.library_gemms << " GEMMs call cuBLASLt (--skip-dot)" << std::endl;
  if (s.ukernels.int_gemms > 0)
    std::cerr << "      " << s.ukernels.int_gemms << " integer GEMMs on the int8 micro-kernel (qgemm_"
              << codegen::int_gemm_variant_for(arch).name << ")" << std::endl;
  if (s.ukernels.float_gemms > 0)
    std::cerr << "      " << s.ukernels.float_gemms << " float GEMMs on the float micro-kernel (sgemm_"
              << codegen::float_gemm_variant_for(arch).name << ")" << std::endl;
  if (s.ukernels.direct_convs > 0)
    std::cerr << "      " << s.ukernels.direct_convs << " convolutions on the direct kernel" << std::endl;
  if (s.ukernels.winograd_convs > 0)
    std::cerr << "      " << s.ukernels.winograd_convs << " 3x3 convolutions as Winograd F(2x2, 3x3)" << std::endl;
  s.explain = explain_json(g, s.schedule, unfused, arch);
  report.num_kernels_unfused = static_cast<int>(unfused.kernels.size());
  report.dram_bytes = s.explain["dram_bytes"];
  report.dram_bytes_unfused = s.explain["dram_bytes_unfused"];
  report.cache_hits = cache.hits;
  report.cache_misses = cache.misses;
  std::cerr << "      " << s.schedule.kernels.size() << " kernels (" << unfused.kernels.size()
            << " unfused), predicted DRAM " << report.dram_bytes / 1e6 << " MB (" << report.dram_bytes_unfused / 1e6
            << " MB unfused); schedule cache " << cache.hits << " hits, " << cache.misses << " misses" << std::endl;
  return s;
}

// The kernels and where their tensors live.
struct Lowered {
  std::vector<codegen::Kernel> kernels;
  codegen::MemoryPlan plan;
};

Lowered lower_stage(const CompileOptions& options, const ResolvedTarget& target, Graph& g, const Scheduled& s) {
  Lowered l;
  l.kernels = lower_kernels(g, s.schedule, target.arch, options.verbose);
  l.plan = codegen::plan_memory(g, l.kernels);
  codegen::mark_in_place_buffers(l.plan, l.kernels);
  return l;
}

// The tiling --memory-budget chose (driver/memory_budget.h).
struct BudgetFit {
  int64_t chunks = 1;  // micro-batches per run (1: the graph runs whole)
  nlohmann::json stats;  // manifest["compile"]["memory_budget"]; null without a budget
};

MemoryPeak peak_of(const ResolvedTarget& target, const Graph& g, const Lowered& l) {
  return memory_peak(g, l.plan, l.kernels, target.gpu ? 0 : target.arch.cores, target.gpu);
}

// Checks the plan against options.memory_budget; when it does not fit,
// recompiles the graph for the largest micro-batch whose plan fits and
// replaces g, s and l with it. optimized: the graph before scheduling
// (lowering adds packed constants to g). A UserError when nothing fits.
BudgetFit fit_memory_budget(const CompileOptions& options, const ResolvedTarget& target, const Graph& optimized,
                            Graph& g, Scheduled& s, Lowered& l, const std::string& out_dir, CompileReport& report) {
  const int64_t budget = options.memory_budget;
  const MemoryPeak untiled = peak_of(target, g, l);
  BudgetFit fit;
  fit.stats = {{"budget_bytes", budget}, {"untiled_peak_bytes", untiled.total()}};
  auto record = [&](const MemoryPeak& peak, nlohmann::json tiling) {
    fit.stats["planned_peak_bytes"] = peak.total();
    fit.stats["planned_peak"] = peak.to_json();
    fit.stats["tiling"] = std::move(tiling);
  };
  if (untiled.total() <= budget) {
    std::cerr << "      memory budget " << format_bytes(budget) << ": the plan needs " << format_bytes(untiled.total())
              << ", no tiling" << std::endl;
    record(untiled, {{"kind", "none"}});
    return fit;
  }
  const std::string over = str_cat("--memory-budget ", format_bytes(budget), ": the plan needs ",
                                   format_bytes(untiled.total()), ", most held by ",
                                   peak_holder(g, l.plan, untiled));
  const passes::BatchSplit split = passes::analyze_batch_split(optimized);
  if (!split.splits()) throw UserError(str_cat(over, " and cannot run in micro-batches: ", split.blocker));
  for (int64_t micro : micro_batch_candidates(split.batch, untiled, budget)) {
    Graph candidate = passes::split_batch(optimized, split, micro);
    Scheduled cs = schedule_stage(options, target, candidate, out_dir, report);
    Lowered cl = lower_stage(options, target, candidate, cs);
    const MemoryPeak peak = peak_of(target, candidate, cl);
    std::cerr << "      memory budget " << format_bytes(budget) << ": micro-batch " << micro << " of " << split.batch
              << " needs " << format_bytes(peak.total()) << std::endl;
    if (peak.total() <= budget || micro == 1) {
      if (peak.total() > budget)
        throw UserError(str_cat("--memory-budget ", format_bytes(budget), ": the smallest peak is ",
                                format_bytes(peak.total()), " (micro-batch 1 of ", split.batch, "), held by ",
                                peak_holder(candidate, cl.plan, peak),
                                "; tiling one sample spatially is not implemented"));
      g = std::move(candidate);
      s = std::move(cs);
      l = std::move(cl);
      fit.chunks = split.batch / micro;
      record(peak, {{"kind", "batch"}, {"batch", split.batch}, {"micro_batch", micro}, {"chunks", fit.chunks}});
      break;
    }
  }
  return fit;
}

// Writes the project (and a GPU arch's emulation).
void emit_stage(const CompileOptions& options, const ResolvedTarget& target, const Graph& g, const Scheduled& s,
                const Lowered& lowered, const BudgetFit& fit, const std::string& out_dir, CompileReport& report) {
  const scheduler::ArchSpec& arch = target.arch;
  const std::vector<codegen::Kernel>& kernels = lowered.kernels;
  const codegen::MemoryPlan& plan = lowered.plan;
  codegen::ProjectInfo info;
  info.arch = arch.name;
  info.model_path = fs::path(options.model_path).filename().string();
  info.compile_stats = {{"kernels", kernels.size()}, {"ops_after_passes", g.ops.size()},
                        {"precision", options.fp16 ? "fp16" : "as exported"},
                        {"library_gemms", s.library_gemms}};
  if (options.fusion != scheduler::FusionLevel::kFull)  // absent by default: default projects stay byte-identical
    info.compile_stats["fusion_level"] = scheduler::fusion_level_name(options.fusion);
  if (!fit.stats.is_null()) info.compile_stats["memory_budget"] = fit.stats;  // absent without --memory-budget
  info.batch_chunks = fit.chunks;
  if (!options.tensor_cores) info.compile_stats["tensor_cores"] = false;  // likewise absent by default
  info.explain = s.explain;
  if (s.ukernels.int_gemms > 0) info.int_gemm = codegen::int_gemm_variant_for(arch);
  if (s.ukernels.float_gemms > 0 || s.ukernels.winograd_convs > 0)
    info.float_gemm = codegen::float_gemm_variant_for(arch);
  if (!target.gpu && arch.name != "host") info.cpu_isa = arch.isa;  // the host builds with -march=native
  info.project_hash = project_hash(options, g, plan);
  if (target.gpu) {
    codegen::emit_cuda_project(g, kernels, plan, info, arch.isa, out_dir);
    if (options.emulate) {
      std::vector<codegen::Kernel> emulated;
      for (const codegen::Kernel& k : kernels) {
        emulated.push_back(codegen::expand_thread_locals(k));
        codegen::verify(emulated.back());
      }
      codegen::ProjectInfo emulation_info = info;
      emulation_info.arch = arch.name + "-emulation";
      emulation_info.gpu_emulation = true;
      if (options.sanitize) emulation_info.sanitizer_warp_size = arch.warp_size;
      codegen::emit_cpu_project(g, emulated, plan, emulation_info, emulation_dir(out_dir));
    }
  } else {
    codegen::emit_cpu_project(g, kernels, plan, info, out_dir);
  }
  report.num_kernels = static_cast<int>(kernels.size());
}

void build_stage(const CompileOptions& options, const ResolvedTarget& target, const std::string& out_dir,
                 Clock::time_point start) {
  const int jobs = target.build_jobs;
  if (!target.gpu || target.build_gpu) {
    const std::string toolchain = target.cross ? codegen::kAarch64ToolchainFile : "";
    progress(5, target.steps,
             str_cat(target.cross ? "cross-building for aarch64 (" + std::string(kAarch64CrossCompiler) + ")"
                                  : std::string("building"),
                     " with cmake (-j ", jobs, "), log in ", out_dir, "/build.log"),
             start);
    build_project(out_dir, jobs, toolchain, options.compiler_launcher);
  }
  if (target.gpu && options.emulate) {
    const std::string dir = emulation_dir(out_dir);
    progress(5, target.steps, str_cat("building the CPU emulation (-j ", jobs, "), log in ", dir, "/build.log"), start);
    build_project(dir, jobs, "", options.compiler_launcher);
  }
}

// compile_stats.json: timings vary run to run, so they stay out of the deterministic manifest.
void write_compile_stats(const CompileOptions& options, const CompileReport& report, const ProfileReport& profiled,
                         const BudgetFit& fit,
                         const std::string& out_dir) {
  nlohmann::json stats = {{"kernels", report.num_kernels},
                          {"kernels_unfused", report.num_kernels_unfused},
                          {"dram_bytes", report.dram_bytes},
                          {"dram_bytes_unfused", report.dram_bytes_unfused},
                          {"schedule_cache", {{"hits", report.cache_hits}, {"misses", report.cache_misses}}},
                          {"profile", {{"kernels", profiled.kernels}, {"problems", profiled.problems},
                                       {"variants", profiled.variants}, {"cache_hits", profiled.cache_hits},
                                       {"changed", profiled.changed}, {"seconds", profiled.seconds}}},
                          {"seconds", {{"frontend", report.seconds_frontend},
                                       {"passes", report.seconds_passes},
                                       {"schedule", report.seconds_schedule},
                                       {"codegen", report.seconds_codegen},
                                       {"build", report.seconds_build}}}};
  if (!fit.stats.is_null()) stats["memory_budget"] = fit.stats;
  if (!options.compiler_launcher.empty()) {  // absent without a launcher: the file stays as it was
    nlohmann::json& launcher = stats["compiler_launcher"];
    launcher["program"] = fs::path(options.compiler_launcher).filename().string();
    if (report.launcher_hits >= 0) launcher["hits"] = report.launcher_hits;
    if (report.launcher_misses >= 0) launcher["misses"] = report.launcher_misses;
  }
  replace_file(fs::path(out_dir) / "compile_stats.json", stats.dump(2) + "\n");
}

}  // namespace

// import -> optimize -> schedule -> lower + emit -> build -> stats, over a
// target resolved once.
CompileReport compile(const CompileOptions& options) {
  check_options(options);
  const ResolvedTarget target = resolve_target(options);
  const scheduler::ArchSpec& arch = target.arch;
  CompileReport report;
  // Read before anything is compiled (the profiling harness included).
  const std::optional<LauncherCounts> launcher_before = read_launcher_counts(options.compiler_launcher);

  const auto start = Clock::now();
  auto t = start;
  progress(1, target.steps, "importing " + options.model_path, start);
  Graph g = import_graph(options);
  report.seconds_frontend = seconds_since(t);

  t = Clock::now();
  progress(2, target.steps, str_cat("optimizing graph (", g.ops.size(), " ops)"), start);
  g = optimize_graph(options, g, target.gpu);
  report.seconds_passes = seconds_since(t);

  t = Clock::now();
  progress(3, target.steps, str_cat("scheduling ", g.ops.size(), " ops for ", arch.name, " (", arch.description,
                                    ", ", arch.compute_units, target.gpu ? " SMs/CUs" : " cores", ")"), start);
  // Written and built next to the project, moved into place when complete.
  ProjectStaging staging(options.output_dir);
  const std::string out_dir = staging.dir();
  // Lowering adds packed constants to g: a budget's micro-batches start again from this.
  const Graph optimized = options.memory_budget > 0 ? g : Graph{};
  Scheduled scheduled = schedule_stage(options, target, g, out_dir, report);
  report.seconds_schedule = seconds_since(t);

  t = Clock::now();
  progress(4, target.steps, str_cat("generating ", scheduled.schedule.kernels.size(), " kernels into ",
                                    options.output_dir), start);
  Lowered lowered = lower_stage(options, target, g, scheduled);
  BudgetFit fit;
  if (options.memory_budget > 0)
    fit = fit_memory_budget(options, target, optimized, g, scheduled, lowered, out_dir, report);
  emit_stage(options, target, g, scheduled, lowered, fit, out_dir, report);
  report.seconds_codegen = seconds_since(t);

  if (target.build_any) {
    t = Clock::now();
    build_stage(options, target, out_dir, start);
    report.seconds_build = seconds_since(t);
  }
  if (target.gpu && options.build && !target.build_gpu && options.build_gpu)
    std::cerr << "note: " << target.gpu_compiler << " not found: the " << arch.target
              << " project was written but not built\n";
  if (launcher_before) {
    if (const std::optional<LauncherCounts> after = read_launcher_counts(options.compiler_launcher)) {
      report.launcher_hits = after->hits - launcher_before->hits;
      report.launcher_misses = after->misses - launcher_before->misses;
    }
  }
  write_compile_stats(options, report, scheduled.profiled, fit, out_dir);
  staging.commit();
  return report;
}

}  // namespace tilegraph::driver
