#include "codegen/lowering/lower_block_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "codegen/lowering/kernel_builder.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

using scheduler::BlockPlan;
using scheduler::OpTile;
using scheduler::PhasePlan;
using scheduler::Region;
using scheduler::StagedInput;

// Does `e` clamp an index that uses var v (min/max on integers) or test
// one (an integer comparison: a padding guard)? Then a vector loop over v
// gathers or blends where its body would otherwise run contiguously.
bool branches_on(const Expr& e, int v) {
  return e && any_node(e, [&](const Expr& n) {
           if (n->kind != ExprKind::kBinary || n->args.size() != 2 || !is_integer(n->args[0]->dtype)) return false;
           const BinaryOp op = n->binary_op;
           if (op != BinaryOp::kMin && op != BinaryOp::kMax && !is_comparison(op)) return false;
           return uses_var(n->args[0], v) || uses_var(n->args[1], v);
         });
}

bool branches_on(const Stmt& s, int v) {
  if (branches_on(s->index, v) || branches_on(s->value, v) || branches_on(s->cond, v)) return true;
  for (const Stmt& c : s->body)
    if (branches_on(c, v)) return true;
  return false;
}

// The most iterations peeled off either end of a vectorized loop to free
// its middle of clamps and padding tests (a window's padding, a halo).
constexpr int64_t kMaxPeel = 4;

// Accumulators (f32) that fit a 32 KiB L1 data cache, with room to spare
// for the inputs: a larger one-thread reduction tile goes row by row.
constexpr int64_t kL1Accumulators = 4096;

