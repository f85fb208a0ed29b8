// Ends the region tests/unit/avx512_target_begin.h began. No include guard.
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
