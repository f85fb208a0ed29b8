// Integer GEMM micro-kernel, Intel AMX variant (contract: README.md).
// tdpbusd multiplies unsigned bytes of an A tile by signed bytes of a B tile
// and adds each group of 4 products into an int32 element of a C tile
// (wrap-around, not saturating), so packed A holds uint8 (kAUnsigned) and the
// result is exact.
//
// Register blocking (kMR = 32, kNR = 32, kKU = 64, kKB = 4): 4 C tiles of
// 16 x 16 int32 (the 32 x 32 C tile), 2 A tiles (rows 0-15 and 16-31, 64 k
// bytes per row) and 2 B tiles (columns 0-15 and 16-31, 16 rows of 4 k x 16
// columns): 8 tiles, all of the palette. Per k group of 64: 4 tile loads and
// 4 tdpbusd (65536 MACs).
//   * A group is 32 rows x 64 bytes, row-major: two A tiles at stride 64.
//   * A B group is 16 rows of (32 columns x 4 k): B(k, j) at
//     ((k % 64) / 4) * 128 + j * 4 + k % 4 within the group, so the two B
//     tiles are loads at stride 128 from offsets 0 and 64 (kKB = 4: the B
//     bytes of one column are grouped by 4, not by kKU).
//
// The tiles need the process's permission to use AMX state (Linux:
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) and a tile
// configuration per thread; the first call on each thread sets both up.
//
// Include with -mamx-tile -mamx-int8 (-march=sapphirerapids or newer).
#pragma once

#if !(defined(__AMX_TILE__) && defined(__AMX_INT8__)) && !defined(TG_QGEMM_FORCE)
#error "qgemm_amx.h needs AMX: compile with -mamx-tile -mamx-int8"
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tg_qgemm {
// Own inline namespace per variant: see qgemm_scalar.h.
inline namespace amx {

constexpr const char* kVariant = "amx";
constexpr int kMR = 32;
constexpr int kNR = 32;
constexpr int kKU = 64;
constexpr int kKB = 4;
constexpr bool kAUnsigned = true;
constexpr int kABytes = 1;

namespace detail {

struct TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
};

// Permission for the tile data (once per process; asking again is harmless)
// and this thread's tile configuration: 8 tiles of 16 rows x 64 bytes.
inline void ensure_tiles() {
  thread_local bool configured = false;
  if (configured) return;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) std::abort();
  TileConfig config;
  std::memset(&config, 0, sizeof(config));
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
  configured = true;
}

template <bool kAccumulate>
inline void tile_over(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  static_assert(kMR == 32 && kNR == 32 && kKU == 64 && kKB == 4, "the code below is written for 32 x 32 x 64");
  ensure_tiles();
  constexpr int kCStride = kNR * 4;  // bytes per C row
  if (kAccumulate) {
    _tile_loadd(0, c, kCStride);
    _tile_loadd(1, c + 16, kCStride);
    _tile_loadd(2, c + 16 * kNR, kCStride);
    _tile_loadd(3, c + 16 * kNR + 16, kCStride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const uint8_t* pa = static_cast<const uint8_t*>(a);
  for (int64_t g = 0; g < k_groups; ++g) {
    _tile_loadd(4, pa, 64);
    _tile_loadd(5, pa + 16 * 64, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 64, 128);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
    pa += kMR * kKU;
    b += kNR * kKU;
  }
  _tile_stored(0, c, kCStride);
  _tile_stored(1, c + 16, kCStride);
  _tile_stored(2, c + 16 * kNR, kCStride);
  _tile_stored(3, c + 16 * kNR + 16, kCStride);
}

}  // namespace detail

// c[r * kNR + j] = sum over k < k_groups * kKU of A(r, k) * B(k, j).
//   a: A(r, k) at a[((k / kKU) * kMR + r) * kKU + k % kKU], uint8
//   b: B(k, j) at b[(k / kKU) * kNR * kKU + ((k % kKU) / kKB * kNR + j) * kKB + k % kKB], int8
__attribute__((noinline)) inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  detail::tile_over<false>(k_groups, a, b, c);
}

// c[r * kNR + j] += the same sum (a kc block after the first).
__attribute__((noinline)) inline void tile_accumulate(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  detail::tile_over<true>(k_groups, a, b, c);
}

}  // namespace amx
}  // namespace tg_qgemm
