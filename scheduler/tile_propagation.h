// Tile propagation: which part of each input an op touches when it computes a
// tile of its output — the scheduler's single source of truth (DESIGN.md).
// Fusion decisions, the cost model's traffic and shared-memory estimates, and
// code generation all call these functions, so they never disagree.
//
// Tiles are symbolic in the block: an axis value is an Expr over TileVars,
// some of them "outer" (which block, which reduce chunk: unknown until run
// time) and the rest "inner" (the offset inside the tile: a known range). A
// footprint along one dimension is then [base + lo, base + lo + extent) with
// `base` an Expr over outer vars only and lo/extent constants, so its size
// is the same for every block and shared-memory buffers have static sizes.
//
// An index that is an affine-style sum of outer-only and inner-only terms
// (what transposes, slices, pads, strided windows and most reshapes give
// after simplification) separates exactly. Anything else — data-dependent
// indices (Gather), div/mod that mixes block and offset — falls back to the
// index's range over every block (base 0), or the whole dimension when that
// is unbounded; the region is then exact for no block but correct for all.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/interval.h"

namespace tilegraph::scheduler {

// The variables tile expressions range over.
struct TileVars {
  std::vector<std::string> names;
  std::vector<Interval> bounds;  // inclusive ranges
  std::vector<bool> outer;       // outer: block / chunk coordinates

  int add(const std::string& name, int64_t extent, bool is_outer);
};

struct RegionDim {
  Expr base;                 // over outer vars only (IntImm 0 when it does not move)
  int64_t lo = 0;            // the region is [base + lo, base + lo + extent)
  int64_t extent = 1;
  // The footprint fell back to the whole tensor dimension (an unbounded
  // index): readers must clamp their index into [0, dim) themselves.
  bool whole_dim = false;
};

struct Region {
  std::vector<RegionDim> dims;
  int64_t volume() const;    // product of extents (saturating)
};

// The region of a tensor of `shape` touched by the index expressions
// `indices` (one per dimension, over `vars`).
Region index_footprint(const std::vector<Expr>& indices, const Shape& shape, const TileVars& vars);

// Hull of two regions of the same tensor: per dimension the union when the
// bases differ by a constant, else the fallback over every block.
Region region_hull(const Region& a, const Region& b, const Shape& shape, const TileVars& vars);

// Footprint of op's input `slot` when its axes (spatial, then reduce) take
// `axis_values` — the hull over every Load of that slot in the body.
// Returns a region with no dims and volume 1 for rank-0 inputs; inputs the
// body never loads get an empty optional-like region (dims empty, and
// `loaded` false).
struct InputFootprint {
  bool loaded = false;
  Region region;
  int loads = 0;             // number of Load nodes of the slot in the body
};
InputFootprint input_footprint(const Graph& g, const Op& op, int slot,
                               const std::vector<Expr>& axis_values, const TileVars& vars);
// input_footprint of every slot (of those `wanted` marks, when not empty), in
// one walk of the body.
std::vector<InputFootprint> input_footprints(const Graph& g, const Op& op, const std::vector<Expr>& axis_values,
                                             const TileVars& vars, const std::vector<bool>& wanted = {});

// A fused group's tiles. The root (last op) computes a tile of `root_tile`
// elements per output dimension at block coordinates b_d (outer vars);
// every other op computes the hull of what its consumers in the group read;
// reduce axes run over their whole range.
struct OpTile {
  Region region;                   // of the op's output
  std::vector<int> local_vars;     // per output dim: inner var over [0, extent)
  std::vector<Expr> coords;        // per output dim: base + lo + local (the op's axis values)
  std::vector<int> reduce_vars;    // inner vars over each reduce axis
};
struct GroupTiling {
  TileVars vars;
  std::vector<int> block_vars;             // outer vars of the root's dims
  std::vector<int64_t> blocks_per_dim;     // ceil(dim / tile)
  std::vector<OpTile> ops;                 // parallel to the group's ops
  std::map<TensorId, Region> input_regions;  // tensors read from outside the group
  int64_t blocks() const;
};

// ops: the group in topological order, root last; each op may read outputs
// of earlier group ops (kept on chip) and any other tensor (from DRAM).
GroupTiling propagate_tiles(const Graph& g, const std::vector<const Op*>& ops,
                            const std::vector<int64_t>& root_tile);

// Evaluates a region at concrete outer-var values (tests, traffic estimates):
// per dimension [lo, lo + extent).
std::vector<int64_t> region_origin(const Region& r, const std::vector<int64_t>& outer_values);

}  // namespace tilegraph::scheduler
