// The thread pool's adaptive spin (tg_pool::SpinBudget in
// codegen/thread_pool/tg_thread_pool.h): fed samples of involuntary context
// switches, it cuts the spin when the pool's cores are contended and grows it
// back when they are quiet. A pure controller: these tests feed it samples and
// check the budget, no clocks.
#include "codegen/thread_pool/tg_thread_pool.h"

#include <algorithm>
#include <cstdint>

#include <gtest/gtest.h>

namespace {

using tg_pool::SpinBudget;

constexpr int64_t kMax = 100'000;  // ns, the pool's default
constexpr int64_t kStep = kMax / SpinBudget::kGrowSteps;

// Feeds `count` samples without switches; returns the last budget.
int64_t quiet(SpinBudget& b, int count) {
  int64_t budget = b.budget_ns();
  for (int i = 0; i < count; ++i) budget = b.update(0);
  return budget;
}

TEST(SpinBudget, QuietCoresKeepTheFullSpin) {
  SpinBudget b(kMax);
  EXPECT_EQ(b.budget_ns(), kMax);
  EXPECT_EQ(quiet(b, 1000), kMax);
}

TEST(SpinBudget, EachSwitchQuartersTheSpinDownToZero) {
  SpinBudget one(kMax);
  EXPECT_EQ(one.update(1), kMax / 4);
  EXPECT_EQ(one.update(1), kMax / 16);
  EXPECT_EQ(one.update(1), 0);  // 1562 ns < max / 32: no short spin, sleep at once
  SpinBudget two(kMax);
  EXPECT_EQ(two.update(2), kMax / 16);  // two switches in one sample count twice
  SpinBudget many(kMax);
  EXPECT_EQ(many.update(1000), 0);
}

TEST(SpinBudget, GrowsBackAfterAHoldInEqualSteps) {
  SpinBudget b(kMax);
  ASSERT_EQ(b.update(3), 0);
  // The first kHoldSamples quiet samples keep it at 0 ...
  EXPECT_EQ(quiet(b, SpinBudget::kHoldSamples), 0);
  // ... then each adds max / kGrowSteps, up to max and no further.
  for (int step = 1; step <= SpinBudget::kGrowSteps; ++step) ASSERT_EQ(b.update(0), step * kStep) << "step " << step;
  EXPECT_EQ(quiet(b, 10), kMax);
}

TEST(SpinBudget, ASwitchDuringTheHoldRestartsIt) {
  SpinBudget b(kMax);
  b.update(5);
  quiet(b, SpinBudget::kHoldSamples - 1);
  b.update(1);
  EXPECT_EQ(quiet(b, SpinBudget::kHoldSamples), 0);
  EXPECT_EQ(b.update(0), kStep);
}

// A busy loop on one of the cores preempts a pool thread once per scheduler
// slice (every few samples): the spin stays off.
TEST(SpinBudget, ABusyCoreKeepsItOff) {
  SpinBudget b(kMax);
  int64_t most = 0;
  for (int slice = 0; slice < 200; ++slice) {
    most = std::max(most, b.update(1));
    for (int i = 0; i < 5; ++i) most = std::max(most, b.update(0));
    if (slice >= 2) {
      ASSERT_EQ(b.budget_ns(), 0) << "slice " << slice;
    }
  }
  EXPECT_EQ(most, kMax / 4);  // only the first switch left some spin
}

// A stray preemption on a quiet machine (a kernel thread, a timer) costs a
// short dip: the full spin is back within kHoldSamples + kGrowSteps samples.
TEST(SpinBudget, AStraySwitchCostsAShortDip) {
  SpinBudget b(kMax);
  ASSERT_EQ(b.update(1), kMax / 4);
  const int64_t regrow = (kMax - kMax / 4 + kStep - 1) / kStep;
  EXPECT_LT(quiet(b, SpinBudget::kHoldSamples + static_cast<int>(regrow) - 1), kMax);
  EXPECT_EQ(b.update(0), kMax);
}

TEST(SpinBudget, ZeroMaximumNeverSpins) {
  SpinBudget b(0);
  EXPECT_EQ(b.budget_ns(), 0);
  EXPECT_EQ(quiet(b, 100), 0);
  EXPECT_EQ(b.update(1), 0);
  EXPECT_EQ(quiet(b, 100), 0);
}

}  // namespace
