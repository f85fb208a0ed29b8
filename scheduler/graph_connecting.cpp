#include "scheduler/graph_connecting.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "compiler/ir/content_hash.h"
#include "compiler/ir/error.h"
#include "compiler/ir/replace_file.h"
#include "scheduler/int_gemm.h"

namespace tilegraph::scheduler {

namespace {

std::string tensor_signature(const Tensor& t) {
  return std::string(dtype_name(t.dtype)) + "[" + shape_to_string(t.shape) + "]";
}

// A contraction (matmul, convolution): a sum over products of several inputs.
bool is_contraction(const Op& op) {
  if (op.reduction != Reduction::kSum) return false;
  std::set<int64_t> slots;
  visit(op.body, [&](const Expr& x) {
    if (x->kind == ExprKind::kLoad) slots.insert(x->int_value);
  });
  return slots.size() >= 2;
}

// Bump when the cost model, the search or the cache layout changes: cached
// results of another version are ignored.
constexpr const char* kCacheFormat = "tilegraph-schedule-cache/16";

struct Group {
  std::vector<int> ops;              // sorted (topological)
  // Merges put the kept group's edges first: a deque, so that a long
  // chain merged into its one-op consumer is not copied at every step.
  std::deque<FusedEdge> edges;
  std::vector<int> extra_outputs;    // ops besides the root whose outputs leave the kernel (sorted)
  bool alive = true;
  bool library_gemm = false;         // holds a --skip-dot library GEMM
};

// The sorted union of two sorted lists of distinct ops, built on the longer
// one: merging a one-op group into a long one costs O(1) when it comes after.
std::vector<int> sorted_union(std::vector<int> a, std::vector<int> b) {
  if (a.size() < b.size()) std::swap(a, b);
  if (b.empty()) return a;
  const auto middle = static_cast<std::ptrdiff_t>(a.size());
  const bool after = b.front() > a.back();
  a.insert(a.end(), b.begin(), b.end());
  if (!after) std::inplace_merge(a.begin(), a.begin() + middle, a.end());
  return a;
}

class Connector {
 public:
  Connector(const Graph& g, const ArchSpec& arch, const TileGraphOptions& o, ScheduleCache* cache)
      : g_(g), arch_(arch), o_(o), cache_(cache) {
    consumers_.resize(g.tensors.size());
    for (size_t i = 0; i < g.ops.size(); ++i)
      for (TensorId in : std::set<TensorId>(g.ops[i].inputs.begin(), g.ops[i].inputs.end()))
        consumers_[in].push_back(static_cast<int>(i));
    outputs_.insert(g.outputs.begin(), g.outputs.end());
    int_gemm_epilogue_ = int_gemm_epilogue_ops();
    library_gemm_.resize(g.ops.size());
    if (o.library_gemms)
      for (size_t i = 0; i < g.ops.size(); ++i) library_gemm_[i] = match_library_gemm(g, g.ops[i]);
    for (size_t i = 0; i < g.ops.size(); ++i) {
      // An op with no output elements computes nothing: it gets no kernel
      // (a GPU cannot launch an empty grid) and is never fused.
      const bool empty = num_elements(g.tensor(g.ops[i].output).shape) == 0;
      groups_.push_back({{static_cast<int>(i)}, {}, {}, !empty, library_gemm_[i].has_value()});
      group_of_.push_back(empty ? -1 : static_cast<int>(i));
    }
    merged_into_.resize(groups_.size(), -1);
  }

