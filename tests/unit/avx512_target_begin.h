// Compiles the code from here to tests/unit/avx512_target_end.h for AVX-512F
// in a test binary built without it: the micro-kernel headers under test.
// Callers check the CPU (__builtin_cpu_supports) before running that code.
// Include what those headers include (<immintrin.h>, <cstdint>, ...) before
// this file, so that no standard-library inline function is compiled for the
// wider ISA. In C++ the pragma does not define the feature macros: a header
// that checks them is told so by the includer (TG_SGEMM_FORCE). No include
// guard: one begin and one end per region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
