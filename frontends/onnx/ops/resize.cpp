// Resize (opsets 10–19) and the deprecated Upsample (7–9): nearest, linear and
// cubic interpolation with every coordinate_transformation_mode.
//
// Output sizes are static, so scales / sizes (and roi) must be constants.
// Each resized axis becomes a handful of taps — (input index, weight) pairs
// computed from the output index by float expressions (Cast, Floor, Min/Max,
// Select) — and the op is one gather:
//   out[v..] = Σ over the taps' cartesian product of Π weights · X[indices..]
// (nearest: one tap with weight 1, a pure index map; linear: 2 taps per axis;
// cubic: 4; antialiased downsampling: a filter widened by 1/scale). Axes the
// resize leaves alone read X at the output index; a resize needing more than
// kMaxTapsPerOp taps per output becomes a chain of ops over subsets of the
// axes. The arithmetic follows onnxruntime (float32 coordinates in the same
// operation order), since its results are what tilegraph's outputs are
// checked against.
#include <cmath>
#include <limits>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"

namespace tilegraph::onnx_frontend {

namespace {

enum class Mode { kNearest, kLinear, kCubic };

// How a fractional source coordinate becomes a nearest-neighbor index.
// kSimple is Upsample's and Resize-10's rule (onnxruntime): floor when
// upsampling, ceil when downsampling.
enum class NearestRound { kPreferFloor, kPreferCeil, kFloor, kCeil, kSimple };

struct ResizeSpec {
  Mode mode = Mode::kNearest;
  std::string coord_mode = "asymmetric";
  NearestRound nearest = NearestRound::kSimple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // linear / cubic: widen the filter by 1/scale when downsampling
  double extrapolation_value = 0.0;
  Shape out;
  std::vector<float> scales;  // per axis, as the coordinate transform uses it
  std::vector<double> roi;    // tf_crop_and_resize: starts then ends, per axis
};

// One interpolation tap along an axis: X's index there and its weight
// (nullptr: weight 1).
struct Tap {
  Expr index;
  Expr weight;
};

Mode parse_mode(const LoweringContext& ctx, bool allow_cubic) {
  const std::string m = ctx.attr_string("mode", "nearest");
  if (m == "nearest") return Mode::kNearest;
  if (m == "linear" || m == "bilinear") return Mode::kLinear;
  if (m == "cubic" && allow_cubic) return Mode::kCubic;
  ctx.fail(str_cat("mode '", m, "' must be nearest, linear", allow_cubic ? " or cubic" : ""));
}

NearestRound parse_nearest_mode(const LoweringContext& ctx) {
  const std::string m = ctx.attr_string("nearest_mode", "round_prefer_floor");
  if (m == "round_prefer_floor") return NearestRound::kPreferFloor;
  if (m == "round_prefer_ceil") return NearestRound::kPreferCeil;
  if (m == "floor") return NearestRound::kFloor;
  if (m == "ceil") return NearestRound::kCeil;
  ctx.fail(str_cat("nearest_mode '", m, "' must be round_prefer_floor, round_prefer_ceil, floor or ceil"));
}

void check_coord_mode(const LoweringContext& ctx, const std::string& m) {
  static const char* const kModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                       "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                       "tf_crop_and_resize"};
  for (const char* k : kModes)
    if (m == k) {
      if (m == "half_pixel_symmetric" && ctx.opset() < 19) break;
      return;
    }
  ctx.fail(str_cat("coordinate_transformation_mode '", m, "' is not a mode of opset ", ctx.opset()));
}

// An optional input with no elements (the Constant [] idiom) counts as absent.
bool has_values(const LoweringContext& ctx, int i) {
  return ctx.has_input(i) && num_elements(ctx.shape(i)) > 0;
}

// Fills spec.out and spec.scales from scales or sizes given for `axes`.
void derive_output_shape(const LoweringContext& ctx, ResizeSpec& spec, const Shape& in,
                         const std::vector<int>& axes, const std::vector<double>* scales,
                         const std::vector<int64_t>* sizes, const std::string& policy) {
  const size_t rank = in.size();
  spec.out = in;
  spec.scales.assign(rank, 1.0f);
  const size_t count = scales ? scales->size() : sizes->size();
  if (count != axes.size())
    ctx.fail(str_cat(scales ? "scales" : "sizes", " has ", count, " values, expected ", axes.size(),
                     axes.size() == rank ? " (the input's rank)" : " (one per axis in axes)"));
  if (scales) {
    for (size_t i = 0; i < axes.size(); ++i) {
      const int a = axes[i];
      const double s = (*scales)[i];
      if (!(s > 0)) ctx.fail(str_cat("scales must be positive, got ", s, " for axis ", a));
      spec.scales[a] = static_cast<float>(s);
      // onnxruntime multiplies in float: floor(scale * in).
      spec.out[a] = static_cast<int64_t>(std::floor(spec.scales[a] * static_cast<float>(in[a])));
    }
  } else {
    for (size_t i = 0; i < axes.size(); ++i) {
      if ((*sizes)[i] <= 0) ctx.fail(str_cat("sizes must be positive, got ", (*sizes)[i]));
      const int a = axes[i];
      spec.out[a] = (*sizes)[i];
      spec.scales[a] = static_cast<float>(spec.out[a]) / static_cast<float>(in[a]);
    }
    if (policy != "stretch") {
      // One scale for all listed axes: the largest that fits (not_larger) or
      // the smallest that covers (not_smaller) the requested sizes.
      float s = policy == "not_larger" ? std::numeric_limits<float>::max() : 0.0f;
      for (int a : axes) s = policy == "not_larger" ? std::min(s, spec.scales[a]) : std::max(s, spec.scales[a]);
      for (int a : axes) {
        spec.scales[a] = s;
        spec.out[a] = static_cast<int64_t>(std::round(s * static_cast<float>(in[a])));
      }
    }
  }
  for (size_t a = 0; a < rank; ++a)
    if (spec.out[a] < 1)
      ctx.fail(str_cat("the output would be empty along axis ", a, " (input ", shape_to_string(in),
                       ", output ", shape_to_string(spec.out), ")"));
}

ResizeSpec parse_upsample(const LoweringContext& ctx) {
  ResizeSpec spec;
  spec.mode = parse_mode(ctx, false);
  const Shape in = ctx.shape(0);
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float s : ctx.attr_floats("scales")) scales.push_back(s);
    if (scales.empty()) ctx.fail("scales attribute is required");
  } else {
    scales = ctx.const_floats(1, "scales");
  }
  std::vector<int> axes;
  for (size_t a = 0; a < in.size(); ++a) axes.push_back(static_cast<int>(a));
  derive_output_shape(ctx, spec, in, axes, &scales, nullptr, "stretch");
  return spec;
}

