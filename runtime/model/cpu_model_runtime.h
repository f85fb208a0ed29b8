// The host side of a generated CPU model (model.cpp), apart from
// tg_model_run: the model's state, tg_model_create/destroy over a mapped
// weights.bin, threads and profiling (tilegraph_model.h).
//
// model.cpp includes this file once, after its generated tables and before
// its generated tg_model_run. In its anonymous namespace it defines first
// input_info[], output_info[], kNumInputs, kNumOutputs, kNumKernels,
// kKernelSlots (kNumKernels, at least 1: C++ has no zero-length arrays),
// kArenaBytes, kWeightsBytes, kProjectHash, kKernelNames[], kKernelNodes[]
// and g_last_error (a thread_local std::string).
#pragma once
#include <chrono>
#include <cstdlib>
#include <new>
#include <string>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tg_model_info.h"
#include "tilegraph_model.h"
#include "weights_file.h"

struct tg_model {
  tg_weights weights;
  unsigned char* arena;
  int profiling;
  double kernel_ms[kKernelSlots];
};

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
}

#ifdef TG_THREAD_POOL
// Denormal floats (magnitudes below 1.2e-38) take microcode assists on x86
// cores, about 100x the time of a normal operation: in a Swin model the
// shifted windows' masked scores (-100) make softmax results near 1e-44, and
// their attn @ V ran 100x slower than the unmasked windows' (15 ms against
// 0.15 ms, single-threaded). So a run flushes denormal results to zero and
// reads denormal inputs as zero (MXCSR FTZ and DAZ; FPCR FZ on aarch64), as
// TensorFlow does around its ops; values that small are far below any
// output tolerance. The pool's threads take the caller's setting per loop
// (tg_thread_pool.h). On return the caller's own denormal mode is back.
class FlushDenormals {
 public:
  FlushDenormals() : saved_(tg_pool::float_control()) {
    tg_pool::set_float_control(saved_ | tg_pool::kFlushDenormalBits);
  }
  ~FlushDenormals() {
    const uint64_t now = tg_pool::float_control();
    tg_pool::set_float_control((now & ~tg_pool::kFlushDenormalBits) | (saved_ & tg_pool::kFlushDenormalBits));
  }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  uint64_t saved_;
};
#endif

}  // namespace

extern "C" {

void tg_set_num_threads(int n) {
#ifdef _OPENMP
  if (n > 0) omp_set_num_threads(n);
#endif
#ifdef TG_THREAD_POOL  // host projects: the kernels' loops run on tg_thread_pool.h
  if (n > 0) tg_set_pool_threads(n);
#endif
}

int tg_model_create(const char* weights_path, tg_model** out) {
  *out = nullptr;
  tg_model* m = new (std::nothrow) tg_model();
  if (!m) { g_last_error = "out of memory allocating the model"; return 1; }
  char err[1024];
  if (tg_open_weights(weights_path, kProjectHash, kWeightsBytes, &m->weights, err, sizeof err) != 0) {
    g_last_error = err;
    delete m;
    return 1;
  }
  m->arena = kArenaBytes > 0 ? (unsigned char*)std::aligned_alloc(64, (size_t)((kArenaBytes + 63) / 64 * 64)) : nullptr;
  if (kArenaBytes > 0 && !m->arena) {
    g_last_error = "out of memory allocating " + std::to_string(kArenaBytes) + " bytes of activations";
    tg_unmap_weights(&m->weights);
    delete m;
    return 1;
  }
  *out = m;
  return 0;
}

void tg_model_destroy(tg_model* m) {
  if (!m) return;
  tg_unmap_weights(&m->weights);
  std::free(m->arena);
  delete m;
}

void tg_set_profiling(tg_model* m, int enabled) { if (m) m->profiling = enabled; }
void tg_reset_profile(tg_model* m) {
  if (m) for (int k = 0; k < kNumKernels; ++k) m->kernel_ms[k] = 0;
}
double tg_kernel_time_ms(const tg_model* m, int k) {
  return m && k >= 0 && k < kNumKernels ? m->kernel_ms[k] : 0.0;
}

}  // extern "C"
