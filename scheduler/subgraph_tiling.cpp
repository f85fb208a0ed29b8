#include "scheduler/subgraph_tiling.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "compiler/ir/error.h"

namespace tilegraph::scheduler {

namespace {

// Welder keeps producer and consumer tiles aligned instead of recomputing
// producers per consumer block: a config may compute a producer's elements
// at most this many times over (halos of stencils stay affordable).
constexpr double kMaxRecompute = 1.3;

int64_t volume_of(const std::vector<int64_t>& tile) {
  int64_t v = 1;
  for (int64_t t : tile) v *= t;
  return v;
}

// Threads per block for a tile on a GPU: about four root elements per
// thread, whole warps, at most 256 (room for several blocks per SM).
int threads_for(const std::vector<int64_t>& tile, const ArchSpec& arch) {
  if (!arch.is_gpu()) return 1;
  const int64_t want = std::max<int64_t>(volume_of(tile) / 4, 1);
  int64_t threads = arch.warp_size;
  while (threads < want && threads < 256) threads *= 2;
  return static_cast<int>(std::min<int64_t>(threads, arch.max_threads_per_block));
}

bool has_reduction(const Graph& g, const KernelSchedule& k) {
  for (int op : k.ops)
    if (g.ops[op].reduction != Reduction::kNone) return true;
  return false;
}

bool has_half_reduction(const Graph& g, const KernelSchedule& k) {
  for (int op : k.ops) {
    const Op& o = g.ops[op];
    if (o.reduction == Reduction::kSum && any_node(o.body, [](const Expr& e) { return e->dtype == DType::kF16; }))
      return true;
  }
  return false;
}

// Threads per block to try for a tile: threads_for's, and where tensor
// cores may apply, a half and a quarter of it too — MMA tiles are dealt
// whole to warps, so fewer warps with longer runs can be what fits.
std::vector<int> thread_options(const std::vector<int64_t>& tile, const ArchSpec& arch, bool mma) {
  std::vector<int> options = {threads_for(tile, arch)};
  if (!mma) return options;
  for (int t = options.front() / 2; t >= arch.warp_size && options.size() < 3; t /= 2) options.push_back(t);
  return options;
}

struct Candidate {
  TileConfig config;
  CostEstimate estimate;
  KernelFeatures features;
  std::string key;
};

}  // namespace

TilingResult tile_subgraph(const Graph& g, const KernelSchedule& k, const ArchSpec& arch, int topk,
                           int budget) {
  TilingResult result;
  const Shape& shape = g.tensor(g.ops.at(static_cast<size_t>(k.ops.back())).output).shape;
  const int rank = static_cast<int>(shape.size());
  // Reduce steps: 32 elements of fp32 is one 128-byte line per staged row,
  // what coalesced loads want; a second, longer step trades shared memory
  // for fewer barriers.
  std::vector<int64_t> steps = {0};
  if (arch.is_gpu() && has_reduction(g, k)) steps = {32, 64};

  const bool mma = has_mma_m16n8k16(arch) && has_half_reduction(g, k);
  if (mma) budget *= 3;  // up to three thread counts per tile
  std::vector<Candidate> evaluated;
  std::set<std::vector<int64_t>> seen;
  using Entry = std::pair<double, std::string>;  // cost, key: min-heap, ties by text
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> frontier;
  std::map<std::string, std::vector<int64_t>> tile_of;

  auto evaluate = [&](const std::vector<int64_t>& tile) {
    if (!seen.insert(tile).second || result.evaluated >= budget) return;
    double best = std::numeric_limits<double>::infinity();
    std::string best_key;
    for (int threads : thread_options(tile, arch, mma))
    for (int64_t step : steps) {
      TileConfig c;
      c.tile = tile;
      c.threads = threads;
      c.reduce_step = step;
      const BlockPlan plan = plan_block_kernel(g, k, c, arch);
      CostEstimate e = estimate_cost(plan.features, arch);
      if (!plan.uncovered_output.empty() && e.feasible) {
        e.feasible = false;
        e.infeasible_reason = "the tiles do not cover extra output " + plan.uncovered_output;
        e.seconds = std::numeric_limits<double>::infinity();
      }
      if (plan.recompute > kMaxRecompute && e.feasible) {
        e.feasible = false;
        e.infeasible_reason = str_cat("recomputes producers ", plan.recompute, "x");
        e.seconds = std::numeric_limits<double>::infinity();
      }
      ++result.evaluated;
      if (!e.feasible && result.infeasible_reason.empty()) result.infeasible_reason = c.to_string() + ": " + e.infeasible_reason;
      Candidate cand{c, e, plan.features, c.to_string()};
      if (e.feasible && e.seconds < best) best = e.seconds, best_key = cand.key;
      evaluated.push_back(std::move(cand));
      // A step only matters when some phase was chunked.
      bool chunked = false;
      for (const PhasePlan& p : plan.phase_plans) chunked |= p.step > 0;
      if (!chunked) break;
    }
    // Infeasible tiles stay in the frontier (behind every feasible one): a
    // bigger tile can fix what made them infeasible (a row split that
    // recomputes, a tile too small to fill a warp).
    const std::string key = best_key.empty() ? TileConfig{tile, 0, 0}.to_string() : best_key;
    tile_of[key] = tile;
    frontier.emplace(best_key.empty() ? std::numeric_limits<double>::max() : best, key);
  };

  std::vector<int64_t> base(static_cast<size_t>(rank), 1);
  if (rank > 0) base.back() = std::min<int64_t>(shape.back(), arch.is_gpu() ? arch.warp_size : 16);
  evaluate(base);
  while (!frontier.empty() && result.evaluated < budget) {
    const std::vector<int64_t> tile = tile_of[frontier.top().second];
    frontier.pop();
    for (int d = rank - 1; d >= 0; --d) {
      if (tile[d] >= shape[d]) continue;
      std::vector<int64_t> grown = tile;
      grown[d] = std::min(shape[d], tile[d] * 2);
      evaluate(grown);
      grown[d] = shape[d];
      evaluate(grown);
    }
  }

  std::stable_sort(evaluated.begin(), evaluated.end(), [](const Candidate& a, const Candidate& b) {
    if (a.estimate.feasible != b.estimate.feasible) return a.estimate.feasible;
    if (a.estimate.seconds != b.estimate.seconds) return a.estimate.seconds < b.estimate.seconds;
    return a.key < b.key;
  });
  for (const Candidate& c : evaluated) {
    if (!c.estimate.feasible || static_cast<int>(result.top.size()) >= std::max(topk, 1)) break;
    result.top.push_back(c.config);
    result.estimates.push_back(c.estimate);
    result.features.push_back(c.features);
  }
  result.feasible = !result.top.empty();
  return result;
}

}  // namespace tilegraph::scheduler
