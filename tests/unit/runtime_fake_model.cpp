// runtime_fake_model.cpp — a hand-written model implementing tilegraph_model.h,
// standing in for a generated model.cpp so main_test can be tested end to end.
//
//   inputs:  x      float32 [2,3]
//            ids:0  int64   [4]      (its file name is ids_0.npy)
//   outputs: y       float32 [2,3] = 2 * x + w, w = the 6 floats of the weights file
//            ids_out int64   [4]   = ids:0
//   kernels: fused_mul_add (nodes Mul_0, Add_1), copy_ids (node Identity_2)
//
// A value of 999 anywhere in x makes tg_model_run fail, to test that path.
// fused_mul_add busy-waits ~50us so the profile ranks it first reliably.
#include "tilegraph_model.h"
#include "weights_file.h"

#include <chrono>
#include <cstring>
#include <string>

namespace {

thread_local std::string g_last_error;
int g_threads = 0;

const int64_t kXShape[] = {2, 3};
const int64_t kIdsShape[] = {4};

int fail(const std::string& message) {
  g_last_error = message;
  return 1;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct tg_model {
  tg_weights weights;
  bool profiling = false;
  double kernel_ms[2] = {0, 0};
};

extern "C" {

int tg_model_create(const char* weights_path, tg_model** out) {
  char err[512];
  tg_weights w;
  if (tg_map_weights(weights_path, &w, err, sizeof err) != 0) return fail(err);
  if (w.size != 6 * sizeof(float)) {
    size_t size = w.size;
    tg_unmap_weights(&w);
    return fail("weights file '" + std::string(weights_path) + "' has " + std::to_string(size) +
                " bytes, expected 24");
  }
  *out = new tg_model{w};
  return 0;
}

void tg_model_destroy(tg_model* model) {
  if (model == nullptr) return;
  tg_unmap_weights(&model->weights);
  delete model;
}

const char* tg_last_error(void) { return g_last_error.c_str(); }

int tg_num_inputs(void) { return 2; }
int tg_num_outputs(void) { return 2; }

tg_tensor_info tg_input_info(int index) {
  if (index == 0) return {"x", TG_F32, 2, kXShape};
  return {"ids:0", TG_I64, 1, kIdsShape};
}

tg_tensor_info tg_output_info(int index) {
  if (index == 0) return {"y", TG_F32, 2, kXShape};
  return {"ids_out", TG_I64, 1, kIdsShape};
}

int tg_model_run(tg_model* model, const void* const* inputs, void* const* outputs) {
  const float* x = static_cast<const float*>(inputs[0]);
  const float* w = reinterpret_cast<const float*>(model->weights.data);
  float* y = static_cast<float*>(outputs[0]);
  for (int i = 0; i < 6; ++i) {
    if (x[i] == 999.0f) return fail("fake model: x contains 999");
  }

  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) y[i] = 2.0f * x[i] + w[i];
  if (model->profiling) {
    while (ms_since(t0) < 0.05) {
    }
    model->kernel_ms[0] += ms_since(t0);
  }

  t0 = std::chrono::steady_clock::now();
  std::memcpy(outputs[1], inputs[1], 4 * sizeof(int64_t));
  if (model->profiling) model->kernel_ms[1] += ms_since(t0);
  return 0;
}

void tg_set_num_threads(int n) { g_threads = n; }

int tg_num_kernels(void) { return 2; }
const char* tg_kernel_name(int k) { return k == 0 ? "fused_mul_add" : "copy_ids"; }
const char* tg_kernel_nodes(int k) { return k == 0 ? "Mul_0,Add_1" : "Identity_2"; }
void tg_set_profiling(tg_model* model, int enabled) { model->profiling = enabled != 0; }
void tg_reset_profile(tg_model* model) { model->kernel_ms[0] = model->kernel_ms[1] = 0; }
double tg_kernel_time_ms(const tg_model* model, int k) { return model->kernel_ms[k]; }

}  // extern "C"
