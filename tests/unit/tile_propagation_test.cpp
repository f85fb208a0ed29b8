// Tile propagation (scheduler/tile_propagation.h) against brute force.
//
// The oracle enumerates, for every block of a fused group, every root output
// point of the block's tile and every reduce point, evaluates the op bodies
// (Selects lazily, as the IR's semantics demand) and records every element a
// Load actually reads. Points read from group-internal producers become points
// those producers must compute, which the oracle then evaluates in turn. The
// propagated regions must
//  * contain every element read (soundness, always; a data-dependent index
//    needs the whole dimension);
//  * for affine separable index maps, equal the bounding box of what is read
//    once clipped to the tensor (exactness, on blocks whose root tile lies
//    inside the tensor: a tail block computes less than its tile);
//  * also contain what the whole tile of a tail block indexes past the
//    tensor's end, since generated code computes the whole tile and its
//    on-chip buffers are sized by these regions.
// Extents are static by construction (integers shared by every block); the
// bases are checked by evaluating them at every block.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "driver/pipeline.h"
#include "compiler/ir/error.h"
#include "compiler/ir/scalar.h"
#include "frontends/onnx/import.h"
#include "scheduler/tile_propagation.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using scheduler::GroupTiling;
using scheduler::InputFootprint;
using scheduler::Region;
using scheduler::RegionDim;
using scheduler::TileVars;
using testing::OnnxModelBuilder;
using B = OnnxModelBuilder;

constexpr int kF32 = onnx::TensorProto::FLOAT;
constexpr int kI64 = onnx::TensorProto::INT64;

// Set TG_TILE_VERBOSE=1 to print each case's groups and how tight its regions are.
bool verbose() { return std::getenv("TG_TILE_VERBOSE") != nullptr; }

// ------------------------------------------------------------------ oracle

// A value, or nullopt when it depends on tensor data.
using Value = std::optional<Scalar>;
using Point = std::vector<int64_t>;
// A Load index that depends on tensor data: any in-range value may be read.
constexpr int64_t kAny = std::numeric_limits<int64_t>::min();

// Evaluates an op body at concrete axis values with the IR's scalar semantics
// (float index math too, as Resize emits), reporting every Load it evaluates.
// Loaded values are unknown. Selects are lazy: with a known condition only the
// chosen branch runs; with a data-dependent one either may, so both are
// evaluated.
class BodyEvaluator {
 public:
  using OnLoad = std::function<void(int slot, const Point& index)>;
  BodyEvaluator(const std::vector<int64_t>& axes, OnLoad on_load)
      : axes_(axes), on_load_(std::move(on_load)) {}

  Value eval(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm: return Scalar{0.0, e->int_value};
      case ExprKind::kFloatImm: return scalar_of(e->float_value, e->dtype);
      case ExprKind::kVar: return Scalar{0.0, axes_.at(static_cast<size_t>(e->int_value))};
      case ExprKind::kLoad: {
        Point index;
        for (const Expr& i : e->args) {
          const Value v = eval(i);
          index.push_back(v ? v->i : kAny);
        }
        on_load_(static_cast<int>(e->int_value), index);
        return std::nullopt;  // tensor data
      }
      case ExprKind::kUnary: {
        const Value x = eval(e->args[0]);
        if (!x) return std::nullopt;
        return scalar_unary(e->unary_op, e->dtype, *x);
      }
      case ExprKind::kBinary: return eval_binary(e);
      case ExprKind::kSelect: {
        const Value c = eval(e->args[0]);
        if (c) return eval(c->i != 0 ? e->args[1] : e->args[2]);
        eval(e->args[1]);
        eval(e->args[2]);
        return std::nullopt;
      }
      case ExprKind::kCast: {
        const Value x = eval(e->args[0]);
        if (!x) return std::nullopt;
        return scalar_cast(*x, e->args[0]->dtype, e->dtype);
      }
      case ExprKind::kCheckIndex: {  // a runtime index: its value is data
        const Value x = eval(e->args[0]);
        const int64_t dim = e->args[1]->int_value;
        if (!x || x->i < -dim || x->i >= dim) return std::nullopt;
        return Scalar{0.0, x->i < 0 ? x->i + dim : x->i};
      }
    }
    return std::nullopt;
  }

 private:
  Value eval_binary(const Expr& e) {
    // Both operands always run (only Select is lazy), so loads in both count.
    const Value a = eval(e->args[0]), b = eval(e->args[1]);
    const DType t = e->args[0]->dtype;
    // A known operand can decide And / Or without the data-dependent one.
    if (e->binary_op == BinaryOp::kAnd && ((a && a->i == 0) || (b && b->i == 0))) return Scalar{0.0, 0};
    if (e->binary_op == BinaryOp::kOr && ((a && a->i != 0) || (b && b->i != 0))) return Scalar{0.0, 1};
    if (!a || !b) return std::nullopt;
    switch (e->binary_op) {
      case BinaryOp::kDiv: case BinaryOp::kFloorDiv: case BinaryOp::kFloorMod: case BinaryOp::kRem:
        if (!is_float(t) && b->i == 0) {
          ADD_FAILURE() << "integer division by zero in " << to_string(e);
          return std::nullopt;
        }
        break;
      default: break;
    }
    return scalar_binary(e->binary_op, t, *a, *b);
  }

  const std::vector<int64_t>& axes_;
  OnLoad on_load_;
};

// Every point of [lo, hi) per dimension (one empty point for rank 0).
void for_each_point(const Point& lo, const Point& hi, const std::function<void(const Point&)>& f) {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] >= hi[d]) return;
  Point p = lo;
  while (true) {
    f(p);
    size_t d = p.size();
    while (d > 0) {
      --d;
      if (++p[d] < hi[d]) break;
      p[d] = lo[d];
      if (d == 0) return;
    }
    if (p.empty()) return;
  }
}

// What one block of a group reads (per tensor) and computes (per group op).
struct BlockAccess {
  std::map<TensorId, std::set<Point>> read;  // kAny in data-dependent dims
  std::vector<std::set<Point>> computed;     // per group op: output points
};

