#include "scheduler/winograd_conv.h"

#include <algorithm>
#include <vector>

#include "compiler/ir/simplify.h"
#include "compiler/ir/var_ranges.h"
#include "scheduler/direct_conv.h"

namespace tilegraph::scheduler {

namespace {

constexpr int kRank = 4;

// e with the op's vars at `point`, when it folds to a constant.
std::optional<int64_t> eval_at(const Expr& e, const std::vector<int64_t>& point) {
  std::vector<Expr> values;
  for (int64_t p : point) values.push_back(int_imm(p));
  int64_t v = 0;
  if (!is_const_int(simplify(substitute_vars(e, values), {}), &v)) return std::nullopt;
  return v;
}

// Positions along an axis of `extent` where a 3x3 window's padding shows:
// both ends, their neighbours and the middle.
std::vector<int64_t> probe_positions(int64_t extent) {
  std::vector<int64_t> p{0, 1, extent / 2, extent - 2, extent - 1};
  std::vector<int64_t> in_range;
  for (int64_t x : p)
    if (x >= 0 && x < extent) in_range.push_back(x);
  return in_range;
}

// Over the source's channels, the window reads its X[n, ci - begin,
// oh + kh - 1, ow + kw - 1] where that is inside the plane, and its guard
// (if any) is exactly that test.
bool is_same_3x3_window(const Expr& window, const Expr& load, const WinogradConv& c, const WinogradSource& src) {
  const Expr guard = window->kind == ExprKind::kSelect ? window->args[0] : nullptr;
  for (int64_t n : {int64_t{0}, c.batch - 1})
    for (int64_t m : {int64_t{0}, c.filters - 1})
      for (int64_t ci : {src.begin, src.end - 1})
        for (int64_t oh : probe_positions(c.height))
          for (int64_t ow : probe_positions(c.width))
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw) {
                const std::vector<int64_t> point{n, m, oh, ow, ci, kh, kw};
                const int64_t y = oh + kh - 1, x = ow + kw - 1;
                const bool inside = y >= 0 && y < c.height && x >= 0 && x < c.width;
                if (guard) {
                  const auto g = eval_at(guard, point);
                  if (!g || (*g != 0) != inside) return false;
                } else if (!inside) {
                  return false;  // no padding select: not a pad-1 window
                }
                if (!inside) continue;
                const int64_t want[kRank] = {n, ci - src.begin, y, x};
                for (int a = 0; a < kRank; ++a) {
                  const auto v = eval_at(load->args[static_cast<size_t>(a)], point);
                  if (!v || *v != want[a]) return false;
                }
              }
  return true;
}

// The sources of window X' (one per channel range: a Concat inlined along
// the channels has several), if each is a same-padded 3x3 window of an
// [N, range, H, W] input.
std::optional<std::vector<WinogradSource>> window_sources(const Graph& g, const Op& op, const Expr& window,
                                                          const WinogradConv& c) {
  std::vector<WinogradSource> sources;
  for (const VarRange& r : split_var_ranges(window, kRank, c.channels)) {
    const Expr load = conv_window_load(r.value);
    if (!load) return std::nullopt;
    WinogradSource src{static_cast<int>(load->int_value), r.begin, r.end};
    const Shape& in = g.tensor(op.inputs.at(static_cast<size_t>(src.input_slot))).shape;
    if (in != Shape{c.batch, src.end - src.begin, c.height, c.width}) return std::nullopt;
    if (!is_same_3x3_window(r.value, load, c, src)) return std::nullopt;
    sources.push_back(src);
  }
  return sources;
}

}  // namespace

std::optional<WinogradConv> match_winograd_conv(const Graph& g, const Op& op, int64_t filter_multiple) {
  const Shape& out = g.tensor(op.output).shape;
  if (op.reduction != Reduction::kSum || g.tensor(op.output).dtype != DType::kF32 || out.size() != kRank ||
      op.reduce_extents.size() != 3 || op.reduce_extents[1] != 3 || op.reduce_extents[2] != 3 ||
      op.body->kind != ExprKind::kBinary || op.body->binary_op != BinaryOp::kMul)
    return std::nullopt;
  WinogradConv c;
  c.batch = out[0];
  c.filters = out[1];
  c.height = out[2];
  c.width = out[3];
  c.channels = op.reduce_extents[0];
  if (c.channels < kMinWinogradChannels || c.channels > kMaxWinogradChannels || c.filters < kMinWinogradChannels ||
      c.filters % filter_multiple != 0 || c.height < 2 || c.width < 2)
    return std::nullopt;
  for (int x = 0; x < 2; ++x) {
    const Expr& window = op.body->args[static_cast<size_t>(x)];
    const Expr& weight = op.body->args[static_cast<size_t>(1 - x)];
    if (!is_conv_weight(g, op, weight)) continue;
    auto sources = window_sources(g, op, window, c);
    if (!sources) continue;
    c.sources = std::move(*sources);
    c.weight = weight;
    return c;
  }
  return std::nullopt;
}

double winograd_flops(const ArchSpec& arch) {
  if (arch.ukernel_fp32_flops > 0) return arch.ukernel_fp32_flops;
  return arch.half_width_fma ? arch.peak_fp32_flops / 2 : arch.peak_fp32_flops;
}

bool winograd_conv_pays(const WinogradConv& c, const WinogradTarget& t) {
  const int64_t filters = kWinogradPositions * c.channels * c.filters;
  if (filters < kStreamedWinogradFilters || c.tiles() >= kMinStreamedWinogradTiles) return true;
  if (t.flops <= 0 || t.dram_bytes_per_s <= 0) return false;
  // Arithmetic over the batch; the filters read once (9 or 16 floats per
  // pair of input and output channels).
  const double pairs = double(c.channels) * double(c.filters), images = double(c.batch);
  const double pixels = double(c.height) * double(c.width), tiles = double(c.tiles());
  const double direct = std::max(2 * 9 * images * pairs * pixels / t.flops, 9 * 4 * pairs / t.dram_bytes_per_s);
  const double winograd = std::max(2 * kWinogradPositions * images * pairs * tiles / t.flops,
                                   4 * double(filters) / t.dram_bytes_per_s);
  return winograd < direct;
}

}  // namespace tilegraph::scheduler
