#include "scheduler/tile_propagation.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ir/scalar.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::scheduler {

int TileVars::add(const std::string& name, int64_t extent, bool is_outer) {
  names.push_back(name);
  bounds.push_back(Interval::range(std::max<int64_t>(extent, 1)));
  outer.push_back(is_outer);
  return static_cast<int>(names.size() - 1);
}

int64_t Region::volume() const {
  int64_t v = 1;
  for (const RegionDim& d : dims) v = num_elements({v, d.extent});
  return v;
}

int64_t GroupTiling::blocks() const { return num_elements(blocks_per_dim); }

namespace {

// An additive term of an index: coef * term (term null: a constant).
struct Term {
  Expr term;
  int64_t coef = 1;
};

void collect_terms(const Expr& e, int64_t coef, std::vector<Term>& terms, int64_t& constant) {
  int64_t c = 0;
  if (is_const_int(e, &c)) {
    constant += coef * c;
    return;
  }
  if (e->kind == ExprKind::kBinary) {
    const Expr& a = e->args[0];
    const Expr& b = e->args[1];
    switch (e->binary_op) {
      case BinaryOp::kAdd:
        collect_terms(a, coef, terms, constant);
        collect_terms(b, coef, terms, constant);
        return;
      case BinaryOp::kSub:
        collect_terms(a, coef, terms, constant);
        collect_terms(b, -coef, terms, constant);
        return;
      case BinaryOp::kMul:
        if (is_const_int(b, &c)) return collect_terms(a, coef * c, terms, constant);
        if (is_const_int(a, &c)) return collect_terms(b, coef * c, terms, constant);
        break;
      default: break;
    }
  }
  if (e->kind == ExprKind::kUnary && e->unary_op == UnaryOp::kNeg)
    return collect_terms(e->args[0], -coef, terms, constant);
  terms.push_back({e, coef});
}

// Which kinds of vars e mentions; loads count as "both" (data-dependent).
struct VarUse {
  bool outer = false, inner = false, data = false;
};
VarUse var_use(const Expr& e, const TileVars& vars) {
  VarUse u;
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::kLoad) u.data = true;
    if (n->kind != ExprKind::kVar) return;
    const auto id = static_cast<size_t>(n->int_value);
    if (id < vars.outer.size() && vars.outer[id]) u.outer = true;
    else u.inner = true;
  });
  return u;
}

Expr sum_of(const std::vector<Term>& terms) {
  Expr s = int_imm(0);
  for (const Term& t : terms) s = s + t.term * t.coef;
  return s;
}

RegionDim whole_dim(int64_t dim) { return {int_imm(0), 0, dim, true}; }

// A region far wider than its tensor is better described as the whole
// tensor (readers clamp). Regions a little wider than the tensor are kept:
// they cover the tile's coordinates past the tensor's end (tails) and
// padding, which code generation evaluates and discards.
constexpr int64_t kMaxOvershoot = 64;

// The range of `index` over every value of every var (all blocks). An index
// read from data (a Gather's CheckIndex) can be anywhere: the whole
// dimension, which block plans never stage.
RegionDim fallback_dim(const Expr& index, int64_t dim, const TileVars& vars) {
  if (any_node(index, [](const Expr& n) { return n->kind == ExprKind::kCheckIndex; })) return whole_dim(dim);
  const Interval all = bound_of(index, vars.bounds);
  if (!all.bounded() || all.hi - all.lo + 1 > dim + kMaxOvershoot) return whole_dim(dim);
  return {int_imm(0), all.lo, all.hi - all.lo + 1, false};
}