// `whole_tile`: evaluate every coordinate of the root tile, also those past
// the tensor's end in a tail block, as generated code does (it computes the
// whole tile and discards what falls outside). Loads may then run out of
// bounds; what they index must still lie in the regions, which size the
// on-chip buffers those loads read.
BlockAccess access_of_block(const Graph& g, const std::vector<const Op*>& ops,
                            const std::vector<int64_t>& tile, const Point& block, bool whole_tile) {
  BlockAccess a;
  a.computed.resize(ops.size());
  std::map<TensorId, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i]->output] = i;

  const Shape& root_shape = g.tensor(ops.back()->output).shape;
  Point lo, hi;
  for (size_t d = 0; d < root_shape.size(); ++d) {
    lo.push_back(block[d] * tile[d]);
    // The tail block's tile runs past the tensor's end.
    hi.push_back(whole_tile ? lo[d] + tile[d] : std::min(lo[d] + tile[d], root_shape[d]));
  }
  for_each_point(lo, hi, [&](const Point& p) { a.computed.back().insert(p); });

  // Consumers before producers: by the time an op runs, all its readers have
  // told it which points they need.
  for (size_t i = ops.size(); i-- > 0;) {
    const Op& op = *ops[i];
    const Point reduce_lo(op.reduce_extents.size(), 0);
    const Point& reduce_hi = op.reduce_extents;
    auto on_load = [&](int slot, const Point& index) {
      const TensorId t = op.inputs.at(static_cast<size_t>(slot));
      a.read[t].insert(index);
      auto it = position.find(t);
      if (it == position.end() || it->second >= i) return;
      // The producer must compute every point this load may read.
      const Shape& shape = g.tensor(t).shape;
      Point plo = index, phi = index;
      for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] == kAny) plo[d] = 0, phi[d] = shape[d];
        else phi[d] = index[d] + 1;
      }
      for_each_point(plo, phi, [&](const Point& p) { a.computed[it->second].insert(p); });
    };
    for (const Point& p : a.computed[i]) {
      for_each_point(reduce_lo, reduce_hi, [&](const Point& r) {
        std::vector<int64_t> axes = p;
        axes.insert(axes.end(), r.begin(), r.end());
        BodyEvaluator(axes, on_load).eval(op.body);
      });
    }
  }
  return a;
}

// ------------------------------------------------------------------ checks

struct Box {
  Point lo, hi;  // [lo, hi) per dimension
};

Box box_at(const Region& r, const Point& block) {
  Box b;
  b.lo = scheduler::region_origin(r, block);
  for (size_t d = 0; d < r.dims.size(); ++d) b.hi.push_back(b.lo[d] + r.dims[d].extent);
  return b;
}

std::string point_string(const Point& p) {
  std::ostringstream s;
  s << "(";
  for (size_t d = 0; d < p.size(); ++d) {
    if (d) s << ",";
    if (p[d] == kAny) s << "*";
    else s << p[d];
  }
  return s.str() + ")";
}

std::string box_string(const Box& b) {
  std::ostringstream s;
  for (size_t d = 0; d < b.lo.size(); ++d) s << "[" << b.lo[d] << "," << b.hi[d] << ")";
  return b.lo.empty() ? "scalar" : s.str();
}

enum class Expect {
  kSound,  // regions contain what is read
  kExact,  // ... and equal its bounding box (clipped to the tensor) on interior blocks
};

// Counts of how a case came out, for the verbose summary.
struct Tightness {
  int exact_dims = 0, loose_dims = 0;
};

// Checks one block's regions against what it touched. `interior`: the root
// tile lies inside the root tensor (a tail block computes less than its tile).
void check_tensor(const std::string& what, const Shape& shape, const Region& region,
                  const std::set<Point>* points, const Point& block, bool interior,
                  Expect expect, Tightness& tight, std::vector<std::string>& errors) {
  if (region.dims.size() != shape.size()) {
    errors.push_back(what + ": region rank " + std::to_string(region.dims.size()) + " != tensor rank " +
                     std::to_string(shape.size()));
    return;
  }
  const Box box = box_at(region, block);
  const std::string where = what + " block " + point_string(block) + " region " + box_string(box);
  // Soundness: every element read lies in the region.
  Point seen_lo(shape.size(), std::numeric_limits<int64_t>::max());
  Point seen_hi(shape.size(), std::numeric_limits<int64_t>::min());
  std::vector<bool> any(shape.size(), false);
  if (points) {
    for (const Point& p : *points) {
      for (size_t d = 0; d < p.size(); ++d) {
        if (p[d] == kAny) {
          any[d] = true;
          if (box.lo[d] > 0 || box.hi[d] < shape[d])
            errors.push_back(where + ": data-dependent dim " + std::to_string(d) + " not whole");
          continue;
        }
        if (p[d] < 0 || p[d] >= shape[d])
          errors.push_back(where + ": the IR reads out of bounds at " + point_string(p));
        if (p[d] < box.lo[d] || p[d] >= box.hi[d])
          errors.push_back(where + ": misses " + point_string(p));
        seen_lo[d] = std::min(seen_lo[d], p[d]);
        seen_hi[d] = std::max(seen_hi[d], p[d] + 1);
      }
    }
  }
  if (!interior) return;
  // Exactness: the region, clipped to the tensor, is the bounding box of
  // what is read: per dimension, or as a whole empty when nothing is read.
  auto clipped = [&](size_t d) {
    return std::pair{std::max<int64_t>(box.lo[d], 0), std::min(box.hi[d], shape[d])};
  };
  if (!points || points->empty()) {
    bool empty = false;
    for (size_t d = 0; d < shape.size(); ++d) empty |= clipped(d).first >= clipped(d).second;
    ++(empty ? tight.exact_dims : tight.loose_dims);
    if (!empty && expect == Expect::kExact) errors.push_back(where + ": reads nothing but the region is not empty");
    return;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (any[d]) continue;
    const auto [lo, hi] = clipped(d);
    const bool exact = lo == seen_lo[d] && hi == seen_hi[d];
    ++(exact ? tight.exact_dims : tight.loose_dims);
    if (!exact && expect == Expect::kExact) {
      std::ostringstream s;
      s << where << ": dim " << d << " clipped [" << lo << "," << hi << ") but reads [" << seen_lo[d] << ","
        << seen_hi[d] << ")";
      errors.push_back(s.str());
    }
  }
}

// The whole-tile evaluation must stay inside the regions too (except in
// whole_dim dims, where readers clamp).
void check_coverage(const std::string& what, const Region& region, const std::set<Point>& points,
                    const Point& block, std::vector<std::string>& errors) {
  const Box box = box_at(region, block);
  for (const Point& p : points) {
    for (size_t d = 0; d < p.size(); ++d) {
      if (p[d] == kAny || region.dims[d].whole_dim) continue;
      if (p[d] < box.lo[d] || p[d] >= box.hi[d])
        errors.push_back(what + " block " + point_string(block) + " region " + box_string(box) +
                         ": the whole tile indexes " + point_string(p) + " outside it");
    }
  }
}

std::string region_string(const Region& r) {
  std::ostringstream s;
  for (const RegionDim& d : r.dims)
    s << "[" << to_string(d.base) << (d.lo < 0 ? "" : "+") << d.lo << " x" << d.extent
      << (d.whole_dim ? " whole" : "") << "]";
  return r.dims.empty() ? "scalar" : s.str();
}

