#include "codegen/emit_cuda_project.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>

#include "codegen/embedded_cublaslt.h"
#include "codegen/lower_library_gemm.h"
#include "compiler/ir/error.h"

namespace tilegraph::codegen {

namespace fs = std::filesystem;

namespace {

// What differs between CUDA and HIP projects. The kernels differ only in
// their Dialect; the host code differs only in the runtime API's spelling
// (cudaMalloc / hipMalloc ...), so host templates are written once in CUDA
// spelling and respelled by api().
struct GpuTarget {
  const Dialect* dialect;
  bool hip;
  std::string arch;            // CMake's spelling: "90", "gfx90a"
  std::string source_ext;      // ".cu", ".hip"
  std::string cmake_language;  // "CUDA", "HIP"

  // A fixed piece of host code written against the CUDA runtime, in this
  // target's spelling. Only ever applied to the emitter's own text, never to
  // names from the model (an ONNX node may well be called "cudaFoo").
  std::string api(std::string text) const {
    if (!hip) return text;
    const std::string cuda_header = "<cuda_runtime.h>", hip_header = "<hip/hip_runtime.h>";
    for (size_t at = text.find(cuda_header); at != std::string::npos; at = text.find(cuda_header, at))
      text.replace(at, cuda_header.size(), hip_header);
    for (size_t at = text.find("cuda"); at != std::string::npos; at = text.find("cuda", at))
      text.replace(at, 4, "hip");
    return text;
  }
};

// Whether s is `prefix` followed by one or more letters and digits.
bool is_isa(const std::string& s, const std::string& prefix) {
  return s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(s.begin() + static_cast<std::ptrdiff_t>(prefix.size()), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

// "sm_90" -> CUDA arch 90; "gfx90a" -> HIP.
GpuTarget target_of(const std::string& gpu_arch) {
  if (is_isa(gpu_arch, "sm_")) return {&cuda_dialect(), false, gpu_arch.substr(3), ".cu", "CUDA"};
  if (is_isa(gpu_arch, "gfx")) return {&hip_dialect(), true, gpu_arch, ".hip", "HIP"};
  throw UserError(str_cat("GPU arch '", gpu_arch, "' is neither CUDA (sm_NN) nor HIP (gfxNNN)"));
}

std::vector<const Buffer*> global_buffers(const Kernel& k) {
  std::vector<const Buffer*> params;
  for (const Buffer& b : k.buffers)
    if (b.scope == MemoryScope::kGlobal) params.push_back(&b);
  return params;
}

// ---------------------------------------------------------------- kernels

// The host launch function's declaration: the kernel's parameters plus the stream.
std::string launch_signature(const Kernel& k, const GpuTarget& t) {
  std::ostringstream out;
  out << t.api("cudaError_t ") << "launch_" << k.name << "(";
  for (const Buffer* b : global_buffers(k))
    out << (b->written ? "" : "const ") << storage_c_type(b->dtype) << "* " << b->name << ", ";
  out << t.api("cudaStream_t tg_stream)");
  return out.str();
}

std::string launch_function(const Kernel& k, const GpuTarget& t) {
  std::ostringstream out;
  out << launch_signature(k, t) << " {\n";
  // Above 48 KiB of dynamic shared memory a kernel must opt in; the
  // attribute sticks to the function, so once per process (which drives one device).
  if (k.shared_bytes > 48 * 1024)
    out << t.api("  static const cudaError_t tg_opt_in = cudaFuncSetAttribute(\n"
                 "      reinterpret_cast<const void*>(&")
        << k.name << t.api("), cudaFuncAttributeMaxDynamicSharedMemorySize, ") << k.shared_bytes << ");\n"
        << t.api("  if (tg_opt_in != cudaSuccess) return tg_opt_in;\n");
  out << "  " << k.name << "<<<" << k.grid << ", " << k.threads << ", " << k.shared_bytes << ", tg_stream>>>(";
  const std::vector<const Buffer*> params = global_buffers(k);
  for (size_t i = 0; i < params.size(); ++i) out << (i ? ", " : "") << params[i]->name;
  out << ");\n" << t.api("  return cudaGetLastError();\n") << "}\n";
  return out.str();
}

// Kernels go to several source files so a big model builds in parallel, as
// in the CPU project.
constexpr size_t kKernelsPerSourceFile = 64;

// Does the kernel check a runtime index (CheckIndex, compiler/ir/expr.h)?
bool checks_indices(const Kernel& k) {
  bool found = false;
  auto look = [&](const Expr& e) {
    if (e) visit(e, [&](const Expr& n) { found |= n->kind == ExprKind::kCheckIndex; });
  };
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    for (const Expr& e : {s->extent, s->index, s->value, s->cond}) look(e);
    for (const CallArg& a : s->args) look(a.value);
    for (const Stmt& c : s->body) walk(c);
  };
  if (k.body) walk(k.body);
  return found;
}

// The kernel source files (by index) whose kernels check runtime indices:
// each keeps its own device flag (c_printer.cpp), which that file's
// tg_take_index_error_NNN reads back and clears once per run.
std::vector<size_t> files_checking_indices(const std::vector<Kernel>& kernels) {
  std::vector<size_t> files;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const size_t file = k / kKernelsPerSourceFile;
    if (checks_indices(kernels[k]) && (files.empty() || files.back() != file)) files.push_back(file);
  }
  return files;
}

std::string take_index_error_signature(size_t file, const GpuTarget& t) {
  char name[64];
  std::snprintf(name, sizeof name, "tg_take_index_error_%03zu(long long* site, long long* index)", file);
  return t.api("cudaError_t ") + name;
}

std::string kernels_header(const std::vector<Kernel>& kernels, const GpuTarget& t) {
  std::ostringstream out;
  out << "// Generated by tilegraph. Do not edit.\n#pragma once\n"
      << t.api("#include <cuda_runtime.h>\n") << kernel_prelude(*t.dialect) << "\nnamespace tg_kernels {\n";
  for (const Kernel& k : kernels)
    if (!is_library_gemm(k)) out << launch_signature(k, t) << ";\n";
  for (size_t file : files_checking_indices(kernels)) out << take_index_error_signature(file, t) << ";\n";
  out << "}  // namespace tg_kernels\n";
  return out.str();
}

std::vector<std::string> kernel_sources(const std::vector<Kernel>& kernels, const GpuTarget& t) {
  std::vector<std::string> files;
  for (size_t first = 0; first < kernels.size(); first += kKernelsPerSourceFile) {
    std::ostringstream out;
    out << "// Generated by tilegraph. Do not edit.\n#include \"kernels.h\"\n\nnamespace tg_kernels {\n\n";
    for (size_t k = first; k < std::min(kernels.size(), first + kKernelsPerSourceFile); ++k)
      if (!is_library_gemm(kernels[k]))  // a cuBLASLt call from model.cu instead
        out << print_kernel(kernels[k], *t.dialect) << "\n" << launch_function(kernels[k], t) << "\n";
    const std::vector<size_t> checking = files_checking_indices(kernels);
    const char* symbol = t.hip ? "HIP_SYMBOL(tg_index_error)" : "tg_index_error";
    if (std::find(checking.begin(), checking.end(), files.size()) != checking.end())
      out << take_index_error_signature(files.size(), t) << " {\n"
          << t.api(str_cat("  unsigned long long v[2] = {0, 0};\n"
                           "  cudaError_t e = cudaMemcpyFromSymbol(v, ", symbol, ", sizeof v);\n"
                           "  if (e != cudaSuccess || v[0] == 0) return e;\n"
                           "  *site = (long long)v[0] - 1;\n"
                           "  *index = (long long)v[1];\n"
                           "  const unsigned long long none[2] = {0, 0};\n"
                           "  return cudaMemcpyToSymbol(", symbol, ", none, sizeof none);\n}\n\n"));
    out << "}  // namespace tg_kernels\n";
    files.push_back(out.str());
  }
  return files;
}

std::string kernel_file_name(size_t i, const GpuTarget& t) {
  char name[32];
  std::snprintf(name, sizeof name, "kernels_%03zu", i);
  return name + t.source_ext;
}

// ---------------------------------------------------------------- model

// Device memory as the kernels see it: constants in the uploaded weights
// (W), intermediates in the arena (A), graph inputs and outputs in their own
// device buffers (d_in, d_out). Inputs are looked up before outputs, as in
// the CPU project. materialize_outputs normally gives every output its own
// op; an output that is still an input or a constant is copied back to the
// host from where it lives (the same expression).
// Which of those the launch sequence uses: run() declares only those (nvcc
// warns about an unused local even after a (void) cast).
struct UsedMemory {
  bool weights = false, arena = false, inputs = false, outputs = false;
};

// The model function's names for the memory its pointer expressions use.
std::string memory_locals(const UsedMemory& used) {
  std::string out;
  if (used.weights) out += "  const unsigned char* W = m->weights;\n";
  if (used.arena) out += "  unsigned char* A = m->arena;\n";
  if (used.inputs) out += "  void* const* d_in = m->inputs;\n";
  if (used.outputs) out += "  void* const* d_out = m->outputs;\n";
  return out;
}

std::string pointer_expr(const Graph& g, const MemoryPlan& plan, TensorId id, const std::vector<int>& input_index,
                         const std::vector<int>& output_index, UsedMemory& used) {
  const Tensor& t = g.tensor(id);
  const std::string storage = storage_c_type(t.dtype);
  if (t.kind == TensorKind::kConstant) {
    TG_CHECK(plan.weights_offsets.count(id), "constant '", t.name, "' has no offset in weights.bin");
    used.weights = true;
    return str_cat("(const ", storage, "*)(W + ", plan.weights_offsets.at(id), ")");
  }
  if (input_index[id] >= 0) {
    used.inputs = true;
    return str_cat("(const ", storage, "*)(d_in[", input_index[id], "])");
  }
  if (output_index[id] >= 0) {
    used.outputs = true;
    return str_cat("(", storage, "*)(d_out[", output_index[id], "])");
  }
  TG_CHECK(plan.arena_offsets.count(id), "intermediate '", t.name, "' has no offset in the arena");
  used.arena = true;
  return str_cat("(", storage, "*)(A + ", plan.arena_offsets.at(id), ")");
}

std::string byte_sizes(const Graph& g, const std::vector<TensorId>& ids, const char* name) {
  std::ostringstream out;
  out << "const int64_t " << name << "[] = {";
  for (size_t i = 0; i < ids.size(); ++i) out << (i ? ", " : "") << g.tensor(ids[i]).bytes();
  if (ids.empty()) out << "0";
  out << "};\n";
  return out.str();
}

// The parts of model.cu that do not depend on the model, in CUDA spelling.
// Asynchronous faults (an illegal address) surface at a later call; with
// profiling on every kernel is waited for, so its check names the culprit.
constexpr const char* kModelRuntime = R"MODEL(struct tg_model {
  unsigned char* weights;  // W: weights.bin, uploaded once
  unsigned char* arena;    // A: the intermediates of the memory plan
  void* inputs[kInputSlots];
  void* outputs[kOutputSlots];
  cudaStream_t stream;
  cudaEvent_t start, stop;
  int profiling;
  double kernel_ms[kKernelSlots];
  cudaGraphExec_t graph;  // the kernel launches, captured on the first run
  int graph_state;        // 0: not captured yet, 1: captured, -1: launches go one by one
LIBRARY_FIELDS
};

namespace {

// Records e's message after `what` ("what: message") when e is an error.
bool failed(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return false;
  g_last_error = what + ": " + cudaGetErrorString(e);
  return true;
}

std::string kernel_what(int k) {
  return std::string("kernel ") + kKernelNames[k] + " (ONNX nodes " + kKernelNodes[k] + ")";
}

bool device_alloc(void** p, int64_t bytes, const std::string& what) {
  *p = nullptr;
  if (bytes <= 0) return false;
  return failed(cudaMalloc(p, (size_t)bytes), "allocating " + std::to_string(bytes) + " bytes of device memory for " + what);
}

// Before kernel k: with profiling on, marks its start. (A model without
// kernels or outputs leaves some helpers unused.)
[[maybe_unused]] bool begin_kernel(tg_model* m, int k) {
  return m->profiling && failed(cudaEventRecord(m->start, m->stream), kernel_what(k));
}

// After kernel k's launch: checks it; with profiling on, waits for it and
// adds its time.
[[maybe_unused]] bool end_kernel(tg_model* m, int k, cudaError_t launched) {
  if (failed(launched, kernel_what(k))) return true;
  if (!m->profiling) return false;
  float ms = 0;
  if (failed(cudaEventRecord(m->stop, m->stream), kernel_what(k)) ||
      failed(cudaEventSynchronize(m->stop), kernel_what(k)) ||
      failed(cudaEventElapsedTime(&ms, m->start, m->stop), kernel_what(k)))
    return true;
  m->kernel_ms[k] += ms;
  return false;
}

[[maybe_unused]] bool copy_output(tg_model* m, int i, const void* device, void* host) {
  if (kOutputBytes[i] <= 0) return false;
  return failed(cudaMemcpyAsync(host, device, (size_t)kOutputBytes[i], cudaMemcpyDeviceToHost, m->stream),
                std::string("copying output '") + output_info[i].name + "' to the host");
}

bool finish_run(tg_model* m) {
  const cudaError_t e = cudaStreamSynchronize(m->stream);
  if (e == cudaSuccess || kNumKernels == 0) return failed(e, "running the model");
  // Without profiling the kernels run ahead of the host, so the fault may
  // lie in any kernel launched; name the last and say how to pin it down.
  return failed(e, "running the model (after " + kernel_what(kNumKernels - 1) +
                       ", the last launched; an earlier kernel may be at fault: with profiling on "
                       "each kernel is waited for and named)");
}

}  // namespace

)MODEL";

