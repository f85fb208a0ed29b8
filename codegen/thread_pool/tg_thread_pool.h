// One thread pool per process for the kernels of a generated CPU project
// (written into the project by tilegraph; see codegen/project/emit_cpu_project.cpp).
//
// Every kernel's parallel loop is a call to tg_parallel_for. An OpenMP
// `parallel for` per kernel forks and joins a team ~400 times per inference,
// and each join waits at a barrier for every thread of the team: when another
// process holds one of the cores, every kernel waits for the descheduled
// thread's time slice (ViT-B/16 INT8, 2 threads: DynamicQuantizeLinear
// 14.5 -> 164 ms, LayerNorm 3.3 -> 70 ms). Here instead:
//  - the calling thread works too, and claims chunks of the loop dynamically
//    with the pool's threads (an atomic counter);
//  - the caller waits only for threads that joined the loop: a thread that is
//    descheduled (or asleep) when the loop starts finds it closed, and the
//    caller has done its share (at most one chunk is late, not a whole
//    static share);
//  - idle threads spin for a short time (the gap between two kernels of one
//    inference is microseconds), then sleep on a futex, so a model that is
//    not running does not hold cores;
//  - a caller whose joined thread is late (it lost its core inside a chunk)
//    spins for the same time, then sleeps on a futex until that thread
//    leaves: its core goes idle, and the kernel's scheduler can run the late
//    thread there instead of leaving it queued behind the other process;
//  - the spin adapts (SpinBudget): up to 100 us while the pool's cores are
//    quiet, none while they are contended, judged from the involuntary
//    context switches of the pool's threads and the caller (getrusage
//    RUSAGE_THREAD, at most once per millisecond of loops per thread) and
//    from loops a pool thread joined on the caller's CPU (sched_getcpu).
//    TG_POOL_SPIN_US=N fixes the spin at N us instead (0: sleep at once);
//  - placement: the kernel wakes a sleeping thread next to its waker, so
//    with another process on one core a pool thread woken for a loop landed
//    on the caller's core and preempted the caller inside its own wake-up
//    call (mobilevit_s, 2 threads, busy core 0: 12 of 35 ms per inference).
//    A pool thread about to sleep therefore leaves the CPU of the last
//    loop's caller out of its affinity, and takes its own mask back once
//    woken; and a caller whose spin runs out while a joined thread is still
//    inside the loop (descheduled behind the other process, for a time
//    slice: ~4 ms) moves that thread onto its own CPU before it sleeps, so
//    the thread runs there at once (it takes its own mask back when it
//    leaves the loop). Two system calls per sleep, none per loop on a quiet
//    machine, where the spin keeps pool threads awake between kernels;
// A loop started from inside a pool task, or while another thread of the
// process runs a loop, runs on its calling thread alone.
//
// Choices, measured on a shared 2-vCPU KVM machine (INT8 ViT-S/32, 391
// kernels, 2 threads, onnxruntime with spinning off as the yardstick, all
// variants interleaved in one process; onnxruntime / tilegraph, quiet and
// with a busy loop on core 0): OpenMP fork/join per kernel with
// GOMP_SPINCOUNT=30000 0.10-0.16 / 0.16-0.28; with OMP_WAIT_POLICY=passive
// 0.65 / 0.65; this pool spinning 0 us 0.9-1.7 / 0.7-1.2, 100 us
// 0.9-1.4 / 0.7-1.7, 1000 us 0.36-0.65 / 0.47-0.83 (a long spin takes the
// core the caller or the other process needs). Chunks are claimed
// dynamically (not a static share per thread): a static share held by a
// descheduled thread keeps the caller waiting for all of it.
// The adaptive spin, measured on the same machine while other processes kept
// it loaded (load average 7-14; each run in its own autogroup at nice -20;
// full-size float models, 2 threads, medians of 8 interleaved runs of
// benchmarks/cpu_vs_onnxruntime.py --iters 30 --busy-core): quiet ms, busy
// ms and onnxruntime's slowdown / ours, mobilenet v2 | ViT-S/32: fixed
// 100 us 5.37, 9.86, 0.59 | 15.9, 33.7, 0.51; fixed 0 us 7.44, 7.99, 0.98 |
// 21.3, 30.3, 0.77; adaptive 5.65, 8.54, 0.70 | 16.3, 31.1, 0.65. A
// fixed spin trades one for the other: spinning keeps the pool thread on
// its core between kernels (quiet: 100 us is 30-40% faster than 0), while
// on a contended core it burns the thread's share, and a sleeping pool
// thread woken for a loop there lands on the caller's core (about one
// caller switch per loop: 3 per 1 ms sample busy, 0.1-0.2 quiet). The
// ratio of slowdowns against onnxruntime (which slows 1.0-1.3x there) stays
// under 0.8 with any spin: even a fixed 0 us spin is 1.5-1.9x slower busy
// than the 100 us spin quiet, so the rest lies elsewhere. Earlier tries:
// quartering the spin per switch (and regrowing it slowly) kept it near 0
// on a quiet but loaded machine; counting only spins cut off by a
// preemption (a > 50 us gap between two clock reads) missed the busy core
// (3-6 in a whole run): the switches land on the caller, not the spinner;
// a contended pool thread yielding (sched_yield) for 1-5 ms instead of
// sleeping, or moving itself off the caller's CPU (sched_setaffinity), did
// not beat sleeping at once (mobilenet busy 8.2-8.7 and 8.0 vs 8.0-8.3 ms).
// Placement (benchmarks/cpu_vs_onnxruntime.py --threads 2 --iters 20
// --ort-spin off --busy-core, the same tuned projects built with the pool
// before and after, interleaved in one run): busy ms before -> after,
// quiet unchanged: mobilevit_s 31.9 -> 24.4 (quiet 16.5-17.5), resnet50
// 50.1 -> 40.3 (26.6-26.8), ViT-S/32 14.9 -> 11.5 (8.2), bert-base 131 ->
// 105 (65.6-66.0), mobilenet v2 5.15 -> 5.14 (3.1). With it a fixed 100 us
// spin is as good busy as the adaptive one (mobilevit 23.2 vs 24.0 ms) and
// 0 us is slower both ways (25.6 quiet, 30.0 busy). Tried before it: a
// loop nobody joined within 250 us counted as a switch (the budget then
// stays at 0 under a busy core) did not help (busy 59 vs 55 ms).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <linux/futex.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

