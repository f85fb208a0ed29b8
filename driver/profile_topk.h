// Top-k profiling (tune --profile-topk): the cost model ranks each kernel's
// tile configs; this times its top k on the device and keeps the fastest.
//
// Kernels with equal tiling problems (the same subgraph in every layer:
// scheduler::tiling_key) are profiled once. All candidates of all kernels
// are lowered, written into one harness (codegen/project/emit_profile_project.h),
// built with CMake in parallel and run as a separate process under a
// timeout, so a crashing or hanging candidate cannot take the compiler with
// it: a candidate that fails or never reports keeps its cost-model rank
// behind every measured one. The choice per tiling problem is cached in
// PREFIX/tilegraph_rt/<arch>/profile_cache.json (keyed by the tiling key and
// the device), so re-tuning does not profile again.
#pragma once
#include <string>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::driver {

struct ProfileReport {
  int kernels = 0;        // kernels whose config was chosen by measurement
  int problems = 0;       // distinct tiling problems among them
  int variants = 0;       // candidates timed in this run (0 when all were cached)
  int cache_hits = 0;     // problems answered by profile_cache.json
  int changed = 0;        // kernels whose fastest config is not the cost model's first
  double seconds = 0;     // building and running the harness
};

// Profiles the block kernels of `schedule` that have more than one
// candidate, for `arch` on this machine: the host CPU, or for a CUDA arch
// the visible NVIDIA GPU. Sets each profiled kernel's config (and its
// features and estimate) to the fastest measured candidate and its
// measured_seconds. `work_dir`: the harness and the cache live there.
// `topk`/`search_budget` as given to schedule_tile_graph (they are part of
// the tiling key). `compiler_launcher`: as for build_project. Throws
// UserError when the harness cannot be built.
ProfileReport profile_topk(const Graph& g, scheduler::Schedule& schedule, const scheduler::ArchSpec& arch,
                           int topk, int search_budget, const std::string& work_dir, int jobs,
                           const std::string& compiler_launcher = "");

// Whether an NVIDIA GPU is visible to this process (its device nodes).
bool nvidia_gpu_present();

}  // namespace tilegraph::driver