// Reshapes inlined into a consumer divide a flat index by the inner dims:
// floordiv(b*T + l, c), floormod(b*T + l, c). When the tile T divides c and
// the offset stays inside one tile (0 <= l < T), the block alone decides the
// quotient:
//   floordiv(T*O + I, T*k) = floordiv(O, k)
//   floormod(T*O + I, T*k) = T*floormod(O, k) + I
// for integer O and 0 <= I < T. This separates tiles that cut a head or a
// sequence evenly (and tile-1 dims, whose offset var is 0) instead of
// falling back to every block.
Expr separate_div_mod(const Expr& index, const TileVars& vars) {
  return rewrite(index, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kBinary || n->dtype != DType::kI64) return nullptr;
    if (n->binary_op != BinaryOp::kFloorDiv && n->binary_op != BinaryOp::kFloorMod) return nullptr;
    int64_t c = 0;
    if (!is_const_int(n->args[1], &c) || c <= 0) return nullptr;
    std::vector<Term> terms;
    int64_t constant = 0;
    collect_terms(n->args[0], 1, terms, constant);
    std::vector<Term> outer_terms, inner_terms;
    int64_t step = c;  // T: divides c and every outer coefficient
    for (const Term& t : terms) {
      const VarUse u = var_use(t.term, vars);
      if (u.data || (u.outer && u.inner)) return nullptr;
      if (u.outer) {
        outer_terms.push_back(t);
        step = std::gcd(step, std::abs(t.coef));
      } else {
        inner_terms.push_back(t);
      }
    }
    if (outer_terms.empty() || inner_terms.empty()) return nullptr;
    const Interval inner = bound_of(sum_of(inner_terms) + constant, vars.bounds);
    if (!inner.bounded() || floor_div(inner.lo, step) != floor_div(inner.hi, step)) return nullptr;
    // Move the whole tiles of the offset (k*T) into the block part.
    const int64_t k = floor_div(inner.lo, step);
    Expr quotient = int_imm(k);
    for (const Term& t : outer_terms) quotient = quotient + t.term * (t.coef / step);
    if (n->binary_op == BinaryOp::kFloorDiv) return floordiv(quotient, c / step);
    return floormod(quotient, c / step) * step + (sum_of(inner_terms) + (constant - k * step));
  });
}

RegionDim dim_footprint(const Expr& raw_index, int64_t dim, const TileVars& vars) {
  const Expr index = simplify(separate_div_mod(simplify(raw_index, vars.bounds), vars), vars.bounds);
  std::vector<Term> terms;
  int64_t constant = 0;
  collect_terms(index, 1, terms, constant);
  std::vector<Term> outer_terms, inner_terms;
  for (const Term& t : terms) {
    const VarUse u = var_use(t.term, vars);
    if (u.data || (u.outer && u.inner)) return fallback_dim(index, dim, vars);
    (u.outer ? outer_terms : inner_terms).push_back(t);
  }
  const Interval inner = bound_of(sum_of(inner_terms), vars.bounds);
  if (!inner.bounded()) return fallback_dim(index, dim, vars);
  const int64_t extent = inner.hi - inner.lo + 1;
  // A window as wide as the tensor or a little wider (a padded tile over the
  // whole of it) still moves with the block: exact per block, and no bigger
  // than the range over every block would be.
  if (extent > dim + kMaxOvershoot) return whole_dim(dim);
  return {simplify(sum_of(outer_terms), vars.bounds), constant + inner.lo, extent, false};
}

RegionDim dim_hull(const RegionDim& a, const RegionDim& b, int64_t dim, const TileVars& vars) {
  if (a.whole_dim || b.whole_dim) return whole_dim(dim);
  int64_t shift = 0;
  if (!is_const_int(simplify(b.base - a.base, vars.bounds), &shift)) {
    // Bases move differently per block: take both ranges over every block.
    const Interval ra = bound_of(a.base, vars.bounds), rb = bound_of(b.base, vars.bounds);
    if (!ra.bounded() || !rb.bounded()) return whole_dim(dim);
    const int64_t lo = std::min(ra.lo + a.lo, rb.lo + b.lo);
    const int64_t hi = std::max(ra.hi + a.lo + a.extent, rb.hi + b.lo + b.extent);
    if (hi - lo > dim + kMaxOvershoot) return whole_dim(dim);
    return {int_imm(0), lo, hi - lo, false};
  }
  // b = a.base + shift + b.lo ...: express both against a's base.
  const int64_t lo = std::min(a.lo, shift + b.lo);
  const int64_t hi = std::max(a.lo + a.extent, shift + b.lo + b.extent);
  if (hi - lo > dim + kMaxOvershoot) return whole_dim(dim);
  return {a.base, lo, hi - lo, false};
}

