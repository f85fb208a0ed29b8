// The `tilegraph` command line: tune (compile a model into a project and build
// it), run (benchmark / run it via main_test), explain (the tile-graph
// schedule of a tuned model), calibrate (measure the host), arch (one
// target's resolved spec), archs (known targets), ops (supported ONNX ops).
#include <pthread.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "driver/aarch64_target.h"
#include "driver/arch_summary.h"
#include "driver/calibrate.h"
#include "driver/saved_host_spec.h"
#include "driver/compiler_launcher.h"
#include "driver/explain.h"
#include "driver/measured_kernels.h"
#include "driver/refine_spec.h"
#include "driver/pipeline.h"
#include "driver/memory_budget.h"
#include "driver/version.h"
#include "compiler/ir/error.h"
#include "frontends/onnx/import.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/tensor_proto.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"

namespace fs = std::filesystem;
using namespace tilegraph;

namespace {

// Projects live under the arch's canonical name (--arch h100 and H100 agree).
std::string canonical_arch(const std::string& arch) { return scheduler::arch_by_name(arch).name; }

std::string project_dir(const std::string& prefix, const std::string& arch) {
  return (fs::path(prefix) / "tilegraph_rt" / canonical_arch(arch)).string();
}

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--input-shape '" + spec + "': expected NAME=DIMS, e.g. input_ids=1x128");
    const std::string name = spec.substr(0, eq);
    const Shape shape = onnx_frontend::parse_shape(spec.substr(eq + 1));
    if (const auto [it, added] = shapes.emplace(name, shape); !added && it->second != shape)
      throw UserError(str_cat("--input-shape ", name, " is given twice with different shapes (",
                              shape_to_string(it->second), " and ", shape_to_string(shape), ")"));
  }
  return shapes;
}

// NAME=FILE.pb pairs: FILE holds a serialized onnx TensorProto (the ONNX
// test-data format), e.g. written by onnx.numpy_helper.from_array(...).SerializeToString().
std::map<std::string, Tensor> read_frozen_inputs(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> frozen;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--freeze-input '" + spec + "': expected NAME=FILE.pb");
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    if (frozen.count(name)) throw UserError("--freeze-input " + name + " is given twice");
    std::error_code ec;
    std::ifstream in(file, std::ios::binary);
    if (!in || !fs::is_regular_file(file, ec))
      throw UserError("--freeze-input " + name + ": cannot open '" + file + "' (not a readable file)");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes))
      throw UserError("--freeze-input " + name + ": '" + file + "' is not a serialized onnx TensorProto");
    frozen[name] = onnx_frontend::tensor_from_proto(proto, "", "--freeze-input " + name);
  }
  return frozen;
}

struct TuneFlags {
  std::string model;
  int topk = 20, jobs = 0;
  std::string cpu_features;
  bool no_build = false, no_fusion = false, no_tensor_cores = false, no_float_ukernels = false, no_winograd = false, fp16 = false, emulate = false, sanitize = false, skip_dot = false, no_gpu_build = false, verbose = false;
  std::string profile_topk = "auto";
  std::string fusion_level;  // empty: full, or none under --no-fusion
  std::string arch_file;
  std::optional<std::string> memory_budget;  // absent: no budget (driver/memory_budget.h)
  std::string compiler_launcher;
  std::vector<std::string> input_shapes, frozen_inputs, dump_after;
};

// --fusion-level, with --no-fusion as the alias of "none".
scheduler::FusionLevel fusion_level_of(const TuneFlags& f) {
  if (f.fusion_level.empty()) return f.no_fusion ? scheduler::FusionLevel::kNone : scheduler::FusionLevel::kFull;
  const scheduler::FusionLevel level = scheduler::fusion_level_from_name(f.fusion_level);
  if (f.no_fusion && level != scheduler::FusionLevel::kNone)
    throw UserError("--no-fusion means --fusion-level none; it contradicts --fusion-level " + f.fusion_level);
  return level;
}

