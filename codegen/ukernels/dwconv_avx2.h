// Depthwise convolution micro-kernels, AVX2 + FMA: plane_stride2<H, W> of
// dwconv_avx512.h's contract (README.md, "Depthwise contract"; 3 x 3,
// stride 2, padding 1 at the top and left) on 8-lane vectors, each product
// summed in tap order (the first a multiply, then one fused multiply-add
// per tap). The generated loops gather every tap of a stride-2 window (a
// strided load per lane): MobileNetV2's four such convs took 2.2 ms of a
// 24 ms inference on a Zen 1 core, 1.6x onnxruntime's time.
//
// No plane_same here (planes8_same, below, for small planes): larger
// stride-1 planes keep the generated flat and
// padded forms (lower_direct_conv_kernel.h), which on AVX2 need no masks in
// the interior. A masked micro-kernel was slower in the model (56 x 56 x
// 144: 0.80 -> 1.0 ms) though faster alone: AVX2 has no mask registers, and
// vmaskmovps, the load that does not fault on a dropped lane, costs several
// times a plain load on a Zen 1 core (8 cycles per tap against 2 with a load
// and an and), so the masks must be vectors in memory, loaded per tap.
//
// Small stride-1 planes (MobileNetV2's 7 x 7 and 14 x 14) take planes8_same
// instead: eight channels at once, one per lane. There a row is one vector
// or less, and the generated padded form spent three times its FMAs on
// zeroing, copying and storing the plane in short loops; with channels in
// the lanes every output is one vector of nine FMAs, the padding is a zeroed
// border of the transposed plane, and the transposes in and out are 128-bit
// loads and stores around in-lane shuffles (Zen 1 splits a lane-crossing
// vperm2f128 into 8 macro-ops).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace tg_dwconv {
inline namespace avx2 {

constexpr const char* kVariant = "avx2";
constexpr int kLanes = 8;

namespace detail {

inline __m256i mask_at(const int32_t* lanes) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes));
}

// 8 floats from p, the lanes mask drops 0: a load and an and where all 8
// lie inside the plane [plane, plane_end), vmaskmovps (which does not fault
// on a dropped lane) only where some do not: the first column of the first
// row, the last ones of the last row.
inline __m256 masked_load(const float* p, __m256i mask, const float* plane, const float* plane_end) {
  if (p >= plane && p + kLanes <= plane_end) return _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(mask));
  return _mm256_maskload_ps(p, mask);
}

