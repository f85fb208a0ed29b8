// codegen/ukernels/winograd_f23_<isa>.h (every variant built in:
// tests/unit/winograd_variants/) against a direct 3x3 convolution in double:
// the input transform of two sources into one V (a Concat along the
// channels), the 16 GEMMs and the output transform of every row panel, on
// maps with odd sizes (tiles half outside the plane, tile rows that split a
// panel), a short last column panel, a half panel and a short last row panel.
// A variant the CPU lacks is skipped.
#include <gtest/gtest.h>

#include "codegen/lowering/lower_winograd_conv_kernel.h"
#include "tests/unit/avx512_test_support.h"
#include "tests/unit/winograd_variants/winograd_variant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using tilegraph::testing::random_values;

constexpr int64_t kC = 40;
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

// The filters' layout: `filters` of them in row panels of `rows` (the
// last one may hold fewer), as the lowering packs them.
struct Panels {
  int64_t filters = 0, rows = 0;
  int64_t count() const { return (filters + rows - 1) / rows; }
  int64_t rows_of(int64_t p) const { return std::min(rows, filters - p * rows); }
};

// The lowering's filter pack: u[((p * 16 + t) * C + c) * P + r] =
// sum over (i, j) of G[t / 4][i] * G[t % 4][j] * w[p * P + r][c][i][j], 0
// past the last filter.
std::vector<float> transformed_filters(const std::vector<float>& w, const Panels& panels) {
  std::vector<float> u(static_cast<size_t>(panels.count() * panels.rows * 16 * kC), 0.0f);
  for (int64_t p = 0; p < panels.count(); ++p)
    for (int64_t t = 0; t < 16; ++t)
      for (int64_t c = 0; c < kC; ++c)
        for (int64_t r = 0; r < panels.rows_of(p); ++r) {
          double s = 0;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
              s += kG[t / 4][i] * kG[t % 4][j] *
                   w[static_cast<size_t>(((p * panels.rows + r) * kC + c) * 9 + i * 3 + j)];
          u[static_cast<size_t>(((p * 16 + t) * kC + c) * panels.rows + r)] = static_cast<float>(s);
        }
  return u;
}

double direct_conv(const std::vector<float>& x, const std::vector<float>& w, int64_t h, int64_t wd, int64_t f,
                   int64_t oy, int64_t ox) {
  double s = 0;
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t y = oy + i - 1, xx = ox + j - 1;
        if (y < 0 || y >= h || xx < 0 || xx >= wd) continue;
        s += double(x[static_cast<size_t>((c * h + y) * wd + xx)]) * w[static_cast<size_t>((f * kC + c) * 9 + i * 3 + j)];
      }
  return s;
}


// Runs every column panel (`panel_tiles` tiles each) and row panel of an
// h x wd map and compares each output inside the plane with the direct
// conv; returns how many outputs were compared. panel(rows, u, v, m, y)
// runs a row panel of `rows` filters.
template <typename InputsFn, typename PanelFn>
int64_t check_map(const WinogradVariantInfo& wv, int64_t h, int64_t wd, int64_t panel_tiles, const Panels& panels,
                  InputsFn inputs, PanelFn panel) {
  const std::vector<float> x = random_values(static_cast<size_t>(kC * h * wd), 1);
  const std::vector<float> w = random_values(static_cast<size_t>(panels.filters * kC * 9), 2);
  const std::vector<float> u = transformed_filters(w, panels);
  const int64_t tiles_w = (wd + 1) / 2, tiles = (h + 1) / 2 * tiles_w, mr = panels.rows, nr = wv.nr;
  std::vector<float> v(static_cast<size_t>(wv.v_floats)), m(static_cast<size_t>(16 * mr * nr)),
      y(static_cast<size_t>(4 * mr * nr));
  int64_t compared = 0;
  for (int64_t first = 0; first < tiles; first += panel_tiles) {
    inputs(x.data(), v.data(), first);
    for (int64_t p = 0; p < panels.count(); ++p) {
      panel(panels.rows_of(p), u.data() + p * 16 * kC * mr, v.data(), m.data(), y.data());
      for (int64_t j = 0; j < panel_tiles && first + j < tiles; ++j)
        for (int64_t r = 0; r < panels.rows_of(p); ++r)
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx) {
              const int64_t tile = first + j, oy = tile / tiles_w * 2 + dy, ox = tile % tiles_w * 2 + dx;
              if (oy >= h || ox >= wd) continue;
              const double want = direct_conv(x, w, h, wd, p * mr + r, oy, ox);
              const float got = y[static_cast<size_t>((dy * mr + r) * 2 * nr + 2 * j + dx)];
              if (std::fabs(got - want) > 1e-4 * std::max(1.0, std::fabs(want))) {
                ADD_FAILURE() << wv.name << ": filter " << p * mr + r << " output (" << oy << ", " << ox
                              << ") of tile " << tile << ": " << got << ", want " << want;
                return compared;
              }
              ++compared;
            }
    }
  }
  return compared;
}