// The arch --arch-file (when given) or --arch names: the file's arch must be
// a known one, since it picks the code generator and the project's folder
// (tilegraph_rt/<name>), which run and explain find. ARCH_GIVEN: --arch was
// on the command line (then it must agree with the file).
scheduler::ArchSpec resolve_arch(const std::string& arch, bool arch_given, const std::string& arch_file) {
  if (arch_file.empty()) return scheduler::arch_by_name(arch);
  const scheduler::ArchSpec spec = scheduler::arch_from_file(arch_file);
  std::string named;
  try {
    named = canonical_arch(spec.name);
  } catch (const UserError&) {
    throw UserError("--arch-file '" + arch_file + "': name \"" + spec.name +
                    "\" is not a known arch (see `tilegraph archs`; a calibrated host spec is named \"host\")");
  }
  if (arch_given && canonical_arch(arch) != named)
    throw UserError("--arch-file '" + arch_file + "' describes " + spec.name + ", not --arch " + arch);
  if (scheduler::arch_by_name(named).target != spec.target)
    throw UserError("--arch-file '" + arch_file + "': target \"" + spec.target + "\" is not " + named + "'s");
  return spec;
}

// The spec file --arch ARCH means: --arch-file when given, else for the host
// the spec `calibrate --save` kept for this machine (driver/saved_host_spec.h),
// else none (the built-in spec). ANNOUNCE: say on stderr which host spec a
// tune uses, and how to get a calibrated one when it is the built-in.
std::string arch_file_for(const std::string& arch, const std::string& arch_file, bool announce) {
  if (!arch_file.empty() || canonical_arch(arch) != "host") return arch_file;
  const std::optional<driver::SavedHostSpec> saved = driver::load_saved_host_spec();
  if (announce && saved)
    std::cerr << "arch host: " << saved->spec.description << " (saved in " << saved->path.string() << ")\n";
  if (announce && !saved && !driver::saved_host_spec_path().empty())
    std::cerr << "arch host: the built-in spec (nominal speeds); `tilegraph calibrate --save` measures this "
                 "machine in seconds, and later tunes use it\n";
  return saved ? saved->path.string() : "";
}

int tune(const std::string& prefix, std::string arch, bool arch_given, TuneFlags f) {
  const std::string& model = f.model;
  f.arch_file = arch_file_for(arch, f.arch_file, true);
  if (!f.arch_file.empty()) arch = canonical_arch(resolve_arch(arch, arch_given, f.arch_file).name);
  driver::CompileOptions o;
  o.arch = canonical_arch(arch);  // a bad --arch is reported before anything else
  o.model_path = model.empty() ? (fs::path(prefix) / "model.onnx").string() : model;
  if (!fs::exists(o.model_path))
    throw UserError("no model at '" + o.model_path + "' (tune expects PREFIX/model.onnx, or --model FILE)");
  o.output_dir = project_dir(prefix, arch);
  o.arch = canonical_arch(arch);
  o.topk = f.topk;
  o.cpu_features = f.cpu_features;
  o.arch_file = f.arch_file;
  o.fusion = fusion_level_of(f);
  o.float_ukernels = !f.no_float_ukernels;
  o.winograd = !f.no_winograd;
  o.fp16 = f.fp16;
  o.tensor_cores = !f.no_tensor_cores;
  o.profile_topk = f.profile_topk;
  o.emulate = f.emulate;
  o.sanitize = f.sanitize;
  o.skip_dot = f.skip_dot;
  o.build_gpu = !f.no_gpu_build;
  o.memory_budget = f.memory_budget ? driver::parse_byte_size(*f.memory_budget) : 0;
  o.input_shapes = parse_input_shapes(f.input_shapes);
  o.frozen_inputs = read_frozen_inputs(f.frozen_inputs);
  o.build = !f.no_build;
  o.build_jobs = f.jobs;
  o.compiler_launcher = driver::resolve_compiler_launcher(f.compiler_launcher);
  o.dump_after = f.dump_after;
  o.verbose = f.verbose;
  if (f.emulate && !scheduler::arch_by_name(arch).is_gpu())
    throw UserError("--emulate emulates a GPU launch on the CPU; --arch " + o.arch + " is not a GPU");
  const auto report = driver::compile(o);
  std::cerr << "tuned " << report.num_kernels << " kernels in "
            << report.seconds_frontend + report.seconds_passes + report.seconds_schedule +
                   report.seconds_codegen + report.seconds_build
            << " s; project: " << o.output_dir << "\n";
  if (o.build) std::cerr << "run it: tilegraph run " << prefix << (o.arch == "host" ? "" : " --arch " + o.arch) << "\n";
  return 0;
}