// After the generated enqueue_kernels(m): how the kernels get launched.
// A CUDA graph replays the whole sequence with one launch, captured on the
// first run (the buffers never move: inputs are copied into fixed device
// buffers first). Profiling, which times each kernel, and
// TILEGRAPH_GPU_GRAPH=0 launch them one by one; so does a stream that cannot
// be captured. GRAPH_INSTANTIATE is spelled per target (HIP's signature differs).
constexpr const char* kRunKernels = R"MODEL(namespace {

bool launch_one_by_one(tg_model* m) { return enqueue_kernels(m) != 0; }

bool run_kernels(tg_model* m) {
  if (m->profiling || m->graph_state < 0) return launch_one_by_one(m);
  if (m->graph_state == 0) {
    const char* env = std::getenv("TILEGRAPH_GPU_GRAPH");
    cudaGraph_t graph = nullptr;
    if ((env && std::string(env) == "0") ||
        cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      (void)cudaGetLastError();
      m->graph_state = -1;
      return launch_one_by_one(m);
    }
    const int launch_failed = enqueue_kernels(m);
    const cudaError_t ended = cudaStreamEndCapture(m->stream, &graph);
    if (launch_failed) {
      if (graph) cudaGraphDestroy(graph);
      return true;
    }
    const cudaError_t made = ended == cudaSuccess ? GRAPH_INSTANTIATE : ended;
    if (graph) cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
      (void)cudaGetLastError();
      m->graph_state = -1;
      return launch_one_by_one(m);
    }
    m->graph_state = 1;
  }
  return failed(cudaGraphLaunch(m->graph, m->stream), "launching the graph of the model's kernels");
}

}  // namespace

