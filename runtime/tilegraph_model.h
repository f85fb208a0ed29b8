// tilegraph_model.h — the C API every generated model library implements.
//
// A generated project (PREFIX/tilegraph_rt/<arch>/) compiles model.cpp into
// libmodel.so, which implements these functions. main_test, the Python ctypes
// runner and user code drive a model only through this header.
//
// Conventions:
//  * Every function returning int returns 0 on success; on failure it returns a
//    non-zero code and tg_last_error() describes the cause in one line.
//  * dtype codes are ONNX TensorProto.DataType values (TG_F32 = 1, ...).
//  * Tensors are dense, row-major (C order), with the static shapes reported by
//    tg_input_info / tg_output_info. The caller owns input and output memory.
#ifndef TILEGRAPH_MODEL_H
#define TILEGRAPH_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tg_dtype {
  TG_F32 = 1, TG_U8 = 2, TG_I8 = 3, TG_U16 = 4, TG_I16 = 5, TG_I32 = 6,
  TG_I64 = 7, TG_BOOL = 9, TG_F16 = 10, TG_F64 = 11, TG_U32 = 12, TG_U64 = 13
};

typedef struct tg_tensor_info {
  const char* name;        // the ONNX value name, unchanged
  int dtype;               // enum tg_dtype
  int rank;
  const int64_t* shape;    // rank entries
} tg_tensor_info;

typedef struct tg_model tg_model;

// Loads weights (weights.bin written by `tilegraph tune`) and allocates the
// activation arena of the static memory plan.
int tg_model_create(const char* weights_path, tg_model** out);
void tg_model_destroy(tg_model* model);
const char* tg_last_error(void);

int tg_num_inputs(void);
int tg_num_outputs(void);
tg_tensor_info tg_input_info(int index);
tg_tensor_info tg_output_info(int index);

// inputs[i] points at tg_input_info(i)'s data, outputs[i] at writable memory
// of tg_output_info(i)'s size. Runs the whole model once.
int tg_model_run(tg_model* model, const void* const* inputs, void* const* outputs);

// Threads used by the kernels (OpenMP on CPU targets). n <= 0 means default.
void tg_set_num_threads(int n);

// Per-kernel profiling. Kernel k's name and the ONNX nodes fused into it
// (comma-separated node names). With profiling on, tg_model_run accumulates
// wall time per kernel; tg_kernel_time_ms returns the total since the last reset.
int tg_num_kernels(void);
const char* tg_kernel_name(int k);
const char* tg_kernel_nodes(int k);
void tg_set_profiling(tg_model* model, int enabled);
void tg_reset_profile(tg_model* model);
double tg_kernel_time_ms(const tg_model* model, int k);

#ifdef __cplusplus
}
#endif
#endif  // TILEGRAPH_MODEL_H
