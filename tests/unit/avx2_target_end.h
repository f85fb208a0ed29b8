// Ends the region tests/unit/avx2_target_begin.h began: the same pop as
// AVX-512's. No include guard.
#include "tests/unit/avx512_target_end.h"