extern "C" {

)MODEL";

constexpr const char* kModelRuntimeTail = R"MODEL(
// The kernels run on the GPU; host threads do not matter.
void tg_set_num_threads(int n) { (void)n; }

void tg_model_destroy(tg_model* m) {
  if (!m) return;
  if (m->stream) cudaStreamSynchronize(m->stream);
  if (m->graph) cudaGraphExecDestroy(m->graph);
LIBRARY_DESTROY
  cudaFree(m->weights);
  cudaFree(m->arena);
  for (int i = 0; i < kNumInputs; ++i) cudaFree(m->inputs[i]);
  for (int i = 0; i < kNumOutputs; ++i) cudaFree(m->outputs[i]);
  if (m->start) cudaEventDestroy(m->start);
  if (m->stop) cudaEventDestroy(m->stop);
  if (m->stream) cudaStreamDestroy(m->stream);
  delete m;
}

int tg_model_create(const char* weights_path, tg_model** out) {
  if (!out) { g_last_error = "tg_model_create: null output pointer"; return 1; }
  *out = nullptr;
  if (!weights_path) { g_last_error = "tg_model_create: null weights path"; return 1; }
  tg_model* m = new (std::nothrow) tg_model();
  if (!m) { g_last_error = "out of memory allocating the model"; return 1; }
  tg_weights host = {};
  char err[1024];
  if (tg_map_weights(weights_path, &host, err, sizeof err) != 0) {
    g_last_error = err;
    delete m;
    return 1;
  }
  if (tg_check_weights(&host, weights_path, kProjectHash, kWeightsBytes, err, sizeof err) != 0) {
    g_last_error = err;
    tg_unmap_weights(&host);
    delete m;
    return 1;
  }
  bool bad = failed(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking), "creating a stream") ||
             failed(cudaEventCreate(&m->start), "creating an event") ||
             failed(cudaEventCreate(&m->stop), "creating an event") ||
             device_alloc((void**)&m->weights, kWeightsBytes, "the weights") ||
             (kWeightsBytes > 0 &&
              failed(cudaMemcpy(m->weights, host.data + TG_WEIGHTS_HEADER_BYTES, (size_t)kWeightsBytes, cudaMemcpyHostToDevice),
                     "uploading the weights")) ||
             device_alloc((void**)&m->arena, kArenaBytes, "the activation arena");
  for (int i = 0; i < kNumInputs && !bad; ++i)
    bad = device_alloc(&m->inputs[i], kInputBytes[i], std::string("input '") + input_info[i].name + "'");
  for (int i = 0; i < kNumOutputs && !bad; ++i)
    bad = device_alloc(&m->outputs[i], kOutputBytes[i], std::string("output '") + output_info[i].name + "'");