bool has_nvidia_gpu() { return fs::exists("/dev/nvidia0") || fs::exists("/dev/nvidiactl"); }

// The main_test to run for an arch: the target's own build, or for a GPU
// arch on a machine without that GPU, the CPU emulation of its kernels.
fs::path runnable_project(const std::string& prefix, const std::string& arch) {
  const fs::path dir = project_dir(prefix, arch);
  const fs::path emulation = driver::emulation_dir(dir.string());
  const bool native = fs::exists(dir / "build" / "main_test");
  const bool emulated = fs::exists(emulation / "build" / "main_test");
  const bool gpu = scheduler::arch_by_name(arch).is_gpu();
  if (native && (!gpu || has_nvidia_gpu() || !emulated)) return dir;
  if (emulated) {
    std::cerr << "note: no " << canonical_arch(arch) << " here: running the CPU emulation of its kernels\n";
    return emulation;
  }
  const std::string hint = gpu ? " --emulate" : "";
  throw UserError("no compiled project at '" + dir.string() + "'; run `tilegraph tune " + prefix +
                  (canonical_arch(arch) == "host" ? "" : " --arch " + canonical_arch(arch)) + hint + "` first");
}

struct ExplainFlags {
  bool json = false, no_fusion = false, measured = false, candidates = false;
  std::string profile_json;  // main_test --export-json of a --profile run; "" = run main_test here
  int iters = 20;
};

nlohmann::json read_json_file(const fs::path& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read " + what + " '" + path.string() + "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw UserError("'" + path.string() + "' is not valid JSON: " + e.what());
  }
}

// The explain report in PREFIX's manifest.
nlohmann::json explain_report(const std::string& prefix, const std::string& arch) {
  const fs::path manifest = fs::path(project_dir(prefix, arch)) / "manifest.json";
  if (!fs::exists(manifest))
    throw UserError("no manifest at '" + manifest.string() + "'; run `tilegraph tune " + prefix + " --arch " +
                    canonical_arch(arch) + "` first");
  nlohmann::json m = read_json_file(manifest, "manifest");
  if (!m.contains("explain"))
    throw UserError("'" + manifest.string() + "' has no explain report (tuned by an older tilegraph? tune again)");
  return m["explain"];
}

// Adds measured kernel times to an explain report: from `profile_json`
// (main_test --export-json of a --profile run), or main_test run here.
void add_measured(nlohmann::json& e, const std::string& prefix, const std::string& arch,
                  const std::string& profile_json, int iters) {
  std::vector<driver::MeasuredKernel> kernels;
  if (!profile_json.empty()) {
    kernels = driver::read_kernel_profile_json(read_json_file(profile_json, "--profile-json"), profile_json);
  } else {
    const scheduler::ArchSpec spec = scheduler::arch_by_name(arch);
    if (spec.is_gpu() || driver::needs_aarch64_cross(spec))
      throw UserError("--measured runs main_test on this machine: " + spec.name +
                      " kernels are not measured here (pass a profile from that machine with --profile-json)");
    const fs::path dir = runnable_project(prefix, arch);
    kernels = driver::profile_project_kernels(dir.string(), (dir / "kernel_profile.json").string(), iters);
  }
  driver::add_measured_times(e, kernels);
}