// Propagates `tile` through the group and compares every block with the oracle.
// `loose`: tensors allowed to be conservative even when `expect` is kExact.
void check_group(const Graph& g, const std::vector<const Op*>& ops, const std::vector<int64_t>& tile,
                 Expect expect, const std::set<std::string>& loose = {}) {
  SCOPED_TRACE("root tile " + point_string(tile));
  const GroupTiling t = scheduler::propagate_tiles(g, ops, tile);
  const Shape& root_shape = g.tensor(ops.back()->output).shape;
  ASSERT_EQ(t.ops.size(), ops.size());
  ASSERT_EQ(t.blocks_per_dim.size(), root_shape.size());
  ASSERT_EQ(t.block_vars.size(), root_shape.size());
  std::vector<int64_t> clamped;
  for (size_t d = 0; d < root_shape.size(); ++d) {
    clamped.push_back(std::clamp<int64_t>(tile[d], 1, root_shape[d]));
    EXPECT_EQ(t.blocks_per_dim[d], (root_shape[d] + clamped[d] - 1) / clamped[d]);
    EXPECT_EQ(t.block_vars[d], static_cast<int>(d)) << "region_origin takes block coords by var id";
    EXPECT_TRUE(t.vars.outer.at(static_cast<size_t>(t.block_vars[d])));
  }
  // Every outer var is a block var: the regions' bases depend on the block alone.
  for (size_t v = 0; v < t.vars.outer.size(); ++v) {
    if (t.vars.outer[v]) {
      EXPECT_LT(v, root_shape.size()) << t.vars.names[v];
    }
  }

  if (verbose()) {
    std::cout << "  tile " << point_string(tile) << "\n";
    for (size_t i = 0; i < ops.size(); ++i)
      std::cout << "    op " << ops[i]->name << " " << region_string(t.ops[i].region) << "\n";
    for (const auto& [id, r] : t.input_regions)
      std::cout << "    in " << g.tensor(id).name << " " << region_string(r) << "\n";
  }

  std::map<TensorId, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i]->output] = i;
  Tightness tight;
  std::vector<std::string> errors;
  const Point zeros(root_shape.size(), 0);
  for_each_point(zeros, t.blocks_per_dim, [&](const Point& block) {
    bool interior = true;
    for (size_t d = 0; d < block.size(); ++d)
      interior &= (block[d] + 1) * clamped[d] <= root_shape[d];
    const BlockAccess a = access_of_block(g, ops, clamped, block, /*whole_tile=*/false);
    for (size_t i = 0; i < ops.size(); ++i) {
      const Tensor& out = g.tensor(ops[i]->output);
      check_tensor("op " + ops[i]->name, out.shape, t.ops[i].region, &a.computed[i], block, interior,
                   loose.count(out.name) ? Expect::kSound : expect, tight, errors);
      // The op's axis values are the region's coordinates.
      EXPECT_EQ(t.ops[i].local_vars.size(), t.ops[i].region.dims.size());
      EXPECT_EQ(t.ops[i].coords.size(), t.ops[i].region.dims.size());
      EXPECT_EQ(t.ops[i].reduce_vars.size(), ops[i]->reduce_extents.size());
    }
    for (const auto& [id, points] : a.read)
      if (!position.count(id) && !t.input_regions.count(id))
        errors.push_back("tensor " + g.tensor(id).name + " is read but has no input region");
    for (const auto& [id, region] : t.input_regions) {
      EXPECT_FALSE(position.count(id)) << g.tensor(id).name << " is computed in the group";
      auto it = a.read.find(id);
      const Tensor& in = g.tensor(id);
      check_tensor("input " + in.name, in.shape, region, it == a.read.end() ? nullptr : &it->second, block,
                   interior, loose.count(in.name) ? Expect::kSound : expect, tight, errors);
    }
    if (interior) return;  // the whole tile is what was just checked
    const BlockAccess whole = access_of_block(g, ops, clamped, block, /*whole_tile=*/true);
    for (size_t i = 0; i < ops.size(); ++i)
      check_coverage("op " + ops[i]->name, t.ops[i].region, whole.computed[i], block, errors);
    for (const auto& [id, region] : t.input_regions) {
      auto it = whole.read.find(id);
      if (it != whole.read.end()) check_coverage("input " + g.tensor(id).name, region, it->second, block, errors);
    }
  });
  for (size_t e = 0; e < errors.size() && e < 8; ++e) ADD_FAILURE() << errors[e];
  if (errors.size() > 8) ADD_FAILURE() << errors.size() - 8 << " more errors";
  if (verbose())
    std::cout << "    interior dims exact " << tight.exact_dims << ", loose " << tight.loose_dims << "\n";
}

// ------------------------------------------------------------------ models

// Imports a built model and runs the passes the driver runs before scheduling
// (layout ops become index maps inside their consumers).
Graph optimized(const OnnxModelBuilder& b, const std::string& name) {
  const std::string path = testing::test_model_path("tile_propagation", name);
  b.save(path);
  const Graph imported = onnx_frontend::import_model(path);
  Graph g = driver::optimize_graph(driver::CompileOptions{}, imported);
  verify(g);
  if (verbose()) std::cout << name << ":\n" << to_string(g);
  return g;
}

// The whole graph as one group (each test model is a single chain to one output).
std::vector<const Op*> whole_graph(const Graph& g) {
  std::vector<const Op*> ops;
  for (const Op& op : g.ops) ops.push_back(&op);
  return ops;
}

void check_tiles(const Graph& g, const std::vector<std::vector<int64_t>>& tiles, Expect expect,
                 const std::set<std::string>& loose = {}) {
  const std::vector<const Op*> ops = whole_graph(g);
  for (const auto& tile : tiles) check_group(g, ops, tile, expect, loose);
}

// Multi-head attention: heads split by Reshape + Transpose, scaled scores,
// Softmax, and the heads merged back — every layout op an index map.
Graph attention_graph() {
  OnnxModelBuilder b(17);
  b.input("q", kF32, {2, 6, 8}).input("k", kF32, {2, 6, 8}).input("v", kF32, {2, 6, 8}).output("out");
  b.initializer_i64("heads", {4}, {2, 6, 2, 4});
  b.initializer_i64("merged", {3}, {2, 6, 8});
  b.initializer_f("scale", {}, {0.5f});  // rank 0
  b.node("Reshape", {"q", "heads"}, {"q4"});
  B::attr_ints(b.node("Transpose", {"q4"}, {"qh"}), "perm", {0, 2, 1, 3});
  b.node("Reshape", {"k", "heads"}, {"k4"});
  B::attr_ints(b.node("Transpose", {"k4"}, {"kt"}), "perm", {0, 2, 3, 1});
  b.node("Reshape", {"v", "heads"}, {"v4"});
  B::attr_ints(b.node("Transpose", {"v4"}, {"vh"}), "perm", {0, 2, 1, 3});
  b.node("MatMul", {"qh", "kt"}, {"scores"});
  b.node("Mul", {"scores", "scale"}, {"scaled"});
  B::attr_int(b.node("Softmax", {"scaled"}, {"p"}), "axis", -1);
  b.node("MatMul", {"p", "vh"}, {"o"});
  B::attr_ints(b.node("Transpose", {"o"}, {"o4"}), "perm", {0, 2, 1, 3});
  b.node("Reshape", {"o4", "merged"}, {"out"});
  return optimized(b, "attention");
}