  Schedule run() {
    if (o_.fusion != FusionLevel::kNone) {
      connect_library_epilogues();
      connect_registers();
    }
    if (o_.fusion == FusionLevel::kFull) connect_shared();
    Schedule s;
    s.arch = arch_.name;
    for (Group& grp : groups_) {
      if (!grp.alive) continue;
      KernelSchedule k = kernel_of(grp);
      const TilingResult r = tiling(k, o_.topk, o_.search_budget);
      if (!r.feasible)
        throw UserError(str_cat("no tile of kernel '", g_.ops[k.ops.back()].name, "' (ONNX nodes ",
                                g_.ops[k.ops.back()].source_nodes.empty() ? "?" : g_.ops[k.ops.back()].source_nodes[0],
                                ") fits ", arch_.name, "'s limits: ", r.infeasible_reason));
      k.config = r.top.front();
      k.candidates = r.top;
      k.candidate_estimates = r.estimates;
      k.features = r.features.front();
      k.estimate = r.estimates.front();
      const std::vector<Op> phases = phase_ops(g_, k);
      k.library_gemm = library_gemm_[k.ops.front()];  // a GEMM leads its group (its bias epilogue follows)
      if (k.library_gemm)
        k.kind = KernelKind::kLibraryGemm;
      else if (arch_.is_gpu() || phases.size() > 1)
        k.kind = KernelKind::kBlock;
      else
        apply_cpu_loop_rules(g_, phases.front(), arch_, k);  // stays kLoopNest
      s.kernels.push_back(std::move(k));
    }
    return s;
  }

 private:
  KernelSchedule kernel_of(const Group& grp) const {
    KernelSchedule k;
    k.ops = grp.ops;
    k.edges.assign(grp.edges.begin(), grp.edges.end());
    k.extra_outputs = grp.extra_outputs;
    return k;
  }

  // A cached result whose configs cannot belong to k (a tile of another rank:
  // an edited or damaged cache file) is searched again instead of used.
  bool fits_kernel(const TilingResult& r, const KernelSchedule& k) const {
    const size_t rank = g_.tensor(g_.ops[k.ops.back()].output).shape.size();
    return std::all_of(r.top.begin(), r.top.end(), [&](const TileConfig& c) { return c.tile.size() == rank; });
  }

  // The group op belongs to now (-1: an empty op, in none). Merges are
  // recorded on the merged-away group (merged_into_), not on each of its
  // ops: a chain's groups grow by one op per merge.
  int group_of(int op) const {
    int grp = group_of_[static_cast<size_t>(op)];
    if (grp < 0) return grp;
    int top = grp;
    while (merged_into_[static_cast<size_t>(top)] >= 0) top = merged_into_[static_cast<size_t>(top)];
    while (merged_into_[static_cast<size_t>(grp)] >= 0) {  // path compression
      const int next = merged_into_[static_cast<size_t>(grp)];
      merged_into_[static_cast<size_t>(grp)] = top;
      grp = next;
    }
    group_of_[static_cast<size_t>(op)] = top;
    return top;
  }

  TilingResult tiling(const KernelSchedule& k, int topk, int budget) {
    const uint64_t key = tiling_key(g_, k, arch_, topk, budget);
    if (cache_) {
      const TilingResult* hit = cache_->find(key);
      if (hit && fits_kernel(*hit, k)) {
        ++cache_->hits;
        TilingResult r = *hit;
        // The cache keeps features; estimates follow from them and the arch.
        r.estimates.clear();
        for (const KernelFeatures& f : r.features) r.estimates.push_back(estimate_cost(f, arch_));
        return r;
      }
      ++cache_->misses;
    }
    TilingResult r = tile_subgraph(g_, k, arch_, topk, budget);
    if (cache_) cache_->insert(key, r);
    return r;
  }

  double best_seconds(const Group& grp, std::string* why = nullptr) {
    const TilingResult r = tiling(kernel_of(grp), 1, o_.trial_budget);
    if (!r.feasible && why) *why = r.infeasible_reason;
    return r.feasible ? r.estimates.front().seconds : std::numeric_limits<double>::infinity();
  }

  // Group `from` merged into group `into`: edges from from's root to its
  // consumers in `into` at `level`; from's root becomes an extra output when
  // it is also read elsewhere (or is a graph output).
  Group merged_group(int from, int into, Connection level) const {
    return joined(groups_[from], groups_[into], into, level);
  }