LIBRARY_CREATE
  // The device holds its own copy now.
  tg_unmap_weights(&host);
  if (bad) {
    tg_model_destroy(m);
    return 1;
  }
  *out = m;
  return 0;
}

void tg_set_profiling(tg_model* m, int enabled) { if (m) m->profiling = enabled; }
void tg_reset_profile(tg_model* m) {
  if (m) for (int k = 0; k < kNumKernels; ++k) m->kernel_ms[k] = 0;
}
double tg_kernel_time_ms(const tg_model* m, int k) {
  return m && k >= 0 && k < kNumKernels ? m->kernel_ms[k] : 0.0;
}

int tg_model_run(tg_model* m, const void* const* inputs, void* const* outputs) {
  if (!m) { g_last_error = "tg_model_run: null model"; return 1; }
  for (int i = 0; i < kNumInputs; ++i)
    if (!inputs || !inputs[i]) { g_last_error = "tg_model_run: input " + std::to_string(i) + " is null"; return 1; }
  for (int i = 0; i < kNumOutputs; ++i)
    if (!outputs || !outputs[i]) { g_last_error = "tg_model_run: output " + std::to_string(i) + " is null"; return 1; }
  for (int i = 0; i < kNumInputs; ++i)
    if (kInputBytes[i] > 0 &&
        failed(cudaMemcpyAsync(m->inputs[i], inputs[i], (size_t)kInputBytes[i], cudaMemcpyHostToDevice, m->stream),
               std::string("copying input '") + input_info[i].name + "' to the device"))
      return 1;
  if (run_kernels(m) || copy_outputs(m, outputs)) return 1;
  if (finish_run(m)) return 1;
INDEX_CHECKS
  return 0;
}

}  // extern "C"
)MODEL";