// Conv (pads, strides, kernel) -> Add per-channel bias -> Relu.
Graph conv_graph(const std::string& name, int64_t kernel, int64_t pad, int64_t stride) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 3, 8, 8}).output("y");
  b.initializer_f("w", {4, 3, kernel, kernel}, std::vector<float>(static_cast<size_t>(12 * kernel * kernel), 0.1f));
  b.initializer_f("bias", {4, 1, 1}, {1, 2, 3, 4});
  auto& conv = b.node("Conv", {"x", "w"}, {"c"});
  B::attr_ints(conv, "kernel_shape", {kernel, kernel});
  B::attr_ints(conv, "pads", {pad, pad, pad, pad});
  B::attr_ints(conv, "strides", {stride, stride});
  b.node("Add", {"c", "bias"}, {"cb"});
  b.node("Relu", {"cb"}, {"y"});
  return optimized(b, name);
}

// ------------------------------------------------------------------ group tests

TEST(TilePropagationGroup, AttentionMatMulSoftmaxMatMul) {
  const Graph g = attention_graph();
  // Whole, heads-aligned, tails along seq (6 = 4 + 2), tiles past the end.
  check_tiles(g, {{2, 6, 8}, {1, 2, 8}, {1, 4, 4}, {1, 3, 4}, {1, 1, 8}, {2, 5, 4}, {9, 9, 99}},
              Expect::kExact);
  // Hidden tiles that evenly cut a head (floordiv(b*2 + l, 4) = floordiv(b, 2))
  // and single elements separate exactly too.
  check_tiles(g, {{1, 2, 2}, {1, 1, 1}, {2, 3, 1}}, Expect::kExact);
  // A hidden tile of 3 straddles heads: sound, conservative over heads.
  check_tiles(g, {{2, 6, 3}, {1, 4, 3}}, Expect::kSound);
}

TEST(TilePropagationGroup, ConvAddReluStride1Pad1) {
  const Graph g = conv_graph("conv3x3_s1", 3, 1, 1);
  // {1, 4, 7, 7}: the input window (9 rows) is wider than the image (8).
  check_tiles(g, {{2, 4, 8, 8}, {1, 4, 4, 4}, {1, 2, 3, 3}, {1, 1, 1, 1}, {2, 3, 5, 8}, {1, 4, 7, 7}},
              Expect::kExact);
}

TEST(TilePropagationGroup, ConvAddReluStride2Pad1) {
  const Graph g = conv_graph("conv3x3_s2", 3, 1, 2);
  check_tiles(g, {{2, 4, 4, 4}, {1, 4, 2, 2}, {1, 2, 3, 3}, {1, 1, 1, 1}, {1, 3, 4, 1}}, Expect::kExact);
}

TEST(TilePropagationGroup, Conv1x1AddRelu) {
  const Graph g = conv_graph("conv1x1", 1, 0, 1);
  check_tiles(g, {{2, 4, 8, 8}, {1, 4, 4, 4}, {1, 3, 3, 5}, {1, 1, 1, 1}}, Expect::kExact);
}

TEST(TilePropagationGroup, LayerNormalization) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 6, 8}).output("y");
  b.initializer_f("gamma", {8}, std::vector<float>(8, 1.5f));
  b.initializer_f("beta", {8}, std::vector<float>(8, 0.5f));
  B::attr_int(b.node("LayerNormalization", {"x", "gamma", "beta"}, {"y"}), "axis", -1);
  const Graph g = optimized(b, "layernorm");
  ASSERT_GE(g.ops.size(), 2u);
  // The statistics need whole rows, so hidden tiles below 8 still read all of x's row.
  check_tiles(g, {{2, 6, 8}, {1, 2, 8}, {1, 4, 3}, {1, 1, 1}, {2, 5, 4}}, Expect::kExact);
}

TEST(TilePropagationGroup, ReductionChain) {
  // y = ReduceSum over seq of Relu(x - mean over hidden) * ReduceMax over seq:
  // three reductions over two different axes in one group.
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 6, 8}).output("y");
  b.initializer_i64("seq", {1}, {1});
  auto& mean = b.node("ReduceMean", {"x"}, {"mean"});
  B::attr_ints(mean, "axes", {2});
  B::attr_int(mean, "keepdims", 1);
  b.node("Sub", {"x", "mean"}, {"centered"});
  b.node("Relu", {"centered"}, {"pos"});
  auto& mx = b.node("ReduceMax", {"pos"}, {"peak"});
  B::attr_ints(mx, "axes", {1});
  B::attr_int(mx, "keepdims", 1);
  b.node("Mul", {"pos", "peak"}, {"scaled"});
  B::attr_int(b.node("ReduceSum", {"scaled", "seq"}, {"y"}), "keepdims", 0);
  const Graph g = optimized(b, "reduction_chain");
  check_tiles(g, {{2, 8}, {1, 4}, {1, 3}, {2, 1}, {1, 8}}, Expect::kExact);
}

TEST(TilePropagationGroup, ReduceAllToScalarRoot) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 3, 4}).output("y");
  b.node("Exp", {"x"}, {"e"});
  B::attr_int(b.node("ReduceSum", {"e"}, {"y"}), "keepdims", 0);
  const Graph g = optimized(b, "reduce_all");
  ASSERT_TRUE(g.tensor(g.outputs[0]).shape.empty());
  check_tiles(g, {{}}, Expect::kExact);
  const GroupTiling t = scheduler::propagate_tiles(g, whole_graph(g), {});
  EXPECT_EQ(t.blocks(), 1);
  EXPECT_EQ(t.ops.back().region.volume(), 1);
}

TEST(TilePropagationGroup, TransposeReshapeIntoMatMul) {
  // [B, H, S] -> Transpose -> [B, S, H] -> Reshape [B*S, H] -> MatMul -> + bias.
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 8, 3}).output("y");
  b.initializer_i64("flat", {2}, {6, 8});
  b.initializer_f("w", {8, 5}, std::vector<float>(40, 0.25f));
  b.initializer_f("bias", {5}, {1, 2, 3, 4, 5});
  B::attr_ints(b.node("Transpose", {"x"}, {"xt"}), "perm", {0, 2, 1});
  b.node("Reshape", {"xt", "flat"}, {"x2"});
  b.node("MatMul", {"x2", "w"}, {"m"});
  b.node("Add", {"m", "bias"}, {"y"});
  const Graph g = optimized(b, "transpose_reshape_matmul");
  // Row tiles that are whole sequences (3, 6) or single rows separate
  // floordiv/floormod exactly.
  check_tiles(g, {{6, 5}, {3, 5}, {3, 2}, {6, 3}, {1, 5}, {1, 1}}, Expect::kExact);
  // Row tiles that straddle sequences mix block and offset inside floordiv.
  check_tiles(g, {{2, 5}, {4, 2}, {5, 4}}, Expect::kSound);
}