int explain(const std::string& prefix, const std::string& arch, const ExplainFlags& flags) {
  nlohmann::json e = explain_report(prefix, arch);
  if (flags.measured || !flags.profile_json.empty()) {
    if (flags.no_fusion) throw UserError("--measured times the fused kernels; drop --no-fusion");
    add_measured(e, prefix, arch, flags.profile_json, flags.iters);
  }
  if (flags.json) {
    std::cout << e.dump(2) << "\n";
  } else {
    std::cout << driver::explain_text(e, flags.no_fusion, flags.candidates);
    if (e.contains("measured")) std::cout << driver::measured_text(e);
  }
  return 0;
}

struct CalibrateFlags {
  std::string arch = "host", output, work;
  int cores = 0;
  std::string arch_file;     // the spec to refine instead of measuring one
  std::string refine;        // PREFIX of a model tuned with the spec, whose kernels are measured
  std::string profile_json;  // its kernels' profile (else main_test runs here)
  int iters = 20;
  bool save = false;         // keep it as this machine's host spec (driver/saved_host_spec.h)
};

int calibrate(const CalibrateFlags& f) {
  if (canonical_arch(f.arch) != "host")
    throw UserError("calibrate measures the machine it runs on: --arch host (a GPU spec's numbers come from its "
                    "file, scheduler/arch/" + canonical_arch(f.arch) + ".json)");
  if (f.cores < 0) throw UserError(str_cat("--cores ", f.cores, " must be positive"));
  if (!f.arch_file.empty() && f.refine.empty())
    throw UserError("calibrate --arch-file FILE refines that spec: add --refine PREFIX");
  if (!f.profile_json.empty() && f.refine.empty())
    throw UserError("calibrate --profile-json FILE is the profile of --refine PREFIX's kernels: add --refine PREFIX");
  if (f.save) driver::host_spec_save_path();  // nowhere to save it: say so before measuring
  scheduler::ArchSpec spec;
  if (!f.arch_file.empty()) {
    spec = scheduler::arch_from_file(f.arch_file);
    if (spec.name != "host" || spec.is_gpu())
      throw UserError("--arch-file '" + f.arch_file + "' describes " + spec.name + ", not the host CPU");
  } else {
    std::cerr << "calibrating the host CPU (a few seconds)..." << std::endl;
    driver::CalibrateOptions o;
    o.cores = f.cores;
    o.work_dir = f.work;
    const driver::Calibration c = driver::calibrate_host(o);
    std::cerr << c.summary << "calibrated in " << c.seconds << " s\n";
    spec = c.spec;
  }
  if (!f.refine.empty()) {
    nlohmann::json e = explain_report(f.refine, "host");
    add_measured(e, f.refine, "host", f.profile_json, f.iters);
    const driver::Refinement r = driver::refine_spec(spec, e);
    std::cerr << "refined by " << f.refine << "'s measured kernels:\n" << r.summary;
    spec = r.spec;
  }
  const std::string text = scheduler::arch_to_json(spec);
  if (f.save) {
    const fs::path saved = driver::save_host_spec(spec);
    std::cerr << "saved " << saved.string() << ": tune, explain and arch with --arch host use it from now on ("
              << "TILEGRAPH_HOST_SPEC=builtin ignores it)\n";
  }
  if (f.output.empty()) {
    if (!f.save) std::cout << text;
    return 0;
  }
  std::ofstream out(f.output, std::ios::binary | std::ios::trunc);
  if (!(out << text) || !out.flush()) throw UserError("-o '" + f.output + "': cannot write it");
  std::cerr << "wrote " << f.output << "; use it: tilegraph tune PREFIX --arch-file " << f.output << "\n";
  return 0;
}

