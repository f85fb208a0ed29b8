// Where the host thread pool's threads run (codegen/thread_pool/tg_thread_pool.h,
// "Placement"): a sleeping pool thread stays off the CPU of the last loop's
// caller, a caller that waits for a late pool thread moves it onto its own
// CPU, and that thread takes its own CPUs back once it leaves the loop.
#include "codegen/thread_pool/tg_thread_pool.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/unit/thread_pool_test_support.h"

namespace {

using tilegraph::testing::affinity_of;
using tilegraph::testing::cpus;
using tilegraph::testing::PinnedCaller;
using tilegraph::testing::PoolThreads;

pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// The first two CPUs this process may use; false if it has one.
bool two_cpus(int& first, int& second) {
  const cpu_set_t allowed = affinity_of(0);
  first = second = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && second < 0; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) (first < 0 ? first : second) = cpu;
  return second >= 0;
}

// The pool threads that ran chunks of a loop, each with its CPU mask while it
// ran (each of the caller's chunks waits, at most 10 s, until a pool thread
// has started one).
std::map<pid_t, cpu_set_t> pool_threads_of_a_loop() {
  const pid_t caller = this_tid();
  std::mutex m;
  std::map<pid_t, cpu_set_t> ids;
  std::atomic<bool> pool_thread_started{false};
  tg_parallel_for(64, [&](int64_t, int64_t) {
    const pid_t me = this_tid();
    if (me != caller) {
      std::lock_guard<std::mutex> lock(m);
      ids.emplace(me, affinity_of(0));
      pool_thread_started = true;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!pool_thread_started && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  return ids;
}

TEST(ThreadPoolPlacement, MaskWithoutDropsOneCpuOnlyWhenSomeCpuRemains) {
  cpu_set_t out;
  ASSERT_TRUE(tg_pool::mask_without(cpus({0, 1, 3}), 1, out));
  const cpu_set_t expected = cpus({0, 3});
  EXPECT_TRUE(CPU_EQUAL(&out, &expected));
  EXPECT_FALSE(tg_pool::mask_without(cpus({2}), 2, out)) << "the only CPU stays";
  EXPECT_FALSE(tg_pool::mask_without(cpus({0, 1}), 2, out)) << "a CPU not in the mask";
  EXPECT_FALSE(tg_pool::mask_without(cpus({0, 1}), -1, out)) << "no caller CPU known yet";
  EXPECT_FALSE(tg_pool::mask_without(cpus({0, 1}), CPU_SETSIZE, out));
}

// After a loop whose caller ran on CPU `caller_cpu`, an idle pool thread
// (asleep: far past its spin) may run anywhere but there.
TEST(ThreadPoolPlacement, SleepingPoolThreadStaysOffTheCallersCpu) {
  int caller_cpu, other_cpu;
  if (!two_cpus(caller_cpu, other_cpu)) GTEST_SKIP() << "needs two CPUs";
  PoolThreads pool(2);
  const std::map<pid_t, cpu_set_t> workers = pool_threads_of_a_loop();  // started unpinned: every CPU
  ASSERT_EQ(workers.size(), 1u);
  const pid_t worker = workers.begin()->first;
  const cpu_set_t own = workers.begin()->second;
  ASSERT_TRUE(CPU_ISSET(caller_cpu, &own) && CPU_ISSET(other_cpu, &own));
  {
    PinnedCaller pin(caller_cpu);
    ASSERT_TRUE(pin.pinned);
    ASSERT_EQ(pool_threads_of_a_loop().count(worker), 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const cpu_set_t asleep = affinity_of(worker);
    EXPECT_FALSE(CPU_ISSET(caller_cpu, &asleep));
    EXPECT_TRUE(CPU_ISSET(other_cpu, &asleep));
    // Woken for the next loop, it has all its CPUs again.
    std::atomic<bool> checked{false}, own_cpus{false};
    const pid_t caller = this_tid();
    tg_parallel_for(64, [&](int64_t, int64_t) {
      if (this_tid() == caller) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!checked && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      } else if (!checked) {
        const cpu_set_t now = affinity_of(0);
        own_cpus = CPU_EQUAL(&now, &own);
        checked = true;
      }
    });
    ASSERT_TRUE(checked) << "the pool thread did not join";
    EXPECT_TRUE(own_cpus);
  }
}

// A pool thread still inside a chunk when the caller's spin runs out (here
// it sleeps 50 ms: descheduled, as behind another process) is moved onto
// the caller's CPU; when it leaves the loop it takes its own CPUs back.
TEST(ThreadPoolPlacement, LatePoolThreadIsMovedOntoTheCallersCpuUntilItLeaves) {
  int caller_cpu, other_cpu;
  if (!two_cpus(caller_cpu, other_cpu)) GTEST_SKIP() << "needs two CPUs";
  PoolThreads pool(2);
  const std::map<pid_t, cpu_set_t> workers = pool_threads_of_a_loop();
  ASSERT_EQ(workers.size(), 1u);
  const pid_t worker = workers.begin()->first;
  const cpu_set_t own = workers.begin()->second;
  PinnedCaller pin(caller_cpu);
  ASSERT_TRUE(pin.pinned);
  const pid_t caller = this_tid();
  std::atomic<bool> stalled{false}, stall_done{false};
  cpu_set_t while_late;
  CPU_ZERO(&while_late);
  tg_parallel_for(64, [&](int64_t, int64_t) {
    if (this_tid() != caller) {
      if (!stalled.exchange(true)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        while_late = affinity_of(0);
        stall_done = true;
      }
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!stalled && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  ASSERT_TRUE(stalled) << "the pool thread did not join";
  ASSERT_TRUE(stall_done);
  const cpu_set_t caller_only = cpus({caller_cpu});
  EXPECT_TRUE(CPU_EQUAL(&while_late, &caller_only)) << "CPUs while late: " << CPU_COUNT(&while_late);
  // It left the loop (the caller returned), so its mask is its own again,
  // or, once asleep, its own without the caller's CPU.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  cpu_set_t after = affinity_of(worker);
  while (CPU_EQUAL(&after, &caller_only) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    after = affinity_of(worker);
  }
  cpu_set_t own_without_caller;
  ASSERT_TRUE(tg_pool::mask_without(own, caller_cpu, own_without_caller));
  EXPECT_TRUE(CPU_EQUAL(&after, &own) || CPU_EQUAL(&after, &own_without_caller));
}

}  // namespace
