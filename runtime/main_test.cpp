// main_test.cpp — benchmark and IO driver for a generated model (libmodel.so).
//
// What trtexec / iree-benchmark-module are for their compilers: load the
// weights, feed inputs (from .npy files or generated deterministically), time
// warmup + measured iterations, optionally profile per kernel, write outputs,
// compare them with expected .npy files, and export everything as JSON.
// It drives the model only through tilegraph_model.h.
//
// Exit codes: 0 success, 1 outputs differ from --expected, 2 any error (bad
// flag, unreadable or mismatched .npy, model failure). Every error is one line
// on stderr starting with "error: ". Output is deterministic except for timings.
//
// The pieces live in their own files: main_test_options (flags), npy (.npy IO),
// random_fill (generated inputs), bench_stats (latency statistics),
// kernel_profile (--profile), tensor_compare (--expected), json_writer
// (--export-json), peak_memory (its own peak resident memory, for the JSON).
// This file wires them to the model.
#include "bench_stats.h"
#include "json_writer.h"
#include "kernel_profile.h"
#include "main_test_options.h"
#include "npy.h"
#include "peak_memory.h"
#include "random_fill.h"
#include "tensor_compare.h"
#include "tilegraph_model.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

namespace fs = std::filesystem;
using namespace tilegraph::rt;

namespace {

constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

// An error to report as "error: <message>" with a given exit code.
struct Failure : std::runtime_error {
  int code;
  explicit Failure(const std::string& message, int exit_code = kExitError)
      : std::runtime_error(message), code(exit_code) {}
};

using Options = MainTestOptions;

// ------------------------------------------------------- model tensors ----

struct TensorSpec {
  std::string name;
  std::string file;  // sanitize_name(name) + ".npy"
  int dtype = 0;
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

TensorSpec spec_of(const tg_tensor_info& info, const char* kind, int index) {
  TensorSpec s;
  if (info.name == nullptr) {
    throw Failure(std::string("model reports no name for ") + kind + " " + std::to_string(index));
  }
  if (info.rank < 0 || (info.rank > 0 && info.shape == nullptr)) {
    throw Failure(std::string("model reports an invalid shape for ") + kind + " '" + info.name + "'");
  }
  s.name = info.name;
  s.file = sanitize_name(s.name) + ".npy";
  s.dtype = info.dtype;
  s.shape.assign(info.shape, info.shape + info.rank);
  if (dtype_size(s.dtype) == 0) {
    throw Failure(std::string(kind) + " '" + s.name + "' has an unsupported dtype code " + std::to_string(s.dtype));
  }
  s.bytes = size_t(shape_num_elements(s.shape)) * dtype_size(s.dtype);
  return s;
}

std::string describe(int dtype, const std::vector<int64_t>& shape) {
  return dtype_name(dtype) + " " + format_shape(shape);
}

// Two ONNX names may sanitize to the same file name; refuse rather than let
// one file silently stand for two tensors.
// Restricts the process to `cpus` before the kernels' thread pool starts
// (its threads inherit the mask), like `taskset -c`.
void pin_to_cpus(const std::vector<int>& cpus) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw Failure(std::string("--cpu-ids: cannot run on those CPUs (") + std::strerror(errno) + ")", 2);
  std::printf("pinned to %zu CPU(s)\n", cpus.size());
#else
  (void)cpus;
  throw Failure("--cpu-ids is supported on Linux only", 2);
#endif
}

void check_unique_files(const std::vector<TensorSpec>& specs, const char* kind) {
  std::map<std::string, std::string> seen;
  for (const TensorSpec& s : specs) {
    auto [it, inserted] = seen.emplace(s.file, s.name);
    if (!inserted) {
      throw Failure(std::string(kind) + "s '" + it->second + "' and '" + s.name + "' both map to the file name " +
                    s.file);
    }
  }
}

// Tensor memory handed to tg_model_run: 64-byte aligned so kernels may use
// aligned vector loads on it regardless of how the .npy was read.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    ptr_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
    if (!ptr_) throw Failure("out of memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(ptr_.get(), 0, rounded);
  }
  uint8_t* data() const { return ptr_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  size_t size_;
  std::unique_ptr<uint8_t, Free> ptr_;
};

NpyArray to_npy(const TensorSpec& spec, const AlignedBuffer& buf) {
  NpyArray a;
  a.dtype = spec.dtype;
  a.shape = spec.shape;
  a.data.assign(buf.data(), buf.data() + buf.size());
  return a;
}

// --------------------------------------------------------------- inputs ----

struct InputRecord {
  TensorSpec spec;
  std::string source;  // the .npy path, or "random"
  AlignedBuffer buffer;
};

InputRecord load_input(const TensorSpec& spec, const fs::path& file) {
  NpyArray a;
  try {
    a = read_npy(file.string());
  } catch (const std::runtime_error& e) {
    throw Failure("input '" + spec.name + "': " + e.what());
  }
  if (a.dtype != spec.dtype || a.shape != spec.shape) {
    throw Failure("input '" + spec.name + "' (" + spec.file + "): expected " + describe(spec.dtype, spec.shape) +
                  ", got " + describe(a.dtype, a.shape));
  }
  InputRecord rec{spec, file.string(), AlignedBuffer(spec.bytes)};
  std::memcpy(rec.buffer.data(), a.data.data(), spec.bytes);
  return rec;
}

// A .npy in the inputs folder that feeds nothing is most likely a misspelled
// name; say so (sorted, for deterministic output).
void note_unused_files(const std::vector<TensorSpec>& specs, const std::string& dir) {
  std::vector<std::string> unused;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".npy") continue;
    bool used = std::any_of(specs.begin(), specs.end(), [&](const TensorSpec& s) { return s.file == name; });
    if (!used) unused.push_back(name);
  }
  std::sort(unused.begin(), unused.end());
  for (const std::string& name : unused) {
    std::printf("note: %s matches no model input, ignored\n", (fs::path(dir) / name).string().c_str());
  }
}

