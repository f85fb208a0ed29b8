// Compiles the code from here to tests/unit/avx2_target_end.h for AVX2 and
// FMA in a test binary built without them, as tests/unit/avx512_target_begin.h
// does for AVX-512F (which says what to include first and why). No include
// guard: one begin and one end per region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
