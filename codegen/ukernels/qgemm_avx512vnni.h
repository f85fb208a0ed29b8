// Integer GEMM micro-kernel, AVX-512 VNNI variant (contract: README.md).
// vpdpbusd multiplies unsigned bytes by signed bytes and adds each group of 4
// products into an int32 lane with wrap-around (not the saturating vpdpbusds),
// so packed A holds uint8 (kAUnsigned) and the result is exact.
//
// Register blocking (kMR = 8, kNR = 32, kKU = 4):
//   * One k group of B is 32 columns x 4 k = 128 bytes: two zmm loads, each
//     16 columns with their 4 bytes in one int32 lane, which is exactly
//     vpdpbusd's layout. B is never converted or shuffled.
//   * One k group of an A row is 4 bytes: a 32-bit broadcast load (a pure
//     load, no shuffle) puts them in all 16 lanes.
//   * Accumulators: 8 rows x 2 zmm = 16 zmm (of 32), plus 2 for B and 1 for A.
//     Per k group: 16 vpdpbusd (1024 MACs) against 10 loads, so the two
//     vpdpbusd ports stay busy without saturating the load ports, and 16
//     independent accumulators cover vpdpbusd's latency (5 cycles x 2 ports).
//     On Zen 4 (one zmm vpdpbusd per cycle) 8 x 32, 12 x 32, 16 x 16 and
//     4 x 64 all ran at that peak in a hot loop; 8 x 32 keeps kMR small for
//     M tails and reads B, the streaming panel, once per 8 rows.
//   * The accumulators are stored once, after the k loop: 2 stores per row.
//
// Include with -mavx512f -mavx512bw -mavx512vnni (or -march=icelake-server,
// -march=znver4 or newer). A translation unit that enables the ISA for this
// header alone with `#pragma GCC target(...)` (which in C++ does not define the
// feature macros) defines TG_QGEMM_FORCE before including it.
#pragma once

#if !(defined(__AVX512VNNI__) && defined(__AVX512BW__)) && !defined(TG_QGEMM_FORCE)
#error "qgemm_avx512vnni.h needs AVX-512 VNNI: compile with -mavx512f -mavx512bw -mavx512vnni"
#endif

#include <cstdint>
#include <cstring>
#include <immintrin.h>

namespace tg_qgemm {
// Own inline namespace per variant: see qgemm_scalar.h.
inline namespace avx512vnni {

constexpr const char* kVariant = "avx512vnni";
constexpr int kMR = 8;
constexpr int kNR = 32;
constexpr int kKU = 4;
constexpr bool kAUnsigned = true;
constexpr int kABytes = 1;

namespace detail {

// The 4 uint8 of one A row in one k group, repeated in all 16 int32 lanes.
inline __m512i broadcast_a_row(const uint8_t* p) {
  int32_t bytes;
  std::memcpy(&bytes, p, sizeof(bytes));
  return _mm512_set1_epi32(bytes);
}

// The tile over k_groups, its accumulators starting at zero or (kAccumulate)
// at c's values.
template <bool kAccumulate>
__attribute__((always_inline)) inline void tile_over(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  static_assert(kKU == 4 && kNR % 16 == 0, "one zmm lane holds the 4 k of one column");
  constexpr int kVecs = kNR / 16;  // zmm per row
  const uint8_t* pa = static_cast<const uint8_t*>(a);
  __m512i acc[kMR][kVecs];
#pragma GCC unroll 16
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v)
      acc[r][v] = kAccumulate ? _mm512_loadu_si512(c + r * kNR + 16 * v) : _mm512_setzero_si512();

  for (int64_t g = 0; g < k_groups; ++g) {
    __m512i bv[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_si512(b + 64 * v);
#pragma GCC unroll 16
    for (int r = 0; r < kMR; ++r) {
      const __m512i ar = broadcast_a_row(pa + kKU * r);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], ar, bv[v]);
    }
    pa += kMR * kKU;
    b += kNR * kKU;
  }

#pragma GCC unroll 16
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) _mm512_storeu_si512(c + r * kNR + 16 * v, acc[r][v]);
}

}  // namespace detail

// c[r * kNR + j] = sum over k < k_groups * kKU of A(r, k) * B(k, j).
//   a: A(r, k) at a[((k / kKU) * kMR + r) * kKU + k % kKU], uint8
//   b: B(k, j) at b[((k / kKU) * kNR + j) * kKU + k % kKU], int8
// Not inlined: inside a big generated loop nest GCC 12 shuffles the
// accumulators between registers every iteration; alone it keeps them put.
// noipa, not just noinline: the generated code passes k_groups as a constant,
// and GCC 12 (-O3) then clones the function for it (IPA constant
// propagation); in the clone, with the trip count known, it copied all 16
// accumulators to other registers and spilled two to the stack on every k
// group (each of those a store and a reload on the accumulation chain):
// ~2% of the INT8 ViT-B/16's time at one thread on Zen 4. (Clang has no
// noipa, and ignoring it would drop the noinline too: it keeps noinline.)
#if defined(__clang__)
#define TG_QGEMM_NOT_CLONED __attribute__((noinline))
#else
#define TG_QGEMM_NOT_CLONED __attribute__((noipa))
#endif
TG_QGEMM_NOT_CLONED inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  detail::tile_over<false>(k_groups, a, b, c);
}

// c[r * kNR + j] += the same sum: one kc block of a GEMM whose K is cut into
// blocks (lower_int_gemm_kernel.cpp). The accumulators start from c (two
// loads per row), so a block costs nothing over a whole-K call.
TG_QGEMM_NOT_CLONED inline void tile_accumulate(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  detail::tile_over<true>(k_groups, a, b, c);
}

}  // namespace avx512vnni
}  // namespace tg_qgemm