// The even (or odd) lanes of the 16 floats a, b in the order
// a0 a2 b0 b2 | a4 a6 b4 b6: vshufps stays inside the 128-bit halves, and
// all taps' terms come in that order, so one lane-crossing vpermpd per
// output vector (in_output_order) restores it. One per tap and row (nine
// per vector) cost a third of the kernel's time on a Zen 1 core.
inline __m256 evens(__m256 a, __m256 b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
inline __m256 odds(__m256 a, __m256 b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
inline __m256 in_output_order(__m256 x) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(x), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Per chunk of 8 output columns (first input column 2 * 8 c): the lanes of
// its four 8-wide loads of an input row (from columns 2 * 8 c - 1, + 7,
// 2 * 8 c, + 8) that lie inside the row; edge[c] where some do not.
template <int W>
struct Stride2Masks {
  static constexpr int kOutCols = (W - 1) / 2 + 1, kChunks = (kOutCols + kLanes - 1) / kLanes;
  int32_t load[kChunks][4][kLanes] = {};
  int32_t store[kLanes] = {};  // the last chunk's lanes that are outputs
  bool edge[kChunks] = {};
  constexpr Stride2Masks() {
    constexpr int kStart[4] = {-1, kLanes - 1, 0, kLanes};
    for (int c = 0; c < kChunks; ++c)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < kLanes; ++l) {
          const int col = 2 * kLanes * c + kStart[j] + l;
          load[c][j][l] = col >= 0 && col < W ? -1 : 0;
          edge[c] = edge[c] || load[c][j][l] == 0;
        }
    for (int l = 0; l < kLanes; ++l) store[l] = (kChunks - 1) * kLanes + l < kOutCols ? -1 : 0;
  }
};
template <int W>
inline constexpr Stride2Masks<W> kStride2Masks{};

// The three taps of the input row at p (chunk c's first column) for chunk
// c: acc (+)= x0 * w[0] + x1 * w[1] + x2 * w[2], in that order, in
// evens()' lane order.
template <int H, int W, bool kEdge>
__attribute__((always_inline)) inline void stride2_row(const float* p, const float* plane, int c, const __m256* w,
                                                       __m256& acc, bool first) {
  __m256 l0, h0, l1, h1;
  if constexpr (kEdge) {
    const Stride2Masks<W>& m = kStride2Masks<W>;
    const float* end = plane + H * W;
    l0 = masked_load(p - 1, mask_at(m.load[c][0]), plane, end);
    h0 = masked_load(p + kLanes - 1, mask_at(m.load[c][1]), plane, end);
    l1 = masked_load(p, mask_at(m.load[c][2]), plane, end);
    h1 = masked_load(p + kLanes, mask_at(m.load[c][3]), plane, end);
  } else {
    l0 = _mm256_loadu_ps(p - 1);
    h0 = _mm256_loadu_ps(p + kLanes - 1);
    l1 = _mm256_loadu_ps(p);
    h1 = _mm256_loadu_ps(p + kLanes);
  }
  const __m256 x0 = evens(l0, h0), x1 = evens(l1, h1), x2 = odds(l1, h1);
  acc = first ? _mm256_mul_ps(x0, w[0]) : _mm256_fmadd_ps(x0, w[0], acc);
  acc = _mm256_fmadd_ps(x1, w[1], acc);
  acc = _mm256_fmadd_ps(x2, w[2], acc);
}

// Chunk c of output rows oh .. oh + kRows - 1 into acc[0 .. kRows - 1], each
// in tap order (the first tap inside the plane a multiply): the rows' chains
// interleaved a tap row at a time, so their FMAs overlap.
template <int H, int W, bool kEdge, int kRows>
__attribute__((always_inline)) inline void stride2_rows(const float* in, int oh, int c, const __m256* w,
                                                        __m256 (&acc)[kRows]) {
  bool first[kRows];
#pragma GCC unroll 2
  for (int i = 0; i < kRows; ++i) {
    acc[i] = _mm256_setzero_ps();
    first[i] = true;
  }
#pragma GCC unroll 3
  for (int r = 0; r < 3; ++r) {
#pragma GCC unroll 2
    for (int i = 0; i < kRows; ++i) {
      const int ih = 2 * (oh + i) + r - 1;
      if (ih < 0 || ih >= H) continue;  // the padding rows: every term 0
      stride2_row<H, W, kEdge>(in + ih * W + 2 * kLanes * c, in, c, w + 3 * r, acc[i], first[i]);
      first[i] = false;
    }
  }
}

// stride2_rows with the chunk's edge loads where it has some (Stride2Masks::edge).
template <int H, int W, int kRows>
__attribute__((always_inline)) inline void stride2_chunk(const float* in, int oh, int c, bool edge, const __m256* w,
                                                         __m256 (&acc)[kRows]) {
  if (edge)
    stride2_rows<H, W, true, kRows>(in, oh, c, w, acc);
  else
    stride2_rows<H, W, false, kRows>(in, oh, c, w, acc);
}

}  // namespace detail

