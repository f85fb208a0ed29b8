// The pool's adaptive spin (codegen/thread_pool/tg_thread_pool.h) learns from
// the involuntary switches of the threads that run its loops. What a caller's
// thread does between inferences is the application's business: switches it
// takes there (another of the application's threads sharing its core) must
// not turn the spin off, else every loop of the next inference sleeps and
// wakes its pool threads.
#include "codegen/thread_pool/tg_thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>

#include "tests/unit/thread_pool_test_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using tilegraph::testing::cpus;
using tilegraph::testing::PinnedCaller;
using tilegraph::testing::PoolThreads;

// The calling thread runs for `busy` on `cpu` while another thread spins on
// that CPU too: the scheduler takes turns between them (several involuntary
// switches of the caller per 10 ms or so: a time slice is a few ms).
int64_t busy_while_sharing_cpu(int cpu, std::chrono::milliseconds busy) {
  const PinnedCaller pinned(cpu);
  std::atomic<bool> stop{false};
  std::thread rival([&] {
    const cpu_set_t one = cpus({cpu});
    sched_setaffinity(0, sizeof one, &one);
    while (!stop.load(std::memory_order_relaxed)) tg_pool::cpu_relax();
  });
  const int64_t before = tg_pool::involuntary_switches();
  const Clock::time_point end = Clock::now() + busy;
  while (Clock::now() < end) tg_pool::cpu_relax();
  const int64_t switches = tg_pool::involuntary_switches() - before;
  stop = true;
  rival.join();
  return switches;
}

TEST(ThreadPoolPause, SwitchesBetweenInferencesLeaveTheSpinAlone) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "needs two CPUs";
  if (std::getenv("TG_POOL_SPIN_US") != nullptr) GTEST_SKIP() << "TG_POOL_SPIN_US fixes the spin";
  tg_pool::Pool& pool = tg_pool::Pool::instance();
  const PoolThreads two(2);
  std::atomic<int64_t> sum{0};
  const auto one_inference = [&] {
    tg_parallel_for(64, [&](int64_t begin, int64_t end) { sum += end - begin; });
  };
  one_inference();
  const int64_t spin_before = pool.spin_ns();
  int64_t switches_between = 0;
  // Each "inference" is one loop, right after the application's contended
  // work: every contention sample spans a pause of the pool. Counted, three
  // such samples of 4 switches or more turn the spin off (SpinBudget).
  for (int round = 0; round < 6; ++round) {
    switches_between += busy_while_sharing_cpu(cpu, std::chrono::milliseconds(60));
    one_inference();
  }
  EXPECT_EQ(sum.load(), 64 * 7);
  if (switches_between < 24) GTEST_SKIP() << "the shared CPU gave the caller only " << switches_between << " switches";
  EXPECT_EQ(pool.spin_ns(), spin_before) << switches_between << " switches between the loops";
}

}  // namespace