TEST(TilePropagationGroup, MatMulReshapedToHeads) {
  // [B*S, H] @ W -> Reshape [B, S, N]: the root's index is linear (b*S + s).
  OnnxModelBuilder b(17);
  b.input("x", kF32, {6, 8}).output("y");
  b.initializer_f("w", {8, 4}, std::vector<float>(32, 0.5f));
  b.initializer_i64("shape", {3}, {2, 3, 4});
  b.node("MatMul", {"x", "w"}, {"m"});
  b.node("Relu", {"m"}, {"r"});
  b.node("Reshape", {"r", "shape"}, {"y"});
  const Graph g = optimized(b, "matmul_reshape");
  check_tiles(g, {{2, 3, 4}, {1, 3, 4}, {1, 2, 2}, {2, 1, 3}, {1, 1, 1}}, Expect::kExact);
}

TEST(TilePropagationGroup, FlattenedProjectionSplitIntoHeads) {
  // The usual transformer projection: [B, S, H] -> [B*S, H] @ W -> [B, S, heads, hd]
  // -> [B, heads, S, hd], then a per-head Softmax. The projection's row
  // base mixes two block coordinates (b*3 + s).
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 3, 8}).output("y");
  b.initializer_i64("flat", {2}, {6, 8});
  b.initializer_i64("heads", {4}, {2, 3, 2, 4});
  b.initializer_f("w", {8, 8}, std::vector<float>(64, 0.125f));
  b.node("Reshape", {"x", "flat"}, {"x2"});
  b.node("MatMul", {"x2", "w"}, {"m"});
  b.node("Reshape", {"m", "heads"}, {"m4"});
  B::attr_ints(b.node("Transpose", {"m4"}, {"t"}), "perm", {0, 2, 1, 3});
  B::attr_int(b.node("Softmax", {"t"}, {"y"}), "axis", -1);
  const Graph g = optimized(b, "projection_heads");
  ASSERT_EQ(g.tensor(g.outputs[0]).shape, (Shape{2, 2, 3, 4}));
  check_tiles(g, {{2, 2, 3, 4}, {1, 1, 3, 4}, {1, 2, 1, 4}, {1, 1, 1, 4}, {2, 1, 3, 2}}, Expect::kExact);
  // Seq tiles of 2 straddle the flattened rows' batch boundary.
  check_tiles(g, {{1, 1, 2, 4}, {2, 2, 2, 2}}, Expect::kSound);
}

TEST(TilePropagationGroup, PadThenAdd) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 3, 8}).input("z", kF32, {2, 5, 11}).output("y");
  b.initializer_i64("pads", {6}, {0, 1, 1, 0, 1, 2});
  b.node("Pad", {"x", "pads"}, {"p"});
  b.node("Add", {"p", "z"}, {"y"});
  const Graph g = optimized(b, "pad_add");
  check_tiles(g, {{2, 5, 11}, {1, 2, 4}, {1, 3, 3}, {1, 1, 1}, {2, 5, 5}}, Expect::kExact);
}

TEST(TilePropagationGroup, StridedSliceThenMul) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 6, 8}).output("y");
  b.initializer_i64("starts", {2}, {1, 7});
  b.initializer_i64("ends", {2}, {6, 0});
  b.initializer_i64("axes", {2}, {1, 2});
  b.initializer_i64("steps", {2}, {1, -2});  // reversed, every other column
  b.initializer_f("two", {}, {2.0f});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
  b.node("Mul", {"s", "two"}, {"y"});
  const Graph g = optimized(b, "slice_mul");
  ASSERT_EQ(g.tensor(g.outputs[0]).shape, (Shape{2, 5, 4}));
  check_tiles(g, {{2, 5, 4}, {1, 2, 2}, {1, 3, 3}, {1, 1, 1}}, Expect::kExact);
}

TEST(TilePropagationGroup, ConcatThenRelu) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 3, 4}).input("z", kF32, {2, 3, 5}).output("y");
  B::attr_int(b.node("Concat", {"x", "z", "x"}, {"c"}), "axis", 2);
  b.node("Relu", {"c"}, {"y"});
  const Graph g = optimized(b, "concat_relu");
  // Tiles inside one part, straddling two, and the whole concatenation. x is
  // read twice (both ends): one box over both reads is the whole of x, but z,
  // read once, is exact (and empty for blocks that only read x).
  check_tiles(g, {{2, 3, 13}, {1, 3, 4}, {1, 1, 3}, {1, 2, 5}, {1, 1, 1}}, Expect::kExact, {"x"});
}

TEST(TilePropagationGroup, GatherWithRuntimeIndex) {
  // An embedding lookup: which rows of the table are read depends on data.
  OnnxModelBuilder b(17);
  b.input("ids", kI64, {2, 3}).input("z", kF32, {2, 3, 8}).output("y");
  b.initializer_f("table", {10, 8}, std::vector<float>(80, 0.5f));
  B::attr_int(b.node("Gather", {"table", "ids"}, {"e"}), "axis", 0);
  b.node("Add", {"e", "z"}, {"y"});
  const Graph g = optimized(b, "gather");
  // Exact in every dimension the data does not decide.
  check_tiles(g, {{2, 3, 8}, {1, 2, 4}, {1, 1, 3}, {2, 2, 5}}, Expect::kExact);
  const GroupTiling t = scheduler::propagate_tiles(g, whole_graph(g), {1, 2, 4});
  bool found = false;
  for (const auto& [id, r] : t.input_regions) {
    if (g.tensor(id).name != "table") continue;
    found = true;
    ASSERT_EQ(r.dims.size(), 2u);
    EXPECT_TRUE(r.dims[0].whole_dim);
    EXPECT_EQ(r.dims[0].extent, 10);
    EXPECT_FALSE(r.dims[1].whole_dim);
    EXPECT_EQ(r.dims[1].extent, 4);
  }
  EXPECT_TRUE(found);
}

TEST(TilePropagationGroup, GatherAlongSeqIntoProducer) {
  // A runtime index into a group-internal producer: the producer must compute
  // the whole gathered dimension.
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 6, 4}).input("ids", kI64, {3}).output("y");
  b.node("Exp", {"x"}, {"e"});
  b.node("Sigmoid", {"e"}, {"s"});
  B::attr_int(b.node("Gather", {"s", "ids"}, {"gs"}), "axis", 1);
  b.node("Neg", {"gs"}, {"y"});
  const Graph g = optimized(b, "gather_producer");
  check_tiles(g, {{2, 3, 4}, {1, 1, 2}, {1, 2, 3}}, Expect::kExact);
}

