// Throughput of the integer GEMM micro-kernels (codegen/ukernels/qgemm_*.h):
// each variant this CPU can run calls tile() in a hot loop with K = 768 over
// packed B panels that stay in L1 (one panel) or in L2 (about 192 KiB of
// panels), and reports the median of several repetitions as GOPS (2 ops per
// multiply-add), MACs per cycle at an assumed core clock, and MACs per TSC
// tick (the TSC counts at the nominal clock, not the boosted one), plus the
// best repetition's GOPS.
//
// Not a test and not part of the CMake build. From the repository root:
//   g++ -std=c++20 -O2 -I. benchmarks/qgemm_ukernel_bench.cpp tests/unit/qgemm_variants/*.cpp -o /tmp/qgemm_ukernel_bench
//   /tmp/qgemm_ukernel_bench [GHZ]     # GHZ: assumed core clock, default 3.0
// The SIMD variants come from tests/unit/qgemm_variants/, which build each one
// for its own instruction set, so the binary runs on any x86-64 CPU. Run it on
// an idle machine: other load shows up directly in the numbers.
#include "codegen/ukernels/qgemm_scalar.h"
#include "tests/unit/qgemm_variants/qgemm_variant.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

constexpr int64_t kK = 768;
constexpr int kRepetitions = 9;
constexpr double kSecondsPerRepetition = 0.05;

uint64_t tsc_now() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

// 64-byte aligned random bytes, as the contract wants for panels.
struct Panel {
  explicit Panel(size_t size, std::mt19937& rng) : storage(size + 64) {
    void* p = storage.data();
    size_t space = storage.size();
    data = static_cast<uint8_t*>(std::align(64, size, p, space));
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(byte(rng));
  }
  std::vector<uint8_t> storage;
  uint8_t* data;
};

struct Measurement {
  double macs_per_second;  // median repetition
  double macs_per_tick;    // same repetition
  double best_macs_per_second;
};

// Median over repetitions of calling v.tile once per B panel, round robin.
Measurement measure(const QGemmVariantInfo& v, int64_t b_panel_count) {
  std::mt19937 rng(7);
  const int64_t k_groups = kK / v.ku;
  const Panel a(size_t(v.mr) * kK * v.a_bytes, rng);  // int16 where a_bytes is 2: any values time the same
  std::vector<Panel> b;
  for (int64_t i = 0; i < b_panel_count; ++i) b.emplace_back(size_t(v.nr) * kK, rng);
  std::vector<int32_t> c(size_t(v.mr) * v.nr * b_panel_count);
  const double macs_per_call = double(v.mr) * v.nr * kK;

  auto run = [&](int64_t calls) {
    for (int64_t i = 0; i < calls; ++i) {
      const int64_t p = i % b_panel_count;
      v.tile(k_groups, a.data, reinterpret_cast<const int8_t*>(b[p].data), c.data() + p * v.mr * v.nr);
    }
  };

  // Warm the caches and size a repetition to about kSecondsPerRepetition.
  int64_t calls = b_panel_count;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    run(calls);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > kSecondsPerRepetition / 4) {
      calls = std::max<int64_t>(1, int64_t(calls * kSecondsPerRepetition / s));
      break;
    }
    calls *= 4;
  }

  std::vector<Measurement> reps;
  for (int r = 0; r < kRepetitions; ++r) {
    const uint64_t tick0 = tsc_now();
    const auto t0 = std::chrono::steady_clock::now();
    run(calls);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t ticks = tsc_now() - tick0;
    const double macs = macs_per_call * double(calls);
    reps.push_back({macs / s, ticks ? macs / double(ticks) : 0.0, 0.0});
  }
  std::sort(reps.begin(), reps.end(),
            [](const Measurement& x, const Measurement& y) { return x.macs_per_second < y.macs_per_second; });
  Measurement median = reps[reps.size() / 2];
  median.best_macs_per_second = reps.back().macs_per_second;
  return median;
}

}  // namespace

int main(int argc, char** argv) {
  const double ghz = argc > 1 ? std::atof(argv[1]) : 3.0;
  if (!(ghz > 0)) {
    std::fprintf(stderr, "usage: %s [assumed core clock in GHz, default 3.0]\n", argv[0]);
    return 2;
  }

  std::vector<QGemmVariantInfo> variants;
  {
    namespace s = tg_qgemm::scalar;
    variants.push_back(
        {s::kVariant, s::kMR, s::kNR, s::kKU, s::kAUnsigned, s::tile, [] { return true; }, nullptr, 0, s::kABytes});
  }
  if (qgemm_avx2_variant) variants.push_back(qgemm_avx2_variant());
  if (qgemm_avx512vnni_variant) variants.push_back(qgemm_avx512vnni_variant());

  std::printf("K = %lld, median of %d repetitions, MAC/cycle assumes %.2f GHz\n",
              static_cast<long long>(kK), kRepetitions, ghz);
  std::printf("%-11s %-6s %-22s %8s %8s %10s %9s %9s\n", "variant", "tile", "B panels", "GOPS", "GMAC/s",
              "MAC/cycle", "MAC/tick", "best GOPS");
  for (const QGemmVariantInfo& v : variants) {
    if (!v.supported()) {
      std::printf("%-11s (not supported by this CPU)\n", v.name);
      continue;
    }
    const int64_t panel_bytes = int64_t{v.nr} * kK;
    const int64_t l2_panels = std::max<int64_t>(2, (192 << 10) / panel_bytes);
    for (int64_t panels : {int64_t{1}, l2_panels}) {
      const Measurement m = measure(v, panels);
      char tile[16];
      char where[32];
      std::snprintf(tile, sizeof(tile), "%dx%d", v.mr, v.nr);
      std::snprintf(where, sizeof(where), "%lld (%lld KiB, %s)", static_cast<long long>(panels),
                    static_cast<long long>(panels * panel_bytes >> 10), panels == 1 ? "L1" : "L2");
      std::printf("%-11s %-6s %-22s %8.1f %8.1f %10.1f %9.1f %9.1f\n", v.name, tile, where,
                  2 * m.macs_per_second / 1e9, m.macs_per_second / 1e9, m.macs_per_second / (ghz * 1e9),
                  m.macs_per_tick, 2 * m.best_macs_per_second / 1e9);
    }
  }
  return 0;
}
