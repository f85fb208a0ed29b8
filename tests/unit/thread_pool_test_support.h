#pragma once
// Scoped settings for tests of the host thread pool
// (codegen/thread_pool/tg_thread_pool.h): the pool's thread count and the
// calling thread's CPU affinity, each restored when the test's scope ends.
#include <initializer_list>

#include <gtest/gtest.h>
#include <sched.h>

#include "codegen/thread_pool/tg_thread_pool.h"

namespace tilegraph::testing {

inline cpu_set_t cpus(std::initializer_list<int> list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : list) CPU_SET(cpu, &set);
  return set;
}

inline cpu_set_t affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(tid, sizeof set, &set), 0) << "thread " << tid;
  return set;
}

// Pins the calling thread to one CPU for a scope, and restores its mask.
struct PinnedCaller {
  explicit PinnedCaller(int cpu) : saved(affinity_of(0)) {
    const cpu_set_t one = cpus({cpu});
    pinned = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~PinnedCaller() { sched_setaffinity(0, sizeof saved, &saved); }
  cpu_set_t saved;
  bool pinned = false;
};

// Sets the pool's thread count for a scope, and restores it.
struct PoolThreads {
  explicit PoolThreads(int n) : saved(tg_pool::Pool::instance().threads()) { tg_pool::tg_set_pool_threads(n); }
  ~PoolThreads() { tg_pool::tg_set_pool_threads(saved); }
  int saved;
};

}  // namespace tilegraph::testing
