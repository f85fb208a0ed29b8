// The host side of a generated GPU model (model.cu / model.hip): the C API of
// tilegraph_model.h over the device shim (device_shim_cuda.h or
// device_shim_hip.h, included by kernels.h), the same source for CUDA and HIP.
//
// model.cu includes this file once, after its generated tables and before its
// generated launch sequence. In its anonymous namespace it defines first:
//   input_info[], output_info[]      tg_tensor_info of the graph inputs/outputs
//   kInputBytes[], kOutputBytes[]    their sizes in bytes
//   kNumInputs, kNumOutputs, kNumKernels, and kInputSlots, kOutputSlots,
//   kKernelSlots (the same, at least 1: C++ has no zero-length arrays)
//   kArenaBytes, kWeightsBytes, kProjectHash, kKernelNames[], kKernelNodes[]
//   g_last_error                     thread_local std::string
// with library GEMMs (tune --skip-dot) also TG_LIBRARY_GEMMS (defined as 1),
// kGemmShapes[], kGemmKernels[] and kNumGemms (tg_cublaslt.h); and after it:
//   int enqueue_kernels(tg_model*)   the launch sequence on m->stream
//   int copy_outputs(tg_model*, void* const* outputs)  outputs to the host
//   int take_index_errors()          reads back the kernels' index checks
// each returning non-zero with g_last_error set on failure.
//
// Device memory as the kernels see it: constants in the uploaded weights (W),
// intermediates in the arena (A), graph inputs and outputs in their own device
// buffers; every device call is checked and its failure reported with the
// kernel's name and ONNX nodes.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

#include "tg_model_info.h"
#include "tilegraph_model.h"
#include "weights_file.h"

struct tg_model {
  unsigned char* weights;  // W: weights.bin, uploaded once
  unsigned char* arena;    // A: the intermediates of the memory plan
  void* inputs[kInputSlots];
  void* outputs[kOutputSlots];
  tg_device_stream stream;
  tg_device_event start, stop;
  int profiling;
  double kernel_ms[kKernelSlots];
  tg_device_graph_exec graph;  // the kernel launches, captured on the first run
  int graph_state;             // 0: not captured yet, 1: captured, -1: launches go one by one
#if TG_LIBRARY_GEMMS
  tg_blas blas;  // cuBLASLt: handle, workspace, a plan per GEMM
#endif
};

namespace {

// The generated launch sequence (see above).
int enqueue_kernels(tg_model* m);
int copy_outputs(tg_model* m, void* const* outputs);
int take_index_errors();

// Records e's message after `what` ("what: message") when e is an error.
bool failed(tg_device_error e, const std::string& what) {
  if (e == tg_device_success) return false;
  g_last_error = what + ": " + tg_device_error_string(e);
  return true;
}

std::string kernel_what(int k) {
  return std::string("kernel ") + kKernelNames[k] + " (ONNX nodes " + kKernelNodes[k] + ")";
}

bool device_alloc(void** p, int64_t bytes, const std::string& what) {
  *p = nullptr;
  if (bytes <= 0) return false;
  return failed(tg_device_malloc(p, (size_t)bytes),
                "allocating " + std::to_string(bytes) + " bytes of device memory for " + what);
}

// Asynchronous faults (an illegal address) surface at a later call; with
// profiling on every kernel is waited for, so its check names the culprit.
// Before kernel k: with profiling on, marks its start. (A model without
// kernels or outputs leaves some helpers unused.)
[[maybe_unused]] bool begin_kernel(tg_model* m, int k) {
  return m->profiling && failed(tg_device_event_record(m->start, m->stream), kernel_what(k));
}

// After kernel k's launch: checks it; with profiling on, waits for it and
// adds its time.
[[maybe_unused]] bool end_kernel(tg_model* m, int k, tg_device_error launched) {
  if (failed(launched, kernel_what(k))) return true;
  if (!m->profiling) return false;
  float ms = 0;
  if (failed(tg_device_event_record(m->stop, m->stream), kernel_what(k)) ||
      failed(tg_device_event_synchronize(m->stop), kernel_what(k)) ||
      failed(tg_device_event_elapsed_ms(&ms, m->start, m->stop), kernel_what(k)))
    return true;
  m->kernel_ms[k] += ms;
  return false;
}

[[maybe_unused]] bool copy_output(tg_model* m, int i, const void* device, void* host) {
  if (kOutputBytes[i] <= 0) return false;
  return failed(tg_device_download_async(host, device, (size_t)kOutputBytes[i], m->stream),
                std::string("copying output '") + output_info[i].name + "' to the host");
}

bool finish_run(tg_model* m) {
  const tg_device_error e = tg_device_stream_synchronize(m->stream);
  if (e == tg_device_success || kNumKernels == 0) return failed(e, "running the model");
  // Without profiling the kernels run ahead of the host, so the fault may
  // lie in any kernel launched; name the last and say how to pin it down.
  return failed(e, "running the model (after " + kernel_what(kNumKernels - 1) +
                       ", the last launched; an earlier kernel may be at fault: with profiling on "
                       "each kernel is waited for and named)");
}

#if TG_LIBRARY_GEMMS
// A library GEMM's launch reports cuBLASLt's status with the kernel's name
// and ONNX nodes.
[[maybe_unused]] bool end_gemm(tg_model* m, int k, cublasStatus_t status) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    g_last_error = kernel_what(k) + ": cuBLASLt matmul: " + cublasLtGetStatusString(status);
    return true;
  }
  return end_kernel(m, k, tg_device_success);
}