// Replaces this process with main_test, forwarding the run flags. An AArch64
// arch's main_test runs under qemu-aarch64 on another host.
int run(const std::string& prefix, const std::string& arch, const std::vector<std::string>& args) {
  const fs::path dir = runnable_project(prefix, arch);
  const fs::path exe = dir / "build" / "main_test";
  const scheduler::ArchSpec spec = scheduler::arch_by_name(arch);
  std::vector<std::string> argv_storage;
  if (driver::needs_aarch64_cross(spec)) {
    if (!driver::is_aarch64_elf(exe.string()))
      throw UserError("'" + exe.string() + "' is not an AArch64 executable (built by an older tilegraph?); run "
                      "`tilegraph tune " + prefix + " --arch " + spec.name + "` again");
    argv_storage = driver::aarch64_emulator_command(spec);
    std::cout << "note: " << spec.name << " is AArch64: main_test runs under qemu-aarch64 -cpu max, an emulator; "
              << "its latencies are not real-time\n";
  }
  argv_storage.insert(argv_storage.end(), {exe.string(), "--weights", (dir / "weights.bin").string()});
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(argv[0], argv.data());
  throw UserError("cannot execute '" + argv_storage[0] + "'");
}

}  // namespace

namespace {

int cli_main(int argc, char** argv) {
  CLI::App app{"tilegraph: an ahead-of-time tile-graph DNN compiler (ONNX in, C++ project out)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tilegraph ") + driver::kTilegraphVersion);