TEST(TilePropagationGroup, RankZeroInput) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {3, 5}).input("s", kF32, {}).output("y");
  b.node("Mul", {"x", "s"}, {"m"});
  b.node("Tanh", {"m"}, {"y"});
  const Graph g = optimized(b, "rank0");
  check_tiles(g, {{3, 5}, {2, 2}, {1, 1}}, Expect::kExact);
  const GroupTiling t = scheduler::propagate_tiles(g, whole_graph(g), {2, 2});
  bool found = false;
  for (const auto& [id, r] : t.input_regions) {
    if (g.tensor(id).name != "s") continue;
    found = true;
    EXPECT_TRUE(r.dims.empty());
    EXPECT_EQ(r.volume(), 1);
  }
  EXPECT_TRUE(found);
}

TEST(TilePropagationGroup, ProducerUnderPaddedStridedConv) {
  // The conv's input is computed in the group: its region has a moving base
  // and starts one row before the block's window (the padding).
  OnnxModelBuilder b(17);
  b.input("x", kF32, {1, 2, 9, 9}).output("y");
  b.initializer_f("w", {3, 2, 3, 3}, std::vector<float>(54, 0.1f));
  b.node("Sigmoid", {"x"}, {"s"});
  auto& conv = b.node("Conv", {"s", "w"}, {"c"});
  B::attr_ints(conv, "kernel_shape", {3, 3});
  B::attr_ints(conv, "pads", {1, 1, 1, 1});
  B::attr_ints(conv, "strides", {2, 2});
  b.node("Relu", {"c"}, {"y"});
  const Graph g = optimized(b, "producer_conv");
  ASSERT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 3, 5, 5}));
  check_tiles(g, {{1, 3, 5, 5}, {1, 3, 2, 2}, {1, 1, 3, 4}, {1, 2, 1, 1}, {1, 3, 4, 5}}, Expect::kExact);
}

TEST(TilePropagationGroup, RankZeroProducer) {
  // A scalar computed in the group (a full reduction) scales every element.
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 3, 4}).output("y");
  B::attr_int(b.node("ReduceSum", {"x"}, {"total"}), "keepdims", 0);
  b.node("Div", {"x", "total"}, {"y"});
  const Graph g = optimized(b, "rank0_producer");
  check_tiles(g, {{2, 3, 4}, {1, 2, 3}, {1, 1, 1}}, Expect::kExact);
}

TEST(TilePropagationGroup, DepthToSpace) {
  // out[n, c, h, w] = x[n, c*4 + (h%2)*2 + w%2, h/2, w/2].
  OnnxModelBuilder b(17);
  b.input("x", kF32, {1, 8, 3, 3}).output("y");
  B::attr_int(b.node("DepthToSpace", {"x"}, {"d"}), "blocksize", 2);
  b.node("Relu", {"d"}, {"y"});
  const Graph g = optimized(b, "depth_to_space");
  ASSERT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 2, 6, 6}));
  // Even spatial tiles never cut a 2x2 block.
  check_tiles(g, {{1, 2, 6, 6}, {1, 1, 2, 2}, {1, 2, 4, 2}, {1, 1, 6, 4}}, Expect::kExact);
  check_tiles(g, {{1, 1, 3, 3}, {1, 2, 1, 5}, {1, 1, 1, 1}}, Expect::kSound);
}

TEST(TilePropagationGroup, WhereOnRuntimeCondition) {
  // The condition is data: either branch may run, both must be staged.
  OnnxModelBuilder b(17);
  b.input("x", kF32, {2, 6}).input("z", kF32, {2, 6}).output("y");
  b.node("Greater", {"x", "z"}, {"gt"});
  b.node("Exp", {"x"}, {"e"});
  b.node("Where", {"gt", "e", "z"}, {"y"});
  const Graph g = optimized(b, "where");
  check_tiles(g, {{2, 6}, {1, 4}, {2, 1}}, Expect::kExact);
}

TEST(TilePropagationGroup, NearestUpsample) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {1, 2, 3, 4}).output("y");
  b.initializer_f("roi", {0}, {});
  b.initializer_f("scales", {4}, {1, 1, 2, 2});
  auto& resize = b.node("Resize", {"x", "roi", "scales"}, {"r"});
  B::attr_string(resize, "mode", "nearest");
  b.node("Neg", {"r"}, {"y"});
  const Graph g = optimized(b, "upsample");
  ASSERT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 2, 6, 8}));
  // The source row comes from float arithmetic (Cast, Ceil): interval bounds
  // give up on floats, so the region is the clamped range, the whole dim.
  check_tiles(g, {{1, 2, 6, 8}, {1, 1, 2, 4}, {1, 2, 3, 3}, {1, 1, 1, 1}}, Expect::kSound);
}

TEST(TilePropagationGroup, OpsOutOfOrderAreAnInternalError) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {4}).output("y");
  b.node("Exp", {"x"}, {"e"});
  b.node("Neg", {"e"}, {"y"});
  const Graph g = optimized(b, "out_of_order");
  ASSERT_EQ(g.ops.size(), 2u);
  // The root reads nothing from the group, and the first op reads the root.
  EXPECT_THROW(scheduler::propagate_tiles(g, {&g.ops[1], &g.ops[0]}, {2}), InternalError);
}

// ------------------------------------------------------------------ direct API

TEST(TilePropagationFootprint, SeparableStridedWindow) {
  TileVars vars;
  const int b = vars.add("b", 4, true);
  const int l = vars.add("l", 3, false);
  // A stride-2 window with padding 1: v0*2 + v1 - 1.
  const Region r = scheduler::index_footprint({var(b) * 2 + var(l) - 1}, {10}, vars);
  ASSERT_EQ(r.dims.size(), 1u);
  EXPECT_FALSE(r.dims[0].whole_dim);
  EXPECT_EQ(r.dims[0].lo, -1);
  EXPECT_EQ(r.dims[0].extent, 3);
  EXPECT_EQ(r.volume(), 3);
  for (int64_t bv = 0; bv < 4; ++bv) EXPECT_EQ(scheduler::region_origin(r, {bv}), (Point{2 * bv - 1}));
}

TEST(TilePropagationFootprint, ConstantAndOuterOnlyIndices) {
  TileVars vars;
  const int b = vars.add("b", 3, true);
  vars.add("l", 4, false);
  const Region r = scheduler::index_footprint({int_imm(2), var(b) * 4 + 1}, {5, 12}, vars);
  ASSERT_EQ(r.dims.size(), 2u);
  EXPECT_EQ(r.dims[0].extent, 1);
  EXPECT_EQ(r.dims[1].extent, 1);
  EXPECT_EQ(scheduler::region_origin(r, {2}), (Point{2, 9}));
}