std::vector<InputRecord> prepare_inputs(const std::vector<TensorSpec>& specs, const Options& o) {
  bool have_dir = !o.inputs_dir.empty();
  if (have_dir && !fs::is_directory(o.inputs_dir)) {
    throw Failure("--inputs: '" + o.inputs_dir + "' is not a directory");
  }
  std::vector<InputRecord> inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& spec = specs[i];
    fs::path file = fs::path(o.inputs_dir) / spec.file;
    if (have_dir && fs::exists(file)) {
      inputs.push_back(load_input(spec, file));
      std::printf("input '%s' %s <- %s\n", spec.name.c_str(), describe(spec.dtype, spec.shape).c_str(),
                  file.string().c_str());
    } else {
      InputRecord rec{spec, "random", AlignedBuffer(spec.bytes)};
      fill_random(spec.dtype, spec.bytes / dtype_size(spec.dtype), o.seed, i, rec.buffer.data());
      inputs.push_back(std::move(rec));
      std::printf("input '%s' %s <- random (seed %llu)\n", spec.name.c_str(),
                  describe(spec.dtype, spec.shape).c_str(), (unsigned long long)o.seed);
    }
  }
  if (have_dir) note_unused_files(specs, o.inputs_dir);
  return inputs;
}

// ------------------------------------------------------------- weights ----

fs::path executable_dir(const char* argv0) {
#if defined(__linux__)
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) return fs::path(std::string(buf, size_t(n))).parent_path();
#endif
  std::error_code ec;
  fs::path p = fs::absolute(argv0, ec);
  return ec ? fs::current_path() : p.parent_path();
}

// The generated project builds main_test into build/ and keeps weights.bin
// beside CMakeLists.txt, so look next to the executable, then one level up.
std::string find_weights(const Options& o, const char* argv0) {
  if (!o.weights.empty()) return o.weights;
  fs::path dir = executable_dir(argv0);
  for (const fs::path& candidate : {dir / "weights.bin", dir.parent_path() / "weights.bin"}) {
    if (fs::is_regular_file(candidate)) return candidate.string();
  }
  throw Failure("no weights.bin next to the executable (" + dir.string() +
                ") or in its parent folder; pass --weights PATH");
}

// --------------------------------------------------------------- running ----

using Clock = std::chrono::steady_clock;

// The model and the tensor memory it runs on.
struct Session {
  std::unique_ptr<tg_model, void (*)(tg_model*)> model{nullptr, tg_model_destroy};
  std::vector<const void*> inputs;
  std::vector<void*> outputs;

  void run_once() const {
    if (tg_model_run(model.get(), inputs.data(), outputs.data()) != 0) {
      const char* why = tg_last_error();
      throw Failure(std::string("tg_model_run failed: ") + (why ? why : "no reason given"));
    }
  }
};

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// Per-iteration latencies: `iters` of them, or as many as fit in
// `duration_s` (at least one) when that is set.
std::vector<double> timed_iterations(const Session& s, const Options& o) {
  std::vector<double> samples;
  Clock::time_point start = Clock::now();
  while (true) {
    Clock::time_point t0 = Clock::now();
    s.run_once();
    samples.push_back(elapsed_ms(t0));
    if (o.duration_s > 0 ? elapsed_ms(start) >= o.duration_s * 1000.0 : int64_t(samples.size()) >= o.iters) {
      break;
    }
  }
  return samples;
}