//   result[oh * OW + ow] for oh < OH = (H - 1) / 2 + 1, ow < OW = (W - 1) / 2 + 1
//   (result holds OH * OW floats rounded up to 8; the lanes past OH * OW are
//   left as they are): sum over taps t = r * 3 + s, in t order, of
//   in[(2 * oh + r - 1) * W + 2 * ow + s - 1] * w[t] over the taps whose
//   input row and column lie inside the plane.
// Per output row, 8 outputs at a time: the 17 input columns from 2 * ow0 - 1
// come in as four 8-wide loads, whose even and odd lanes are the three
// taps' columns (a shuffle each, detail::evens), so no lane is gathered.
// Two output rows at a time (detail::stride2_rows): each output's nine taps
// are one chain of dependent FMAs, 45 cycles of latency on a Zen 1 core,
// and a chunk's shuffles and FMAs fill the FP scheduler before the next
// chunk's chain can start, so one chain at a time ran at about that latency
// per 8 outputs (MobileNetV2's 112 x 112 x 96, plane in L2: 0.72 ms against
// 0.23 of FMA throughput). A row's last chunk may store past the row into
// the next one's first outputs, which that row then stores again (of two
// rows at a time, the second row's first chunk is stored last); the
// plane's last chunk stores its outputs alone.
template <int H, int W>
inline void plane_stride2(const float* in, const float* w, float* result) {
  using M = detail::Stride2Masks<W>;
  const M& m = detail::kStride2Masks<W>;
  constexpr int kOutRows = (H - 1) / 2 + 1;
  __m256 weights[9];
  for (int t = 0; t < 9; ++t) weights[t] = _mm256_set1_ps(w[t]);
  auto store = [&](int oh, int c, __m256 acc) {
    acc = detail::in_output_order(acc);
    float* out = result + oh * M::kOutCols + c * kLanes;
    if (oh + 1 == kOutRows && c + 1 == M::kChunks)
      _mm256_maskstore_ps(out, detail::mask_at(m.store), acc);
    else
      _mm256_storeu_ps(out, acc);
  };
  int oh = 0;
  for (; oh + 2 <= kOutRows; oh += 2) {
    __m256 second_row_first_chunk = _mm256_setzero_ps();
    for (int c = 0; c < M::kChunks; ++c) {
      __m256 acc[2];
      detail::stride2_chunk<H, W, 2>(in, oh, c, m.edge[c], weights, acc);
      store(oh, c, acc[0]);
      if (c == 0)
        second_row_first_chunk = acc[1];
      else
        store(oh + 1, c, acc[1]);
    }
    store(oh + 1, 0, second_row_first_chunk);  // after the first row's last chunk
  }
  for (; oh < kOutRows; ++oh) {
    for (int c = 0; c < M::kChunks; ++c) {
      __m256 acc[1];
      detail::stride2_chunk<H, W, 1>(in, oh, c, m.edge[c], weights, acc);
      store(oh, c, acc[0]);
    }
  }
}

namespace detail {

// The 4 x 4 transposes within each 128-bit half of x0..x3 (rows in, columns
// out): half h of out[j] holds lane j of half h of x0, x1, x2, x3.
__attribute__((always_inline)) inline void transpose4_halves(__m256 x0, __m256 x1, __m256 x2, __m256 x3,
                                                             __m256 (&out)[4]) {
  const __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpackhi_ps(x0, x1);
  const __m256 t2 = _mm256_unpacklo_ps(x2, x3), t3 = _mm256_unpackhi_ps(x2, x3);
  out[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  out[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  out[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  out[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}

// 8 channels' values of 8 consecutive pixels (channel c's at row[c], 8
// floats each) as 8 pixel vectors, lane c channel c: pixel i into out[i].
__attribute__((always_inline)) inline void channels_to_lanes(const float* const (&row)[8], __m256 (&out)[8]) {
  __m256 lo[4], hi[4];
  for (int c = 0; c < 4; ++c) {
    lo[c] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row[c])), _mm_loadu_ps(row[c + 4]), 1);
    hi[c] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row[c] + 4)), _mm_loadu_ps(row[c + 4] + 4), 1);
  }
  __m256 a[4], b[4];
  transpose4_halves(lo[0], lo[1], lo[2], lo[3], a);  // pixels 0..3
  transpose4_halves(hi[0], hi[1], hi[2], hi[3], b);  // pixels 4..7
  for (int i = 0; i < 4; ++i) {
    out[i] = a[i];
    out[i + 4] = b[i];
  }
}

// The inverse: 8 pixel vectors (lane c channel c) stored as 8 floats per
// channel, channel c's at row[c].
__attribute__((always_inline)) inline void lanes_to_channels(const __m256 (&px)[8], float* const (&row)[8]) {
  __m256 a[4], b[4];
  transpose4_halves(px[0], px[1], px[2], px[3], a);  // half h of a[c]: channel c + 4 h, pixels 0..3
  transpose4_halves(px[4], px[5], px[6], px[7], b);  // pixels 4..7
  for (int c = 0; c < 4; ++c) {
    _mm_storeu_ps(row[c], _mm256_castps256_ps128(a[c]));
    _mm_storeu_ps(row[c] + 4, _mm256_castps256_ps128(b[c]));
    _mm_storeu_ps(row[c + 4], _mm256_extractf128_ps(a[c], 1));
    _mm_storeu_ps(row[c + 4] + 4, _mm256_extractf128_ps(b[c], 1));
  }
}

