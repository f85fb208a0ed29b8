// codegen/ukernels/winograd_f23.h against a direct 3x3 convolution in double:
// the input transform of two sources into one V (a Concat along the
// channels: kVChannels), the 16 GEMMs and the output transform of every row
// panel, on maps with odd sizes (tiles half outside the plane), a short last
// column panel and a half panel. The header needs AVX-512F: it is compiled
// here under a target pragma, as tests/unit/sgemm_variants/ do, and the tests
// skip on CPUs without it.
#include <gtest/gtest.h>

#include "codegen/lowering/lower_winograd_conv_kernel.h"
#include "tests/unit/avx512_test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "tests/unit/avx512_target_begin.h"
#define TG_SGEMM_FORCE 1
#include "codegen/ukernels/sgemm_avx512.h"
#include "codegen/ukernels/winograd_f23.h"
#undef TG_SGEMM_FORCE

namespace {

constexpr int64_t kMR = tg_sgemm::kMR, kNR = tg_sgemm::kNR;
// V's floats for the tests' 40 channels: 16 planes, each padded (kPlanePad).
constexpr int64_t kVFloats = 16 * tg_winograd::plane_floats<40>();
constexpr int64_t kUkernelPlanePad = tg_winograd::kPlanePad;

// 11 x 13 (odd both ways: 6 x 7 = 42 tiles, column panels of 32 and 10), 40
// channels from two sources of 24 and 16; and 6 x 6 (9 tiles: a half
// panel), 40 channels from one.
void odd_map_inputs(const float* x0, const float* x1, float* v, int64_t first) {
  tg_winograd::input_tiles<24, 11, 13, false, 40>(x0, v, first);
  tg_winograd::input_tiles<16, 11, 13, false, 40>(x1, v + 24 * kNR, first);
}
void odd_map_panel(const float* u, const float* v, float* m, float* y) { tg_winograd::row_panel<40, false>(u, v, m, y); }
void half_map_inputs(const float* x, float* v, int64_t first) { tg_winograd::input_tiles<40, 6, 6, true>(x, v, first); }
void half_map_panel(const float* u, const float* v, float* m, float* y) { tg_winograd::row_panel<40, true>(u, v, m, y); }
// 12-filter panels (tg_sgemm::wide), a last one of 4 or 8 filters.
void wide_map_panel(int64_t rows, const float* u, const float* v, float* m, float* y) {
  if (rows == 12) tg_winograd::row_panel<40, false, 12>(u, v, m, y);
  else if (rows == 8) tg_winograd::row_panel<40, false, 12, 8>(u, v, m, y);
  else tg_winograd::row_panel<40, false, 12, 4>(u, v, m, y);
}

}  // namespace

#include "tests/unit/avx512_target_end.h"

namespace {

constexpr int64_t kC = 40;
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

using tilegraph::testing::random_values;

// The filters' layout: `filters` of them in row panels of `rows` (the
// last one may hold fewer), as the lowering packs them.
struct Panels {
  int64_t filters = 2 * kMR, rows = kMR;
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
template <typename Inputs, typename Panel>
int64_t check_map(int64_t h, int64_t wd, int64_t panel_tiles, const Panels& panels, Inputs inputs, Panel panel) {
  const std::vector<float> x = random_values(static_cast<size_t>(kC * h * wd), 1);
  const std::vector<float> w = random_values(static_cast<size_t>(panels.filters * kC * 9), 2);
  const std::vector<float> u = transformed_filters(w, panels);
  const int64_t tiles_w = (wd + 1) / 2, tiles = (h + 1) / 2 * tiles_w, mr = panels.rows;
  alignas(64) static float v[kVFloats], m[16 * 12 * kNR], y[4 * 12 * kNR];
  int64_t compared = 0;
  for (int64_t first = 0; first < tiles; first += panel_tiles) {
    inputs(x.data(), v, first);
    for (int64_t p = 0; p < panels.count(); ++p) {
      panel(panels.rows_of(p), u.data() + p * 16 * kC * mr, v, m, y);
      for (int64_t j = 0; j < panel_tiles && first + j < tiles; ++j)
        for (int64_t r = 0; r < panels.rows_of(p); ++r)
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx) {
              const int64_t tile = first + j, oy = tile / tiles_w * 2 + dy, ox = tile % tiles_w * 2 + dx;
              if (oy >= h || ox >= wd) continue;
              const double want = direct_conv(x, w, h, wd, p * mr + r, oy, ox);
              const float got = y[(dy * mr + r) * 2 * kNR + 2 * j + dx];
              if (std::fabs(got - want) > 1e-4 * std::max(1.0, std::fabs(want))) {
                ADD_FAILURE() << "filter " << p * mr + r << " output (" << oy << ", " << ox << ") of tile " << tile
                              << ": " << got << ", want " << want;
                return compared;
              }
              ++compared;
            }
    }
  }
  return compared;
}

// An 8-filter panel function as check_map calls it.
template <void (*kPanel)(const float*, const float*, float*, float*)>
void eight_rows(int64_t, const float* u, const float* v, float* m, float* y) {
  kPanel(u, v, m, y);
}

TEST(WinogradF23, OddMapFromTwoSourcesMatchesTheDirectConv) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const int64_t h = 11, wd = 13;
  // Both sources read from one [40, 11, 13] tensor: the first 24 channels and the last 16.
  const Panels panels;
  const int64_t compared = check_map(h, wd, kNR, panels, [&](const float* x, float* v, int64_t first) {
    odd_map_inputs(x, x + 24 * h * wd, v, first);
  }, eight_rows<odd_map_panel>);
  EXPECT_EQ(compared, panels.filters * h * wd);
}

// 12-filter panels: 28 filters (12, 12 and a last panel of 4) and 32 (a
// last panel of 8), on the odd map's two column panels.
TEST(WinogradF23, WidePanelsWithALastShortPanelMatchTheDirectConv) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const int64_t h = 11, wd = 13;
  for (int64_t filters : {28, 32}) {
    const Panels panels{filters, 12};
    const int64_t compared = check_map(h, wd, kNR, panels, [&](const float* x, float* v, int64_t first) {
      odd_map_inputs(x, x + 24 * h * wd, v, first);
    }, wide_map_panel);
    EXPECT_EQ(compared, filters * h * wd) << filters << " filters";
  }
}

// The lowering sizes V's scratch with the pad the ukernel lays its planes out
// with: a smaller one would let the last planes run into the accumulators.
TEST(WinogradF23, LoweringAndUkernelPadThePlanesAlike) {
  EXPECT_EQ(tilegraph::codegen::kWinogradPlanePad, kUkernelPlanePad);
}

TEST(WinogradF23, HalfPanelMatchesTheDirectConv) {
  if (!tilegraph::testing::avx512f_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const Panels panels;
  const int64_t compared = check_map(6, 6, kNR / 2, panels, half_map_inputs, eight_rows<half_map_panel>);
  EXPECT_EQ(compared, panels.filters * 36);
}

}  // namespace

#endif  // defined(__x86_64__)
