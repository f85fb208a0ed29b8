// Feasibility probe for Winograd F(2x2, 3x3) on the float micro-kernel
// (issue 15): ResNet-50's stride-1 3x3 convolutions (+ bias + ReLU), batch 1,
// one thread. Not part of the compiler, not a test and not part of the CMake
// build: it measures what a Winograd lowering would reach before one is built.
// Needs AVX-512F. From the repository root:
//
//   g++ -O3 -march=native -mprefer-vector-width=512 -fopenmp-simd -I. benchmarks/winograd_f23_probe.cpp -o /tmp/winograd_f23_probe
//   /tmp/winograd_f23_probe [iters]
//
// Per shape it prints the median time, the direct convolution's FLOPs over
// that time (the rate an implicit GEMM would need to tie), and the largest
// error against a direct convolution summed in double, relative to the
// largest output. The peer: the same convs' kernels (conv2 of the blocks
// past each layer's first, with their BatchNorm and ReLU fused) in a tuned
// ResNet-50, alternated with the probe in the same session:
//
//   PYTHONPATH=python python3 -m tilegraph.torch2onnx resnet50 --opset 17 --prefix P
//   build/bin/tilegraph tune P
//   P/tilegraph_rt/host/build/main_test --threads 1 --iters 10 --profile | grep 'conv2/Conv'
//
// Why it can win: F(2x2, 3x3) computes a 2 x 2 output tile from a 4 x 4 input
// tile with 16 multiplies per (input, output) channel pair where the direct
// form needs 36: the GEMMs do 2.25x fewer FLOPs. The cost is the transforms
// (additions only, O(C + K) per tile) and float error a little above the
// direct sum's.
//
// Blocking: tiles go in column panels of the micro-kernel's width (32). Per
// panel the input transform writes the 16 transformed planes V_t (C x 32,
// B-panel layout), then per row panel of 8 filters the 16 GEMMs
// U_t (8 x C, packed once) x V_t land in 16 accumulator tiles, which the
// output transform turns into 8 x 32 output tiles with bias and ReLU. V and M
// stay in the caches: nothing but the input, the output and U goes to memory.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "codegen/ukernels/sgemm_avx512.h"

namespace {

using tg_sgemm::kMR;
using tg_sgemm::kNR;

struct ConvShape {
  const char* name;
  int c, k, h, w;
};

// U_t = G g G^T for each (filter, channel) pair, packed as A panels:
// u[((t * K/kMR + p) * C + c) * kMR + r] = U_t[p * kMR + r][c].
std::vector<float> transform_filters(const std::vector<float>& wt, int k_count, int c_count) {
  const float g[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  std::vector<float> u(static_cast<size_t>(16) * k_count * c_count);
  const int panels = k_count / kMR;
  for (int k = 0; k < k_count; ++k)
    for (int c = 0; c < c_count; ++c) {
      const float* f = &wt[(static_cast<size_t>(k) * c_count + c) * 9];
      float gf[4][3];  // G g
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) gf[i][j] = g[i][0] * f[j] + g[i][1] * f[3 + j] + g[i][2] * f[6 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const float v = gf[i][0] * g[j][0] + gf[i][1] * g[j][1] + gf[i][2] * g[j][2];
          const int t = i * 4 + j, p = k / kMR, r = k % kMR;
          u[((static_cast<size_t>(t) * panels + p) * c_count + c) * kMR + r] = v;
        }
    }
  return u;
}

// The input transform of one column panel: v[(t * C + c) * kNR + j] = (B^T d B)[t]
// for the 4 x 4 patch d of tile first + j (zero outside the image: pad 1).
void transform_inputs(const float* x, int c_count, int h, int w, int tiles_w, int tiles, int first, float* v) {
  int row0[kNR], col0[kNR];
  for (int j = 0; j < kNR; ++j) {
    const int tile = std::min(first + j, tiles - 1);  // a short last panel repeats its last tile
    row0[j] = 2 * (tile / tiles_w) - 1;
    col0[j] = 2 * (tile % tiles_w) - 1;
  }
  for (int c = 0; c < c_count; ++c) {
    const float* xc = x + static_cast<size_t>(c) * h * w;
#pragma omp simd
    for (int j = 0; j < kNR; ++j) {
      float d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int l = 0; l < 4; ++l) {
          const int y = row0[j] + i, z = col0[j] + l;
          d[i][l] = (y >= 0 && y < h && z >= 0 && z < w) ? xc[y * w + z] : 0.0f;
        }
      float e[4][4];  // B^T d: rows
      for (int l = 0; l < 4; ++l) {
        e[0][l] = d[0][l] - d[2][l];
        e[1][l] = d[1][l] + d[2][l];
        e[2][l] = d[2][l] - d[1][l];
        e[3][l] = d[1][l] - d[3][l];
      }
      for (int i = 0; i < 4; ++i) {  // (B^T d) B: columns
        float* vi = v + (static_cast<size_t>(i * 4) * c_count + c) * kNR + j;
        const size_t plane = static_cast<size_t>(c_count) * kNR;
        vi[0 * plane] = e[i][0] - e[i][2];
        vi[1 * plane] = e[i][1] + e[i][2];
        vi[2 * plane] = e[i][2] - e[i][1];
        vi[3 * plane] = e[i][1] - e[i][3];
      }
    }
  }
}