// Hidden: the pool is this library's own. With default visibility GCC makes
// Pool::instance()'s static a process-wide unique symbol, so two models
// loaded into one process (each libmodel.so has a copy of this header,
// maybe from another tilegraph version) would share one pool object.
namespace tg_pool __attribute__((visibility("hidden"))) {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// The floating-point control word (x86 MXCSR, aarch64 FPCR): rounding mode
// and denormal handling. A loop's chunks run under the caller's control
// bits, so no result depends on which thread computed it (the model flushes
// denormals while it runs: FlushDenormals in cpu_model_runtime.h).
#if defined(__x86_64__) || defined(__i386__)
// MXCSR bits 6-15: DAZ, the exception masks, rounding, FTZ (0-5 are the
// sticky exception flags, which differ between threads and do not matter).
constexpr uint64_t kFloatControlBits = 0xffc0;
constexpr uint64_t kFlushDenormalBits = 0x8040;  // FTZ (bit 15) | DAZ (bit 6)
inline uint64_t float_control() { return _mm_getcsr(); }
inline void set_float_control(uint64_t v) { _mm_setcsr(static_cast<unsigned>(v)); }
#elif defined(__aarch64__)
constexpr uint64_t kFloatControlBits = ~uint64_t{0};  // FPCR holds controls only
constexpr uint64_t kFlushDenormalBits = uint64_t{1} << 24;  // FZ
inline uint64_t float_control() {
  uint64_t v;
  asm volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
inline void set_float_control(uint64_t v) { asm volatile("msr fpcr, %0" : : "r"(v)); }
#else
constexpr uint64_t kFloatControlBits = 0;
constexpr uint64_t kFlushDenormalBits = 0;
inline uint64_t float_control() { return 0; }
inline void set_float_control(uint64_t) {}
#endif

// Puts this thread under `control` (control bits only); writes the register
// only when they differ (a write is slow: it serializes).
inline void adopt_float_control(uint64_t control) {
  const uint64_t mine = float_control();
  if ((mine & kFloatControlBits) != control) set_float_control((mine & ~kFloatControlBits) | control);
}

// A futex on a std::atomic<uint32_t> (one plain 32-bit word on Linux): a
// wake-up is one system call, and none when nobody sleeps.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word is one 32-bit integer");

// Sleeps while word holds `expected` (returns at once if it does not, and
// spuriously at times: callers check again).
inline void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

inline void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

using ChunkFn = void (*)(void* ctx, int64_t begin, int64_t end);
using Clock = std::chrono::steady_clock;

// How long idle threads spin before they sleep, learned from how often the
// pool's threads lose their cores. Fed one sample per millisecond or so of
// loops: the involuntary context switches of the pool's threads (the caller
// included) and the loops a pool thread joined on the caller's CPU since the
// previous sample. A switch means another runnable thread wanted that core;
// a join on the caller's CPU, that two of the pool's threads take turns on
// one core. On a contended core a spinning thread burns the
// share the scheduler would give it when work comes, and with a busy core a
// pool thread woken for a loop lands on the caller's core and preempts it
// (under a busy loop on one of 2 cores the caller saw about one switch per
// loop): there, sleeping at once is faster. On a quiet machine a switch is
// rare (a kernel thread, another process's burst: 0.1-0.2 per sample, mostly
// single switches) and the full spin keeps pool threads on their cores
// between the kernels of an inference.
// So the budget follows an average of switches per sample (the last
// kAverageOver samples weigh most; one sample counts at most
// kMostSwitchesPerSample, so a single burst does not turn the spin off): the
// full spin up to kFullSpinUpTo, none from kNoSpinFrom, linear in between.
// The average moves within a few milliseconds both ways. A pure function of
// the samples (no clock), so tests can feed it.
// A sample counts switches per sample period: one that spans several periods
// (loops run back to back, and the first to start after the period ends may
// come many milliseconds later) is scaled down by its length (update_over).
// Counted whole, the quiet machine's occasional switch made nearly every
// sample of a model with long kernels a switch or two (Conformer at 2
// threads, kernels of 1-20 ms: the spin was 0 in 332 of 357 samples), and
// each loop then slept and woke its pool thread: 1058-1142 ms per inference
// against 872-930 with the spin fixed at 100 us.
class SpinBudget {
 public:
  static constexpr int64_t kOne = 256;  // fixed point: switches per sample * kOne
  static constexpr int64_t kMostSwitchesPerSample = 4;
  static constexpr int kAverageOver = 8;
  static constexpr int64_t kFullSpinUpTo = kOne / 2;
  static constexpr int64_t kNoSpinFrom = kOne;

  explicit SpinBudget(int64_t max_ns) : max_ns_(max_ns < 0 ? 0 : max_ns), budget_ns_(max_ns_) {}

  // One sample: the involuntary switches seen since the last. Returns the
  // new budget.
  int64_t update(int64_t switches) { return update_over(switches, 1, 1); }
  // A sample of `elapsed` sample periods (elapsed / period, at least one).
  int64_t update_over(int64_t switches, int64_t elapsed, int64_t period) {
    const int64_t periods = std::max<int64_t>(elapsed, period);
    const int64_t scaled = std::max<int64_t>(switches, 0) * kOne * period / periods;
    const int64_t x = std::min(scaled, kMostSwitchesPerSample * kOne);
    rate_ += (x - rate_) / kAverageOver;
    if (rate_ <= kFullSpinUpTo)
      budget_ns_ = max_ns_;
    else if (rate_ >= kNoSpinFrom)
      budget_ns_ = 0;
    else
      budget_ns_ = max_ns_ * (kNoSpinFrom - rate_) / (kNoSpinFrom - kFullSpinUpTo);
    return budget_ns_;
  }

  int64_t budget_ns() const { return budget_ns_; }
  int64_t max_ns() const { return max_ns_; }
  // The average, in switches per sample * kOne.
  int64_t rate() const { return rate_; }

 private:
  int64_t max_ns_;
  int64_t budget_ns_;
  int64_t rate_ = 0;
};

// Involuntary context switches of the calling thread so far (one system call).
inline int64_t involuntary_switches() {
  struct rusage usage;
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nivcsw;
}

// One thread's involuntary switches, counted per period of at least
// `period` (a getrusage call per period, not per loop).
class SwitchSampler {
 public:
  explicit SwitchSampler(std::chrono::microseconds period) : period_(period) {}
  // Switches since the previous sample once a period has passed since it
  // (0 at the first), else -1: nothing due yet.
  int64_t poll() { return poll(Clock::now()); }
  int64_t poll(Clock::time_point now) {
    if (now < next_) return -1;
    elapsed_ = now - (next_ - period_);
    next_ = now + period_;
    const int64_t total = involuntary_switches();
    const int64_t since = seen_ < 0 ? 0 : total - seen_;
    seen_ = total;
    return since;
  }
  // The time the last sample spans (since the one before it).
  Clock::duration elapsed() const { return elapsed_; }

 private:
  std::chrono::microseconds period_;
  Clock::duration elapsed_{};
  Clock::time_point next_{};
  int64_t seen_ = -1;
};

// A thread's CPU affinity. Errors are ignored: placement is a hint, and a
// loop runs correctly wherever its threads are.
inline void set_affinity(pid_t tid, const cpu_set_t& mask) { sched_setaffinity(tid, sizeof mask, &mask); }

// `mask` without `cpu`, if that leaves it some CPU; else false.
inline bool mask_without(const cpu_set_t& mask, int cpu, cpu_set_t& out) {
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask)) return false;
  out = mask;
  CPU_CLR(cpu, &out);
  return CPU_COUNT(&out) > 0;
}