bool create_gemms(tg_model* m) {
  int failed_shape = -1;
  const std::string error = tg_blas_create(&m->blas, kGemmShapes, kNumGemms, &failed_shape);
  if (error.empty()) return false;
  g_last_error = failed_shape >= 0 ? kernel_what(kGemmKernels[failed_shape]) + ": " + error : error;
  return true;
}
#endif

// How the kernels get launched. A device graph replays the whole sequence
// with one launch, captured on the first run (the buffers never move: inputs
// are copied into fixed device buffers first). Profiling, which times each
// kernel, and TILEGRAPH_GPU_GRAPH=0 launch them one by one; so does a stream
// that cannot be captured.
bool launch_one_by_one(tg_model* m) { return enqueue_kernels(m) != 0; }

bool run_kernels(tg_model* m) {
  if (m->profiling || m->graph_state < 0) return launch_one_by_one(m);
  if (m->graph_state == 0) {
    const char* env = std::getenv("TILEGRAPH_GPU_GRAPH");
    tg_device_graph graph = nullptr;
    if ((env && std::string(env) == "0") || tg_device_begin_capture(m->stream) != tg_device_success) {
      (void)tg_device_last_error();  // clears the refused capture's error: launching one by one is the answer
      m->graph_state = -1;
      return launch_one_by_one(m);
    }
    const int launch_failed = enqueue_kernels(m);
    const tg_device_error ended = tg_device_end_capture(m->stream, &graph);
    if (launch_failed) {
      if (graph) (void)tg_device_graph_destroy(graph);  // the launch error is the one to report
      return true;
    }
    const tg_device_error made = ended == tg_device_success ? tg_device_graph_instantiate(&m->graph, graph) : ended;
    const tg_device_error destroyed = graph ? tg_device_graph_destroy(graph) : tg_device_success;
    if (made != tg_device_success) {
      (void)tg_device_last_error();  // as above: the graph is optional
      m->graph_state = -1;
      return launch_one_by_one(m);
    }
    if (failed(destroyed, "releasing the captured graph")) return true;
    m->graph_state = 1;
  }
  return failed(tg_device_graph_launch(m->graph, m->stream), "launching the graph of the model's kernels");
}

// While releasing the model: a failure goes to tg_last_error and the release
// goes on (tg_model_destroy has no status to return).
void note_release(tg_device_error e, const char* what) { (void)failed(e, std::string("releasing ") + what); }

}  // namespace

extern "C" {

// The kernels run on the GPU; host threads do not matter.
void tg_set_num_threads(int n) { (void)n; }

void tg_model_destroy(tg_model* m) {
  if (!m) return;
  if (m->stream) note_release(tg_device_stream_synchronize(m->stream), "the stream's work");
  if (m->graph) note_release(tg_device_graph_exec_destroy(m->graph), "the graph");
#if TG_LIBRARY_GEMMS
  tg_blas_destroy(&m->blas);
#endif
  note_release(tg_device_free(m->weights), "the weights");
  note_release(tg_device_free(m->arena), "the activation arena");
  for (int i = 0; i < kNumInputs; ++i) note_release(tg_device_free(m->inputs[i]), "an input buffer");
  for (int i = 0; i < kNumOutputs; ++i) note_release(tg_device_free(m->outputs[i]), "an output buffer");
  if (m->start) note_release(tg_device_event_destroy(m->start), "an event");
  if (m->stop) note_release(tg_device_event_destroy(m->stop), "an event");
  if (m->stream) note_release(tg_device_stream_destroy(m->stream), "the stream");
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
  if (tg_open_weights(weights_path, kProjectHash, kWeightsBytes, &host, err, sizeof err) != 0) {
    g_last_error = err;
    delete m;
    return 1;
  }
  bool bad = failed(tg_device_stream_create(&m->stream), "creating a stream") ||
             failed(tg_device_event_create(&m->start), "creating an event") ||
             failed(tg_device_event_create(&m->stop), "creating an event") ||
             device_alloc((void**)&m->weights, kWeightsBytes, "the weights") ||
             (kWeightsBytes > 0 &&
              failed(tg_device_upload(m->weights, host.data + TG_WEIGHTS_HEADER_BYTES, (size_t)kWeightsBytes),
                     "uploading the weights")) ||
             device_alloc((void**)&m->arena, kArenaBytes, "the activation arena");
  for (int i = 0; i < kNumInputs && !bad; ++i)
    bad = device_alloc(&m->inputs[i], kInputBytes[i], std::string("input '") + input_info[i].name + "'");
  for (int i = 0; i < kNumOutputs && !bad; ++i)
    bad = device_alloc(&m->outputs[i], kOutputBytes[i], std::string("output '") + output_info[i].name + "'");
#if TG_LIBRARY_GEMMS
  if (!bad) bad = create_gemms(m);
#endif
  // The device holds its own copy now.
  tg_unmap_weights(&host);
  if (bad) {
    const std::string error = g_last_error;  // the cause, not a failure of the cleanup after it
    tg_model_destroy(m);
    g_last_error = error;
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
        failed(tg_device_upload_async(m->inputs[i], inputs[i], (size_t)kInputBytes[i], m->stream),
               std::string("copying input '") + input_info[i].name + "' to the device"))
      return 1;
  if (run_kernels(m) || copy_outputs(m, outputs)) return 1;
  if (finish_run(m)) return 1;
  return take_index_errors();
}

}  // extern "C"