// The value of a region base (an expression over outer vars) at concrete
// outer-var values. Interval bounds at points are not enough: floormod of a
// point above the divisor bounds to [0, c).
int64_t evaluate_base(const Expr& e, const std::vector<int64_t>& values) {
  switch (e->kind) {
    case ExprKind::kIntImm: return e->int_value;
    case ExprKind::kVar:
      TG_CHECK(e->int_value >= 0 && e->int_value < static_cast<int64_t>(values.size()),
               "region base mentions var ", e->int_value, " beyond the ", values.size(), " outer values");
      return values[static_cast<size_t>(e->int_value)];
    case ExprKind::kUnary:
      return scalar_unary(e->unary_op, e->dtype, Scalar{0.0, evaluate_base(e->args[0], values)}).i;
    case ExprKind::kBinary: {
      const int64_t a = evaluate_base(e->args[0], values), b = evaluate_base(e->args[1], values);
      return scalar_binary(e->binary_op, e->args[0]->dtype, Scalar{0.0, a}, Scalar{0.0, b}).i;
    }
    case ExprKind::kSelect:
      return evaluate_base(evaluate_base(e->args[0], values) != 0 ? e->args[1] : e->args[2], values);
    case ExprKind::kCast:
      return scalar_cast(Scalar{0.0, evaluate_base(e->args[0], values)}, e->args[0]->dtype, e->dtype).i;
    default:
      TG_CHECK(false, "region base is not an index expression over outer vars: ", to_string(e));
  }
  return 0;
}

}  // namespace

Region index_footprint(const std::vector<Expr>& indices, const Shape& shape, const TileVars& vars) {
  TG_CHECK(indices.size() == shape.size(), "index count ", indices.size(), " != rank ", shape.size());
  Region r;
  for (size_t d = 0; d < shape.size(); ++d) r.dims.push_back(dim_footprint(indices[d], shape[d], vars));
  return r;
}

Region region_hull(const Region& a, const Region& b, const Shape& shape, const TileVars& vars) {
  TG_CHECK(a.dims.size() == b.dims.size() && a.dims.size() == shape.size(), "hull of regions of different rank");
  Region r;
  for (size_t d = 0; d < shape.size(); ++d) r.dims.push_back(dim_hull(a.dims[d], b.dims[d], shape[d], vars));
  return r;
}

InputFootprint input_footprint(const Graph& g, const Op& op, int slot,
                               const std::vector<Expr>& axis_values, const TileVars& vars) {
  std::vector<bool> wanted(op.inputs.size(), false);
  wanted.at(static_cast<size_t>(slot)) = true;
  return input_footprints(g, op, axis_values, vars, wanted)[static_cast<size_t>(slot)];
}

std::vector<InputFootprint> input_footprints(const Graph& g, const Op& op, const std::vector<Expr>& axis_values,
                                             const TileVars& vars, const std::vector<bool>& wanted) {
  std::vector<InputFootprint> footprints(op.inputs.size());
  visit(op.body, [&](const Expr& n) {
    if (n->kind != ExprKind::kLoad) return;
    const size_t slot = static_cast<size_t>(n->int_value);
    if (!wanted.empty() && !wanted[slot]) return;
    InputFootprint& f = footprints[slot];
    const Shape& shape = g.tensor(op.inputs[slot]).shape;
    std::vector<Expr> idx;
    for (const Expr& i : n->args) idx.push_back(substitute_vars(i, axis_values));
    const Region r = index_footprint(idx, shape, vars);
    f.region = f.loaded ? region_hull(f.region, r, shape, vars) : r;
    f.loaded = true;
    ++f.loads;
  });
  return footprints;
}

