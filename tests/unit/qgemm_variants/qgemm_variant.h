// One integer GEMM micro-kernel variant (codegen/ukernels/qgemm_*.h) as data,
// so that tests and tools can run every variant built into one binary.
//
// The SIMD variants are compiled in their own translation units
// (qgemm_<variant>_variant.cpp), each enabling its instruction set for the
// micro-kernel alone with a target pragma: the rest of the binary stays
// baseline x86-64 and calls a variant only after `supported()` says the CPU
// has it.
#pragma once

#include <cstdint>

struct QGemmVariantInfo {
  const char* name;  // the header's kVariant
  int mr;            // kMR
  int nr;            // kNR
  int ku;            // kKU
  bool a_unsigned;   // kAUnsigned
  void (*tile)(int64_t k_groups, const void* a, const int8_t* b, int32_t* c);
  bool (*supported)();  // whether this CPU can run tile
  // c += the same sum (tile_accumulate)
  void (*tile_accumulate)(int64_t k_groups, const void* a, const int8_t* b, int32_t* c);
  int kb = 0;  // kKB where the header has one (AMX: B bytes of a column in runs of 4); 0: ku
  int a_bytes = 1;  // kABytes: 2 where A is packed as int16 (int8 and uint8 values alike)
};

// Defined in qgemm_avx2_variant.cpp and qgemm_avx512vnni_variant.cpp, which
// compile to nothing except on x86-64. Weak, so that a binary built without
// those files still links; the address of a missing one is null (the unit
// tests check that on x86-64 both are present).
[[gnu::weak]] QGemmVariantInfo qgemm_avx2_variant();
[[gnu::weak]] QGemmVariantInfo qgemm_avx512vnni_variant();
[[gnu::weak]] QGemmVariantInfo qgemm_amx_variant();

// The variants' tile functions themselves (x86-64 only); call them only where
// the matching supported() is true.
void qgemm_tile_avx2(int64_t k_groups, const void* a, const int8_t* b, int32_t* c);
void qgemm_tile_avx512vnni(int64_t k_groups, const void* a, const int8_t* b, int32_t* c);
void qgemm_tile_accumulate_avx2(int64_t k_groups, const void* a, const int8_t* b, int32_t* c);
void qgemm_tile_accumulate_avx512vnni(int64_t k_groups, const void* a, const int8_t* b, int32_t* c);