  // Group a joined to group m (index into): m's edges, then the new ones,
  // then a's.
  Group joined(Group a, Group m, int into, Connection level) const {
    const int root = a.ops.back();
    bool escapes = outputs_.count(g_.ops[root].output) > 0;
    std::vector<FusedEdge> fresh;
    for (int c : consumers_[g_.ops[root].output]) {
      if (group_of(c) == into) fresh.push_back({root, c, level});
      else escapes = true;
    }
    if (a.edges.size() > m.edges.size()) {
      a.edges.insert(a.edges.begin(), fresh.begin(), fresh.end());
      a.edges.insert(a.edges.begin(), m.edges.begin(), m.edges.end());
      m.edges = std::move(a.edges);
    } else {
      m.edges.insert(m.edges.end(), fresh.begin(), fresh.end());
      m.edges.insert(m.edges.end(), a.edges.begin(), a.edges.end());
    }
    m.ops = sorted_union(std::move(m.ops), std::move(a.ops));
    if (escapes) a.extra_outputs.push_back(root);  // after a's other ops: still sorted
    m.extra_outputs = sorted_union(std::move(m.extra_outputs), std::move(a.extra_outputs));
    m.library_gemm = m.library_gemm || a.library_gemm;
    return m;
  }

  void merge(int from, int into, Connection level) {
    Group m = joined(std::move(groups_[from]), std::move(groups_[into]), into, level);
    groups_[from] = Group{};
    groups_[from].alive = false;
    groups_[into] = std::move(m);
    merged_into_[static_cast<size_t>(from)] = into;
  }

  // The group of op's earliest consumer (-1: none, or op's own group). The
  // merged kernel runs at that group's place, so every other reader of a
  // value leaving `from` must be a later kernel (which also rules out cycles).
  int first_consumer_group(int op) const {
    int best = -1;
    for (int c : consumers_[g_.ops[op].output]) {
      const int grp = group_of(c);
      if (grp < 0 || grp == group_of(op)) continue;
      if (best < 0 || groups_[grp].ops.back() < groups_[best].ops.back()) best = grp;
    }
    return best;
  }

  bool others_read_later(int from, int into) const {
    const int at = groups_[into].ops.back();
    for (int op : groups_[from].ops)
      for (int c : consumers_[g_.ops[op].output]) {
        const int grp = group_of(c);
        if (grp >= 0 && grp != from && grp != into && groups_[grp].ops.back() < at) return false;
      }
    return true;
  }

  // --skip-dot: a library GEMM's bias add, then a ReLU, join it, computed
  // by the library's epilogue (match_bias_epilogue, is_relu_epilogue);
  // nothing else ever does.
  void connect_library_epilogues() {
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      std::optional<LibraryGemm>& gemm = library_gemm_[i];
      if (!gemm || group_of(i) < 0) continue;
      // The only reader of `tail`'s output, when it may join (-1: none).
      auto sole_consumer = [&](int tail) {
        const TensorId out = g_.ops[tail].output;
        if (outputs_.count(out) || consumers_[out].size() != 1) return -1;
        const int c = consumers_[out].front();
        return group_of(c) < 0 || library_gemm_[c] ? -1 : c;
      };
      int tail = static_cast<int>(i);
      if (const int c = sole_consumer(tail); c >= 0) {
        const int slot = match_bias_epilogue(g_, g_.ops[c], g_.ops[tail].output, *gemm);
        if (slot >= 0) {
          gemm->bias_op = c, gemm->bias_slot = slot;
          merge(group_of(tail), group_of(c), Connection::kShared);
          tail = c;
        }
      }
      if (const int c = sole_consumer(tail); c >= 0 && is_relu_epilogue(g_, g_.ops[c], g_.ops[tail].output)) {
        gemm->relu_op = c;
        merge(group_of(tail), group_of(c), Connection::kShared);
      }
    }
  }

