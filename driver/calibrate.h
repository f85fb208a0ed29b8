// `tilegraph calibrate`: measure this machine and write an arch spec whose
// numbers are measured rather than assumed (tune --arch-file FILE uses it).
//
// A small C++ program (OpenMP, -O3 -march=native, like the generated CPU
// projects) is written, built with CMake and run as a child process; it
// times, on `cores` threads: read bandwidth out of each cache level and
// DRAM, vector FMA throughput, the float and int8 GEMM micro-kernels that
// the generated code calls (codegen/ukernels), packing a matrix into the
// float micro-kernel's panels, an OpenMP parallel loop's
// fork/join on one and on all threads, and a parallel loop's cost per
// iteration. Each number is the median of a few samples sized to finish
// the whole run in seconds. The spec is host_arch() with those numbers in
// place of its built-in estimates.
#pragma once
#include <string>

#include "scheduler/arch_spec.h"

namespace tilegraph::driver {

struct CalibrateOptions {
  int cores = 0;               // threads to calibrate for (0: every core)
  std::string work_dir;        // where the benchmark project is built ("": a fresh temporary folder, removed after)
  int jobs = 0;                // build jobs (0: cores)
};

struct Calibration {
  scheduler::ArchSpec spec;    // the calibrated host spec
  double sgemm_flops = 0;      // the float micro-kernel's achieved rate, all threads
  double qgemm_ops = 0;        // the int8 micro-kernel's
  double fma_flops = 0;        // vector FMA throughput
  double seconds = 0;          // building and running the benchmarks
  std::string summary;         // one line per measurement, for the user
};

// Throws UserError when the benchmark cannot be built or run, or measures
// nonsense (a non-positive or non-finite number).
Calibration calibrate_host(const CalibrateOptions& options);

}  // namespace tilegraph::driver