// Library GEMMs (tune --skip-dot) in model.cu: the cuBLASLt state lives in
// the model and is made with it (codegen/cublaslt/tg_cublaslt.h); a GEMM's
// launch reports cuBLASLt's status with the kernel's name and ONNX nodes.
constexpr const char* kLibraryRuntime = R"MODEL(namespace {

[[maybe_unused]] bool end_gemm(tg_model* m, int k, cublasStatus_t status) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    g_last_error = kernel_what(k) + ": cuBLASLt matmul: " + cublasLtGetStatusString(status);
    return true;
  }
  return end_kernel(m, k, cudaSuccess);
}

bool create_gemms(tg_model* m) {
  int failed_shape = -1;
  const std::string error = tg_blas_create(&m->blas, kGemmShapes, kNumGemms, &failed_shape);
  if (error.empty()) return false;
  g_last_error = failed_shape >= 0 ? kernel_what(kGemmKernels[failed_shape]) + ": " + error : error;
  return true;
}

}  // namespace

)MODEL";

// text with the line `name` replaced by `lines` (empty: the line goes).
std::string fill_placeholder(std::string text, const std::string& name, const std::string& lines) {
  const size_t at = text.find(name + "\n");
  TG_CHECK(at != std::string::npos, "model template has no ", name);
  return text.replace(at, name.size() + 1, lines);
}

// The byte offset of tensor id in its device allocation (each from
// cudaMalloc, which aligns to 256 bytes).
int64_t allocation_offset(const Graph& g, const MemoryPlan& plan, TensorId id, const std::vector<int>& input_index,
                          const std::vector<int>& output_index) {
  if (g.tensor(id).kind == TensorKind::kConstant) return plan.weights_offsets.at(id);
  if (input_index[id] >= 0 || output_index[id] >= 0) return 0;
  return plan.arena_offsets.at(id);
}

// The largest power of two up to 256 dividing every offset (bytes).
uint32_t alignment_of(std::initializer_list<int64_t> byte_offsets) {
  uint32_t a = 256;
  for (int64_t o : byte_offsets)
    while (a > 1 && o % a != 0) a /= 2;
  return a;
}