// first[c * stride] for c < 8, lane c: eight channels' values of one
// pixel (or tap), each from its own plane.
__attribute__((always_inline)) inline __m256 lanes_of(const float* first, int stride) {
  alignas(32) float lanes[8];
  for (int c = 0; c < 8; ++c) lanes[c] = first[c * stride];
  return _mm256_load_ps(lanes);
}

}  // namespace detail

//   result[c * H * W + q], c < 8, q < H * W = plane_same's result[q] for
//   channel c: the sum over taps t = r * K + s, in t order, of
//   in[c * H * W + q + (r - K/2) * W + (s - K/2)] * w[c * K * K + t], taps
//   in the padding reading 0 (the first product, then one fused
//   multiply-add per tap). Eight consecutive channels' planes (in) and taps
//   (w); result holds 8 * H * W floats. Nothing outside the 8 planes is read.
// The planes go transposed (lane c channel c) into a local plane with a
// zeroed border of K / 2 pixels, where each output is K * K loads and FMAs
// at fixed offsets; 8 outputs at a time are transposed back into result.
// For small planes: the local plane is (H + K - 1) x (W + K - 1) x 8 floats
// on the stack.
template <int H, int W, int K>
inline void planes8_same(const float* in, const float* w, float* result) {
  static_assert(K % 2 == 1, "planes8_same: an odd window");
  constexpr int kPad = K / 2, kWp = W + 2 * kPad, kHp = H + 2 * kPad, kPlane = H * W, kTaps = K * K;
  constexpr int kGroups = kPlane / kLanes;  // then the last kPlane % kLanes pixels one by one
  alignas(32) float padded[kHp * kWp * kLanes];
  auto at = [](int q) { return ((q / W + kPad) * kWp + q % W + kPad) * kLanes; };
  // The border: the rows above and below, and kPad pixels each side of a row.
  const __m256 zero = _mm256_setzero_ps();
  for (int i = 0; i < kPad * kWp; ++i) {
    _mm256_store_ps(padded + i * kLanes, zero);
    _mm256_store_ps(padded + ((kHp - kPad) * kWp + i) * kLanes, zero);
  }
  for (int r = kPad; r < kHp - kPad; ++r)
    for (int j = 0; j < kPad; ++j) {
      _mm256_store_ps(padded + (r * kWp + j) * kLanes, zero);
      _mm256_store_ps(padded + (r * kWp + kWp - 1 - j) * kLanes, zero);
    }
  for (int g = 0; g < kGroups; ++g) {
    const float* rows[8];
    for (int c = 0; c < 8; ++c) rows[c] = in + c * kPlane + g * kLanes;
    __m256 px[8];
    detail::channels_to_lanes(rows, px);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) _mm256_store_ps(padded + at(g * kLanes + i), px[i]);
  }
  for (int q = kGroups * kLanes; q < kPlane; ++q) _mm256_store_ps(padded + at(q), detail::lanes_of(in + q, kPlane));
  __m256 weights[kTaps];
  for (int t = 0; t < kTaps; ++t) weights[t] = detail::lanes_of(w + t, kTaps);
  // Output q's window starts at the padded plane's pixel (q / W, q % W).
  auto output = [&](int q) __attribute__((always_inline)) {
    const float* window = padded + ((q / W) * kWp + q % W) * kLanes;
    __m256 acc = _mm256_mul_ps(_mm256_load_ps(window), weights[0]);
#pragma GCC unroll 25
    for (int t = 1; t < kTaps; ++t)
      acc = _mm256_fmadd_ps(_mm256_load_ps(window + ((t / K) * kWp + t % K) * kLanes), weights[t], acc);
    return acc;
  };
  for (int g = 0; g < kGroups; ++g) {
    __m256 px[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) px[i] = output(g * kLanes + i);
    float* rows[8];
    for (int c = 0; c < 8; ++c) rows[c] = result + c * kPlane + g * kLanes;
    detail::lanes_to_channels(px, rows);
  }
  for (int q = kGroups * kLanes; q < kPlane; ++q) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, output(q));
    for (int c = 0; c < 8; ++c) result[c * kPlane + q] = lanes[c];
  }
}

}  // namespace avx2
}  // namespace tg_dwconv
