// Issue rates of the x86 instruction mixes an int8 GEMM can be built from,
// on this core, in register-only hot loops (no cache misses, no loop-carried
// latency beyond one add): what bounds codegen/ukernels/qgemm_avx2.h, and
// what the saturating u8 x s8 mix of onnxruntime's MLAS would gain
// (docs/int8_gemm_bounds.md). Each loop runs N iterations, five rounds
// interleaved; the best round of each is printed.
//
//   fma               12 independent vfmadd231ps:  instructions/s (the core's FMA rate x clock)
//   vpmaddwd          12 independent vpmaddwd:     instructions/s
//   int16 madd+add    12 x (vpmaddwd + vpaddd):    the int16 mix without loads, 192 MACs
//   int16 kernel      qgemm_avx2.h's k group:      2 vpmovsxbw of B, 6 vpbroadcastq of A rows,
//                                                  12 vpmaddwd + 12 vpaddd, 192 MACs
//   u8s8 5x16         MLAS's mix: per row a vpbroadcastd of A, per B register
//                     vpmaddubsw + vpmaddwd(ones) + vpaddd; 5 rows x 16 columns x 4 k, 320 MACs
//
// Not a test and not part of the CMake build (x86-64, GCC or Clang):
//   gcc -O2 benchmarks/int8_madd_rates.c -o /tmp/int8_madd_rates && /tmp/int8_madd_rates
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define N 20000000L
#define ROUNDS 5
#define CLOBBER "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9", "ymm10", "ymm11", \
                "ymm12", "ymm13", "ymm14", "ymm15"

static int16_t a_rows[64] __attribute__((aligned(64)));
static int8_t b_panel[64] __attribute__((aligned(64)));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define FMA(acc) "vfmadd231ps %%ymm12, %%ymm14, %%ymm" #acc "\n\t"
#define MADD(acc) "vpmaddwd %%ymm12, %%ymm14, %%ymm" #acc "\n\t"
// One row of the int16 mix: the row's product with B's columns 0-3 and 4-7,
// each added to its accumulator (ymm15: the product).
#define MADD_ADD(lo, hi)                                     \
  "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"                   \
  "vpaddd %%ymm15, %%ymm" #lo ", %%ymm" #lo "\n\t"           \
  "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"                   \
  "vpaddd %%ymm15, %%ymm" #hi ", %%ymm" #hi "\n\t"
// The same with the row's 4 int16 broadcast from memory first, as qgemm_avx2.h.
#define ROW_INT16(offset, lo, hi) "vpbroadcastq " #offset "(%1), %%ymm14\n\t" MADD_ADD(lo, hi)
// A u8 x s8 row: 4 bytes of A broadcast, times B's two registers (16 columns
// x 4 k), pair sums widened against ones (ymm11) and accumulated.
#define ROW_U8S8(offset, lo, hi)                              \
  "vpbroadcastd " #offset "(%1), %%ymm14\n\t"                  \
  "vpmaddubsw %%ymm12, %%ymm14, %%ymm15\n\t"                   \
  "vpmaddwd %%ymm11, %%ymm15, %%ymm15\n\t"                     \
  "vpaddd %%ymm15, %%ymm" #lo ", %%ymm" #lo "\n\t"             \
  "vpmaddubsw %%ymm13, %%ymm14, %%ymm15\n\t"                   \
  "vpmaddwd %%ymm11, %%ymm15, %%ymm15\n\t"                     \
  "vpaddd %%ymm15, %%ymm" #hi ", %%ymm" #hi "\n\t"

// The body of a rate function: `loop` (asm text) N times; returns the work
// per second, `work` per iteration (instructions or MACs). %1: a_rows, %2: b_panel.
#define TIMED_LOOP(loop, work)                                                                  \
  long n = N;                                                                                     \
  const double t = now();                                                                         \
  __asm__ volatile("1:\n\t" loop "dec %0\n\tjnz 1b\n\t" : "+r"(n) : "r"(a_rows), "r"(b_panel) : CLOBBER); \
  return N * (double)(work) / (now() - t)

static double fma_rate(void) {
  TIMED_LOOP(FMA(0) FMA(1) FMA(2) FMA(3) FMA(4) FMA(5) FMA(6) FMA(7) FMA(8) FMA(9) FMA(10) FMA(11), 12);
}

static double madd_rate(void) {
  TIMED_LOOP(MADD(0) MADD(1) MADD(2) MADD(3) MADD(4) MADD(5) MADD(6) MADD(7) MADD(8) MADD(9) MADD(10) MADD(11), 12);
}

static double int16_madd_add_rate(void) {
  TIMED_LOOP(MADD_ADD(0, 1) MADD_ADD(2, 3) MADD_ADD(4, 5) MADD_ADD(6, 7) MADD_ADD(8, 9) MADD_ADD(10, 11), 192);
}

static double int16_kernel_rate(void) {
  TIMED_LOOP("vpmovsxbw (%2), %%ymm12\n\t"
             "vpmovsxbw 16(%2), %%ymm13\n\t" ROW_INT16(0, 0, 1) ROW_INT16(8, 2, 3) ROW_INT16(16, 4, 5)
                 ROW_INT16(24, 6, 7) ROW_INT16(32, 8, 9) ROW_INT16(40, 10, 11),
             192);
}

static double u8s8_rate(void) {
  TIMED_LOOP("vmovdqu (%2), %%ymm12\n\t"
             "vmovdqu 32(%2), %%ymm13\n\t" ROW_U8S8(0, 0, 1) ROW_U8S8(4, 2, 3) ROW_U8S8(8, 4, 5) ROW_U8S8(12, 6, 7)
                 ROW_U8S8(16, 8, 9),
             320);
}

int main(void) {
  static const struct {
    const char* name;
    const char* unit;
    double (*run)(void);
  } loops[] = {
      {"fma", "G instructions/s", fma_rate},
      {"vpmaddwd", "G instructions/s", madd_rate},
      {"int16 madd+add", "GMAC/s", int16_madd_add_rate},
      {"int16 kernel", "GMAC/s", int16_kernel_rate},
      {"u8s8 5x16", "GMAC/s", u8s8_rate},
  };
  enum { kLoops = sizeof loops / sizeof loops[0] };
  double best[kLoops] = {0};
  for (int round = 0; round < ROUNDS; ++round)
    for (int i = 0; i < kLoops; ++i) {
      const double rate = loops[i].run();
      if (rate > best[i]) best[i] = rate;
    }
  for (int i = 0; i < kLoops; ++i) printf("%-16s %7.2f %s\n", loops[i].name, best[i] / 1e9, loops[i].unit);
  return 0;
}
