// The host project's thread pool (codegen/thread_pool/tg_thread_pool.h), the
// header generated kernels include, exercised directly: every iteration runs
// exactly once at every thread count, nested and concurrent loops stay
// correct, the pool's threads do take part (also after sleeping), and a
// thread that stalls inside a chunk makes the caller wait, never skip it.
#include "codegen/thread_pool/tg_thread_pool.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/thread_pool_test_support.h"

namespace {

using tilegraph::testing::PoolThreads;

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

// A grain: every chunk starts at a multiple of it and spans whole multiples
// (the last one up to n), so the iterations of one grain run together on one
// thread; every iteration still runs once.
TEST(ThreadPool, ChunksAreWholeGrains) {
  for (int threads : {1, 2, 3}) {
    PoolThreads pool(threads);
    for (int64_t grain : {2, 3, 7}) {
      for (int64_t n : {1, 3, 6, 7, 64, 1001}) {
        std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
        std::atomic<bool> misaligned{false};
        tg_parallel_for(
            n,
            [&](int64_t begin, int64_t end) {
              if (begin % grain != 0 || (end != n && (end - begin) % grain != 0)) misaligned = true;
              for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
            },
            grain);
        EXPECT_FALSE(misaligned) << threads << " threads, grain " << grain << ", n " << n;
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << threads << " threads, grain " << grain << ", n " << n;
      }
    }
  }
}

// The threads that ran chunks of one 64-chunk loop. Every chunk waits (at
// most 10 s) until two threads have started chunks: the caller alone could
// never get past the first one.
std::set<std::thread::id> threads_taking_part_in_a_loop() {
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
  return ids;
}

TEST(ThreadPool, PoolThreadsTakePart) {
  PoolThreads pool(2);
  EXPECT_EQ(threads_taking_part_in_a_loop().size(), 2u);
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

// A thread that loses its core inside a chunk (here: sleeps 50 ms, far past
// the caller's spin) keeps its chunk: the caller runs every other chunk,
// sleeps until that thread leaves, and returns only after the chunk is done.
TEST(ThreadPool, CallerWaitsForAJoinedThreadThatStalls) {
  for (int threads : {2, 4}) {
    PoolThreads pool(threads);
    const std::thread::id caller = std::this_thread::get_id();
    constexpr int64_t n = 64;
    std::vector<std::atomic<int>> runs(n);
    std::atomic<bool> stalled{false}, stall_done{false};
    tg_parallel_for(n, [&](int64_t begin, int64_t end) {
      if (std::this_thread::get_id() != caller) {
        if (!stalled.exchange(true)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          stall_done = true;
        }
      } else {
        // The caller's chunks wait (at most 10 s) until a pool thread stalls.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!stalled && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      }
      for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
    });
    ASSERT_TRUE(stalled) << threads << " threads: no pool thread joined";
    // The stalled chunk finished before tg_parallel_for returned.
    EXPECT_TRUE(stall_done) << threads << " threads";
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << threads << " threads, i " << i;
  }
}

// Pool threads that fell asleep (no loop for far longer than their spin)
// are woken by the next loop and take part in it.
TEST(ThreadPool, SleepingThreadsWakeForTheNextLoop) {
  PoolThreads pool(2);
  tg_parallel_for(4, [](int64_t, int64_t) {});  // starts the pool's thread
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(threads_taking_part_in_a_loop().size(), 2u) << "round " << round;
  }
}

// One thread: the loop runs on the caller, in one call over all of it.
TEST(ThreadPool, OneThreadRunsTheWholeLoopOnTheCaller) {
  PoolThreads pool(1);
  std::vector<std::pair<int64_t, int64_t>> calls;
  std::set<std::thread::id> ids;
  tg_parallel_for(1000, [&](int64_t begin, int64_t end) {
    calls.emplace_back(begin, end);
    ids.insert(std::this_thread::get_id());
  });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(int64_t{0}, int64_t{1000}));
  EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
}

// Loops back to back whose chunks now and then stall (a thread descheduled
// at a random point): no chunk is lost or run twice, at 2 and 4 threads.
TEST(ThreadPool, BackToBackLoopsWithStallingChunks) {
  for (int threads : {2, 4}) {
    PoolThreads pool(threads);
    int wrong = 0;
    for (int round = 0; round < 300; ++round) {
      const int64_t n = 1 + (round * 7) % 97;
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      tg_parallel_for(n, [&](int64_t begin, int64_t end) {
        if ((begin * 31 + round) % 53 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
        for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) wrong += runs[static_cast<size_t>(i)].load() != 1;
    }
    EXPECT_EQ(wrong, 0) << threads << " threads";
  }
}

}  // namespace

// Every chunk of a loop runs under the caller's floating-point control bits
// (denormal flushing, rounding), whichever thread runs it, so a result never
// depends on the thread; and a later loop without them clears them again.
TEST(ThreadPool, ChunksRunUnderTheCallersFloatControl) {
  if (tg_pool::kFlushDenormalBits == 0) GTEST_SKIP() << "no float control register on this architecture";
  PoolThreads pool(2);
  const uint64_t saved = tg_pool::float_control();
  for (const uint64_t flush : {tg_pool::kFlushDenormalBits, uint64_t{0}}) {
    tg_pool::set_float_control((saved & ~tg_pool::kFlushDenormalBits) | flush);
    std::mutex m;
    std::set<std::thread::id> ids;
    std::atomic<int> wrong{0};
    for (int round = 0; round < 20 && ids.size() < 2; ++round) {
      tg_parallel_for(64, [&](int64_t, int64_t) {
        if ((tg_pool::float_control() & tg_pool::kFlushDenormalBits) != flush) wrong.fetch_add(1);
        std::lock_guard<std::mutex> lock(m);
        ids.insert(std::this_thread::get_id());
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      });
    }
    EXPECT_EQ(ids.size(), 2u) << "the pool thread never took a chunk";
    EXPECT_EQ(wrong.load(), 0) << "flush bits " << flush;
  }
  tg_pool::set_float_control(saved);
}