  // An op's domain: its output elements times its reduce extents (the
  // values of an input it reads, counting repeats).
  int64_t iterations(const Op& op) const {
    int64_t domain = num_elements(g_.tensor(op.output).shape);
    for (int64_t r : op.reduce_extents) domain = num_elements({domain, r});
    return domain;
  }

  void connect_registers() {
    const char* limit_env = std::getenv("TILEGRAPH_DEBUG_MAX_REGISTER_MERGES");
    int64_t merges_left = limit_env ? std::atoll(limit_env) : std::numeric_limits<int64_t>::max();
    for (size_t p = 0; p < g_.ops.size() && merges_left > 0; ++p) {
      const Op& producer = g_.ops[p];
      if (group_of(p) < 0) continue;
      if (producer.reduction != Reduction::kNone) continue;
      const TensorId out = producer.output;
      if (outputs_.count(out) || consumers_[out].size() != 1) continue;
      if (groups_[group_of(p)].library_gemm) continue;  // a bias epilogue stays in the library call
      const int c = consumers_[out].front();
      const Op& consumer = g_.ops[c];
      int loads = 0;  // over every slot reading out (Mul(x, x) has two)
      for (size_t s = 0; s < consumer.inputs.size(); ++s)
        if (consumer.inputs[s] == out) loads += count_loads(consumer.body, static_cast<int>(s));
      if (loads != 1) continue;
      // Each producer value must be used once: the consumer's domain is no
      // bigger than the producer's output (else inlining recomputes it).
      if (iterations(consumer) > num_elements(g_.tensor(out).shape) || group_of(c) < 0) continue;
      if (group_of(c) >= 0 && groups_[group_of(c)].library_gemm) continue;  // the library reads memory
      merge(group_of(p), group_of(c), Connection::kRegister);
      --merges_left;
    }
  }

  int64_t best_blocks(const Group& grp) {
    const TilingResult r = tiling(kernel_of(grp), 1, o_.trial_budget);
    return r.feasible ? r.features.front().blocks : 0;
  }

  // On a CPU, fusing a producer that fills every core into a consumer that
  // runs on fewer blocks (a whole-tensor min/max, DynamicQuantizeLinear's
  // range) serializes the producer: ViT-S's GELU (77k erf) ran on one core
  // inside its quantizer's kernel. The roofline cannot see it (it charges
  // flops at the vector peak), so it is a rule: such producers stay apart.
  bool serializes_producer(const Group& producer, const Group& merged) {
    if (arch_.is_gpu()) return false;
    int64_t elements = 0;
    for (int op : producer.ops) elements += num_elements(g_.tensor(g_.ops[op].output).shape);
    if (elements < 4096) return false;
    return best_blocks(merged) < arch_.cores && best_blocks(producer) >= arch_.cores;
  }

  bool allowed_on_cpu(const Group& grp) const {
    if (arch_.is_gpu()) return true;
    // The CPU's block kernels are flat loops: contractions keep their
    // register-tiled single-op kernels.
    for (int op : grp.ops)
      if (is_contraction(g_.ops[op])) return false;
    return true;
  }

  // On a CPU an integer GEMM's chain of elementwise consumers becomes its
  // epilogue (use_gemm_ukernels), so i32 accumulators never reach
  // memory. Merged into a reduction (DynamicQuantizeLinear's range of a GELU)
  // the chain could not be: such a merge is refused.
  bool steals_int_gemm_epilogue(const Group& merged) const {
    if (arch_.is_gpu()) return false;
    bool reduces = false, epilogue = false;
    for (int op : merged.ops) {
      reduces |= g_.ops[op].reduction != Reduction::kNone;
      epilogue |= int_gemm_epilogue_[op];
    }
    return reduces && epilogue;
  }