  std::string arch_names;
  for (const std::string& a : scheduler::known_arch_names()) arch_names += (arch_names.empty() ? "" : ", ") + a;
  std::string prefix, arch = "host";
  TuneFlags f;
  auto* tune_cmd = app.add_subcommand("tune", "compile PREFIX/model.onnx into PREFIX/tilegraph_rt/<arch>/ and build it");
  tune_cmd->add_option("prefix", prefix, "model folder holding model.onnx (and its external data)")->required();
  tune_cmd->add_option("--model", f.model, "ONNX file to compile instead of PREFIX/model.onnx");
  tune_cmd->add_option("--arch", arch, "target: " + arch_names + " (host: the CPU this runs on; an AArch64 arch is cross-compiled with aarch64-linux-gnu-g++ on other hosts)")->capture_default_str();
  tune_cmd->add_option("--arch-file", f.arch_file,
                       "an arch spec file (the format of scheduler/arch/*.json, e.g. written by `tilegraph calibrate`) "
                       "that replaces the built-in spec of its arch; --arch defaults to the file's name");
  tune_cmd->add_option("--cpu-features", f.cpu_features, "CPU targets: instruction-set extensions to add or drop, e.g. +dotprod,-i8mm on an AArch64 arch (sets -march and the int8 micro-kernel) or -avx512vnni on the host");
  tune_cmd->add_option("--topk", f.topk, "tile configs kept per subgraph (best first by the cost model; profiled on a GPU when one is present)")->capture_default_str();
  tune_cmd->add_flag("--no-fusion", f.no_fusion, "one op per kernel (no tile-graph fusion), for comparison: --fusion-level none");
  tune_cmd->add_option("--fusion-level", f.fusion_level,
                       "how far to fuse, for comparison (the Welder paper's ablation): none = one op per kernel; "
                       "register = only elementwise producers inlined into their consumer, no edge kept in "
                       "shared memory or a CPU tile buffer; full = tile-graph fusion (default)");
  tune_cmd->add_flag("--no-float-ukernels", f.no_float_ukernels,
                     "CPU targets: float32 matmuls and convolutions keep the generated loop nests instead of the "
                     "float GEMM micro-kernel (sgemm_*), for comparison");
  tune_cmd->add_flag("--no-winograd", f.no_winograd,
                     "CPU targets: stride-1 3x3 convolutions run as implicit GEMMs on the float micro-kernel instead "
                     "of Winograd F(2x2, 3x3) (AVX-512 and AVX2 hosts), for comparison");
  tune_cmd->add_flag("--fp16", f.fp16, "compute an fp32 model in half precision: float32 weights and activations are stored as float16 (inputs and outputs stay float32; arithmetic, reductions, softmax and layer norm accumulate in float32). test_acc then uses the fp16 tolerance");
  tune_cmd->add_flag("--no-tensor-cores", f.no_tensor_cores,
                     "GPU archs: schedule without the tensor cores (no mma.sync; fp16 matmuls and convolutions run "
                     "on the CUDA cores, accumulating in float), for comparison (the Welder paper's Fig. 11)");
  tune_cmd->add_option("--profile-topk", f.profile_topk,
                       "time each kernel's --topk best tile configs on this machine's device and keep the fastest "
                       "(cached in profile_cache.json): auto = on for a CUDA arch when an NVIDIA GPU is present; "
                       "on = also for the host CPU; off = the cost model's first choice")
      ->default_val("auto");
  tune_cmd->add_flag("--emulate", f.emulate, "GPU archs: also write and build the CPU emulation of the GPU kernels (PREFIX/tilegraph_rt/<arch>/emulation), which `run` and test_acc use where there is no such GPU");
  tune_cmd->add_flag("--sanitize", f.sanitize, "with --emulate: the emulation checks every shared and global access of the GPU kernels (races between threads of a phase, reads of unwritten shared memory, out-of-bounds indices, misalignment, warp size) and stops at the first violation with a report naming the kernel, its ONNX nodes, the phase, threads and index; blocks run one at a time");
  tune_cmd->add_flag("--skip-dot", f.skip_dot, "CUDA archs: compute float MatMul/Gemm (batched, with transposed operands) with cuBLASLt, each its own library call, and fuse everything else; the CPU emulation runs a reference GEMM in its place");
  tune_cmd->add_flag("--no-gpu-build", f.no_gpu_build, "GPU archs: write the CUDA/HIP project but do not build it (nvcc/hipcc)");
  tune_cmd->add_option("--memory-budget", f.memory_budget,
                       "bytes the compiled model may hold (activation arena + weights + CPU scratch; on a GPU also "
                       "its input/output copies), e.g. 64M or 1.5G: a plan that does not fit runs the graph in "
                       "micro-batches streamed chunk by chunk, or tune fails naming the smallest peak and what holds it");
  tune_cmd->add_option("--input-shape", f.input_shapes, "NAME=DIMS static shape for an input, e.g. input_ids=1x128 (repeatable)");
  tune_cmd->add_option("--freeze-input", f.frozen_inputs, "NAME=FILE.pb: bake an input's value (an onnx TensorProto file) into the model as a constant (repeatable)");
  tune_cmd->add_flag("--no-build", f.no_build, "write the project(s) but do not build them");
  tune_cmd->add_option("--jobs,-j", f.jobs, "parallel build jobs (default: all cores)");
  tune_cmd->add_option("--compiler-launcher", f.compiler_launcher,
                       "compile the generated project and the profiling harness through this program (a name on "
                       "PATH or a path, e.g. sccache or ccache): CMAKE_CXX/CUDA_COMPILER_LAUNCHER; with sccache, "
                       "compile_stats.json records its cache hits and misses");
  std::string dump_names;
  for (const std::string& p : driver::dump_points()) dump_names += p + ", ";
  tune_cmd->add_option("--dump-after", f.dump_after, "print the IR after a pass: " + dump_names + "all");
  tune_cmd->add_flag("--verbose,-v", f.verbose, "log passes and every fusion decision, print the Kernel IR");

  std::string run_prefix, run_arch = "host";
  std::vector<std::string> run_args;
  auto* run_cmd = app.add_subcommand("run", "run the compiled model with main_test (flags after PREFIX go to main_test: --inputs DIR --outputs DIR --warmup N --iters N --duration S --threads N --cpu-ids LIST --profile --expected DIR --export-json FILE)");
  run_cmd->add_option("prefix", run_prefix, "model folder given to tune")->required();
  run_cmd->add_option("--arch", run_arch, "target the project was tuned for (an AArch64 arch runs under qemu-aarch64 on other hosts)")->capture_default_str();
  run_cmd->allow_extras();