// One row of kGemmShapes (tg_gemm_shape) for library GEMM kernel k.
std::string gemm_shape_row(const Graph& g, const MemoryPlan& plan, const Kernel& k, size_t index,
                           const std::vector<int>& input_index, const std::vector<int>& output_index) {
  const scheduler::LibraryGemm& gemm = *k.schedule.library_gemm;
  const int64_t size = dtype_size(gemm.dtype);
  auto matrix = [&](const scheduler::GemmMatrix& x, const CallArg& arg) {
    const int64_t start = allocation_offset(g, plan, k.buffers[arg.buffer].tensor, input_index, output_index);
    const uint32_t align = alignment_of({start + x.offset * size, gemm.batch > 1 ? x.batch_stride * size : 0});
    return str_cat("{", x.row_major ? 1 : 0, ", ", x.ld, ", ", x.batch_stride, ", ", align, "}");
  };
  const std::vector<CallArg>& args = k.body->args;
  return str_cat("    {", gemm.dtype == DType::kF16 ? 1 : 0, ", ", gemm.batch, ", ", gemm.m, ", ", gemm.n, ", ",
                 gemm.k, ", ", matrix(gemm.a, args[0]), ", ", matrix(gemm.b, args[1]), ", ",
                 matrix(gemm.c, args[2]), ", ", (gemm.bias_op >= 0 ? 1 : 0) | (gemm.relu_op >= 0 ? 2 : 0),
                 "},  // kernel ", index, ": ", k.name, "\n");
}