  // On a CPU a contraction's elementwise consumers (a conv's bias add and
  // ReLU) become the GEMM micro-kernel's epilogue for free
  // (use_gemm_ukernels; TileGraphOptions::float_gemm_epilogues). Merged
  // instead into a consumer whose windows overlap (ResNet's 3x3 stride-2
  // max pool after its stem conv), they make that kernel stage the whole
  // activated tile in a buffer: ResNet-50's pool took 0.55 ms against
  // onnxruntime's 0.21. The roofline prices both sides the same (one round
  // trip of the activation), so it is a rule.
  bool steals_gemm_epilogue(const Group& epilogue, int into) const {
    if (arch_.is_gpu() || !o_.float_gemm_epilogues) return false;
    bool fed_by_gemm = false;
    for (int op : epilogue.ops) {
      if (g_.ops[op].reduction != Reduction::kNone) return false;
      for (TensorId in : g_.ops[op].inputs) {
        const int producer = g_.producer(in);
        fed_by_gemm |= producer >= 0 && is_contraction(g_.ops[producer]) && consumers_[in].size() == 1 &&
                       !outputs_.count(in);
      }
    }
    if (!fed_by_gemm) return false;
    const TensorId value = g_.ops[epilogue.ops.back()].output;
    for (int op : groups_[into].ops) {
      const Op& o = g_.ops[op];
      if (o.reduction == Reduction::kNone ||
          std::find(o.inputs.begin(), o.inputs.end(), value) == o.inputs.end())
        continue;
      if (iterations(o) > num_elements(g_.tensor(value).shape)) return true;  // windows overlap
    }
    return false;
  }

  // Elementwise ops fed, through elementwise ops of the same size, by an
  // integer GEMM.
  std::vector<bool> int_gemm_epilogue_ops() const {
    std::vector<bool> result(g_.ops.size(), false);
    // Per tensor: is it an integer GEMM's output or such an op's?
    std::vector<bool> fed(g_.tensors.size(), false);
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& op = g_.ops[i];
      if (op.reduction == Reduction::kNone) {
        const int64_t size = num_elements(g_.tensor(op.output).shape);
        for (TensorId in : op.inputs)
          if (fed[in] && num_elements(g_.tensor(in).shape) == size) result[i] = true;
      }
      fed[op.output] = result[i] || is_int8_contraction(g_, op);
    }
    return result;
  }

  void connect_shared() {
    // Debugging aid: TILEGRAPH_DEBUG_MAX_MERGES=N stops after N shared-level
    // merges, to bisect a miscompiled fusion.
    const char* limit_env = std::getenv("TILEGRAPH_DEBUG_MAX_MERGES");
    int64_t merges_left = limit_env ? std::atoll(limit_env) : std::numeric_limits<int64_t>::max();
    // Consumers first (reverse topological order), so a producer read by
    // several ops finds them already in one group; repeat until stable.
    for (bool changed = true; changed && merges_left > 0;) {
    changed = false;
    for (size_t gi = groups_.size(); gi-- > 0 && merges_left > 0;) {
      if (!groups_[gi].alive) continue;
      const int root = groups_[gi].ops.back();
      const int into = first_consumer_group(root);
      if (into < 0 || !others_read_later(static_cast<int>(gi), into)) continue;
      if (static_cast<int>(groups_[into].ops.size() + groups_[gi].ops.size()) > o_.max_group_ops) continue;
      if (groups_[gi].library_gemm || groups_[into].library_gemm) continue;
      const Group merged = merged_group(static_cast<int>(gi), into, Connection::kShared);
      if (!allowed_on_cpu(merged) || serializes_producer(groups_[gi], merged) ||
          steals_int_gemm_epilogue(merged) || steals_gemm_epilogue(groups_[gi], into))
        continue;
      const double apart = best_seconds(groups_[gi]) + best_seconds(groups_[into]);
      std::string why;
      const double together = best_seconds(merged, &why);
      if (o_.log_merges)
        std::cerr << "  merge " << g_.ops[root].name << " into " << g_.ops[groups_[into].ops.back()].name << ": "
                  << together * 1e6 << " us fused vs " << apart * 1e6 << " us apart -> "
                  << (together < apart ? "fused" : "kept apart") << (why.empty() ? "" : " (" + why + ")") << "\n";
      if (together < apart) {
        merge(static_cast<int>(gi), into, Connection::kShared);
        --merges_left;
        changed = true;
      }
    }
    }
  }