namespace {

// The op's axis values for a computed region: base + lo + local.
void bind_region(OpTile& t, const Op& op, TileVars& vars, const std::string& prefix) {
  for (size_t d = 0; d < t.region.dims.size(); ++d) {
    const RegionDim& rd = t.region.dims[d];
    const int v = vars.add(str_cat(prefix, "l", d), rd.extent, false);
    t.local_vars.push_back(v);
    t.coords.push_back(rd.base + rd.lo + var(v));
  }
  for (size_t r = 0; r < op.reduce_extents.size(); ++r)
    t.reduce_vars.push_back(vars.add(str_cat(prefix, "r", r), op.reduce_extents[r], false));
}

std::vector<Expr> axis_values(const OpTile& t) {
  std::vector<Expr> values = t.coords;
  for (int r : t.reduce_vars) values.push_back(var(r));
  return values;
}

}  // namespace

GroupTiling propagate_tiles(const Graph& g, const std::vector<const Op*>& ops,
                            const std::vector<int64_t>& root_tile) {
  TG_CHECK(!ops.empty(), "empty group");
  const Op& root = *ops.back();
  const Shape& root_shape = g.tensor(root.output).shape;
  TG_CHECK(root_tile.size() == root_shape.size(), "root tile rank ", root_tile.size(), " != ",
           root_shape.size());
  GroupTiling t;
  t.ops.resize(ops.size());
  // The root's tile: axis d = b_d * tile_d + l_d.
  OpTile& rt = t.ops.back();
  for (size_t d = 0; d < root_shape.size(); ++d) {
    // (Not std::clamp: a zero-sized dimension would make its range empty.)
    const int64_t tile = std::max<int64_t>(std::min(root_tile[d], root_shape[d]), 1);
    const int64_t blocks = (root_shape[d] + tile - 1) / tile;
    t.blocks_per_dim.push_back(blocks);
    const int b = t.vars.add(str_cat("b", d), blocks, true);
    t.block_vars.push_back(b);
    rt.region.dims.push_back({blocks > 1 ? var(b) * tile : int_imm(0), 0, tile, false});
  }
  const std::string root_prefix = str_cat("o", ops.size() - 1, "_");
  bind_region(rt, root, t.vars, root_prefix);

  // Producers inside the group, consumers first: each region is the hull of
  // what the (already bound) consumers read.
  std::map<TensorId, int> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i]->output] = static_cast<int>(i);
  std::vector<bool> bound(ops.size(), false);
  bound.back() = true;
  std::vector<std::optional<Region>> needed(ops.size());
  for (size_t i = ops.size(); i-- > 0;) {
    if (!bound[i]) {
      TG_CHECK(needed[i].has_value(), "op ", ops[i]->name, " in a group is read by no later group op");
      t.ops[i].region = *needed[i];
      bind_region(t.ops[i], *ops[i], t.vars, str_cat("o", i, "_"));
      bound[i] = true;
    }
    const Op& op = *ops[i];
    const std::vector<InputFootprint> footprints = input_footprints(g, op, axis_values(t.ops[i]), t.vars);
    for (size_t s = 0; s < op.inputs.size(); ++s) {
      const InputFootprint& f = footprints[s];
      if (!f.loaded) continue;
      const TensorId in = op.inputs[s];
      const Shape& shape = g.tensor(in).shape;
      auto it = position.find(in);
      TG_CHECK(it == position.end() || it->second < static_cast<int>(i), "group op ", op.name,
               " reads ", g.tensor(in).name, ", computed by a later group op: not in topological order");
      if (it != position.end()) {
        std::optional<Region>& r = needed[it->second];
        r = r ? region_hull(*r, f.region, shape, t.vars) : f.region;
      } else {
        auto [pos, fresh] = t.input_regions.emplace(in, f.region);
        if (!fresh) pos->second = region_hull(pos->second, f.region, shape, t.vars);
      }
    }
  }
  return t;
}

std::vector<int64_t> region_origin(const Region& r, const std::vector<int64_t>& outer_values) {
  std::vector<int64_t> origin;
  for (const RegionDim& d : r.dims) origin.push_back(evaluate_base(d.base, outer_values) + d.lo);
  return origin;
}

}  // namespace tilegraph::scheduler
