// Integer GEMM micro-kernel, portable reference variant (contract: README.md).
//
// Register blocking: a 4x4 tile of int32 accumulators (16 values, which fit in
// the general registers of any 64-bit target or in a few vector registers if
// the compiler vectorizes). Each k group contributes a 4-term int8 x int8 dot
// product per (row, column). No intrinsics; this is the variant every other one
// is tested against and the fallback for CPUs with no dedicated variant.
//
// Exactness: |A(r, k) * B(k, j)| <= 128 * 128 = 2^14, so a sum over K <= 65536
// (the contract's limit) stays within 2^30 and int32 accumulation is exact.
#pragma once

#include <cstdint>

namespace tg_qgemm {
// Each variant lives in its own inline namespace: callers still write
// tg_qgemm::tile, but two variants linked into one binary (the unit tests do
// that) get distinct symbols instead of violating the one-definition rule.
inline namespace scalar {

constexpr const char* kVariant = "scalar";
constexpr int kMR = 4;
constexpr int kNR = 4;
constexpr int kKU = 4;
constexpr bool kAUnsigned = false;
constexpr int kABytes = 1;

// c[r * kNR + j] = sum over k < k_groups * kKU of A(r, k) * B(k, j).
//   a: A(r, k) at a[((k / kKU) * kMR + r) * kKU + k % kKU], int8
//   b: B(k, j) at b[((k / kKU) * kNR + j) * kKU + k % kKU], int8
inline void tile(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  const int8_t* pa = static_cast<const int8_t*>(a);
  int32_t acc[kMR * kNR] = {};
  for (int64_t g = 0; g < k_groups; ++g) {
    // Widen the group's bytes once (this runs about twice as fast at -O2 as
    // widening inside the product loop).
    int32_t ag[kMR * kKU];
    int32_t bg[kNR * kKU];
    for (int i = 0; i < kMR * kKU; ++i) ag[i] = pa[i];
    for (int i = 0; i < kNR * kKU; ++i) bg[i] = b[i];
    for (int r = 0; r < kMR; ++r)
      for (int j = 0; j < kNR; ++j)
        for (int u = 0; u < kKU; ++u) acc[r * kNR + j] += ag[r * kKU + u] * bg[j * kKU + u];
    pa += kMR * kKU;
    b += kNR * kKU;
  }
  for (int i = 0; i < kMR * kNR; ++i) c[i] = acc[i];
}

// c[r * kNR + j] += sum over k < k_groups * kKU of A(r, k) * B(k, j): one kc
// block of a GEMM whose K is cut into blocks (lower_int_gemm_kernel.cpp).
// The block's sums go through a tile on the stack and are added to c: kMR x
// kNR additions per call, against kc x kMR x kNR x kKU multiply-adds.
inline void tile_accumulate(int64_t k_groups, const void* a, const int8_t* b, int32_t* c) {
  alignas(64) int32_t block[kMR * kNR];
  tile(k_groups, a, b, block);
  for (int i = 0; i < kMR * kNR; ++i) c[i] += block[i];
}

}  // namespace scalar
}  // namespace tg_qgemm
