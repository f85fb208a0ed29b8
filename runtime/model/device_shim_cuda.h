// The device API of generated GPU projects, on CUDA. gpu_model_runtime.h and
// the generated kernel launchers call only these names; device_shim_hip.h
// maps the same names onto HIP, so one runtime source serves both targets.
// Every call returns the runtime's status: callers check it.
#pragma once
#include <cstddef>

#include <cuda_runtime.h>

typedef cudaError_t tg_device_error;
typedef cudaStream_t tg_device_stream;
typedef cudaEvent_t tg_device_event;
typedef cudaGraph_t tg_device_graph;
typedef cudaGraphExec_t tg_device_graph_exec;
static constexpr tg_device_error tg_device_success = cudaSuccess;

inline const char* tg_device_error_string(tg_device_error e) { return cudaGetErrorString(e); }
// Returns and clears the last launch error of this host thread.
inline tg_device_error tg_device_last_error() { return cudaGetLastError(); }

inline tg_device_error tg_device_malloc(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
inline tg_device_error tg_device_free(void* p) { return cudaFree(p); }
inline tg_device_error tg_device_zero(void* p, size_t bytes) { return cudaMemset(p, 0, bytes); }
inline tg_device_error tg_device_upload(void* device, const void* host, size_t bytes) {
  return cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}
inline tg_device_error tg_device_upload_async(void* device, const void* host, size_t bytes, tg_device_stream s) {
  return cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s);
}
inline tg_device_error tg_device_download_async(void* host, const void* device, size_t bytes, tg_device_stream s) {
  return cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s);
}
// `symbol`: the address of a __device__ variable, taken in host code.
inline tg_device_error tg_device_read_symbol(void* host, const void* symbol, size_t bytes) {
  return cudaMemcpyFromSymbol(host, symbol, bytes);
}
inline tg_device_error tg_device_write_symbol(const void* symbol, const void* host, size_t bytes) {
  return cudaMemcpyToSymbol(symbol, host, bytes);
}

// A stream that does not wait for the legacy default stream.
inline tg_device_error tg_device_stream_create(tg_device_stream* s) {
  return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
}
inline tg_device_error tg_device_stream_synchronize(tg_device_stream s) { return cudaStreamSynchronize(s); }
inline tg_device_error tg_device_stream_destroy(tg_device_stream s) { return cudaStreamDestroy(s); }

inline tg_device_error tg_device_event_create(tg_device_event* e) { return cudaEventCreate(e); }
inline tg_device_error tg_device_event_record(tg_device_event e, tg_device_stream s) { return cudaEventRecord(e, s); }
inline tg_device_error tg_device_event_synchronize(tg_device_event e) { return cudaEventSynchronize(e); }
inline tg_device_error tg_device_event_elapsed_ms(float* ms, tg_device_event start, tg_device_event stop) {
  return cudaEventElapsedTime(ms, start, stop);
}
inline tg_device_error tg_device_event_destroy(tg_device_event e) { return cudaEventDestroy(e); }

// Graph capture of this thread's launches on s.
inline tg_device_error tg_device_begin_capture(tg_device_stream s) {
  return cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
}
inline tg_device_error tg_device_end_capture(tg_device_stream s, tg_device_graph* g) {
  return cudaStreamEndCapture(s, g);
}
inline tg_device_error tg_device_graph_instantiate(tg_device_graph_exec* exec, tg_device_graph g) {
  return cudaGraphInstantiateWithFlags(exec, g, 0);
}
inline tg_device_error tg_device_graph_launch(tg_device_graph_exec exec, tg_device_stream s) {
  return cudaGraphLaunch(exec, s);
}
inline tg_device_error tg_device_graph_destroy(tg_device_graph g) { return cudaGraphDestroy(g); }
inline tg_device_error tg_device_graph_exec_destroy(tg_device_graph_exec exec) { return cudaGraphExecDestroy(exec); }

// Lets `kernel` (a __global__ function's address) use `bytes` of dynamic
// shared memory; above 48 KiB a kernel must opt in.
inline tg_device_error tg_device_allow_shared_bytes(const void* kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