  const Graph& g_;
  const ArchSpec& arch_;
  const TileGraphOptions& o_;
  ScheduleCache* cache_;
  std::vector<std::vector<int>> consumers_;
  std::set<TensorId> outputs_;
  std::vector<Group> groups_;
  mutable std::vector<int> group_of_;     // per op: its group, or one merged into it since (group_of)
  mutable std::vector<int> merged_into_;  // per group: the group it was merged into, or -1
  std::vector<bool> int_gemm_epilogue_;
  std::vector<std::optional<LibraryGemm>> library_gemm_;  // per op (--skip-dot)
};

nlohmann::json config_json(const TileConfig& c) {
  return {{"tile", c.tile}, {"threads", c.threads}, {"reduce_step", c.reduce_step}};
}

TileConfig config_from(const nlohmann::json& j) {
  TileConfig c;
  c.tile = j.at("tile").get<std::vector<int64_t>>();
  c.threads = j.at("threads").get<int>();
  c.reduce_step = j.at("reduce_step").get<int64_t>();
  const bool positive = std::all_of(c.tile.begin(), c.tile.end(), [](int64_t t) { return t > 0; });
  if (!positive || c.threads < 0 || c.reduce_step < 0)
    throw std::invalid_argument("a tile config with a negative or zero size");
  return c;
}

// Every field estimate_cost reads: a warm cache must rank and fuse exactly
// as a cold one (a lost inner extent drops the CPU's vector tails and changes
// what GraphConnecting merges).
nlohmann::json features_json(const KernelFeatures& f) {
  return {{"blocks", f.blocks}, {"threads", f.threads_per_block}, {"shared", f.shared_bytes_per_block},
          {"registers", f.registers_per_thread}, {"dram", f.dram_bytes},
          {"constant", f.constant_bytes}, {"l2", f.l2_bytes},
          {"shared_moved", f.shared_bytes_moved},
          {"flops", f.flops}, {"dtype", static_cast<int>(f.compute_dtype)}, {"padding", f.padding},
          {"inner", f.inner_extent}, {"ukernel_flops", f.ukernel_flops}, {"packed", f.packed_bytes},
          {"footprint", f.tile_footprint_bytes}, {"reread", f.reread_bytes}, {"scalar_inner", f.scalar_inner},
          {"gated_points", f.gated_reduction_points}};
}

KernelFeatures features_from(const nlohmann::json& j) {
  KernelFeatures f;
  f.blocks = j.at("blocks");
  f.threads_per_block = j.at("threads");
  f.shared_bytes_per_block = j.at("shared");
  f.registers_per_thread = j.at("registers");
  f.dram_bytes = j.at("dram");
  f.constant_bytes = j.at("constant");
  f.l2_bytes = j.at("l2");
  f.shared_bytes_moved = j.at("shared_moved");
  f.flops = j.at("flops");
  f.compute_dtype = static_cast<DType>(j.at("dtype").get<int>());
  f.padding = j.at("padding");
  f.inner_extent = j.at("inner");
  f.ukernel_flops = j.at("ukernel_flops");
  f.packed_bytes = j.at("packed");
  f.tile_footprint_bytes = j.at("footprint");
  f.reread_bytes = j.at("reread");
  f.scalar_inner = j.at("scalar_inner");
  f.gated_reduction_points = j.at("gated_points");
  return f;
}

}  // namespace