// The variants this binary has and this CPU runs.
std::vector<WinogradVariantInfo> runnable_variants() {
  std::vector<WinogradVariantInfo> out;
  for (auto* variant : {&winograd_avx2_variant, &winograd_avx512_variant})
    if (variant != nullptr && variant().supported()) out.push_back(variant());
  return out;
}

// The 11 x 13 map's inputs: both sources read one [40, 11, 13] tensor, the
// first 24 channels and the last 16.
auto odd_map(const WinogradVariantInfo& wv) {
  return [&wv](const float* x, float* v, int64_t first) { wv.odd_map_inputs(x, x + 24 * 11 * 13, v, first); };
}

TEST(WinogradF23, EveryVariantIsBuiltOnX86) {
#if defined(__x86_64__)
  EXPECT_NE(&winograd_avx2_variant, nullptr);
  EXPECT_NE(&winograd_avx512_variant, nullptr);
  if (&winograd_avx2_variant != nullptr) {
    EXPECT_STREQ(winograd_avx2_variant().name, "avx2");
  }
  if (&winograd_avx512_variant != nullptr) {
    EXPECT_STREQ(winograd_avx512_variant().name, "avx512");
  }
#else
  GTEST_SKIP() << "the Winograd transforms are x86-64 only";
#endif
}

TEST(WinogradF23, OddMapFromTwoSourcesMatchesTheDirectConv) {
  const auto variants = runnable_variants();
  if (variants.empty()) GTEST_SKIP() << "no Winograd variant runs on this CPU";
  for (const WinogradVariantInfo& wv : variants) {
    const Panels panels{2 * wv.mr, wv.mr};
    EXPECT_EQ(check_map(wv, 11, 13, wv.nr, panels, odd_map(wv), wv.panel), panels.filters * 11 * 13) << wv.name;
  }
}

// A last row panel of tail_rows filters (its U rows past them are zeros).
TEST(WinogradF23, ShortLastRowPanelMatchesTheDirectConv) {
  const auto variants = runnable_variants();
  if (variants.empty()) GTEST_SKIP() << "no Winograd variant runs on this CPU";
  for (const WinogradVariantInfo& wv : variants) {
    const Panels panels{2 * wv.mr + wv.tail_rows, wv.mr};
    EXPECT_EQ(check_map(wv, 11, 13, wv.nr, panels, odd_map(wv), wv.panel), panels.filters * 11 * 13) << wv.name;
  }
}

// 12-filter panels: 28 filters (12, 12 and a last panel of 4) and 32 (a
// last panel of 8), on the odd map's two column panels.
TEST(WinogradF23, WidePanelsWithALastShortPanelMatchTheDirectConv) {
  bool ran = false;
  for (const WinogradVariantInfo& wv : runnable_variants()) {
    if (wv.wide_rows == 0) continue;
    ran = true;
    for (int64_t filters : {28, 32}) {
      const Panels panels{filters, wv.wide_rows};
      EXPECT_EQ(check_map(wv, 11, 13, wv.nr, panels, odd_map(wv), wv.wide_panel), filters * 11 * 13)
          << wv.name << ", " << filters << " filters";
    }
  }
  if (!ran) GTEST_SKIP() << "no variant with wide panels runs on this CPU";
}

// The lowering sizes V's scratch with the pad the ukernels lay their planes
// out with: a smaller one would let the last planes run into the accumulators.
TEST(WinogradF23, LoweringAndUkernelsPadThePlanesAlike) {
  for (auto* variant : {&winograd_avx2_variant, &winograd_avx512_variant})
    if (variant != nullptr) {
      EXPECT_EQ(tilegraph::codegen::kWinogradPlanePad, variant().plane_pad);
    }
}

TEST(WinogradF23, HalfPanelMatchesTheDirectConv) {
  const auto variants = runnable_variants();
  if (variants.empty()) GTEST_SKIP() << "no Winograd variant runs on this CPU";
  for (const WinogradVariantInfo& wv : variants) {
    const Panels panels{wv.mr, wv.mr};
    auto panel = [&wv](int64_t, const float* u, const float* v, float* m, float* y) { wv.half_panel(u, v, m, y); };
    EXPECT_EQ(check_map(wv, 6, 6, wv.nr / 2, panels, wv.half_map_inputs, panel), panels.filters * 36) << wv.name;
  }
}

}  // namespace
