// scheduler::winograd_conv_pays: which stride-1 3x3 convs run as Winograd
// F(2x2, 3x3), against the measurements scheduler/winograd_conv.h records.
#include <gtest/gtest.h>

#include "scheduler/winograd_conv.h"

namespace {

using tilegraph::scheduler::WinogradConv;
using tilegraph::scheduler::WinogradTarget;
using tilegraph::scheduler::winograd_conv_pays;
using tilegraph::scheduler::winograd_flops;

WinogradConv conv(int64_t channels, int64_t filters, int64_t side) {
  WinogradConv c;
  c.batch = 1;
  c.channels = channels;
  c.filters = filters;
  c.height = c.width = side;
  return c;
}

// The host specs of the two machines measured (2 cores each; the spec's
// peak rate, DRAM bandwidth): a Zen 1 with AVX2 and a Xeon with AVX-512.
const WinogradTarget kZen1{1, 160e9, 20e9};
const WinogradTarget kXeon{8, 470e9, 20e9};

TEST(WinogradConvPays, StreamedFiltersOnASmallMapDependOnTheMachine) {
  // ResNet-50's 512-channel convs on 7 x 7: 16 tiles, 16 MiB of transformed
  // filters. The Xeon reads them slower than it computes; the Zen 1 not.
  EXPECT_FALSE(winograd_conv_pays(conv(512, 512, 7), kXeon));
  EXPECT_TRUE(winograd_conv_pays(conv(512, 512, 7), kZen1));
  // One tile: nowhere.
  EXPECT_FALSE(winograd_conv_pays(conv(384, 384, 2), kZen1));
  EXPECT_FALSE(winograd_conv_pays(conv(384, 384, 2), kXeon));
  // Without rates (a target that gives none) only the sure cases.
  EXPECT_FALSE(winograd_conv_pays(conv(512, 512, 7), WinogradTarget{1, 0, 0}));
}

TEST(WinogradConvPays, CachedFiltersOrManyTilesAlwaysPay) {
  for (const WinogradTarget& t : {kZen1, kXeon, WinogradTarget{1, 0, 0}}) {
    EXPECT_TRUE(winograd_conv_pays(conv(256, 256, 14), t));  // 49 tiles, 4 MiB
    EXPECT_TRUE(winograd_conv_pays(conv(160, 160, 8), t));   // 16 tiles, 1.6 MiB
    EXPECT_TRUE(winograd_conv_pays(conv(64, 64, 56), t));
  }
}

// The host spec of a 2-core AVX-512 machine as built in (its peak counts
// two full-width FMA pipes), on a core with full-width pipes or, like Zen 4,
// one that splits its 512-bit FMAs in halves.
tilegraph::scheduler::ArchSpec avx512_host(bool half_width_fma) {
  tilegraph::scheduler::ArchSpec a;
  a.target = "cpu";
  a.peak_fp32_flops = 320e9;
  a.half_width_fma = half_width_fma;
  return a;
}

WinogradTarget target_of(const tilegraph::scheduler::ArchSpec& a) { return {8, winograd_flops(a), 20e9}; }

TEST(WinogradConvPays, HalfWidthFmaHalvesThePeakACalibratedRateReplaces) {
  EXPECT_EQ(winograd_flops(avx512_host(false)), 320e9);
  EXPECT_EQ(winograd_flops(avx512_host(true)), 160e9);
  tilegraph::scheduler::ArchSpec calibrated = avx512_host(true);
  calibrated.ukernel_fp32_flops = 230e9;
  EXPECT_EQ(winograd_flops(calibrated), 230e9);
  // ResNet-50's 512-channel convs on 7 x 7: Winograd on the Zen 4 (1.30
  // against 2.42 ms measured), not where the FMAs run full width.
  EXPECT_TRUE(winograd_conv_pays(conv(512, 512, 7), target_of(avx512_host(true))));
  EXPECT_FALSE(winograd_conv_pays(conv(512, 512, 7), target_of(avx512_host(false))));
}

}  // namespace
