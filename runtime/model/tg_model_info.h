// The C API's table lookups (tilegraph_model.h: tg_last_error, tg_num_inputs,
// tg_input_info, tg_kernel_name ...), shared by the CPU and GPU model runtimes
// (cpu_model_runtime.h, gpu_model_runtime.h). The generated model source
// defines the tables first, in its anonymous namespace: input_info[],
// output_info[], kNumInputs, kNumOutputs, kNumKernels, kKernelNames[],
// kKernelNodes[] and g_last_error.
#pragma once
#include <string>

#include "tilegraph_model.h"

extern "C" {

const char* tg_last_error(void) { return g_last_error.c_str(); }
int tg_num_inputs(void) { return kNumInputs; }
int tg_num_outputs(void) { return kNumOutputs; }
tg_tensor_info tg_input_info(int i) { return input_info[i < 0 || i >= kNumInputs ? 0 : i]; }
tg_tensor_info tg_output_info(int i) { return output_info[i < 0 || i >= kNumOutputs ? 0 : i]; }
int tg_num_kernels(void) { return kNumKernels; }
const char* tg_kernel_name(int k) { return k >= 0 && k < kNumKernels ? kKernelNames[k] : ""; }
const char* tg_kernel_nodes(int k) { return k >= 0 && k < kNumKernels ? kKernelNodes[k] : ""; }

}  // extern "C"