// Where a pool thread runs (see "Placement" in Pool). Written by the pool
// thread (tid, mask, inside) and, for `moved`, by a waiting caller.
struct WorkerPlace {
  std::atomic<pid_t> tid{0};
  cpu_set_t mask;                    // the thread's own affinity, taken when it starts
  std::atomic<bool> inside{false};   // running chunks of a loop
  std::atomic<bool> moved{false};    // a caller moved it onto the caller's CPU
};

class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  // Threads taking part in a loop, the caller included (at least 1).
  void set_threads(int n) { threads_.store(n < 1 ? 1 : n, std::memory_order_relaxed); }
  int threads() const { return threads_.load(std::memory_order_relaxed); }
  // How long idle threads spin now, in ns (adaptive: see SpinBudget).
  int64_t spin_ns() const { return spin_ns_.load(std::memory_order_relaxed); }

  // Chunks are whole multiples of `grain` iterations from a multiple of it.
  void run(int64_t n, ChunkFn fn, void* ctx, int64_t grain = 1) {
    const int threads = this->threads();
    if (n <= 0) return;
    grain = grain < 1 ? 1 : grain;
    if (threads <= 1 || n <= grain || in_task() || !run_mutex_.try_lock()) return fn(ctx, 0, n);
    start_workers(threads - 1);
    if (adaptive_) sample_contention();
    caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    // Chunks: a few per thread, so a late thread delays at most a small one.
    const int64_t grains = (n + grain - 1) / grain;
    const int64_t chunks = std::min<int64_t>(grains, int64_t{threads} * kChunksPerThread);
    fn_ = fn;
    ctx_ = ctx;
    float_control_ = float_control() & kFloatControlBits;
    n_ = n;
    grain_ = (grains + chunks - 1) / chunks * grain;
    participants_.store(threads - 1, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    epoch_ += 1;
    state_.store(epoch_ << kEpochShift | kOpen, std::memory_order_seq_cst);
    // Sleeping threads wait on the epoch's low 32 bits (state_'s top half).
    wake_word_.store(static_cast<uint32_t>(epoch_), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(wake_word_);
    in_task() = true;
    work();
    in_task() = false;
    // Close the loop to latecomers, then wait for the threads inside it.
    const uint64_t s = state_.fetch_and(~kOpen, std::memory_order_acq_rel) & ~kOpen;
    if ((s & kActiveMask) != 0) wait_for_joined();
    if (adaptive_) last_loop_end_ = Clock::now();
    run_mutex_.unlock();
  }

  ~Pool() {
    stop_.store(true);
    wake_word_.fetch_add(1);
    futex_wake_all(wake_word_);
    for (std::thread& t : workers_) t.join();
  }

 private:
  static constexpr int64_t kChunksPerThread = 8;
  static constexpr int64_t kMaxSpinNs = 100'000;
  static constexpr std::chrono::microseconds kSamplePeriod{1000};
  static constexpr int kEpochShift = 32;
  static constexpr uint64_t kOpen = uint64_t{1} << 31;
  static constexpr uint64_t kActiveMask = kOpen - 1;

  Pool() {
    // TG_POOL_SPIN_US fixes the spin; unset, it adapts between 0 and 100 us.
    const char* spin = std::getenv("TG_POOL_SPIN_US");
    adaptive_ = spin == nullptr;
    spin_ns_.store(adaptive_ ? budget_.max_ns() : int64_t{std::max(0, std::atoi(spin))} * 1000);
    // As many threads as OpenMP would start: OMP_NUM_THREADS, else the
    // cores this process may run on.
    const char* omp = std::getenv("OMP_NUM_THREADS");
    int n = omp ? std::atoi(omp) : 0;
    cpu_set_t set;
    if (n <= 0 && sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    set_threads(n);
  }

  static bool& in_task() {
    static thread_local bool inside = false;
    return inside;
  }

  void work() {
    for (;;) {
      const int64_t begin = next_.fetch_add(grain_, std::memory_order_relaxed);
      if (begin >= n_) return;
      fn_(ctx_, begin, std::min(n_, begin + grain_));
    }
  }

  // Feeds budget_ a sample (at most one per kSamplePeriod): the caller's
  // involuntary switches since its last sample, those the pool's threads
  // reported, and the loops a pool thread joined on the caller's CPU (two of
  // the pool's threads taking turns on one core: never so on a quiet
  // machine). Called by the caller of a loop, under run_mutex_.
  // A sample that spans a pause of the pool (no loop for a period or more:
  // between two inferences) only rebases the counts: what the caller's
  // thread did meanwhile is the application's, not contention for the loops'
  // cores. Counted, it turned the spin off where the application ran other
  // threads between inferences (onnxruntime without spinning, in one
  // process: about one switch per node of its run), and each loop's threads
  // then slept and woke: MobileNetV2 at 2 threads 3.1 -> 6.3 ms.
  void sample_contention() {
    static thread_local SwitchSampler caller(kSamplePeriod);
    const Clock::time_point now = Clock::now();
    const int64_t mine = caller.poll(now);
    if (mine < 0) return;
    const int64_t switches = mine + worker_switches_.exchange(0, std::memory_order_relaxed) +
                             joins_on_caller_cpu_.exchange(0, std::memory_order_relaxed);
    if (now - last_loop_end_ >= kSamplePeriod) return;
    const int64_t period = std::chrono::nanoseconds(kSamplePeriod).count();
    const int64_t elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(caller.elapsed()).count();
    spin_ns_.store(budget_.update_over(switches, elapsed, period), std::memory_order_relaxed);
  }

  // Spins (cpu_relax) for the spin budget or until done() holds; true if it did.
  template <typename Done>
  bool spin_until(Done done) {
    if (done()) return true;
    const int64_t budget = spin_ns_.load(std::memory_order_relaxed);
    if (budget <= 0) return false;
    const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(budget);
    for (int i = 1;; ++i) {
      cpu_relax();
      if (done()) return true;
      if ((i & 63) == 0 && Clock::now() > deadline) return false;
    }
  }

  // The caller, after closing the loop: spins for the spin budget, then
  // sleeps until the last joined thread leaves (leave() wakes it).
  void wait_for_joined() {
    if (spin_until([this] { return (state_.load(std::memory_order_acquire) & kActiveMask) == 0; })) return;
    move_late_threads_here();
    for (;;) {
      caller_sleeps_.store(1, std::memory_order_seq_cst);
      if ((state_.load(std::memory_order_seq_cst) & kActiveMask) == 0) break;
      futex_wait(caller_sleeps_, 1);
    }
    caller_sleeps_.store(0, std::memory_order_relaxed);
  }

  // Placement: the caller, about to sleep until the joined threads leave,
  // moves those still inside the loop onto its own CPU, where they run as
  // soon as it sleeps (each takes its own mask back when it leaves).
  void move_late_threads_here() {
    const int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) return;
    cpu_set_t here;
    CPU_ZERO(&here);
    CPU_SET(cpu, &here);
    const int joinable = participants_.load(std::memory_order_relaxed);
    for (int i = 0; i < joinable; ++i) {
      WorkerPlace& place = *places_[static_cast<size_t>(i)];
      const pid_t tid = place.tid.load(std::memory_order_acquire);
      if (tid == 0 || !place.inside.load(std::memory_order_acquire) || !CPU_ISSET(cpu, &place.mask)) continue;
      set_affinity(tid, here);
      place.moved.store(true, std::memory_order_release);
    }
  }

  // A pool thread takes its own mask back after a caller moved it.
  static void take_back_own_cpus(WorkerPlace& place) {
    if (place.moved.load(std::memory_order_relaxed) && place.moved.exchange(false, std::memory_order_acquire))
      set_affinity(0, place.mask);
  }

  // A pool thread leaves the loop it joined; the last one out of a closed
  // loop wakes a sleeping caller. (A thread of an earlier loop may wake the
  // caller of a later one: it checks again and sleeps on.)
  void leave() {
    const uint64_t s = state_.fetch_sub(1, std::memory_order_seq_cst) - 1;
    if ((s & (kOpen | kActiveMask)) == 0 && caller_sleeps_.load(std::memory_order_seq_cst) != 0) {
      caller_sleeps_.store(0, std::memory_order_relaxed);
      futex_wake_all(caller_sleeps_);
    }
  }

  void start_workers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size());
      places_.push_back(std::make_unique<WorkerPlace>());
      WorkerPlace* place = places_.back().get();
      workers_.emplace_back([this, index, place] { worker_loop(index, *place); });
    }
  }

  void worker_loop(int index, WorkerPlace& place) {
    in_task() = true;
    if (sched_getaffinity(0, sizeof place.mask, &place.mask) != 0) CPU_ZERO(&place.mask);
    place.tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
    uint64_t seen = 0;
    SwitchSampler sampler(kSamplePeriod);
    for (;;) {
      uint64_t s = wait_for_epoch_after(seen, place);
      if (stop_.load()) return;
      take_back_own_cpus(place);
      const uint64_t epoch = s >> kEpochShift;
      if (index < participants_.load(std::memory_order_relaxed)) {
        // Join while the loop is open; a closed one is skipped: the caller
        // does not wait for it.
        while ((s >> kEpochShift) == epoch && (s & kOpen)) {
          if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
            if (adaptive_ && sched_getcpu() == caller_cpu_.load(std::memory_order_relaxed))
              joins_on_caller_cpu_.fetch_add(1, std::memory_order_relaxed);
            adopt_float_control(float_control_);
            place.inside.store(true, std::memory_order_release);
            work();
            place.inside.store(false, std::memory_order_release);
            leave();
            take_back_own_cpus(place);
            break;
          }
        }
        // Reported for the caller's next sample.
        if (adaptive_)
          if (const int64_t switches = sampler.poll(); switches > 0)
            worker_switches_.fetch_add(switches, std::memory_order_relaxed);
      }
      seen = epoch;
    }
  }

  // Spins for the spin budget, then sleeps, until the epoch differs from
  // `seen`. Asleep, the thread stays off the CPU of the last loop's caller
  // (placement), so its wake-up does not land there.
  uint64_t wait_for_epoch_after(uint64_t seen, WorkerPlace& place) {
    uint64_t s = 0;
    if (spin_until([&] {
          s = state_.load(std::memory_order_acquire);
          return (s >> kEpochShift) != seen || stop_.load(std::memory_order_relaxed);
        }))
      return s;
    cpu_set_t away;
    const bool moved_away = mask_without(place.mask, caller_cpu_.load(std::memory_order_relaxed), away);
    if (moved_away) set_affinity(0, away);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (wake_word_.load(std::memory_order_seq_cst) == static_cast<uint32_t>(seen) && !stop_.load())
      futex_wait(wake_word_, static_cast<uint32_t>(seen));
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    if (moved_away) set_affinity(0, place.mask);
    return state_.load(std::memory_order_acquire);
  }

  std::atomic<int> threads_{1};
  // How long idle threads and a waiting caller spin before they sleep: fixed
  // by TG_POOL_SPIN_US, else budget_'s (adaptive_).
  bool adaptive_ = true;
  SpinBudget budget_{kMaxSpinNs};
  std::atomic<int64_t> spin_ns_{kMaxSpinNs};
  std::atomic<int64_t> worker_switches_{0};  // reported by pool threads, not yet sampled
  std::atomic<int> caller_cpu_{-1};          // where the caller started the current loop
  Clock::time_point last_loop_end_{};        // when the last loop ended (under run_mutex_)
  std::atomic<int64_t> joins_on_caller_cpu_{0};  // not yet sampled
  std::mutex run_mutex_;  // one loop at a time
  std::vector<std::thread> workers_;
  std::vector<std::unique_ptr<WorkerPlace>> places_;  // workers_[i]'s place
  // The current loop (written by the caller before it publishes the epoch).
  ChunkFn fn_ = nullptr;
  void* ctx_ = nullptr;
  uint64_t float_control_ = 0;  // the caller's control bits
  int64_t n_ = 0, grain_ = 1;
  std::atomic<int> participants_{0};  // pool threads allowed to join (threads - 1)
  uint64_t epoch_ = 0;
  std::atomic<int64_t> next_{0};
  // epoch << 32 | kOpen (joinable) | threads inside the loop.
  std::atomic<uint64_t> state_{0};
  std::atomic<uint32_t> wake_word_{0};     // the epoch's low 32 bits, for sleeping pool threads
  std::atomic<int> sleepers_{0};           // pool threads asleep on wake_word_
  std::atomic<uint32_t> caller_sleeps_{0};  // 1 while the caller sleeps in wait_for_joined
  std::atomic<bool> stop_{false};
};

template <typename F>
void call_chunk(void* ctx, int64_t begin, int64_t end) {
  (*static_cast<F*>(ctx))(begin, end);
}

// Runs body(begin, end) over chunks of [0, n) on the pool, the caller
// included; each chunk is whole multiples of `grain` iterations from a
// multiple of it (a GEMM's row blocks that reuse one chunk's packed B).
template <typename F>
inline void tg_parallel_for(int64_t n, F&& body, int64_t grain = 1) {
  using Body = typename std::remove_reference<F>::type;
  Pool::instance().run(n, &call_chunk<Body>, static_cast<void*>(&body), grain);
}

inline void tg_set_pool_threads(int n) { Pool::instance().set_threads(n); }

}  // namespace tg_pool

using tg_pool::tg_parallel_for;
using tg_pool::tg_set_pool_threads;