TEST(TilePropagationFootprint, MixedDivisionFallsBackToAllBlocks) {
  TileVars vars;
  const int b = vars.add("b", 4, true);
  const int l = vars.add("l", 2, false);
  // floordiv(b*2 + l, 3): block and offset mix inside the division.
  const Region r = scheduler::index_footprint({floordiv(var(b) * 2 + var(l), 3)}, {3}, vars);
  ASSERT_EQ(r.dims.size(), 1u);
  EXPECT_FALSE(r.dims[0].whole_dim);
  // Sound for every block: b*2 + l ranges over [0, 7], so the index over [0, 2].
  for (int64_t bv = 0; bv < 4; ++bv) {
    const Point o = scheduler::region_origin(r, {bv});
    for (int64_t lv = 0; lv < 2; ++lv) {
      const int64_t i = (bv * 2 + lv) / 3;
      EXPECT_LE(o[0], i);
      EXPECT_LT(i, o[0] + r.dims[0].extent);
    }
  }
  EXPECT_LE(r.dims[0].extent, 3);
}

TEST(TilePropagationFootprint, WholeSequenceDivisionSeparates) {
  TileVars vars;
  const int b = vars.add("b", 2, true);
  const int l = vars.add("l", 6, false);
  // Rows of a flattened [2*3, H] with tile 6: floordiv(b*6 + l, 3) = b*2 + floordiv(l, 3).
  const Region r = scheduler::index_footprint(
      {floordiv(var(b) * 6 + var(l), 3), floormod(var(b) * 6 + var(l), 3)}, {4, 3}, vars);
  ASSERT_EQ(r.dims.size(), 2u);
  EXPECT_EQ(r.dims[0].extent, 2);
  EXPECT_EQ(r.dims[1].extent, 3);
  EXPECT_EQ(scheduler::region_origin(r, {1}), (Point{2, 0}));
}

TEST(TilePropagationFootprint, TileThatDividesTheDivisorSeparates) {
  TileVars vars;
  const int b = vars.add("b", 4, true);
  const int l = vars.add("l", 2, false);
  // Hidden tile 2 inside heads of 4: head floordiv(b*2 + l, 4), offset floormod(b*2 + l, 4).
  const Expr flat = var(b) * 2 + var(l);
  const Region r = scheduler::index_footprint({floordiv(flat, 4), floormod(flat, 4)}, {2, 4}, vars);
  ASSERT_EQ(r.dims.size(), 2u);
  EXPECT_EQ(r.dims[0].extent, 1);
  EXPECT_EQ(r.dims[1].extent, 2);
  for (int64_t bv = 0; bv < 4; ++bv)
    EXPECT_EQ(scheduler::region_origin(r, {bv}), (Point{bv * 2 / 4, bv * 2 % 4})) << bv;
  // An offset that shifts by whole tiles moves into the block part:
  // floordiv(b*2 + l + 6, 4), and floormod of a negative shift.
  const Region s = scheduler::index_footprint({floordiv(flat + 6, 4), floormod(flat - 2, 4)}, {3, 4}, vars);
  EXPECT_EQ(s.dims[0].extent, 1);
  EXPECT_EQ(s.dims[1].extent, 2);
  for (int64_t bv = 0; bv < 4; ++bv)
    EXPECT_EQ(scheduler::region_origin(s, {bv}), (Point{(bv * 2 + 6) / 4, floor_mod(bv * 2 - 2, 4)})) << bv;
  // A tile-1 dimension: the offset var is always 0, so floordiv(b + l, 3) is the block's.
  TileVars one;
  const int b1 = one.add("b", 6, true);
  const int l1 = one.add("l", 1, false);
  const Region t = scheduler::index_footprint({floordiv(var(b1) + var(l1), 3), floormod(var(b1) + var(l1), 3)},
                                              {2, 3}, one);
  EXPECT_EQ(t.dims[0].extent, 1);
  EXPECT_EQ(t.dims[1].extent, 1);
  for (int64_t bv = 0; bv < 6; ++bv) EXPECT_EQ(scheduler::region_origin(t, {bv}), (Point{bv / 3, bv % 3}));
}

TEST(TilePropagationFootprint, RegionsCoverTheWholeTile) {
  // A region is the footprint of the block's whole tile, padding and tails
  // included, so buffers it sizes hold whatever the tile's code indexes.
  TileVars vars;
  const int b = vars.add("b", 2, true);
  const int l = vars.add("l", 8, false);
  const int k = vars.add("k", 3, false);
  // A padded 3-wide window over a whole 8-row tile: rows [-1, 9).
  const Region whole = scheduler::index_footprint({var(l) + var(k) - 1}, {8}, vars);
  EXPECT_EQ(whole.dims[0].lo, -1);
  EXPECT_EQ(whole.dims[0].extent, 10);
  // A moving window as wide as the tensor, or wider, keeps moving: clipped
  // to the tensor it is exact for every block.
  const Region same = scheduler::index_footprint({var(b) * 2 + var(l) - 1}, {8}, vars);
  EXPECT_EQ(same.dims[0].extent, 8);
  EXPECT_EQ(scheduler::region_origin(same, {1})[0], 1);
  const Region wide = scheduler::index_footprint({var(b) * 2 + var(l) + var(k) - 1}, {8}, vars);
  EXPECT_FALSE(wide.dims[0].whole_dim);
  EXPECT_EQ(wide.dims[0].extent, 10);
  EXPECT_EQ(scheduler::region_origin(wide, {1})[0], 1);
  // Far wider than the tensor: the whole tensor, readers clamp.
  const Region huge = scheduler::index_footprint({var(b) + var(l) * 100}, {8}, vars);
  EXPECT_TRUE(huge.dims[0].whole_dim);
  EXPECT_EQ(huge.dims[0].extent, 8);
}

// Random index expressions over a block coordinate b*T + l and a reduce var:
// sums, scalings, floordiv and floormod by constants, nested. Every value in
// the tile must fall in the footprint of its block, and in any hull.
Expr random_index(std::mt19937& rng, int depth, const Expr& coord, const Expr& red) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  switch (uniform(0, depth > 0 ? 7 : 2)) {
    case 0: return coord;
    case 1: return red;
    case 2: return int_imm(uniform(-3, 3));
    case 3: return random_index(rng, depth - 1, coord, red) + random_index(rng, depth - 1, coord, red);
    case 4: return random_index(rng, depth - 1, coord, red) * int_imm(uniform(-2, 4));
    case 5: return floordiv(random_index(rng, depth - 1, coord, red), uniform(1, 6));
    case 6: return floormod(random_index(rng, depth - 1, coord, red), uniform(1, 6));
    default: return coord * int_imm(uniform(1, 3)) + random_index(rng, depth - 1, coord, red);
  }
}