  std::string explain_prefix, explain_arch = "host";
  ExplainFlags explain_flags;
  auto* explain_cmd = app.add_subcommand("explain", "print the tile-graph schedule of a tuned model: per fused kernel its ops, edge levels, tile, block size and the cost model's predictions; fused vs one op per kernel");
  explain_cmd->add_option("prefix", explain_prefix, "model folder given to tune")->required();
  explain_cmd->add_option("--arch", explain_arch, "target the model was tuned for")->capture_default_str();
  explain_cmd->add_flag("--json", explain_flags.json, "print the report as one JSON object");
  explain_cmd->add_flag("--no-fusion", explain_flags.no_fusion, "list the one-op-per-kernel schedule's kernels");
  explain_cmd->add_flag("--measured", explain_flags.measured,
                        "add each kernel's measured time (main_test --profile, run here; kept in the project's "
                        "kernel_profile.json) next to its predicted one, and the ratio predicted / measured, "
                        "largest error first");
  explain_cmd->add_option("--profile-json", explain_flags.profile_json,
                          "with --measured: use this profile (`tilegraph run PREFIX --profile --export-json FILE`) "
                          "instead of running main_test");
  explain_cmd->add_option("--iters", explain_flags.iters, "with --measured: profiled iterations")->capture_default_str();
  explain_cmd->add_flag("--candidates", explain_flags.candidates,
                        "under each block kernel, its top-k tile candidates, best first, with the cost model's "
                        "prediction and its terms (DRAM, L2, scratch, compute; in --json always, as "
                        "candidate_costs)");

  CalibrateFlags calibrate_flags;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate", "measure this machine (cache and DRAM bandwidth, FMA and int8 micro-kernel rates, parallel-loop "
                   "overheads) and write an arch spec for tune --arch-file, or --save it for --arch host");
  calibrate_cmd->add_option("--arch", calibrate_flags.arch, "the arch to calibrate: host (this machine)")
      ->capture_default_str();
  calibrate_cmd->add_option("-o,--output", calibrate_flags.output,
                            "write the spec here (default: standard output, unless --save)");
  calibrate_cmd->add_flag("--save", calibrate_flags.save,
                          "keep the spec as this machine's: --arch host uses it from then on, without --arch-file "
                          "($TILEGRAPH_HOST_SPEC, else $XDG_CONFIG_HOME/tilegraph/host.json, else "
                          "~/.config/tilegraph/host.json; TILEGRAPH_HOST_SPEC=builtin turns it off)");
  calibrate_cmd->add_option("--cores", calibrate_flags.cores,
                            "threads the models will run on (default: every core); the spec's compute units");
  calibrate_cmd->add_option("--work", calibrate_flags.work, "build the benchmark here and keep it (default: a temporary folder)");
  calibrate_cmd->add_option("--refine", calibrate_flags.refine,
                            "PREFIX of a model tuned with this spec (tune --arch-file): correct the GEMM micro-kernel "
                            "rates by its kernels' measured times (main_test --profile, run here)");
  calibrate_cmd->add_option("--arch-file", calibrate_flags.arch_file,
                            "with --refine: the spec PREFIX was tuned with, refined instead of measuring a new one");
  calibrate_cmd->add_option("--profile-json", calibrate_flags.profile_json,
                            "with --refine: PREFIX's kernel profile (`tilegraph run PREFIX --profile --export-json FILE`) "
                            "instead of running main_test");
  calibrate_cmd->add_option("--iters", calibrate_flags.iters, "with --refine: profiled iterations")->capture_default_str();