std::string model_source(const Graph& g, const std::vector<Kernel>& kernels, const MemoryPlan& plan,
                         const ProjectInfo& info, const GpuTarget& t) {
  std::vector<int> input_index(g.tensors.size(), -1), output_index(g.tensors.size(), -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) input_index[g.inputs[i]] = static_cast<int>(i);
  for (size_t i = 0; i < g.outputs.size(); ++i) output_index[g.outputs[i]] = static_cast<int>(i);
  std::ostringstream out;
  out << "// Generated by tilegraph for graph '" << comment_text(g.name) << "'. Do not edit.\n"
      << "#include <cstdint>\n#include <cstdlib>\n#include <new>\n#include <string>\n\n"
      << t.api("#include <cuda_runtime.h>\n\n")
      << "#include \"kernels.h\"\n#include \"tilegraph_model.h\"\n#include \"weights_file.h\"\n";
  const bool library = std::any_of(kernels.begin(), kernels.end(), is_library_gemm);
  if (library) out << "#include \"tg_cublaslt.h\"\n";
  out << "\nusing namespace tg_kernels;\n\nnamespace {\n\n";
  out << tensor_info_table(g, g.inputs, "input") << tensor_info_table(g, g.outputs, "output");
  out << byte_sizes(g, g.inputs, "kInputBytes") << byte_sizes(g, g.outputs, "kOutputBytes");
  out << "const int kNumInputs = " << g.inputs.size() << ";\n"
      << "const int kNumOutputs = " << g.outputs.size() << ";\n"
      << "const int kNumKernels = " << kernels.size() << ";\n"
      // Array sizes: C++ has no zero-length arrays.
      << "const int kInputSlots = " << std::max<size_t>(g.inputs.size(), 1) << ";\n"
      << "const int kOutputSlots = " << std::max<size_t>(g.outputs.size(), 1) << ";\n"
      << "const int kKernelSlots = " << std::max<size_t>(kernels.size(), 1) << ";\n"
      << "const int64_t kArenaBytes = " << plan.arena_bytes << ";\n"
      << "const int64_t kWeightsBytes = " << plan.weights_bytes << ";\n"
      << project_hash_constant(info);
  out << kernel_name_tables(kernels);
  if (library) {
    // The library GEMMs in kernel order: their shapes, their kernel indices.
    std::string shapes, indices;
    int gemms = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (!is_library_gemm(kernels[k])) continue;
      shapes += gemm_shape_row(g, plan, kernels[k], k, input_index, output_index);
      indices += str_cat(gemms++ ? ", " : "", k);
    }
    out << "const tg_gemm_shape kGemmShapes[] = {\n" << shapes << "};\n"
        << "const int kGemmKernels[] = {" << indices << "};\n"
        << "const int kNumGemms = " << gemms << ";\n";
  }
  out << index_check_table(g);
  out << "\nthread_local std::string g_last_error;\n\n}  // namespace\n\n";
  out << fill_placeholder(t.api(kModelRuntime), "LIBRARY_FIELDS",
                          library ? "  tg_blas blas;           // cuBLASLt: handle, workspace, a plan per GEMM\n" : "");
  if (library) out << kLibraryRuntime;

  // The launch sequence, in the schedule's order on one stream; then the
  // copies back to the host (outside the graph: the host buffers vary).
  UsedMemory launch_used, copy_used;
  std::ostringstream launches, copies;
  int gemm = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (is_library_gemm(kernels[k])) {
      // tg_gemm(A, B, C, ...): the pointers of the Call's A, B, C and bias arguments.
      launches << "  if (begin_kernel(m, " << k << ") ||\n      end_gemm(m, " << k << ", tg_blas_gemm(&m->blas, "
               << gemm++;
      // tg_gemm's bias pointer is its 17th argument (C's when there is no bias).
      const bool bias = kernels[k].schedule.library_gemm->bias_op >= 0;
      for (size_t a : {size_t{0}, size_t{1}, size_t{2}, size_t{16}}) {
        if (a == 16 && !bias) {
          launches << ", nullptr";
          continue;
        }
        const CallArg& arg = kernels[k].body->args[a];
        int64_t offset = 0;
        TG_CHECK(is_const_int(arg.value, &offset), "library GEMM ", kernels[k].name, " has a variable offset");
        launches << ", " << pointer_expr(g, plan, kernels[k].buffers[arg.buffer].tensor, input_index, output_index,
                                         launch_used)
                 << (offset ? str_cat(" + ", offset) : "");
      }
      launches << ", m->stream)))\n    return 1;\n";
      continue;
    }
    launches << "  if (begin_kernel(m, " << k << ") ||\n      end_kernel(m, " << k << ", launch_" << kernels[k].name
             << "(";
    for (const Buffer* b : global_buffers(kernels[k]))
      launches << pointer_expr(g, plan, b->tensor, input_index, output_index, launch_used) << ", ";
    launches << "m->stream)))\n    return 1;\n";
  }
  for (size_t i = 0; i < g.outputs.size(); ++i)
    copies << "  if (copy_output(m, " << i << ", "
           << pointer_expr(g, plan, g.outputs[i], input_index, output_index, copy_used) << ", outputs[" << i
           << "])) return 1;\n";
  out << "namespace {\n\nint enqueue_kernels(tg_model* m) {\n" << (kernels.empty() ? "  (void)m;\n" : "")
      << memory_locals(launch_used) << launches.str()
      << "  return 0;\n}\n\nint copy_outputs(tg_model* m, void* const* outputs) {\n" << memory_locals(copy_used)
      << (g.outputs.empty() ? "  (void)outputs;\n" : "") << copies.str() << "  return 0;\n}\n\n}  // namespace\n\n";
  std::string run_kernels = kRunKernels;
  const std::string instantiate = t.hip ? "cudaGraphInstantiate(&m->graph, graph, nullptr, nullptr, 0)"
                                        : "cudaGraphInstantiateWithFlags(&m->graph, graph, 0)";
  run_kernels.replace(run_kernels.find("GRAPH_INSTANTIATE"), std::string("GRAPH_INSTANTIATE").size(), instantiate);
  std::string tail = fill_placeholder(t.api(kModelRuntimeTail), "LIBRARY_DESTROY",
                                     library ? "  tg_blas_destroy(&m->blas);\n" : "");
  tail = fill_placeholder(tail, "LIBRARY_CREATE", library ? "  if (!bad) bad = create_gemms(m);\n" : "");
  // After the run: each kernel file's index flag, read back once (expr.h's CheckIndex).
  std::ostringstream index_checks;
  for (size_t file : files_checking_indices(kernels)) {
    char call[64];
    std::snprintf(call, sizeof call, "tg_take_index_error_%03zu(&site, &index)", file);
    index_checks << "  {\n    long long site = -1, index = 0;\n"
                 << "    if (failed(" << t.api(call) << ", \"reading the index checks\")) return 1;\n"
                 << "    if (site >= 0) { g_last_error = index_error_message(site, index); return 1; }\n  }\n";
  }
  tail = fill_placeholder(tail, "INDEX_CHECKS", index_checks.str());
  out << t.api(run_kernels) << model_info_functions() << tail;
  return out.str();
}

// ---------------------------------------------------------------- CMake

