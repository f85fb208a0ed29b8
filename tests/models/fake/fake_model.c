/* A hand-written implementation of runtime/tilegraph_model.h for the tests of the
 * Python runner and test_acc: it stands in for a generated libmodel.so.
 *   inputs : "x" f32 [2,3], "ids" i64 [4]
 *   outputs: "y" f32 [2,3] = 2*x + b   (b: the one float in weights.bin)
 *            "ids:out" i64 [4] = ids + 1
 * The ONNX twin (y = 2*x + 1) is built in tests/models/test_test_acc.py, so
 * weights.bin holding 1.0 passes test_acc and any other value fails it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilegraph_model.h"

struct tg_model { float b; int profiling; double ms[2]; };

static char g_err[256] = "";
static const int64_t kXShape[2] = {2, 3};
static const int64_t kIdsShape[1] = {4};

const char* tg_last_error(void) { return g_err; }

int tg_model_create(const char* weights_path, tg_model** out) {
  FILE* f = fopen(weights_path, "rb");
  if (!f) { snprintf(g_err, sizeof g_err, "cannot open %s", weights_path); return 1; }
  tg_model* m = (tg_model*)calloc(1, sizeof *m);
  if (fread(&m->b, sizeof(float), 1, f) != 1) {
    fclose(f); free(m); snprintf(g_err, sizeof g_err, "short weights file"); return 2;
  }
  fclose(f);
  *out = m;
  return 0;
}

void tg_model_destroy(tg_model* m) { free(m); }
int tg_num_inputs(void) { return 2; }
int tg_num_outputs(void) { return 2; }

tg_tensor_info tg_input_info(int i) {
  tg_tensor_info t;
  if (i == 0) { t.name = "x"; t.dtype = TG_F32; t.rank = 2; t.shape = kXShape; }
  else { t.name = "ids"; t.dtype = TG_I64; t.rank = 1; t.shape = kIdsShape; }
  return t;
}

tg_tensor_info tg_output_info(int i) {
  tg_tensor_info t;
  if (i == 0) { t.name = "y"; t.dtype = TG_F32; t.rank = 2; t.shape = kXShape; }
  else { t.name = "ids:out"; t.dtype = TG_I64; t.rank = 1; t.shape = kIdsShape; }
  return t;
}

int tg_model_run(tg_model* m, const void* const* inputs, void* const* outputs) {
  const float* x = (const float*)inputs[0];
  const int64_t* ids = (const int64_t*)inputs[1];
  float* y = (float*)outputs[0];
  int64_t* o = (int64_t*)outputs[1];
  for (int i = 0; i < 6; ++i) y[i] = 2.0f * x[i] + m->b;
  for (int i = 0; i < 4; ++i) o[i] = ids[i] + 1;
  if (m->profiling) { m->ms[0] += 0.5; m->ms[1] += 0.25; }
  return 0;
}

void tg_set_num_threads(int n) { (void)n; }
int tg_num_kernels(void) { return 2; }
const char* tg_kernel_name(int k) { return k == 0 ? "fused_mul_add" : "add_i64"; }
const char* tg_kernel_nodes(int k) { return k == 0 ? "Mul_0,Add_1" : "Add_2"; }
void tg_set_profiling(tg_model* m, int on) { m->profiling = on; }
void tg_reset_profile(tg_model* m) { m->ms[0] = m->ms[1] = 0; }
double tg_kernel_time_ms(const tg_model* m, int k) { return m->ms[k]; }