class BlockKernelBuilder : KernelBuilder {
 public:
  BlockKernelBuilder(const Graph& g, const scheduler::KernelSchedule& schedule, const BlockPlan& plan)
      : KernelBuilder(g), plan_(plan), threads_(std::max(1, plan.config.threads)) {
    kernel_.name = plan.phases.back().name;
    kernel_.schedule = schedule;
    kernel_.threads = threads_;
    kernel_.grid = plan.tiling.blocks();
    kernel_.shared_bytes = plan.shared.peak_bytes;
    kernel_.var_names = plan.tiling.vars.names;
    bounds_ = plan.tiling.vars.bounds;
    for (size_t i = 0; i < plan.phases.size(); ++i) {
      phase_of_[plan.phases[i].output] = static_cast<int>(i);
      add_source_nodes_once(plan.phases[i]);
    }
    for (const Op& op : plan.phases)
      for (TensorId in : op.inputs)
        if (!phase_of_.count(in) && !global_of_.count(in)) global_of_[in] = add_global(in, false);
    output_ = add_global(plan.phases.back().output, true);
    for (size_t i = 0; i + 1 < plan.phases.size(); ++i)
      if (plan.phase_plans[i].writes_global) extra_output_[static_cast<int>(i)] = add_global(plan.phases[i].output, true);
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      Buffer buf;
      buf.name = plan.buffers[b].name;
      buf.dtype = plan.buffers[b].dtype;
      buf.elements = plan.buffers[b].elements;
      buf.scope = MemoryScope::kShared;
      buf.offset = plan.shared.offsets[b];
      kernel_.buffers.push_back(buf);
      shared_ids_.push_back(static_cast<int>(kernel_.buffers.size() - 1));
    }
    if (threads_ > 1) tid_ = new_var("tid", threads_);
  }

  Kernel build() {
    kernel_.flops = static_cast<int64_t>(plan_.features.flops);
    for (const PhasePlan& pp : plan_.phase_plans) kernel_.tensor_cores |= pp.mma.has_value();
    std::vector<Stmt> phases;
    const int last = static_cast<int>(plan_.phases.size()) - 1;
    for (int i = 0; i <= last; ++i) {
      phases.push_back(build_phase(i));
      if (i != last) phases.push_back(make_barrier());
    }
    Stmt body = make_seq(phases);
    for (int id : shared_ids_) body = make_allocate(id, {body});
    kernel_.body = block_loops(body);
    return std::move(kernel_);
  }

 private:
  // A block's loop vars run at least once (hides KernelBuilder::new_var).
  int new_var(const std::string& name, int64_t extent) {
    return KernelBuilder::new_var(name, std::max<int64_t>(extent, 1));
  }

  Stmt block_loops(Stmt body) {
    std::vector<int> vars;
    for (size_t d = 0; d < plan_.tiling.block_vars.size(); ++d)
      if (plan_.tiling.blocks_per_dim[d] > 1) vars.push_back(plan_.tiling.block_vars[d]);
    if (vars.empty()) vars.push_back(new_var("b", 1));
    for (size_t i = vars.size(); i-- > 0;) {
      const int collapse = i == 0 ? static_cast<int>(vars.size()) : 1;
      body = make_for(vars[i], int_imm(bounds_[vars[i]].hi + 1), LoopKind::kBlocks, {body}, collapse);
    }
    return body;
  }

  // Replaces the vars in `from` by `to` in e.
  static Expr replace_vars(const Expr& e, const std::map<int, Expr>& with) {
    if (with.empty()) return e;
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kVar) return nullptr;
      auto it = with.find(static_cast<int>(n->int_value));
      return it == with.end() ? nullptr : it->second;
    });
  }

  // Index into a region-shaped buffer for tensor indices `idx`.
  Expr region_index(const Region& r, const Shape& shape, const std::vector<Expr>& idx) {
    Expr flat = int_imm(0);
    for (size_t d = 0; d < r.dims.size(); ++d) {
      const scheduler::RegionDim& rd = r.dims[d];
      Expr i = idx[d];
      if (rd.whole_dim) i = clamp_index(i, shape[d]);
      flat = flat * rd.extent + (i - rd.base - rd.lo);
    }
    return simplify(flat, bounds_);
  }

  // The phase op's value at axis_values, loads bound to where each input
  // lives in this kernel: a producer's shared region, a staged chunk, or
  // global memory (clamped into the tensor).
  Expr value_at(int phase, const std::vector<Expr>& axis_values, const std::map<int, const StagedInput*>& staged) {
    return value_of(phase, plan_.phases[phase].body, axis_values, staged);
  }

  // value_at for `e`, an expression over the phase op's vars (a factor of its body).
  // `replaced`: loads of these input slots read the given expression instead
  // (a transposed read's staging buffer: transposed_reads).
  Expr value_of(int phase, const Expr& e, const std::vector<Expr>& axis_values,
                const std::map<int, const StagedInput*>& staged, const std::map<int, Expr>& replaced = {}) {
    const Op& op = plan_.phases[phase];
    const Expr body = substitute_vars(e, axis_values);
    const Expr lowered = rewrite(body, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kLoad) return nullptr;
      const int slot = static_cast<int>(n->int_value);
      if (auto r = replaced.find(slot); r != replaced.end()) return r->second;
      const TensorId in = op.inputs[slot];
      const Shape& shape = g_.tensor(in).shape;
      auto producer = phase_of_.find(in);
      if (producer != phase_of_.end()) {
        const int p = producer->second;
        return load(shared_ids_[plan_.phase_plans[p].buffer], n->dtype,
                    {region_index(plan_.tiling.ops[p].region, shape, n->args)});
      }
      auto st = staged.find(slot);
      if (st != staged.end())
        return load(shared_ids_[st->second->buffer], n->dtype, {region_index(st->second->region, shape, n->args)});
      std::vector<Expr> idx;
      for (size_t d = 0; d < n->args.size(); ++d) {
        idx.push_back(clamp_index_if_needed(simplify(n->args[d], bounds_), shape[d], bounds_));
      }
      return load(global_of_.at(in), n->dtype, {linear_index(shape, idx)});
    });
    return finalize_indices(lowered, bounds_);
  }

  // A loop over [0, extent) of emit(index). When its body clamps or tests
  // the index near the ends only (reading a padded or haloed region), the
  // first and last few iterations (the fewest that do) get loops of their
  // own, so the middle one runs unclamped, with contiguous vector loads.
  Stmt peeled_loop(const std::string& name, int64_t extent, LoopKind kind,
                   const std::function<Stmt(const Expr&)>& emit) {
    auto loop_over = [&](const std::string& n, int64_t begin, int64_t end, LoopKind k) {
      const int v = new_var(n, end - begin);
      return make_for(v, int_imm(end - begin), k, {emit(begin == 0 ? var(v) : var(v) + int_imm(begin))});
    };
    // Does the body over [lo, extent - hi) still branch on the index?
    auto branches_between = [&](int64_t lo, int64_t hi) {
      const size_t vars = bounds_.size();
      const int v = new_var(name, extent - lo - hi);
      const bool b = branches_on(emit(lo == 0 ? var(v) : var(v) + int_imm(lo)), v);
      bounds_.resize(vars);
      kernel_.var_names.resize(vars);
      return b;
    };
    if (kind != LoopKind::kVectorized || !branches_between(0, 0)) return loop_over(name, 0, extent, kind);
    for (int64_t total = 1; total <= 2 * kMaxPeel && total < extent; ++total)
      for (int64_t lo = std::max<int64_t>(0, total - kMaxPeel); lo <= std::min(total, kMaxPeel); ++lo) {
        const int64_t hi = total - lo;
        if (branches_between(lo, hi)) continue;
        std::vector<Stmt> loops;
        if (lo > 0) loops.push_back(loop_over(name + "_lo", 0, lo, LoopKind::kSerial));
        loops.push_back(loop_over(name, lo, extent - hi, kind));
        if (hi > 0) loops.push_back(loop_over(name + "_hi", extent - hi, extent, LoopKind::kSerial));
        return make_seq(std::move(loops));
      }
    return loop_over(name, 0, extent, kind);
  }

  // Enumerates `extents` (a region's shape) as this block's threads share
  // it: `emit(local_coords, flat)` builds the per-element statement. One
  // thread: nested loops, innermost vectorized. Several: a strided loop over
  // the flat index, guarded when the count is not a multiple of threads.
  Stmt for_each_element(const std::string& name, const std::vector<int64_t>& extents,
                        const std::function<Stmt(const std::vector<Expr>&, const Expr&)>& emit,
                        std::vector<int>* loop_vars = nullptr, LoopKind innermost = LoopKind::kVectorized,
                        bool peel = false) {
    int64_t total = 1;
    for (int64_t e : extents) total *= e;
    std::vector<Expr> coords;
    if (threads_ == 1 && peel && !extents.empty()) {
      std::vector<int> vars;
      Expr outer_flat = int_imm(0);
      for (size_t d = 0; d + 1 < extents.size(); ++d) {
        vars.push_back(new_var(name + std::to_string(d), extents[d]));
        coords.push_back(var(vars.back()));
        outer_flat = outer_flat * extents[d] + coords.back();
      }
      Stmt s = peeled_loop(name + std::to_string(extents.size() - 1), extents.back(), innermost, [&](const Expr& c) {
        std::vector<Expr> at = coords;
        at.push_back(c);
        return emit(at, outer_flat * extents.back() + c);
      });
      for (size_t d = vars.size(); d-- > 0;) s = make_for(vars[d], int_imm(extents[d]), LoopKind::kSerial, {s});
      return s;
    }
    if (threads_ == 1) {
      std::vector<int> vars;
      Expr flat = int_imm(0);
      for (size_t d = 0; d < extents.size(); ++d) {
        vars.push_back(new_var(name + std::to_string(d), extents[d]));
        coords.push_back(var(vars.back()));
        flat = flat * extents[d] + coords.back();
      }
      Stmt s = emit(coords, flat);
      for (size_t d = vars.size(); d-- > 0;)
        s = make_for(vars[d], int_imm(extents[d]), d + 1 == vars.size() ? innermost : LoopKind::kSerial, {s});
      if (loop_vars) *loop_vars = vars;
      return s;
    }
    const int64_t per_thread = (total + threads_ - 1) / threads_;
    const int j = new_var(name + "j", per_thread);
    const Expr flat = var(j) * threads_ + var(tid_);
    int64_t stride = total;
    for (int64_t e : extents) {
      stride /= e;
      coords.push_back(floormod(floordiv(flat, stride), e));
    }
    Stmt s = emit(coords, flat);
    if (total % threads_ != 0) s = make_if(lt(flat, int_imm(total)), {s});
    if (loop_vars) *loop_vars = {j};
    return make_for(j, int_imm(per_thread), per_thread <= 8 ? LoopKind::kUnrolled : LoopKind::kSerial, {s});
  }

  Stmt thread_loop(std::vector<Stmt> body) {
    if (threads_ == 1) return make_seq(std::move(body));
    return make_for(tid_, int_imm(threads_), LoopKind::kThreads, std::move(body));
  }

  static std::vector<int64_t> extents_of(const Region& r) {
    std::vector<int64_t> e;
    for (const auto& d : r.dims) e.push_back(d.extent);
    return e;
  }

  // The op's axis values with its local vars bound to `local`.
  std::vector<Expr> coords_at(int phase, const std::vector<Expr>& local) {
    const OpTile& t = plan_.tiling.ops[phase];
    std::map<int, Expr> with;
    // Fewer local coords than axes: the trailing ones have extent 1 (element_extents).
    for (size_t d = 0; d < t.local_vars.size(); ++d) with[t.local_vars[d]] = d < local.size() ? local[d] : int_imm(0);
    std::vector<Expr> coords;
    for (const Expr& c : t.coords) coords.push_back(replace_vars(c, with));
    return coords;
  }

  // Where element `flat` (local coords `local`) of phase i's region goes:
  // its shared buffer, and for the root and extra outputs global memory
  // (positions of the region outside the tensor are not stored).
  Stmt store_result(int phase, const std::vector<Expr>& local, const Expr& flat, const Expr& value) {
    const PhasePlan& pp = plan_.phase_plans[phase];
    auto extra = extra_output_.find(phase);
    if (pp.buffer >= 0 && extra == extra_output_.end())
      return make_store(shared_ids_[pp.buffer], finalize_indices(flat, bounds_), value);
    const Shape& shape = g_.tensor(plan_.phases[phase].output).shape;
    const std::vector<Expr> coords = coords_at(phase, local);
    Expr inside = int_imm(1, DType::kBool);
    for (size_t d = 0; d < shape.size(); ++d) inside = logical_and(inside, in_range(coords[d], 0, shape[d]));
    inside = simplify(inside, bounds_);
    const int global = pp.buffer >= 0 ? extra->second : output_;
    Stmt store = make_store(global, finalize_indices(linear_index(shape, coords), bounds_), value);
    if (!is_const(inside)) store = make_if(inside, {store});
    if (pp.buffer < 0) return store;
    // The value is computed once; the shared store reads it back for the global one.
    const Stmt to_shared = make_store(shared_ids_[pp.buffer], finalize_indices(flat, bounds_), value);
    const Expr stored = load(shared_ids_[pp.buffer], value->dtype, {finalize_indices(flat, bounds_)});
    StmtNode global_store = *store;
    if (global_store.kind == StmtKind::kIf) {
      StmtNode inner = *global_store.body[0];
      inner.value = stored;
      global_store.body[0] = std::make_shared<const StmtNode>(std::move(inner));
    } else {
      global_store.value = stored;
    }
    return make_seq({to_shared, std::make_shared<const StmtNode>(std::move(global_store))});
  }

  // The element loops' extents of phase i: its region's, less the trailing
  // 1s of a keepdims region ([4, 128, 1]) unless it is a reduction whose
  // loads walk the reduce axis in memory. Its innermost element loop then
  // moves along the last axis longer than 1 (vectorized), with a
  // reduction's reduce loops outside it, where each element reducing alone
  // read one value per cache line (MobileViT's layer norm over channels
  // through its unfolding Transpose) and an elementwise phase after it ran
  // a scalar loop of one. The flat index is the same either way; coords_at
  // binds the trimmed axes to 0.
  std::vector<int64_t> element_extents(int i) {
    std::vector<int64_t> extents = extents_of(plan_.tiling.ops[i].region);
    size_t kept = extents.size();
    while (kept > 1 && extents[kept - 1] == 1) --kept;
    const Op& op = plan_.phases[i];
    if (threads_ == 1 && kept < extents.size() && extents[kept - 1] > 1 &&
        (op.reduction == Reduction::kNone || !scheduler::loads_walk_reduce_axis(g_, op)))
      extents.resize(kept);
    return extents;
  }

  Stmt build_phase(int i) {
    const Op& op = plan_.phases[i];
    const PhasePlan& pp = plan_.phase_plans[i];
    const OpTile& tile = plan_.tiling.ops[i];
    const std::string prefix = str_cat("p", i, "_");
    if (op.reduction == Reduction::kNone) {
      const std::vector<int64_t> extents = element_extents(i);
      if (threads_ == 1) {
        int64_t chunk = 0;
        const std::vector<TransposedRead> reads = transposed_reads(i, extents, &chunk);
        if (!reads.empty()) return build_transposed_phase(i, extents, chunk, reads);
      }
      return thread_loop({for_each_element(prefix + "e", extents, [&](const std::vector<Expr>& local, const Expr& flat) {
        return store_result(i, local, flat, value_at(i, coords_at(i, local), {}));
      }, nullptr, LoopKind::kVectorized, /*peel=*/true)});
    }
    if (pp.mma) return build_mma_phase(i);
    const std::vector<int64_t> extents = element_extents(i);
    const DType dtype = g_.tensor(op.output).dtype;
    const int acc = pp.accumulator >= 0 ? shared_ids_[pp.accumulator]
                                        : add_local(prefix + "acc", compute_dtype(dtype), pp.per_thread);
    // One thread: reduce loops outside the element loops (a register tile
    // over the vectorized innermost element axis), unless that axis has
    // extent 1 (a row's sum, a whole-tensor min) or the reads run along the
    // reduce axis: then each element's innermost reduce loop vectorizes on
    // its own (LoopKind::kReduce).
    const bool reduce_inside = threads_ == 1 && (extents.empty() || extents.back() == 1 ||
                                                 scheduler::reads_along_reduce_axis(g_, op));
    if (threads_ == 1 && pp.step == 0 && !reduce_inside && extents.size() >= 2 && pp.elements > kL1Accumulators)
      return build_row_reduction(i, acc, extents);
    // Accumulator slot of an element: its flat index with one thread, the
    // strided loop's counter with several (rebind_acc_index).
    const Expr init_value = reduction_init(op.reduction, compute_dtype(dtype));
    std::vector<Stmt> steps;
    {
      std::vector<int> lv;
      Stmt s = for_each_element(prefix + "i", extents, [&](const std::vector<Expr>&, const Expr& flat) {
        return make_store(acc, flat, init_value);
      }, &lv);
      // The init's slot is the same expression as for the other loops.
      steps.push_back(thread_loop({rebind_acc_index(s, acc, lv)}));
    }

    // The update of one element over a set of reduce values (innermost).
    std::map<int, const StagedInput*> staged;
    for (const StagedInput& st : pp.staged) staged[st.slot] = &st;
    auto accumulate = [&](const std::string& name, const std::vector<Expr>& reduce_values,
                          const std::vector<std::pair<int, int64_t>>& reduce_loops, const Expr& guard) {
      std::vector<int> lv;
      Stmt s = for_each_element(name, extents, [&](const std::vector<Expr>& local, const Expr& flat) {
        std::vector<Expr> values = coords_at(i, local);
        values.insert(values.end(), reduce_values.begin(), reduce_values.end());
        const Expr slot = threads_ == 1 ? flat : Expr();
        const Expr current = load(acc, compute_dtype(dtype), {slot ? slot : int_imm(0)});
        // An f16 reduction accumulates in f32: its values are widened.
        Expr value = value_at(i, values, staged);
        if (value->dtype != current->dtype) value = cast(current->dtype, value);
        Stmt update = make_store(acc, slot ? slot : int_imm(0), reduction_combine(op.reduction, current, value));
        if (guard) update = make_if(guard, {update});
        if (threads_ > 1 || reduce_inside)  // the accumulator stays in a register
          for (size_t r = reduce_loops.size(); r-- > 0;) {
            const bool lanes = reduce_inside && !guard && r + 1 == reduce_loops.size();
            update = make_for(reduce_loops[r].first, int_imm(reduce_loops[r].second),
                              lanes ? LoopKind::kReduce : LoopKind::kSerial, {update});
          }
        return update;
      }, &lv, reduce_inside ? LoopKind::kSerial : LoopKind::kVectorized);  // no simd inside simd
      s = rebind_acc_index(s, acc, lv);
      if (threads_ == 1 && !reduce_inside)
        for (size_t r = reduce_loops.size(); r-- > 0;)
          s = make_for(reduce_loops[r].first, int_imm(reduce_loops[r].second), LoopKind::kSerial, {s});
      return thread_loop({s});
    };

    if (pp.step == 0) {
      std::vector<Expr> values;
      std::vector<std::pair<int, int64_t>> loops;
      for (size_t r = 0; r < tile.reduce_vars.size(); ++r) {
        values.push_back(var(tile.reduce_vars[r]));
        loops.emplace_back(tile.reduce_vars[r], op.reduce_extents[r]);
      }
      steps.push_back(accumulate(prefix + "e", values, loops, nullptr));
    } else {
      std::vector<Stmt> chunk;
      for (const StagedInput& st : pp.staged) chunk.push_back(stage(i, st));
      chunk.push_back(make_barrier());
      const Expr k = var(pp.chunk_var) * pp.step + var(pp.chunk_local_var);
      std::vector<Expr> values = {k};
      std::vector<std::pair<int, int64_t>> loops = {{pp.chunk_local_var, pp.step}};
      for (size_t r = 1; r < tile.reduce_vars.size(); ++r) {
        values.push_back(var(tile.reduce_vars[r]));
        loops.emplace_back(tile.reduce_vars[r], op.reduce_extents[r]);
      }
      const Expr guard = op.reduce_extents[0] % pp.step != 0 ? lt(k, int_imm(op.reduce_extents[0])) : nullptr;
      chunk.push_back(accumulate(prefix + "e", values, loops, guard));
      chunk.push_back(make_barrier());
      steps.push_back(make_for(pp.chunk_var, int_imm(pp.chunks), LoopKind::kSerial, chunk));
    }
    {
      std::vector<int> lv;
      Stmt s = for_each_element(prefix + "w", extents, [&](const std::vector<Expr>& local, const Expr& flat) {
        return store_result(i, local, flat, load(acc, compute_dtype(dtype), {flat}));
      }, &lv);
      steps.push_back(thread_loop({rebind_acc_index(s, acc, lv)}));
    }
    if (pp.accumulator >= 0) return make_seq(steps);
    return make_allocate(acc, steps);
  }

  // An input an elementwise phase reads transposed: along the vectorized
  // innermost element axis (x) its elements lie kFarStride floats apart or
  // more, along the axis outside it (y) 1 to kNearStride floats apart (a
  // layer norm over the channels of an NCHW activation through a Transpose:
  // Restormer's and MobileViT's). Each vector then gathered from as many
  // pages as lanes (Restormer's 96 channels, 256 KiB apart: TLB misses on
  // every load, ~40 ms per layer norm at full resolution).
  struct TransposedRead {
    int slot = -1;
    Expr load;  // the op body's load of that slot
  };
  static constexpr int64_t kFarStride = 256;
  static constexpr int64_t kNearStride = 4;
  static constexpr int64_t kMaxTransposedFloats = 4096;  // the staging buffers, on the stack

  // The phase's transposed reads and the chunk of y staged at a time: the
  // largest divisor of its extent from 16 down to 4 whose buffers hold at
  // most kMaxTransposedFloats. None where no input qualifies, an input is
  // read at more than one index, or no chunk fits.
  // TILEGRAPH_TRANSPOSED_READS=off: none (to compare).
  std::vector<TransposedRead> transposed_reads(int i, const std::vector<int64_t>& extents, int64_t* chunk) {
    const size_t n = extents.size();
    if (n < 2 || extents[n - 1] < 8) return {};
    if (const char* off = std::getenv("TILEGRAPH_TRANSPOSED_READS"); off && std::string(off) == "off") return {};
    const Op& op = plan_.phases[i];
    const size_t vars = bounds_.size();
    const int vy = new_var("ty", extents[n - 2]), vx = new_var("tx", extents[n - 1]);
    std::vector<Expr> local(n, int_imm(0));
    local[n - 2] = var(vy);
    local[n - 1] = var(vx);
    const std::vector<Expr> axes = coords_at(i, local);
    // The linear index's change when var v grows by one, if a constant.
    auto stride = [&](const Expr& index, int v) -> std::optional<int64_t> {
      const Expr next = replace_vars(index, {{v, var(v) + int_imm(1)}});
      int64_t d = 0;
      if (!is_const_int(simplify(next - index, bounds_), &d)) return std::nullopt;
      return d;
    };
    // Each slot's loads, in one walk of the body (fused bodies get long).
    std::vector<std::vector<Expr>> loads_of(op.inputs.size());
    visit(op.body, [&](const Expr& e) {
      if (e->kind == ExprKind::kLoad) loads_of[static_cast<size_t>(e->int_value)].push_back(e);
    });
    std::vector<TransposedRead> reads;
    for (size_t slot = 0; slot < op.inputs.size(); ++slot) {
      if (phase_of_.count(op.inputs[slot])) continue;
      const std::vector<Expr>& loads = loads_of[slot];
      if (loads.empty() || loads.front()->dtype != DType::kF32) continue;  // the buffers hold floats
      bool one_index = true;
      for (const Expr& l : loads) one_index &= same_expr(l, loads.front());
      if (!one_index) continue;
      const Expr at = substitute_vars(loads.front(), axes);
      const Expr index = simplify(linear_index(g_.tensor(op.inputs[slot]).shape, at->args), bounds_);
      const auto sx = stride(index, vx), sy = stride(index, vy);
      if (sx && sy && std::abs(*sx) >= kFarStride && *sy != 0 && std::abs(*sy) <= kNearStride)
        reads.push_back({static_cast<int>(slot), loads.front()});
    }
    bounds_.resize(vars);
    kernel_.var_names.resize(vars);
    const int64_t row_floats = static_cast<int64_t>(reads.size()) * extents[n - 1];
    for (int64_t c = 16; c >= 4; --c)
      if (extents[n - 2] % c == 0 && row_floats * c <= kMaxTransposedFloats) {
        *chunk = c;
        return reads;
      }
    return {};
  }

  // A phase with transposed reads: per chunk of y, each such input's chunk
  // is copied into a buffer on the stack along y (contiguous runs, one page
  // touch per x and chunk instead of per element), buf[x * chunk + y'];
  // then the phase's loops over the chunk read it there (in L1). The copy
  // evaluates the phase's own load at the same coordinates, so the values
  // are the same.
  Stmt build_transposed_phase(int i, const std::vector<int64_t>& extents, int64_t chunk,
                              const std::vector<TransposedRead>& reads) {
    const std::string prefix = str_cat("p", i, "_t");
    const size_t n = extents.size();
    const int64_t ny = extents[n - 2], nx = extents[n - 1];
    std::vector<Expr> outer;
    std::vector<int> outer_vars;
    Expr outer_flat = int_imm(0);
    for (size_t d = 0; d + 2 < n; ++d) {
      outer_vars.push_back(new_var(prefix + std::to_string(d), extents[d]));
      outer.push_back(var(outer_vars.back()));
      outer_flat = outer_flat * extents[d] + outer.back();
    }
    const int vc = new_var(prefix + "c", ny / chunk);
    auto local_at = [&](const Expr& y, const Expr& x) {
      std::vector<Expr> local = outer;
      local.push_back(y);
      local.push_back(x);
      return local;
    };
    std::vector<int> buffers;
    std::vector<Stmt> body;
    for (const TransposedRead& r : reads) {
      buffers.push_back(add_local(str_cat(prefix, "s", r.slot), DType::kF32, nx * chunk, 64));
      const int sx = new_var(prefix + "sx", nx), sy = new_var(prefix + "sy", chunk);
      const Expr value =
          value_of(i, r.load, coords_at(i, local_at(var(vc) * chunk + var(sy), var(sx))), {});
      body.push_back(make_for(sx, int_imm(nx), LoopKind::kSerial,
                              {make_for(sy, int_imm(chunk), LoopKind::kVectorized,
                                        {make_store(buffers.back(), var(sx) * chunk + var(sy), value)})}));
    }
    const int vy = new_var(prefix + "y", chunk), vx = new_var(prefix + "x", nx);
    std::map<int, Expr> replaced;
    for (size_t b = 0; b < reads.size(); ++b)
      replaced[reads[b].slot] = load(buffers[b], DType::kF32, {var(vx) * chunk + var(vy)});
    const Expr y = var(vc) * chunk + var(vy);
    const std::vector<Expr> local = local_at(y, var(vx));
    const Expr flat = (outer_flat * ny + y) * nx + var(vx);
    const Expr value = value_of(i, plan_.phases[i].body, coords_at(i, local), {}, replaced);
    body.push_back(make_for(vy, int_imm(chunk), LoopKind::kSerial,
                            {make_for(vx, int_imm(nx), LoopKind::kVectorized, {store_result(i, local, flat, value)})}));
    Stmt s = make_for(vc, int_imm(ny / chunk), LoopKind::kSerial, body);
    for (size_t d = outer_vars.size(); d-- > 0;) s = make_for(outer_vars[d], int_imm(extents[d]), LoopKind::kSerial, {s});
    for (int b : buffers) s = make_allocate(b, {s});
    return s;
  }

  // One thread, a region whose accumulators overflow L1 (a pooling tile
  // of 16 x 56 x 56): rather than sweeping the whole accumulator tile once
  // per reduce point (init, one read-modify-write pass per window tap, then
  // a copy-out, each streaming it through L2), reduce one innermost row at
  // a time: init the row, run the reduce loops around the vectorized row,
  // and store it, while its accumulators stay in L1. Each element still
  // combines its reduce points in the same order, so results are identical.
  Stmt build_row_reduction(int i, int acc, const std::vector<int64_t>& extents) {
    const Op& op = plan_.phases[i];
    const OpTile& tile = plan_.tiling.ops[i];
    const std::string prefix = str_cat("p", i, "_");
    const DType acc_type = compute_dtype(g_.tensor(op.output).dtype);
    const int64_t width = extents.back();
    std::vector<int> outer;
    std::vector<Expr> local;
    Expr row = int_imm(0);
    for (size_t d = 0; d + 1 < extents.size(); ++d) {
      outer.push_back(new_var(prefix + "o" + std::to_string(d), extents[d]));
      local.push_back(var(outer.back()));
      row = row * extents[d] + local.back();
    }
    // A vectorized loop over the row; `emit` gets the column var.
    auto over_row = [&](const std::string& name, const std::function<Stmt(const Expr&)>& emit) {
      const int c = new_var(prefix + name, width);
      return make_for(c, int_imm(width), LoopKind::kVectorized, {emit(var(c))});
    };
    auto at_column = [&](const Expr& c) {
      std::vector<Expr> l = local;
      l.push_back(c);
      return l;
    };
    const Stmt init = over_row("i", [&](const Expr& c) {
      return make_store(acc, c, reduction_init(op.reduction, acc_type));
    });
    Stmt update = peeled_loop(prefix + "e", width, LoopKind::kVectorized, [&](const Expr& c) {
      std::vector<Expr> values = coords_at(i, at_column(c));
      for (int r : tile.reduce_vars) values.push_back(var(r));
      Expr value = value_at(i, values, {});
      if (value->dtype != acc_type) value = cast(acc_type, value);  // an f16 reduction accumulates in f32
      return make_store(acc, c, reduction_combine(op.reduction, load(acc, acc_type, {c}), value));
    });
    for (size_t r = tile.reduce_vars.size(); r-- > 0;)
      update = make_for(tile.reduce_vars[r], int_imm(op.reduce_extents[r]), LoopKind::kSerial, {update});
    const Stmt write = over_row("w", [&](const Expr& c) {
      return store_result(i, at_column(c), finalize_indices(row * width + c, bounds_), load(acc, acc_type, {c}));
    });
    Stmt s = make_seq({init, update, write});
    for (size_t d = outer.size(); d-- > 0;)
      s = make_for(outer[d], int_imm(extents[d]), LoopKind::kSerial, {s});
    if (plan_.phase_plans[i].accumulator >= 0) return s;
    return make_allocate(acc, {s});
  }

  // A matmul phase on tensor cores (scheduler/mma_plan.h): warp w owns
  // tiles [w * tpw, (w + 1) * tpw) of the region's 16 x 8 tiles (row-major
  // over tiles_m x tiles_n). Per 16-deep step of the flattened reduce axes,
  // each thread loads its lane's A and B fragment values (kernel_ir.h,
  // WarpMma) from wherever the operands live (staged chunks, producers'
  // regions, global memory), then the warps run the MMA on their
  // accumulators.
  Stmt build_mma_phase(int i) {
    using scheduler::kMmaK;
    using scheduler::kMmaM;
    using scheduler::kMmaN;
    const Op& op = plan_.phases[i];
    const PhasePlan& pp = plan_.phase_plans[i];
    const scheduler::MmaPlan& m = *pp.mma;
    const Region& region = plan_.tiling.ops[i].region;
    const std::string prefix = str_cat("p", i, "_");
    const int rank = static_cast<int>(g_.tensor(op.output).shape.size());
    const int64_t tpw = m.tiles_per_warp;
    const int acc = add_local(prefix + "acc", DType::kF32, 4 * tpw);
    const int frag_a = add_local(prefix + "fa", DType::kF32, 8);
    const int frag_b = add_local(prefix + "fb", DType::kF32, 4);
    const Expr lane = floormod(var(tid_), scheduler::kWarpLanes);
    const Expr warp = floordiv(var(tid_), scheduler::kWarpLanes);
    const Expr group = floordiv(lane, 4), quad = floormod(lane, 4);
    std::map<int, const StagedInput*> staged;
    for (const StagedInput& st : pp.staged) staged[st.slot] = &st;

    // Region-local coordinates of flat row r and flat column c (each
    // unflattened over its axes' extents, axis order); other axes are 1.
    auto local_at = [&](const Expr& r, const Expr& c) {
      std::vector<Expr> local(static_cast<size_t>(rank), int_imm(0));
      for (const auto& [axes, flat] : {std::pair{&m.row_axes, r}, std::pair{&m.col_axes, c}}) {
        int64_t stride = 1;
        for (size_t x = axes->size(); x-- > 0;) {
          const int64_t extent = region.dims[(*axes)[x]].extent;
          local[(*axes)[x]] = floormod(floordiv(flat, stride), extent);
          stride *= extent;
        }
      }
      return local;
    };
    // Reduce-axis values of flat index k within reduce axis 0's range
    // [axis0_base, axis0_base + axis0_extent) and the other axes whole.
    auto reduce_at = [&](const Expr& axis0_base, const Expr& k) {
      std::vector<Expr> values(op.reduce_extents.size());
      Expr rest = k;
      for (size_t r = op.reduce_extents.size(); r-- > 1;) {
        values[r] = floormod(rest, op.reduce_extents[r]);
        rest = floordiv(rest, op.reduce_extents[r]);
      }
      values[0] = axis0_base + rest;
      return values;
    };
    // One fragment value: factor f at flat row/column and flat reduce index
    // k of `points` (zero where k is past the chunk or reduce axis 0 past its
    // end). There the loads still run (a Select is eager, kernel_ir.h): past
    // the last point (the padding to 16) they read the last point, past the
    // axis's end (the last chunk) its last value.
    const bool axis_tail = pp.step != 0 && op.reduce_extents[0] % pp.step != 0;
    auto fragment = [&](const Expr& f, const Expr& r, const Expr& c, const Expr& axis0_base, const Expr& k,
                        int64_t points, const std::function<Expr(const Expr&)>& valid) {
      std::vector<Expr> values = coords_at(i, local_at(r, c));
      const Expr in_points = points % kMmaK != 0 ? clamp_to_last(k, points) : k;
      std::vector<Expr> reduce = reduce_at(axis0_base, in_points);
      if (axis_tail) reduce[0] = clamp_to_last(reduce[0], op.reduce_extents[0]);
      for (const Expr& v : reduce) values.push_back(v);
      Expr v = value_of(i, f, values, staged);
      if (valid) v = select(simplify(valid(k), bounds_), v, float_imm(0, v->dtype));
      return finalize_indices(v, bounds_);
    };
    const int t = new_var(prefix + "t", tpw);
    const int64_t tiles = m.tiles_m * m.tiles_n;
    // A warp's run past the last tile recomputes the last one (stored once).
    Expr tile = warp * tpw + var(t);
    if (tpw * (threads_ / scheduler::kWarpLanes) > tiles) tile = clamp_to_last(tile, tiles);
    const Expr tile_row = floordiv(tile, m.tiles_n) * kMmaM, tile_col = floormod(tile, m.tiles_n) * kMmaN;
    // The MMA steps over `points` flat reduce indices from axis0_base;
    // `valid(k)` (empty: always) guards the tail.
    auto mma_steps = [&](const Expr& axis0_base, int64_t points, const std::function<Expr(const Expr&)>& valid) {
      const int64_t steps = (points + kMmaK - 1) / kMmaK;
      const int ks = new_var(prefix + "ks", steps);
      const Expr k = var(ks) * kMmaK + quad * 2;
      std::vector<Stmt> fill;
      for (int v = 0; v < 8; ++v) {  // a0..a7
        const Expr r = tile_row + group + 8 * ((v / 2) % 2), kv = k + (v % 2 + 8 * (v / 4));
        fill.push_back(make_store(frag_a, int_imm(v), fragment(m.a, r, int_imm(0), axis0_base, kv, points, valid)));
      }
      for (int v = 0; v < 4; ++v) {  // b0..b3
        const Expr kv = k + (v % 2 + 8 * (v / 2));
        fill.push_back(make_store(frag_b, int_imm(v), fragment(m.b, int_imm(0), tile_col + group, axis0_base, kv, points, valid)));
      }
      const Stmt step = make_seq({thread_loop(std::move(fill)),
                                  make_warp_mma({frag_a, int_imm(0)}, {frag_b, int_imm(0)}, {acc, var(t) * 4})});
      return make_for(ks, int_imm(steps), LoopKind::kSerial, {make_for(t, int_imm(tpw), LoopKind::kUnrolled, {step})});
    };

    std::vector<Stmt> steps;
    {
      const int z = new_var(prefix + "z", 4 * tpw);
      steps.push_back(thread_loop({make_for(z, int_imm(4 * tpw), LoopKind::kUnrolled,
                                            {make_store(acc, var(z), float_imm(0))})}));
    }
    const int64_t inner = [&] {
      int64_t n = 1;
      for (size_t r = 1; r < op.reduce_extents.size(); ++r) n *= op.reduce_extents[r];
      return n;
    }();
    const int64_t depth = op.reduce_extents[0];
    if (pp.step == 0) {
      const int64_t points = depth * inner;
      std::function<Expr(const Expr&)> valid;
      if (points % kMmaK) valid = [points](const Expr& k) { return lt(k, int_imm(points)); };
      steps.push_back(mma_steps(int_imm(0), points, valid));
    } else {
      std::vector<Stmt> chunk;
      for (const StagedInput& st : pp.staged) chunk.push_back(stage(i, st));
      chunk.push_back(make_barrier());
      const Expr base = var(pp.chunk_var) * pp.step;
      const int64_t points = pp.step * inner;
      // Past the chunk (padding to 16) or past reduce axis 0's end (the last chunk).
      const bool padded = points % kMmaK != 0, tail = depth % pp.step != 0;
      std::function<Expr(const Expr&)> valid;
      if (padded || tail)
        valid = [=](const Expr& k) {
          const Expr in_chunk = lt(k, int_imm(points)), in_axis = lt(base + floordiv(k, inner), int_imm(depth));
          return padded && tail ? logical_and(in_chunk, in_axis) : padded ? in_chunk : in_axis;
        };
      chunk.push_back(mma_steps(base, points, valid));
      chunk.push_back(make_barrier());
      steps.push_back(make_for(pp.chunk_var, int_imm(pp.chunks), LoopKind::kSerial, chunk));
    }
    // c0..c3 of each tile to the phase's region.
    std::vector<Stmt> write;
    const int w = new_var(prefix + "w", tpw);
    const Expr write_tile = warp * tpw + var(w);
    std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
    for (int d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * region.dims[d].extent;
    for (int v = 0; v < 4; ++v) {
      const Expr r = floordiv(write_tile, m.tiles_n) * kMmaM + group + 8 * (v / 2);
      const Expr c = floormod(write_tile, m.tiles_n) * kMmaN + quad * 2 + v % 2;
      const std::vector<Expr> local = local_at(r, c);
      Expr flat = int_imm(0);
      for (int d = 0; d < rank; ++d) flat = flat + local[d] * strides[d];
      flat = finalize_indices(simplify(flat, bounds_), bounds_);
      write.push_back(store_result(i, local, flat, load(acc, DType::kF32, {var(w) * 4 + v})));
    }
    Stmt written = make_for(w, int_imm(tpw), LoopKind::kUnrolled, write);
    if (tpw * (threads_ / scheduler::kWarpLanes) > tiles)
      written = make_for(w, int_imm(tpw), LoopKind::kUnrolled, {make_if(lt(write_tile, int_imm(tiles)), write)});
    steps.push_back(thread_loop({written}));
    return make_allocate(acc, {make_allocate(frag_a, {make_allocate(frag_b, steps)})});
  }

  // With several threads, accumulator slots are the strided loop's counter,
  // not the flat element index the element callbacks saw: rewrite the
  // accumulator's indices in s (loops built by for_each_element).
  Stmt rebind_acc_index(const Stmt& s, int acc, const std::vector<int>& loop_vars) {
    if (threads_ == 1) return s;
    const Expr slot = var(loop_vars[0]);
    return map_acc(s, acc, slot);
  }

  static Expr acc_loads(const Expr& e, int acc, const Expr& slot) {
    if (!e) return e;
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kLoad || n->int_value != acc) return nullptr;
      return load(acc, n->dtype, {slot});
    });
  }

  Stmt map_acc(const Stmt& s, int acc, const Expr& slot) {
    StmtNode n = *s;
    if (n.kind == StmtKind::kStore) {
      if (n.buffer == acc) n.index = slot;
      n.value = acc_loads(n.value, acc, slot);
    }
    for (Stmt& c : n.body) c = map_acc(c, acc, slot);
    return std::make_shared<const StmtNode>(std::move(n));
  }

  // Copies a staged input's chunk region from global memory into its
  // shared buffer, every thread a strided share.
  Stmt stage(int phase, const StagedInput& st) {
    const Op& op = plan_.phases[phase];
    const TensorId in = op.inputs[st.slot];
    const Shape& shape = g_.tensor(in).shape;
    const DType dtype = g_.tensor(in).dtype;
    const std::vector<int64_t> extents = extents_of(st.region);
    const int buffer = shared_ids_[st.buffer];
    return thread_loop({for_each_element(str_cat("p", phase, "_s", st.slot), extents,
                                         [&](const std::vector<Expr>& local, const Expr& flat) {
      std::vector<Expr> idx;
      for (size_t d = 0; d < extents.size(); ++d) {
        const Expr i = simplify(st.region.dims[d].base + st.region.dims[d].lo + local[d], bounds_);
        idx.push_back(clamp_index_if_needed(i, shape[d], bounds_));
      }
      const Expr value = load(global_of_.at(in), dtype, {finalize_indices(linear_index(shape, idx), bounds_)});
      return make_store(buffer, finalize_indices(flat, bounds_), value);
    })});
  }

  const BlockPlan& plan_;
  const int threads_;
  std::map<TensorId, int> phase_of_;
  std::map<TensorId, int> global_of_;
  std::vector<int> shared_ids_;
  int output_ = -1;
  std::map<int, int> extra_output_;  // phase -> global buffer
  int tid_ = -1;
};

}  // namespace

Kernel lower_block_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                          const scheduler::BlockPlan& plan) {
  return BlockKernelBuilder(g, schedule, plan).build();
}

}  // namespace tilegraph::codegen