std::string cmake_source(const std::string& arch_name, const std::string& gpu_arch, const GpuTarget& t,
                         const std::vector<std::string>& model_sources,
                         const std::vector<std::string>& main_test_sources, bool library) {
  const std::string& lang = t.cmake_language;
  std::ostringstream out;
  out << "# Generated by tilegraph (arch " << arch_name << ", " << gpu_arch
      << "). Builds libmodel.so and main_test.\n"
      << "cmake_minimum_required(VERSION " << (t.hip ? "3.21" : "3.18") << ")\n"
      // Before project(): it would otherwise default to the compiler's oldest arch.
      << "if(NOT DEFINED CMAKE_" << lang << "_ARCHITECTURES)\n"
      << "  set(CMAKE_" << lang << "_ARCHITECTURES " << t.arch << ")\n"
      << "endif()\n"
      << "project(tilegraph_model CXX " << lang << ")\n"
      << "set(CMAKE_CXX_STANDARD 17)\nset(CMAKE_CXX_STANDARD_REQUIRED ON)\n"
      << "set(CMAKE_" << lang << "_STANDARD 17)\nset(CMAKE_" << lang << "_STANDARD_REQUIRED ON)\n"
      << "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n";
  out << (t.hip ? "find_package(hip REQUIRED)\n" : "find_package(CUDAToolkit REQUIRED)\n");
  out << "add_library(model SHARED";
  for (const std::string& f : model_sources) out << " " << f;
  out << ")\n"
      << "# No fast math: results must keep IEEE semantics (NaN, inf, denormals) to match onnxruntime.\n";
  if (t.hip) {
    out << "target_link_libraries(model PRIVATE hip::host)\n";
  } else {
    out << "# -lineinfo: profilers attribute time to kernel source lines.\n"
        << "target_compile_options(model PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)\n"
        << "set_target_properties(model PROPERTIES CUDA_RUNTIME_LIBRARY Shared)\n"
        << "target_link_libraries(model PRIVATE CUDA::cudart" << (library ? " CUDA::cublasLt" : "") << ")\n";
  }
  out << main_test_cmake(main_test_sources);
  return out.str();
}

}  // namespace

nlohmann::json emit_cuda_project(const Graph& g, const std::vector<Kernel>& kernels, const MemoryPlan& plan,
                                 const ProjectInfo& info, const std::string& gpu_arch,
                                 const std::string& out_dir) {
  const GpuTarget t = target_of(gpu_arch);
  const bool library = std::any_of(kernels.begin(), kernels.end(), is_library_gemm);
  if (library && t.hip)
    throw UserError(str_cat("library GEMMs (--skip-dot) call cuBLASLt: CUDA archs only, not ", gpu_arch));
  for (const Kernel& k : kernels) {
    if (is_library_gemm(k)) {
      TG_CHECK(k.body && k.body->kind == StmtKind::kCall && k.body->args.size() >= 3, "library GEMM ", k.name,
               " is not one call");
      continue;
    }
    TG_CHECK(k.grid > 0, "kernel ", k.name, " is not a block kernel");
    TG_CHECK(k.grid <= INT_MAX && k.threads > 0, "kernel ", k.name, " has launch shape ", k.grid, "x", k.threads);
  }
  const std::vector<std::string> main_test_sources = write_runtime_files(out_dir);
  write_file(fs::path(out_dir) / ("model" + t.source_ext), model_source(g, kernels, plan, info, t));
  write_file(fs::path(out_dir) / "kernels.h", kernels_header(kernels, t));
  std::vector<std::string> model_sources{"model" + t.source_ext, "weights_file.cpp"};
  const std::vector<std::string> kernel_files = kernel_sources(kernels, t);
  for (size_t i = 0; i < kernel_files.size(); ++i) {
    model_sources.push_back(kernel_file_name(i, t));
    write_file(fs::path(out_dir) / model_sources.back(), kernel_files[i]);
  }
  // A previous tune of a bigger model may have left more kernel files.
  for (size_t i = kernel_files.size(); fs::exists(fs::path(out_dir) / kernel_file_name(i, t)); ++i)
    fs::remove(fs::path(out_dir) / kernel_file_name(i, t));
  if (library)
    for (const EmbeddedFile& f : embedded_cublaslt_files())
      write_file(fs::path(out_dir) / std::string(f.name), std::string(f.contents));
  write_file(fs::path(out_dir) / "CMakeLists.txt",
             cmake_source(info.arch, gpu_arch, t, model_sources, main_test_sources, library));
  write_weights(g, plan, info, out_dir);
  nlohmann::json manifest = manifest_json(g, kernels, plan, info);
  manifest["target"] = t.hip ? "hip" : "cuda";
  manifest["gpu_arch"] = gpu_arch;
  write_file(fs::path(out_dir) / "manifest.json", manifest.dump(2) + "\n");
  return manifest;
}

std::string cuda_kernel_with_launcher(const Kernel& k) {
  const GpuTarget t = target_of("sm_80");  // the spelling only: the arch goes to nvcc
  return print_kernel(k, *t.dialect) + "\n" + launch_function(k, t);
}

}  // namespace tilegraph::codegen
