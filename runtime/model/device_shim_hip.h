// The device API of generated GPU projects, on HIP (ROCm). gpu_model_runtime.h and
// the generated kernel launchers call only these names; device_shim_cuda.h
// maps the same names onto CUDA, so one runtime source serves both targets.
// Every call returns the runtime's status: callers check it.
#pragma once
#include <cstddef>

#include <hip/hip_runtime.h>

typedef hipError_t tg_device_error;
typedef hipStream_t tg_device_stream;
typedef hipEvent_t tg_device_event;
typedef hipGraph_t tg_device_graph;
typedef hipGraphExec_t tg_device_graph_exec;
static constexpr tg_device_error tg_device_success = hipSuccess;

inline const char* tg_device_error_string(tg_device_error e) { return hipGetErrorString(e); }
// Returns and clears the last launch error of this host thread.
inline tg_device_error tg_device_last_error() { return hipGetLastError(); }

inline tg_device_error tg_device_malloc(void** p, size_t bytes) { return hipMalloc(p, bytes); }
inline tg_device_error tg_device_free(void* p) { return hipFree(p); }
inline tg_device_error tg_device_zero(void* p, size_t bytes) { return hipMemset(p, 0, bytes); }
inline tg_device_error tg_device_upload(void* device, const void* host, size_t bytes) {
  return hipMemcpy(device, host, bytes, hipMemcpyHostToDevice);
}
inline tg_device_error tg_device_upload_async(void* device, const void* host, size_t bytes, tg_device_stream s) {
  return hipMemcpyAsync(device, host, bytes, hipMemcpyHostToDevice, s);
}
inline tg_device_error tg_device_download_async(void* host, const void* device, size_t bytes, tg_device_stream s) {
  return hipMemcpyAsync(host, device, bytes, hipMemcpyDeviceToHost, s);
}
// `symbol`: the address of a __device__ variable, taken in host code.
inline tg_device_error tg_device_read_symbol(void* host, const void* symbol, size_t bytes) {
  return hipMemcpyFromSymbol(host, symbol, bytes);
}
inline tg_device_error tg_device_write_symbol(const void* symbol, const void* host, size_t bytes) {
  return hipMemcpyToSymbol(symbol, host, bytes);
}

// A stream that does not wait for the legacy default stream.
inline tg_device_error tg_device_stream_create(tg_device_stream* s) {
  return hipStreamCreateWithFlags(s, hipStreamNonBlocking);
}
inline tg_device_error tg_device_stream_synchronize(tg_device_stream s) { return hipStreamSynchronize(s); }
inline tg_device_error tg_device_stream_destroy(tg_device_stream s) { return hipStreamDestroy(s); }

inline tg_device_error tg_device_event_create(tg_device_event* e) { return hipEventCreate(e); }
inline tg_device_error tg_device_event_record(tg_device_event e, tg_device_stream s) { return hipEventRecord(e, s); }
inline tg_device_error tg_device_event_synchronize(tg_device_event e) { return hipEventSynchronize(e); }
inline tg_device_error tg_device_event_elapsed_ms(float* ms, tg_device_event start, tg_device_event stop) {
  return hipEventElapsedTime(ms, start, stop);
}
inline tg_device_error tg_device_event_destroy(tg_device_event e) { return hipEventDestroy(e); }

// Graph capture of this thread's launches on s.
inline tg_device_error tg_device_begin_capture(tg_device_stream s) {
  return hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal);
}
inline tg_device_error tg_device_end_capture(tg_device_stream s, tg_device_graph* g) {
  return hipStreamEndCapture(s, g);
}
inline tg_device_error tg_device_graph_instantiate(tg_device_graph_exec* exec, tg_device_graph g) {
  return hipGraphInstantiate(exec, g, nullptr, nullptr, 0);
}
inline tg_device_error tg_device_graph_launch(tg_device_graph_exec exec, tg_device_stream s) {
  return hipGraphLaunch(exec, s);
}
inline tg_device_error tg_device_graph_destroy(tg_device_graph g) { return hipGraphDestroy(g); }
inline tg_device_error tg_device_graph_exec_destroy(tg_device_graph_exec exec) { return hipGraphExecDestroy(exec); }

// Lets `kernel` (a __global__ function's address) use `bytes` of dynamic
// shared memory; above 48 KiB a kernel must opt in.
inline tg_device_error tg_device_allow_shared_bytes(const void* kernel, int bytes) {
  return hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