// The output transform of one (row panel, column panel): out = relu(A^T m A + bias)
// for filters p*8.. and tiles first.., m the 16 accumulator tiles (t * kMR * kNR + r * kNR + j).
void transform_outputs(const float* m, const float* bias, int p, int first, int tiles, int tiles_w, int h, int w,
                       float* out) {
  for (int r = 0; r < kMR; ++r) {
    float y[4][kNR];
#pragma omp simd
    for (int j = 0; j < kNR; ++j) {
      float s[4][4];
      for (int t = 0; t < 16; ++t) s[t / 4][t % 4] = m[(t * kMR + r) * kNR + j];
      float a[2][4];  // A^T s: rows
      for (int l = 0; l < 4; ++l) {
        a[0][l] = s[0][l] + s[1][l] + s[2][l];
        a[1][l] = s[1][l] - s[2][l] - s[3][l];
      }
      const float b = bias[p * kMR + r];
      for (int i = 0; i < 2; ++i) {
        y[2 * i][j] = std::max(a[i][0] + a[i][1] + a[i][2] + b, 0.0f);
        y[2 * i + 1][j] = std::max(a[i][1] - a[i][2] - a[i][3] + b, 0.0f);
      }
    }
    float* o = out + static_cast<size_t>(p * kMR + r) * h * w;
    const int count = std::min(kNR, tiles - first);
    for (int j = 0; j < count; ++j) {
      const int tile = first + j, oy = 2 * (tile / tiles_w), ox = 2 * (tile % tiles_w);
      for (int q = 0; q < 4; ++q) {
        const int yy = oy + q / 2, xx = ox + q % 2;
        if (yy < h && xx < w) o[yy * w + xx] = y[q][j];
      }
    }
  }
}

void winograd_conv(const ConvShape& s, const float* x, const float* u, const float* bias, float* v, float* m,
                   float* out) {
  const int tiles_w = (s.w + 1) / 2, tiles = ((s.h + 1) / 2) * tiles_w, panels = s.k / kMR;
  for (int first = 0; first < tiles; first += kNR) {
    transform_inputs(x, s.c, s.h, s.w, tiles_w, tiles, first, v);
    // A last panel of at most 16 tiles (layer4's 4 x 4 tiles) takes half the FMAs.
    const bool half = tiles - first <= tg_sgemm::kLanes;
    for (int p = 0; p < panels; ++p) {
      for (int t = 0; t < 16; ++t) {
        const float* a = u + (static_cast<size_t>(t) * panels + p) * s.c * kMR;
        const float* b = v + static_cast<size_t>(t) * s.c * kNR;
        if (half)
          tg_sgemm::tile<tg_sgemm::kLanes>(s.c, a, b, m + t * kMR * kNR, false);
        else
          tg_sgemm::tile(s.c, a, b, m + t * kMR * kNR, false);
      }
      transform_outputs(m, bias, p, first, tiles, tiles_w, s.h, s.w, out);
    }
  }
}

// relu(conv3x3(x, wt, pad 1) + bias) at every output, summed in double.
std::vector<double> direct_conv(const ConvShape& s, const std::vector<float>& x, const std::vector<float>& wt,
                                const std::vector<float>& bias) {
  std::vector<double> out(static_cast<size_t>(s.k) * s.h * s.w);
  std::vector<double> acc(static_cast<size_t>(s.h) * s.w);
  for (int k = 0; k < s.k; ++k) {
    std::fill(acc.begin(), acc.end(), static_cast<double>(bias[k]));
    for (int c = 0; c < s.c; ++c)
      for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) {
          const double f = wt[(static_cast<size_t>(k) * s.c + c) * 9 + dy * 3 + dx];
          for (int y = 0; y < s.h; ++y) {
            const int iy = y + dy - 1;
            if (iy < 0 || iy >= s.h) continue;
            for (int z = 0; z < s.w; ++z) {
              const int iz = z + dx - 1;
              if (iz >= 0 && iz < s.w) acc[y * s.w + z] += f * x[(static_cast<size_t>(c) * s.h + iy) * s.w + iz];
            }
          }
        }
    for (size_t i = 0; i < acc.size(); ++i) out[k * acc.size() + i] = std::max(acc[i], 0.0);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  const ConvShape shapes[] = {{"layer1 56x56 64->64", 64, 64, 56, 56},
                              {"layer2 28x28 128->128", 128, 128, 28, 28},
                              {"layer3 14x14 256->256", 256, 256, 14, 14},
                              {"layer4 7x7 512->512", 512, 512, 7, 7}};
  std::mt19937 rng(7);
  std::printf("%-24s %10s %16s %12s\n", "shape", "median ms", "direct GFLOP/s", "rel error");
  for (const ConvShape& s : shapes) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(s.c) * s.h * s.w), wt(static_cast<size_t>(s.k) * s.c * 9), bias(s.k);
    for (float& e : x) e = normal(rng);
    for (float& e : wt) e = normal(rng) / std::sqrt(9.0f * s.c);
    for (float& e : bias) e = 0.1f * normal(rng);
    const std::vector<float> u = transform_filters(wt, s.k, s.c);
    std::vector<float> v(static_cast<size_t>(16) * s.c * kNR), m(16 * kMR * kNR);
    std::vector<float> out(static_cast<size_t>(s.k) * s.h * s.w);
    std::vector<double> times;
    for (int i = 0; i < iters + 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      winograd_conv(s, x.data(), u.data(), bias.data(), v.data(), m.data(), out.data());
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= 3) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    const double ms = times[times.size() / 2];
    const std::vector<double> ref = direct_conv(s, x, wt, bias);
    double err = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err = std::max(err, std::fabs(ref[i] - out[i]));
      scale = std::max(scale, std::fabs(ref[i]));
    }
    const double flops = 2.0 * s.k * s.c * 9.0 * s.h * s.w;
    std::printf("%-24s %10.3f %16.1f %12.2e\n", s.name, ms, flops / (ms * 1e6), err / scale);
  }
  return 0;
}
