// The thread pool's adaptive spin (tg_pool::SpinBudget in
// codegen/thread_pool/tg_thread_pool.h): fed samples of involuntary context
// switches, it keeps the full spin while switches are rare, turns it off
// under sustained contention and brings it back when that ends. A pure
// controller: these tests feed it samples and check the budget, no clocks.
#include "codegen/thread_pool/tg_thread_pool.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {

using tg_pool::SpinBudget;

constexpr int64_t kMax = 100'000;  // ns, the pool's default

// Feeds `count` samples of `switches` each; returns the budgets.
std::vector<int64_t> feed(SpinBudget& b, int count, int64_t switches) {
  std::vector<int64_t> budgets;
  for (int i = 0; i < count; ++i) budgets.push_back(b.update(switches));
  return budgets;
}

TEST(SpinBudget, QuietCoresKeepTheFullSpin) {
  SpinBudget b(kMax);
  EXPECT_EQ(b.budget_ns(), kMax);
  const std::vector<int64_t> budgets = feed(b, 1000, 0);
  EXPECT_EQ(*std::min_element(budgets.begin(), budgets.end()), kMax);
  EXPECT_EQ(b.rate(), 0);
}

// A quiet machine still preempts now and then (measured: 0.1-0.2 switches
// per sample); one switch every fifth sample never cuts the spin.
TEST(SpinBudget, OccasionalSwitchesKeepTheFullSpin) {
  SpinBudget b(kMax);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.update(i % 5 == 0 ? 1 : 0), kMax) << "sample " << i;
  EXPECT_LT(b.rate(), SpinBudget::kFullSpinUpTo);
}

// One sample counts at most kMostSwitchesPerSample: a single burst (say, a
// long pause between inferences in which the caller's thread did other
// work) leaves the spin on; a second one in a row cuts it.
TEST(SpinBudget, OneBurstLeavesTheSpinASecondCutsIt) {
  SpinBudget b(kMax);
  EXPECT_EQ(b.update(1000), kMax);
  EXPECT_EQ(b.rate(), SpinBudget::kFullSpinUpTo);  // 4 / 8 switches per sample
  // 128 + (1024 - 128) / 8 = 240 of 256: the spin falls to (256 - 240) / 128 of max.
  EXPECT_EQ(b.update(1000), kMax / 8);
}

// A busy loop on one of two cores: about three switches per sample (one per
// loop whose pool thread was woken onto the caller's core). The spin shrinks
// from the second sample and is off from the fourth, for as long as it lasts.
TEST(SpinBudget, ABusyCoreTurnsItOff) {
  SpinBudget b(kMax);
  const std::vector<int64_t> budgets = feed(b, 6, 3);
  EXPECT_EQ(budgets, (std::vector<int64_t>{kMax, 59'375, 2'343, 0, 0, 0}));
  const std::vector<int64_t> later = feed(b, 1000, 3);
  EXPECT_EQ(*std::max_element(later.begin(), later.end()), 0);
}

// When the busy loop ends the average decays by 1/8 per quiet sample: the
// spin comes back gradually and is full again 14 samples later.
TEST(SpinBudget, ComesBackWhenTheLoadEnds) {
  SpinBudget b(kMax);
  feed(b, 100, 3);
  ASSERT_EQ(b.budget_ns(), 0);
  const std::vector<int64_t> budgets = feed(b, 20, 0);
  EXPECT_EQ(budgets[7], 0);
  EXPECT_GT(budgets[8], 0);
  EXPECT_LT(budgets[12], kMax);
  EXPECT_EQ(budgets[13], kMax);
  EXPECT_TRUE(std::is_sorted(budgets.begin(), budgets.end()));
  EXPECT_EQ(budgets.back(), kMax);
}

// A sample spanning several periods counts its switches per period: the
// quiet machine's one or two switches over a sample of long kernels (5-13 ms
// between the loops' samples in Conformer) keep the full spin, while the
// busy core's three per period still turn it off however long its samples.
TEST(SpinBudget, LongSamplesCountSwitchesPerPeriod) {
  SpinBudget quiet(kMax);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(quiet.update_over(2, 8'000'000, 1'000'000), kMax) << "sample " << i;
  // 2 / 8 per period (the average settles within kAverageOver of it, from below).
  EXPECT_GT(quiet.rate(), SpinBudget::kOne / 4 - SpinBudget::kAverageOver);
  EXPECT_LE(quiet.rate(), SpinBudget::kOne / 4);
  SpinBudget busy(kMax);
  for (int i = 0; i < 6; ++i) busy.update_over(3 * 8, 8'000'000, 1'000'000);
  EXPECT_EQ(busy.budget_ns(), 0);
  // Shorter than a period counts as one: no sample weighs more than its switches.
  SpinBudget short_samples(kMax);
  feed(short_samples, 6, 3);
  for (int i = 0; i < 6; ++i) short_samples.update_over(3, 200'000, 1'000'000);
  SpinBudget whole(kMax);
  feed(whole, 12, 3);
  EXPECT_EQ(short_samples.rate(), whole.rate());
}

TEST(SpinBudget, NegativeSamplesCountAsQuiet) {
  SpinBudget b(kMax);
  feed(b, 100, -5);
  EXPECT_EQ(b.rate(), 0);
  EXPECT_EQ(b.budget_ns(), kMax);
}

TEST(SpinBudget, ZeroMaximumNeverSpins) {
  SpinBudget b(0);
  EXPECT_EQ(b.budget_ns(), 0);
  const std::vector<int64_t> quiet = feed(b, 100, 0);
  const std::vector<int64_t> busy = feed(b, 100, 3);
  EXPECT_EQ(*std::max_element(quiet.begin(), quiet.end()), 0);
  EXPECT_EQ(*std::max_element(busy.begin(), busy.end()), 0);
}

}  // namespace
