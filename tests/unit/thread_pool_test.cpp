// The host project's thread pool (codegen/thread_pool/tg_thread_pool.h), the
// header generated kernels include, exercised directly: every iteration runs
// exactly once at every thread count, nested and concurrent loops stay
// correct, and the pool's threads do take part.
#include "codegen/thread_pool/tg_thread_pool.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

// Restores the pool's thread count after a test.
struct PoolThreads {
  explicit PoolThreads(int n) : saved(tg_pool::Pool::instance().threads()) { tg_set_pool_threads(n); }
  ~PoolThreads() { tg_set_pool_threads(saved); }
  int saved;
};

TEST(ThreadPool, EveryIterationRunsOnceAtEachThreadCount) {
  for (int threads : {1, 2, 3, 4}) {
    PoolThreads pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 100003}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::atomic<bool> bad_range{false};
      tg_parallel_for(n, [&](int64_t begin, int64_t end) {
        if (begin < 0 || begin >= end || end > n) bad_range = true;
        for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
      });
      EXPECT_FALSE(bad_range) << threads << " threads, n " << n;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << threads << " threads, n " << n << ", i " << i;
    }
  }
}

TEST(ThreadPool, PoolThreadsTakePart) {
  PoolThreads pool(2);
  // Every chunk waits (at most 10 s) until two threads have started chunks:
  // the caller alone could never get past the first one.
  std::mutex m;
  std::set<std::thread::id> ids;
  tg_parallel_for(64, [&](int64_t, int64_t) {
    { std::lock_guard<std::mutex> lock(m); ids.insert(std::this_thread::get_id()); }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      { std::lock_guard<std::mutex> lock(m); if (ids.size() >= 2) return; }
      std::this_thread::yield();
    }
  });
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, NestedLoopRunsOnItsCallingThread) {
  PoolThreads pool(2);
  std::atomic<int> total{0}, foreign{0};
  tg_parallel_for(8, [&](int64_t begin, int64_t end) {
    const std::thread::id outer = std::this_thread::get_id();
    for (int64_t i = begin; i < end; ++i)
      tg_parallel_for(10, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() != outer) foreign.fetch_add(1);
        total.fetch_add(static_cast<int>(e - b));
      });
  });
  EXPECT_EQ(total.load(), 80);
  EXPECT_EQ(foreign.load(), 0);
}

TEST(ThreadPool, ManyShortLoopsAndConcurrentCallers) {
  PoolThreads pool(2);
  // Two application threads run models at once: one gets the pool, the
  // other runs its loops alone; both compute every sum right.
  auto caller = [](int64_t seed, std::atomic<int>* wrong) {
    for (int64_t round = 0; round < 3000; ++round) {
      const int64_t n = 1 + (round + seed) % 9;
      std::atomic<int64_t> sum{0};
      tg_parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) sum.fetch_add(i + 1);
      });
      if (sum.load() != n * (n + 1) / 2) wrong->fetch_add(1);
    }
  };
  std::atomic<int> wrong{0};
  std::thread a(caller, 0, &wrong), b(caller, 5, &wrong);
  a.join();
  b.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