TEST(TilePropagationFootprint, RandomIndicesAreSound) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t tile = uniform(1, 6), blocks = uniform(1, 5), reduce = uniform(1, 4), dim = uniform(1, 16);
    TileVars vars;
    const int b = vars.add("b", blocks, true);
    const int l = vars.add("l", tile, false);
    const int r = vars.add("r", reduce, false);
    const Expr coord = var(b) * tile + var(l);
    const Expr e1 = random_index(rng, 3, coord, var(r)), e2 = random_index(rng, 3, coord, var(r));
    SCOPED_TRACE(to_string(e1) + " and " + to_string(e2) + " tile " + std::to_string(tile) + " blocks " +
                 std::to_string(blocks) + " dim " + std::to_string(dim));
    const Region f1 = scheduler::index_footprint({e1}, {dim}, vars);
    const Region f2 = scheduler::index_footprint({e2}, {dim}, vars);
    const Region hull = scheduler::region_hull(f1, f2, {dim}, vars);
    for (const Region* f : {&f1, &f2, &hull}) {
      EXPECT_LE(f->dims[0].extent, dim + 64);
      EXPECT_GE(f->dims[0].extent, 1);
    }
    int failures = 0;
    for (int64_t bv = 0; bv < blocks && failures < 3; ++bv) {
      const int64_t o1 = scheduler::region_origin(f1, {bv})[0], o2 = scheduler::region_origin(f2, {bv})[0];
      const int64_t oh = scheduler::region_origin(hull, {bv})[0];
      for (int64_t lv = 0; lv < tile; ++lv) {
        for (int64_t rv = 0; rv < reduce; ++rv) {
          const std::vector<int64_t> axes{bv, lv, rv};
          auto no_loads = [](int, const Point&) { ADD_FAILURE() << "no loads here"; };
          const int64_t v1 = BodyEvaluator(axes, no_loads).eval(e1)->i;
          const int64_t v2 = BodyEvaluator(axes, no_loads).eval(e2)->i;
          // Regions cover every value the tile's index takes, in the tensor
          // or not (tails, padding), unless readers clamp (whole_dim).
          auto inside = [&](int64_t v, int64_t origin, const Region& f) {
            return f.dims[0].whole_dim || (origin <= v && v < origin + f.dims[0].extent);
          };
          if (!inside(v1, o1, f1) || !inside(v2, o2, f2) || !inside(v1, oh, hull) || !inside(v2, oh, hull)) {
            ADD_FAILURE() << "block " << bv << " l " << lv << " r " << rv << ": values " << v1 << ", " << v2
                          << " regions " << o1 << "+" << f1.dims[0].extent << ", " << o2 << "+"
                          << f2.dims[0].extent << ", hull " << oh << "+" << hull.dims[0].extent;
            ++failures;
          }
        }
      }
    }
  }
}

TEST(TilePropagationFootprint, DataDependentIndexIsWholeDim) {
  TileVars vars;
  vars.add("b", 2, true);
  const int l = vars.add("l", 4, false);
  const Expr idx = load(1, DType::kI64, {var(l)});
  const Region r = scheduler::index_footprint({idx, var(l)}, {7, 4}, vars);
  ASSERT_EQ(r.dims.size(), 2u);
  EXPECT_TRUE(r.dims[0].whole_dim);
  EXPECT_EQ(r.dims[0].extent, 7);
  EXPECT_EQ(scheduler::region_origin(r, {1})[0], 0);
  EXPECT_FALSE(r.dims[1].whole_dim);
  // Unbounded non-data indices (an unknown var) are whole too.
  const Region u = scheduler::index_footprint({var(17)}, {5}, vars);
  EXPECT_TRUE(u.dims[0].whole_dim);
  EXPECT_EQ(u.dims[0].extent, 5);
}

TEST(TilePropagationFootprint, HullOfShiftedAndUnrelatedBases) {
  TileVars vars;
  const int b = vars.add("b", 4, true);
  const int l = vars.add("l", 2, false);
  const Shape shape{9};
  const Region a = scheduler::index_footprint({var(b) * 2 + var(l)}, shape, vars);
  const Region c = scheduler::index_footprint({var(b) * 2 + var(l) + 1}, shape, vars);
  // Same base up to a constant: the union, still moving with the block.
  const Region h = scheduler::region_hull(a, c, shape, vars);
  EXPECT_EQ(h.dims[0].extent, 3);
  for (int64_t bv = 0; bv < 4; ++bv) EXPECT_EQ(scheduler::region_origin(h, {bv})[0], 2 * bv);
  // Hull is symmetric in extent.
  EXPECT_EQ(scheduler::region_hull(c, a, shape, vars).dims[0].extent, 3);
  // Bases that move differently: the range over all blocks.
  const Region d = scheduler::index_footprint({var(b) + var(l)}, shape, vars);
  const Region f = scheduler::region_hull(a, d, shape, vars);
  for (int64_t bv = 0; bv < 4; ++bv) {
    const int64_t o = scheduler::region_origin(f, {bv})[0];
    EXPECT_LE(o, bv);
    EXPECT_GE(o + f.dims[0].extent, 2 * bv + 2);
  }
  // A data-dependent side makes the hull whole.
  const Region w = scheduler::index_footprint({load(1, DType::kI64, {var(l)})}, shape, vars);
  EXPECT_TRUE(scheduler::region_hull(a, w, shape, vars).dims[0].whole_dim);
  EXPECT_TRUE(scheduler::region_hull(w, a, shape, vars).dims[0].whole_dim);
}

TEST(TilePropagationFootprint, InputFootprintHullsEveryLoad) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {10};
  x.kind = TensorKind::kInput;
  const TensorId xi = g.add_tensor(x);
  Tensor unused = x;
  unused.name = "unused";
  const TensorId ui = g.add_tensor(unused);
  Tensor y;
  y.name = "y";
  y.shape = {8};
  const TensorId yi = g.add_tensor(y);
  Op op;
  op.name = "window";
  op.inputs = {xi, ui};
  op.output = yi;
  // y[i] = x[i] + x[i + 2]
  op.body = load(0, DType::kF32, {var(0)}) + load(0, DType::kF32, {var(0) + 2});
  TileVars vars;
  const int b = vars.add("b", 2, true);
  const int l = vars.add("l", 4, false);
  const InputFootprint f = scheduler::input_footprint(g, op, 0, {var(b) * 4 + var(l)}, vars);
  EXPECT_TRUE(f.loaded);
  EXPECT_EQ(f.loads, 2);
  ASSERT_EQ(f.region.dims.size(), 1u);
  EXPECT_EQ(f.region.dims[0].extent, 6);
  EXPECT_EQ(scheduler::region_origin(f.region, {1})[0], 4);
  const InputFootprint none = scheduler::input_footprint(g, op, 1, {var(b) * 4 + var(l)}, vars);
  EXPECT_FALSE(none.loaded);
  EXPECT_EQ(none.loads, 0);
}

}  // namespace
}  // namespace tilegraph