// Profiling runs separately from the timed iterations so that its
// per-kernel synchronization does not inflate the latency statistics. Each
// run's kernel times are read on their own, for their medians.
std::vector<KernelTime> profile(const Session& s, size_t iterations) {
  std::vector<std::vector<double>> ms_per_run(static_cast<size_t>(tg_num_kernels()));
  tg_set_profiling(s.model.get(), 1);
  for (size_t i = 0; i < iterations; ++i) {
    tg_reset_profile(s.model.get());
    s.run_once();
    for (size_t k = 0; k < ms_per_run.size(); ++k) ms_per_run[k].push_back(tg_kernel_time_ms(s.model.get(), int(k)));
  }
  tg_set_profiling(s.model.get(), 0);
  return kernel_times_of_runs(ms_per_run);
}

// ------------------------------------------------------------ accuracy ----

struct OutputCheck {
  std::string name;
  Comparison result;
};

std::vector<OutputCheck> check_expected(const std::vector<TensorSpec>& specs, const std::vector<AlignedBuffer>& outs,
                                        const Options& o) {
  std::vector<OutputCheck> checks;
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& spec = specs[i];
    std::string path = (fs::path(o.expected_dir) / spec.file).string();
    NpyArray want;
    try {
      want = read_npy(path);
    } catch (const std::runtime_error& e) {
      throw Failure("expected output '" + spec.name + "': " + e.what());
    }
    NpyArray got = to_npy(spec, outs[i]);
    if (!comparable(got, want)) {
      throw Failure("expected output '" + spec.name + "' (" + spec.file + "): model gives " +
                    describe(spec.dtype, spec.shape) + ", file has " + describe(want.dtype, want.shape));
    }
    Comparison c = compare_tensors(got, want, o.rtol);
    std::printf("output '%s': %s\n", spec.name.c_str(), summarize(c, got, want, o.rtol).c_str());
    checks.push_back({spec.name, c});
  }
  return checks;
}

// ----------------------------------------------------------------- JSON ----

struct RunReport {
  std::string weights;
  const std::vector<InputRecord>* inputs = nullptr;
  const std::vector<TensorSpec>* outputs = nullptr;
  std::vector<double> samples;
  LatencyStats stats;
  bool profiled = false;
  size_t profile_iterations = 0;
  std::vector<KernelTime> kernels;
  bool compared = false;
  std::vector<OutputCheck> checks;
  int64_t peak_host_memory_bytes = -1;  // VmHWM at the end of the run; -1: unknown
};

void json_tensor(JsonWriter& j, const TensorSpec& t) {
  j.field("name", t.name);
  j.field("file", t.file);
  j.field("dtype", dtype_name(t.dtype));
  j.key("shape");
  j.begin_array(true);
  for (int64_t d : t.shape) j.value(d);
  j.end_array();
}