  std::string spec_arch = "host", spec_arch_file;
  bool spec_json = false;
  int spec_cores = 0;
  auto* arch_cmd = app.add_subcommand(
      "arch", "print an arch's resolved spec as tune uses it: peak FLOP/s per data type, each memory level's "
              "capacity and bandwidth, compute units (the host's as read from this machine)");
  arch_cmd->add_option("--arch", spec_arch, "target: " + arch_names)->capture_default_str();
  arch_cmd->add_option("--arch-file", spec_arch_file,
                       "an arch spec file (as tune --arch-file takes it): print it as tune would read it");
  arch_cmd->add_flag("--json", spec_json, "print the spec as one JSON object (the format of scheduler/arch/*.json)");
  arch_cmd->add_option("--cores", spec_cores,
                       "the host's built-in spec as if it had N cores (each core's rates and caches, the totals "
                       "for N): an --arch-file for tunes whose kernels run on N threads; a saved spec is "
                       "not used (`tilegraph calibrate --cores N` measures one)")
      ->check(CLI::Range(1, 4096));

  auto* archs_cmd = app.add_subcommand("archs", "list the known --arch targets");
  auto* ops_cmd = app.add_subcommand("ops", "list the ONNX operators tilegraph lowers");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*tune_cmd) return tune(prefix, arch, tune_cmd->get_option("--arch")->count() > 0, f);
    if (*run_cmd) return run(run_prefix, run_arch, run_cmd->remaining());
    if (*explain_cmd) return explain(explain_prefix, explain_arch, explain_flags);
    if (*calibrate_cmd) return calibrate(calibrate_flags);
    if (*arch_cmd) {
      if (spec_cores != 0 && (!spec_arch_file.empty() || canonical_arch(spec_arch) != "host"))
        throw UserError("--cores describes the host's built-in spec: it takes neither --arch-file nor an --arch other than host");
      // --cores: the built-in spec for that many cores, never a saved one.
      const std::string file = spec_cores != 0 ? "" : arch_file_for(spec_arch, spec_arch_file, false);
      const scheduler::ArchSpec spec =
          spec_cores != 0 ? scheduler::host_arch(spec_cores)
                          : resolve_arch(spec_arch, arch_cmd->get_option("--arch")->count() > 0, file);
      std::cout << (spec_json ? scheduler::arch_to_json(spec) : driver::arch_summary(spec));
      if (!spec_json && spec_arch_file.empty() && !file.empty())
        std::cout << "  saved in " << file << " (tilegraph calibrate --save; TILEGRAPH_HOST_SPEC=builtin ignores it)\n";
      return 0;
    }
    if (*archs_cmd) {
      for (const std::string& name : scheduler::known_arch_names()) {
        const scheduler::ArchSpec a = scheduler::arch_by_name(name);
        std::cout << name << "\t" << a.target << "\t" << a.isa << "\t" << a.description << "\n";
      }
      return 0;
    }
    if (*ops_cmd) {
      for (const std::string& op : onnx_frontend::supported_op_types()) std::cout << op << "\n";
      return 0;
    }
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\n(this is a tilegraph bug; please report it with the model)\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// The compiler's IR walks recurse once per expression level, and register
// fusion makes a chain of n elementwise ops one expression n levels deep (a
// 20k-op chain needs about 16 MB of stack). The command runs on a thread
// whose stack is reserved large; only the pages a model needs are touched.
constexpr size_t kStackBytes = size_t{256} << 20;  // chains of some 300k ops

struct CliCall {
  int argc;
  char** argv;
  int status;
};

void* call_cli(void* arg) {
  auto* call = static_cast<CliCall*>(arg);
  call->status = cli_main(call->argc, call->argv);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  CliCall call{argc, argv, 0};
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kStackBytes) == 0 &&
      pthread_create(&thread, &attr, call_cli, &call) == 0) {
    pthread_attr_destroy(&attr);
    pthread_join(thread, nullptr);
    return call.status;
  }
  return cli_main(argc, argv);  // no room for the large stack (address-space limit): the default one
}