uint64_t tiling_key(const Graph& g, const KernelSchedule& k, const ArchSpec& arch, int topk, int budget) {
  // Everything the search depends on, and nothing it does not (op and
  // tensor names): equal subgraphs of different layers share a key.
  // The whole spec, not only its name: a calibrated spec (--arch-file) of
  // the same arch ranks configs differently.
  std::string text = str_cat(arch_to_json(arch), "|", topk, "|", budget, "|");
  std::map<TensorId, int> local;  // tensors renumbered by first use
  auto id_of = [&](TensorId t) { return local.emplace(t, static_cast<int>(local.size())).first->second; };
  std::map<int, int> position;
  for (size_t i = 0; i < k.ops.size(); ++i) position[k.ops[i]] = static_cast<int>(i);
  const std::set<int> extra(k.extra_outputs.begin(), k.extra_outputs.end());
  for (int index : k.ops) {
    const Op& op = g.ops[index];
    text += str_cat(extra.count(index) ? "out-op " : "op ", reduction_name(op.reduction), " ", to_string(op.body), " ->", id_of(op.output), ":",
                    tensor_signature(g.tensor(op.output)), " red");
    for (int64_t r : op.reduce_extents) text += str_cat(" ", r);
    for (TensorId in : op.inputs) text += str_cat(" in", id_of(in), ":", tensor_signature(g.tensor(in)));
    text += "\n";
  }
  for (const FusedEdge& e : k.edges)
    text += str_cat("edge ", position[e.producer], ">", position[e.consumer], " ", connection_name(e.level), "\n");
  return content_hash(text);
}

void ScheduleCache::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    // Another format (an older tilegraph's cost model) is a cold cache.
    if (j.value("format", "") != kCacheFormat) return;
    for (const auto& [key, value] : j.at("entries").items()) {
      TilingResult r;
      r.feasible = value.at("feasible");
      r.infeasible_reason = value.value("why", "");
      for (const auto& c : value.at("top")) {
        r.top.push_back(config_from(c.at("config")));
        r.features.push_back(features_from(c.at("features")));
      }
      entries_[std::stoull(key)] = std::move(r);
    }
  } catch (const std::exception& e) {
    // A damaged cache is only a missed speed-up: say so, and start cold.
    entries_.clear();
    std::cerr << "warning: ignoring the damaged schedule cache '" << path << "' (" << one_line(e.what())
              << "); it is rewritten after this tune" << std::endl;
  }
}

void ScheduleCache::save(const std::string& path) const {
  nlohmann::json j;
  j["format"] = kCacheFormat;
  j["entries"] = nlohmann::json::object();
  for (const auto& [key, r] : entries_) {
    nlohmann::json top = nlohmann::json::array();
    for (size_t i = 0; i < r.top.size(); ++i)
      top.push_back({{"config", config_json(r.top[i])}, {"features", features_json(r.features[i])}});
    j["entries"][std::to_string(key)] = {{"feasible", r.feasible}, {"top", top}, {"why", r.infeasible_reason}};
  }
  const std::filesystem::path file(path);
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  replace_file(file, j.dump() + "\n");
}

const char* fusion_level_name(FusionLevel level) {
  switch (level) {
    case FusionLevel::kNone: return "none";
    case FusionLevel::kRegister: return "register";
    case FusionLevel::kFull: return "full";
  }
  return "full";
}

FusionLevel fusion_level_from_name(const std::string& name) {
  for (FusionLevel level : {FusionLevel::kNone, FusionLevel::kRegister, FusionLevel::kFull})
    if (name == fusion_level_name(level)) return level;
  throw UserError(str_cat("--fusion-level '", name, "': expected none, register or full"));
}

const TilingResult* ScheduleCache::find(uint64_t key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void ScheduleCache::insert(uint64_t key, const TilingResult& r) { entries_[key] = r; }

Schedule schedule_tile_graph(const Graph& g, const ArchSpec& arch, const TileGraphOptions& options,
                             ScheduleCache* cache) {
  return Connector(g, arch, options, cache).run();
}

}  // namespace tilegraph::scheduler
