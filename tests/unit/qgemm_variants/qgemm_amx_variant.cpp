// The AMX micro-kernel (codegen/ukernels/qgemm_amx.h) for a binary built
// without -mamx-*: only the code between the target pragmas may use AMX, and
// callers check supported() before calling tile.
#include "tests/unit/qgemm_variants/qgemm_variant.h"

#if defined(__x86_64__) && !defined(__clang__)

// Everything the kernel header includes comes first, outside the pragmas (see
// qgemm_avx512vnni_variant.cpp).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")
#define TG_QGEMM_FORCE 1
#include "codegen/ukernels/qgemm_amx.h"
#undef TG_QGEMM_FORCE

void qgemm_tile_amx(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  tg_qgemm::amx::tile(k_groups, a, b, c);
}

void qgemm_tile_accumulate_amx(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  tg_qgemm::amx::tile_accumulate(k_groups, a, b, c);
}

#pragma GCC pop_options

// The CPU has the tiles and the kernel lets this process use them.
static bool amx_supported() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-int8")) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

QGemmVariantInfo qgemm_amx_variant() {
  namespace v = tg_qgemm::amx;
  return {v::kVariant, v::kMR,         v::kNR, v::kKU, v::kAUnsigned, qgemm_tile_amx, amx_supported,
          qgemm_tile_accumulate_amx, v::kKB, v::kABytes};
}

#endif  // defined(__x86_64__) && !defined(__clang__)