ResizeSpec parse_resize(const LoweringContext& ctx) {
  ResizeSpec spec;
  const Shape in = ctx.shape(0);
  const int rank = static_cast<int>(in.size());
  if (ctx.opset() < 11) {  // Resize-10: (X, scales), Upsample's semantics
    spec.mode = parse_mode(ctx, false);
    std::vector<double> scales = ctx.const_floats(1, "scales");
    std::vector<int> axes;
    for (int a = 0; a < rank; ++a) axes.push_back(a);
    derive_output_shape(ctx, spec, in, axes, &scales, nullptr, "stretch");
    return spec;
  }
  spec.mode = parse_mode(ctx, true);
  spec.coord_mode = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  check_coord_mode(ctx, spec.coord_mode);
  spec.nearest = parse_nearest_mode(ctx);
  spec.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  spec.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  spec.extrapolation_value = ctx.attr_float("extrapolation_value", 0.0f);

  std::vector<int> axes;
  for (int64_t a : ctx.attr_ints("axes")) axes.push_back(normalize_axis(ctx, a, rank));
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (axes[i] == axes[j]) ctx.fail(str_cat("axes lists axis ", axes[i], " twice"));
  if (axes.empty())
    for (int a = 0; a < rank; ++a) axes.push_back(a);

  const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail(str_cat("keep_aspect_ratio_policy '", policy, "' must be stretch, not_larger or not_smaller"));

  const bool with_scales = has_values(ctx, 2), with_sizes = has_values(ctx, 3);
  if (with_scales == with_sizes)
    ctx.fail(with_scales ? "give scales or sizes, not both" : "one of scales and sizes is required");
  if (with_scales) {
    const std::vector<double> scales = ctx.const_floats(2, "scales");
    derive_output_shape(ctx, spec, in, axes, &scales, nullptr, "stretch");
  } else {
    const std::vector<int64_t> sizes = ctx.const_ints(3, "sizes");
    derive_output_shape(ctx, spec, in, axes, nullptr, &sizes, policy);
  }

  if (spec.coord_mode == "tf_crop_and_resize") {
    // roi holds [starts..., ends...] for the listed axes, normalized to [0, 1].
    spec.roi.assign(2 * rank, 0.0);
    for (int a = 0; a < rank; ++a) spec.roi[rank + a] = 1.0;
    if (!has_values(ctx, 1)) ctx.fail("tf_crop_and_resize needs the roi input");
    const std::vector<double> roi = ctx.const_floats(1, "roi");
    if (roi.size() != 2 * axes.size())
      ctx.fail(str_cat("roi has ", roi.size(), " values, expected ", 2 * axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      spec.roi[axes[i]] = roi[i];
      spec.roi[rank + axes[i]] = roi[axes.size() + i];
    }
  }

  spec.antialias = ctx.attr_int("antialias", 0) != 0;  // ignored by nearest, as onnxruntime does
  return spec;
}

Expr f32(double v) { return float_imm(v, DType::kF32); }

// The source coordinate (float32) that output index `x` maps to along axis a.
Expr source_coordinate(const ResizeSpec& spec, int a, int64_t in, const Expr& x) {
  const int64_t out = spec.out[a];
  const Expr xf = cast(DType::kF32, x);
  const Expr scale = f32(spec.scales[a]);
  const std::string& m = spec.coord_mode;
  if (m == "asymmetric") return xf / scale;
  if (m == "half_pixel") return (xf + f32(0.5)) / scale - f32(0.5);
  if (m == "tf_half_pixel_for_nn") return (xf + f32(0.5)) / scale;
  if (m == "pytorch_half_pixel") return out > 1 ? (xf + f32(0.5)) / scale - f32(0.5) : f32(0);
  if (m == "align_corners")
    return out > 1 ? xf * f32(static_cast<double>(in - 1)) / f32(static_cast<double>(out - 1)) : f32(0);
  if (m == "half_pixel_symmetric") {
    // Centers the sampled region when out was rounded down from in * scale.
    const float adjustment = static_cast<float>(out) / (spec.scales[a] * static_cast<float>(in));
    const float offset = static_cast<float>(in) / 2.0f * (1.0f - adjustment);
    return f32(offset) + (xf + f32(0.5)) / scale - f32(0.5);
  }
  // tf_crop_and_resize: the output spans roi [start, end] of the input.
  const int rank = static_cast<int>(spec.out.size());
  const float start = static_cast<float>(spec.roi[a]), end = static_cast<float>(spec.roi[rank + a]);
  const float span = static_cast<float>(in - 1);
  if (out == 1) return f32(0.5f * (start + end) * span);
  return f32(start * span) + xf * f32(end - start) * f32(span) / f32(static_cast<double>(out - 1));
}

// Does the resize leave axis a alone? Any axis with scale 1 and unchanged
// length is copied (onnxruntime and the ONNX reference skip it in every
// coordinate mode), except a tf_crop_and_resize axis with a non-trivial roi.
bool is_identity_axis(const ResizeSpec& spec, int a, int64_t in) {
  if (spec.out[a] != in || spec.scales[a] != 1.0f) return false;
  if (spec.coord_mode == "tf_crop_and_resize") {
    const int rank = static_cast<int>(spec.out.size());
    return spec.roi[a] == 0.0 && spec.roi[rank + a] == 1.0;
  }
  return true;
}

Expr clamp_index(const Expr& i, int64_t in) { return min(max(i, int_imm(0)), int_imm(in - 1)); }

Expr to_index(const Expr& integral_float) { return cast(DType::kI64, integral_float); }

std::vector<Tap> nearest_taps(const ResizeSpec& spec, int a, int64_t in, const Expr& x) {
  Expr rounded;
  switch (spec.nearest) {
    // Ties (exact .5) go down / up; ceil(x - 0.5) and floor(x + 0.5) are exact there.
    case NearestRound::kPreferFloor: rounded = unary(UnaryOp::kCeil, x - f32(0.5)); break;
    case NearestRound::kPreferCeil: rounded = unary(UnaryOp::kFloor, x + f32(0.5)); break;
    case NearestRound::kFloor: rounded = unary(UnaryOp::kFloor, x); break;
    case NearestRound::kCeil: rounded = unary(UnaryOp::kCeil, x); break;
    case NearestRound::kSimple:
      rounded = unary(spec.scales[a] < 1.0f ? UnaryOp::kCeil : UnaryOp::kFloor, x);
      break;
  }
  return {{clamp_index(to_index(rounded), in), nullptr}};
}

// Linear: the coordinate clamped into [0, in-1], its floor and the next index.
std::vector<Tap> linear_taps(int64_t in, const Expr& x) {
  if (in == 1) return {{int_imm(0), nullptr}};
  const Expr xc = min(max(x, f32(0)), f32(static_cast<double>(in - 1)));
  const Expr lo = to_index(xc);  // xc >= 0, so truncation is floor
  const Expr hi = min(lo + 1, int_imm(in - 1));
  const Expr frac = xc - cast(DType::kF32, lo);
  return {{lo, f32(1) - frac}, {hi, frac}};
}

// Cubic convolution (Keys, coefficient A) over floor(x)-1 .. floor(x)+2, reads
// beyond the edge repeat the edge, or with exclude_outside get weight 0 and
// the rest is renormalized.
std::vector<Tap> cubic_taps(const ResizeSpec& spec, int64_t in, const Expr& x) {
  const Expr fl = unary(UnaryOp::kFloor, x);
  const Expr base = to_index(fl);
  const Expr r = x - fl;
  const Expr A = f32(spec.cubic_a);
  const Expr one = f32(1);
  // Weight of a tap at distance t in [1, 2) and in [0, 1).
  auto far = [&](const Expr& t) { return ((A * t - f32(5) * A) * t + f32(8) * A) * t - f32(4) * A; };
  auto near = [&](const Expr& t) { return ((A + f32(2)) * t - (A + f32(3))) * t * t + one; };
  std::vector<Expr> w{far(r + one), near(r), near(one - r), far(f32(2) - r)};
  std::vector<Expr> idx;
  for (int j = 0; j < 4; ++j) idx.push_back(base + (j - 1));
  if (spec.exclude_outside) {
    Expr sum;
    for (int j = 0; j < 4; ++j) {
      w[j] = select(in_range(idx[j], 0, in), w[j], f32(0));
      sum = sum ? sum + w[j] : w[j];
    }
    for (int j = 0; j < 4; ++j) w[j] = w[j] / sum;
  }
  std::vector<Tap> taps;
  for (int j = 0; j < 4; ++j) taps.push_back({clamp_index(idx[j], in), w[j]});
  return taps;
}

// Antialiased linear / cubic when downsampling (scale s < 1): the filter is
// stretched by 1/s and normalized, as in the ONNX reference and onnxruntime.
// With base = ceil(x) - 1 and r = x - base in (0, 1], tap i in [first, 1 - first]
// reads base + i with weight kernel(|i - r| * s); first = floor(-support/s) + 1.
std::vector<Tap> antialias_taps(const ResizeSpec& spec, int a, int64_t in, const Expr& x) {
  const double s = spec.scales[a];
  const bool cubic = spec.mode == Mode::kCubic;
  const int64_t first = static_cast<int64_t>(std::floor(-(cubic ? 2.0 : 1.0) / s)) + 1;
  const Expr base = to_index(unary(UnaryOp::kCeil, x) - f32(1));
  const Expr r = x - cast(DType::kF32, base);
  const Expr A = f32(spec.cubic_a);
  auto kernel = [&](const Expr& t) -> Expr {  // t >= 0
    if (!cubic) return max(f32(0), f32(1) - t);
    const Expr t2 = t * t, t3 = t2 * t;
    const Expr inner = (A + f32(2)) * t3 - (A + f32(3)) * t2 + f32(1);
    const Expr outer = A * t3 - f32(5) * A * t2 + f32(8) * A * t - f32(4) * A;
    return select(binary(BinaryOp::kLe, t, f32(1)), inner, select(lt(t, f32(2)), outer, f32(0)));
  };
  std::vector<Expr> w, idx;
  Expr sum;
  for (int64_t i = first; i <= 1 - first; ++i) {
    w.push_back(kernel(unary(UnaryOp::kAbs, (f32(static_cast<double>(i)) - r) * f32(s))));
    idx.push_back(base + i);
    sum = sum ? sum + w.back() : w.back();
  }
  for (Expr& wi : w) wi = wi / sum;
  if (spec.exclude_outside) {
    Expr kept;
    for (size_t j = 0; j < w.size(); ++j) {
      w[j] = select(in_range(idx[j], 0, in), w[j], f32(0));
      kept = kept ? kept + w[j] : w[j];
    }
    for (Expr& wi : w) wi = wi / kept;
  }
  std::vector<Tap> taps;
  for (size_t j = 0; j < w.size(); ++j) taps.push_back({clamp_index(idx[j], in), w[j]});
  return taps;
}

// The most taps one op combines (Π over its axes). Resizes needing more (wide
// antialias filters on several axes) run as a chain of ops over subsets of the
// axes; interpolation is separable, so the result is the same.
constexpr size_t kMaxTapsPerOp = 64;

// Builds the gather(s) for a parsed spec.
TensorId emit_resize(LoweringContext& ctx, const ResizeSpec& spec) {
  const Shape in = ctx.shape(0);
  const DType t = ctx.dtype(0);
  const int rank = static_cast<int>(in.size());
  if (spec.mode != Mode::kNearest && t == DType::kBool) ctx.fail("linear and cubic resize of a bool tensor");
  // Interpolation arithmetic: float32 (double for double tensors).
  const DType ct = t == DType::kF64 ? DType::kF64 : DType::kF32;

  std::vector<std::vector<Tap>> taps(rank);  // empty: the axis is not resized
  std::vector<Expr> outside(rank);           // tf_crop_and_resize: beyond the input
  std::vector<int> resized;
  for (int a = 0; a < rank; ++a) {
    if (is_identity_axis(spec, a, in[a])) continue;
    resized.push_back(a);
    const Expr x = source_coordinate(spec, a, in[a], var(a));
    if (spec.coord_mode == "tf_crop_and_resize")
      outside[a] = binary(BinaryOp::kOr, lt(x, f32(0)),
                          binary(BinaryOp::kGt, x, f32(static_cast<double>(in[a] - 1))));
    if (spec.mode == Mode::kNearest) taps[a] = nearest_taps(spec, a, in[a], x);
    else if (spec.antialias && spec.scales[a] < 1.0f) taps[a] = antialias_taps(spec, a, in[a], x);
    else if (spec.mode == Mode::kLinear) taps[a] = linear_taps(in[a], x);
    else taps[a] = cubic_taps(spec, in[a], x);
  }
  if (resized.empty()) return ctx.input(0);

  std::vector<std::vector<int>> groups{{}};
  size_t product = 1;
  for (int a : resized) {
    if (!groups.back().empty() && product * taps[a].size() > kMaxTapsPerOp) {
      groups.push_back({});
      product = 1;
    }
    groups.back().push_back(a);
    product *= taps[a].size();
  }

  TensorId current = ctx.input(0);
  Shape shape = in;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const std::vector<int>& group = groups[gi];
    const bool last = gi + 1 == groups.size();
    const DType in_t = ctx.graph().tensor(current).dtype;
    for (int a : group) shape[a] = spec.out[a];
    // Σ over the cartesian product of the group's taps of Π weights · X[indices].
    Expr body;
    std::vector<size_t> pick(group.size(), 0);
    while (true) {
      std::vector<Expr> idx = axis_vars(rank);
      Expr weight;
      for (size_t k = 0; k < group.size(); ++k) {
        const Tap& tap = taps[group[k]][pick[k]];
        idx[group[k]] = tap.index;
        if (tap.weight) weight = weight ? weight * tap.weight : tap.weight;
      }
      Expr value = load(0, in_t, idx);
      if (weight) value = cast(ct, value) * cast(ct, weight);
      body = body ? body + value : value;
      size_t k = group.size();
      while (k > 0 && ++pick[k - 1] == taps[group[k - 1]].size()) pick[--k] = 0;
      if (k == 0) break;
    }
    // Intermediate results of a chain stay in the arithmetic type.
    const DType out_t = last || body->dtype == in_t ? t : ct;
    if (body->dtype != out_t && !is_float(out_t) && dtype_size(out_t) < 8) {
      // Integer tensors: saturate, then truncate (Cast) as onnxruntime does.
      body = min(max(body, cast(ct, reduction_init(Reduction::kMax, out_t))),
                 cast(ct, reduction_init(Reduction::kMin, out_t)));
    }
    body = cast(out_t, body);
    for (int a : group)
      if (outside[a]) body = select(outside[a], scalar(spec.extrapolation_value, out_t), body);
    current = ctx.emit("resize", shape, out_t, {current}, body);
  }
  return current;
}

std::vector<TensorId> lower_resize(LoweringContext& ctx) { return {emit_resize(ctx, parse_resize(ctx))}; }

std::vector<TensorId> lower_upsample(LoweringContext& ctx) { return {emit_resize(ctx, parse_upsample(ctx))}; }

}  // namespace

void add_resize_ops(OpTable& t) {
  // Resize-10 and Upsample share nearest (floor/ceil) and asymmetric
  // coordinates; Resize-11+ reads its modes from attributes (parse_resize).
  t.push_back({"Resize", 10, lower_resize});
  t.push_back({"Upsample", 7, lower_upsample});
}

}  // namespace tilegraph::onnx_frontend