void json_profile(JsonWriter& j, const RunReport& r) {
  double total = 0;
  for (const KernelTime& k : r.kernels) total += k.total_ms;
  j.begin_object();
  j.field("iterations", r.profile_iterations);
  j.key("kernels");
  j.begin_array();
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelTime& k = r.kernels[i];
    j.begin_object();
    j.field("rank", i + 1);
    j.field("index", k.index);
    j.field("name", k.name);
    j.field("total_ms", k.total_ms);
    j.field("ms_per_iter", k.total_ms / double(std::max<size_t>(r.profile_iterations, 1)));
    j.field("median_ms", k.median_ms);
    j.field("percent", total > 0 ? 100.0 * k.total_ms / total : 0.0);
    j.key("nodes");
    j.begin_array(true);
    for (const std::string& n : k.nodes) j.value(n);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void json_accuracy(JsonWriter& j, const RunReport& r, double rtol) {
  bool passed = std::all_of(r.checks.begin(), r.checks.end(), [](const OutputCheck& c) { return c.result.ok(); });
  j.begin_object();
  j.field("rtol", rtol);
  j.field("passed", passed);
  j.key("outputs");
  j.begin_array();
  for (const OutputCheck& c : r.checks) {
    j.begin_object();
    j.field("name", c.name);
    j.field("max_abs_err", c.result.max_abs_err);
    j.field("max_rel_err", c.result.max_rel_err);
    j.field("mismatches", c.result.mismatches);
    j.field("elements", c.result.elements);
    j.field("ok", c.result.ok());
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

// The --export-json document; its keys are listed in the report to the lead
// and read by python/tilegraph tools, so extend it rather than rename.
std::string report_json(const Options& o, const RunReport& r) {
  JsonWriter j;
  j.begin_object();
  j.field("weights", r.weights);
  j.key("config");
  j.begin_object();
  j.field("warmup", o.warmup);
  if (o.duration_s > 0) {
    j.field("duration_s", o.duration_s);
  } else {
    j.field("iters", o.iters);
  }
  j.field("threads", o.threads);
  j.field("seed", o.seed);
  j.end_object();

  j.key("inputs");
  j.begin_array();
  for (const InputRecord& in : *r.inputs) {
    j.begin_object();
    json_tensor(j, in.spec);
    j.field("source", in.source);
    j.end_object();
  }
  j.end_array();
  j.key("outputs");
  j.begin_array();
  for (const TensorSpec& out : *r.outputs) {
    j.begin_object();
    json_tensor(j, out);
    j.end_object();
  }
  j.end_array();

  j.key("latency_ms");
  j.begin_object();
  j.field("iterations", r.stats.count);
  j.field("min", r.stats.min);
  j.field("max", r.stats.max);
  j.field("mean", r.stats.mean);
  j.field("stddev", r.stats.stddev);
  j.field("median", r.stats.p50);
  j.field("p90", r.stats.p90);
  j.field("p95", r.stats.p95);
  j.field("p99", r.stats.p99);
  j.end_object();
  j.field("throughput_per_s", r.stats.throughput);
  j.key("samples_ms");
  j.begin_array(true);
  for (double s : r.samples) j.value(s);
  j.end_array();
  j.key("peak_host_memory_bytes");
  if (r.peak_host_memory_bytes >= 0) {
    j.value(r.peak_host_memory_bytes);
  } else {
    j.null();
  }

  if (r.profiled) {
    j.key("profile");
    json_profile(j, r);
  }
  if (r.compared) {
    j.key("accuracy");
    json_accuracy(j, r, o.rtol);
  }
  j.end_object();
  return j.str();
}

void write_text(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Failure(std::string(flag) + ": cannot write '" + path + "': " + std::strerror(errno));
  f << text;
  f.close();
  if (!f) throw Failure(std::string(flag) + ": write to '" + path + "' failed");
}

// ----------------------------------------------------------------- main ----

void write_tensors(const std::vector<TensorSpec>& specs, const std::vector<const AlignedBuffer*>& buffers,
                   const std::string& dir, const char* flag, const char* kind) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw Failure(std::string(flag) + ": cannot create directory '" + dir + "'");
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string path = (fs::path(dir) / specs[i].file).string();
    write_npy(path, to_npy(specs[i], *buffers[i]));
    std::printf("wrote %s '%s' -> %s\n", kind, specs[i].name.c_str(), path.c_str());
  }
}

int run(int argc, char** argv) {
  Options o = parse_main_test_options(argc, argv);
  if (o.help) {
    std::fputs(kMainTestUsage, stdout);
    return 0;
  }

  std::vector<TensorSpec> in_specs, out_specs;
  for (int i = 0; i < tg_num_inputs(); ++i) in_specs.push_back(spec_of(tg_input_info(i), "input", i));
  for (int i = 0; i < tg_num_outputs(); ++i) out_specs.push_back(spec_of(tg_output_info(i), "output", i));
  if (!o.inputs_dir.empty() || !o.save_inputs_dir.empty()) check_unique_files(in_specs, "input");
  if (!o.outputs_dir.empty() || !o.expected_dir.empty()) check_unique_files(out_specs, "output");
  if (!o.expected_dir.empty() && !fs::is_directory(o.expected_dir)) {
    throw Failure("--expected: '" + o.expected_dir + "' is not a directory");
  }
  std::printf("model: %d inputs, %d outputs, %d kernels\n", tg_num_inputs(), tg_num_outputs(), tg_num_kernels());

  // Inputs first: a wrong file fails fast, before weights are loaded.
  std::vector<InputRecord> inputs = prepare_inputs(in_specs, o);
  for (const TensorSpec& s : out_specs) {
    std::printf("output '%s' %s\n", s.name.c_str(), describe(s.dtype, s.shape).c_str());
  }
  if (!o.save_inputs_dir.empty()) {
    std::vector<const AlignedBuffer*> bufs;
    for (const InputRecord& in : inputs) bufs.push_back(&in.buffer);
    write_tensors(in_specs, bufs, o.save_inputs_dir, "--save-inputs", "input");
  }

  RunReport report;
  report.weights = find_weights(o, argv[0]);
  std::printf("weights: %s\n", report.weights.c_str());
  if (!o.cpu_ids.empty()) pin_to_cpus(o.cpu_ids);
  const int threads = o.threads > 0 ? o.threads : int(o.cpu_ids.size());
  if (threads > 0) tg_set_num_threads(threads);
  Session session;
  tg_model* raw = nullptr;
  int rc = tg_model_create(report.weights.c_str(), &raw);
  session.model.reset(raw);
  if (rc != 0 || raw == nullptr) {
    const char* why = tg_last_error();
    throw Failure(std::string("cannot create the model: ") + (why ? why : "no reason given"));
  }
  std::vector<AlignedBuffer> outputs;
  for (const TensorSpec& s : out_specs) outputs.emplace_back(s.bytes);
  for (const InputRecord& in : inputs) session.inputs.push_back(in.buffer.data());
  for (const AlignedBuffer& b : outputs) session.outputs.push_back(b.data());

  std::printf("warmup: %lld iterations\n", (long long)o.warmup);
  for (int64_t i = 0; i < o.warmup; ++i) session.run_once();
  report.samples = timed_iterations(session, o);
  report.stats = compute_latency_stats(report.samples);
  std::fputs(format_latency_summary(report.stats).c_str(), stdout);

  if (o.profile) {
    report.profiled = true;
    report.profile_iterations = report.samples.size();
    report.kernels = profile(session, report.profile_iterations);
    std::fputs(format_profile_table(report.kernels, report.profile_iterations, report.stats.mean).c_str(), stdout);
  }

  if (!o.outputs_dir.empty()) {
    std::vector<const AlignedBuffer*> bufs;
    for (const AlignedBuffer& b : outputs) bufs.push_back(&b);
    write_tensors(out_specs, bufs, o.outputs_dir, "--outputs", "output");
  }

  int code = 0;
  if (!o.expected_dir.empty()) {
    report.compared = true;
    report.checks = check_expected(out_specs, outputs, o);
    size_t failed = size_t(std::count_if(report.checks.begin(), report.checks.end(),
                                         [](const OutputCheck& c) { return !c.result.ok(); }));
    if (failed == 0) {
      std::printf("accuracy: all %zu outputs match %s\n", report.checks.size(), o.expected_dir.c_str());
    } else {
      std::printf("accuracy: %zu of %zu outputs MISMATCH %s\n", failed, report.checks.size(),
                  o.expected_dir.c_str());
      code = kExitMismatch;
    }
  }

  if (!o.export_json.empty()) {
    report.inputs = &inputs;
    report.outputs = &out_specs;
    report.peak_host_memory_bytes = peak_resident_bytes();
    write_text(o.export_json, report_json(o, report), "--export-json");
    std::printf("wrote %s\n", o.export_json.c_str());
  }
  return code;
}

}  // namespace

// libgomp's threads wait for the next parallel region by spinning, then
// sleeping. Unbounded spinning (OMP_WAIT_POLICY=active) starves real work on a
// machine with other load (a 75 ms model took 1 s on a busy 2-core box);
// never spinning (passive) pays a futex wake-up at every one of a model's
// ~200 kernels (ViT-S INT8, 2 threads: 18.8 ms against 9.9 ms). A short spin,
// GOMP_SPINCOUNT=30000 (tens of microseconds: the gap between kernels), keeps
// both: 22 ms instead of 18 when two runs share the two cores. libgomp reads
// these when it is loaded, before main(), so main_test re-executes itself
// once with it unless the user chose OMP_WAIT_POLICY or GOMP_SPINCOUNT.
static void default_to_short_omp_spinning(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || std::getenv("TG_MAIN_TEST_REEXEC")) return;
  setenv("GOMP_SPINCOUNT", "30000", 1);
  setenv("TG_MAIN_TEST_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

int main(int argc, char** argv) {
  default_to_short_omp_spinning(argv);
  // Errors go to stderr after flushing stdout, so that a terminal or a log
  // shows them after everything printed before.
  try {
    int code = run(argc, argv);
    std::fflush(stdout);
    return code;
  } catch (const Failure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", f.what());
    return f.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitError;
  } catch (...) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: unknown exception\n");
    return kExitError;
  }
}
