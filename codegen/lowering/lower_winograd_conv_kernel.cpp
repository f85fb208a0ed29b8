#include "codegen/lowering/lower_winograd_conv_kernel.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/lowering/gemm_coords.h"
#include "codegen/lowering/kernel_builder.h"
#include "compiler/ir/evaluate.h"
#include "compiler/ir/int_math.h"
#include "scheduler/winograd_conv.h"

namespace tilegraph::codegen {

namespace {

using scheduler::kWinogradPositions;

// F(2x2, 3x3)'s filter transform G (4 x 3).
constexpr float kG[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};

// The scheduler chose the kernel (filter counts included); a last row panel
// of fewer filters than the variant's takes any count.
scheduler::WinogradConv winograd_conv_of(const Graph& g, const Op& conv) {
  const auto c = scheduler::match_winograd_conv(g, conv, 1);
  TG_CHECK(c.has_value(), "kernel ", conv.name, " is not a Winograd convolution");
  return *c;
}

// The filters of a row panel: the wide panels' 12 (tg_sgemm::wide) where
// the variant has them, for 64 filters and more: each V_t panel is then read
// once per 12 filters instead of 8. A last panel may hold fewer (64 = 5 x
// 12 + 4). On ResNet-50's Winograd convs, one core, about 2% alone, 11.5%
// with several column panels per task (below). A variant without wide
// panels (float_gemm_variant_for) keeps mr.
constexpr int64_t kWinogradWideMinFilters = 64;
int64_t winograd_panel_rows(const scheduler::WinogradConv& c, const FloatGemmVariant& variant) {
  if (variant.wide_mr > 0 && c.filters >= kWinogradWideMinFilters) return variant.wide_mr;
  return variant.mr;
}

}  // namespace

TensorId prepack_winograd_filters(Graph& g, const scheduler::KernelSchedule& ks, const FloatGemmVariant& variant) {
  const Op conv = gemm_kernel_phases(g, ks, "a Winograd conv kernel").front();
  const scheduler::WinogradConv c = winograd_conv_of(g, conv);
  // The filters W'(m, ch, i, j) as the graph computes them (a BatchNorm
  // folded in, ...): evaluated once per tap, then transformed here. As one
  // op evaluating the 16 positions' 9-tap sums, UNet's 17 Winograd convs
  // (31 M weights) took 340 s to compile, ResNet-50's 13 about 80.
  Op taps;
  taps.name = conv.name + "_winograd_w";
  taps.inputs = conv.inputs;
  taps.body = substitute_vars(c.weight, {int_imm(0), var(0), int_imm(0), int_imm(0), var(1), var(2), var(3)});
  Tensor taps_tensor;
  taps_tensor.name = g.unique_op_name(taps.name);
  taps_tensor.shape = {c.filters, c.channels, 3, 3};
  taps_tensor.kind = TensorKind::kConstant;  // as the packed U below; no kernel reads it
  taps.output = g.add_tensor(taps_tensor);
  drop_unused_inputs(taps);
  g.tensor(taps.output).data = evaluate_op(g, taps);
  const float* w = reinterpret_cast<const float*>(g.tensor(taps.output).data->data());
  // u[((p * 16 + t) * C + ch) * P + r] = sum over the 3 x 3 taps (i, j) of
  // G[t / 4][i] * G[t % 4][j] * W'(p * P + r, ch, i, j), P the panel's rows
  // (winograd_panel_rows); 0 past the last filter.
  const int64_t mr = winograd_panel_rows(c, variant);
  const int64_t panels = ceil_div(c.filters, mr);
  std::vector<float> u(static_cast<size_t>(panels * mr * kWinogradPositions * c.channels), 0.0f);
  for (int64_t m = 0; m < c.filters; ++m)
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      const float* tap = w + (m * c.channels + ch) * 9;
      for (int64_t t = 0; t < kWinogradPositions; ++t) {
        double sum = 0;
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) sum += double(kG[t / 4][i]) * kG[t % 4][j] * tap[i * 3 + j];
        u[static_cast<size_t>((((m / mr) * kWinogradPositions + t) * c.channels + ch) * mr + m % mr)] =
            static_cast<float>(sum);
      }
    }
  Tensor packed;
  packed.name = g.unique_op_name(conv.name + "_winograd_u");
  packed.shape = {static_cast<int64_t>(u.size())};
  packed.kind = TensorKind::kConstant;
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(u.data());
  packed.data = std::make_shared<const std::vector<uint8_t>>(bytes, bytes + u.size() * sizeof(float));
  return g.add_tensor(packed);
}

namespace {

class WinogradConvLowering : KernelBuilder {
 public:
  WinogradConvLowering(const Graph& g, const scheduler::KernelSchedule& ks, const FloatGemmVariant& variant,
                       TensorId u, const scheduler::ArchSpec& arch)
      : KernelBuilder(g), phases_(gemm_kernel_phases(g, ks, "a Winograd conv kernel")), variant_(variant),
        conv_(winograd_conv_of(g, phases_.front())) {
    TG_CHECK(u >= 0, "Winograd conv kernel ", phases_.front().name, " lowered without its packed filters");
    epilogue_buffers_ = begin_gemm_kernel(phases_, ks, "winograd_f23");
    u_ = add_global(u, false);
    output_ = add_global(phases_.back().output, true);
    shape_ = g.tensor(phases_.front().output).shape;
    mr_ = winograd_panel_rows(conv_, variant_);
    row_panels_ = ceil_div(conv_.filters, mr_);
    cols_ = conv_.panel_tiles(variant_.nr);
    col_panels_ = ceil_div(conv_.tiles(), cols_);
    // U, 16 x C x filters floats, read whole by each task. Where it
    // overflows half the L2 a task takes several column panels (their V in
    // the other half), so that each row panel's U comes from the L3 once and
    // then from the L2: ResNet-50's layer-3 convs (4 MiB of U, 2 panels of
    // 512 KiB of V) streamed all of U from the L3 per panel, and their GEMMs
    // ran at half the micro-kernel's rate.
    const int64_t half_l2 = std::max<int64_t>(arch.l2_bytes, 1 << 18) / 2;
    const int64_t u_bytes = kWinogradPositions * conv_.channels * row_panels_ * mr_ * 4;
    const int64_t v_bytes = panel_v_floats() * 4;
    panels_per_task_ = u_bytes > half_l2 ? std::clamp<int64_t>(half_l2 / v_bytes, 1, col_panels_) : 1;
    task_panels_ = ceil_div(col_panels_, panels_per_task_);
    // Row panels split into as few groups as give a task per core: each
    // group's task transforms its inputs again. A last group may be short:
    // in a divisor of the panels, MobileViT's 128-filter convs at 16 x 16
    // (one column task, 11 panels of 12) ran 11 groups that each transformed
    // all of the input, 1.7x the time of 2 groups (6 + 5 panels).
    const int64_t tasks = conv_.batch * task_panels_;
    const int64_t wanted = std::clamp<int64_t>(ceil_div(std::max(arch.cores, 1), tasks), 1, row_panels_);
    per_group_ = ceil_div(row_panels_, wanted);
    groups_ = ceil_div(row_panels_, per_group_);
  }

  Kernel build() {
    const int64_t mr = mr_, nr = variant_.nr, c = conv_.channels, h = conv_.height, w = conv_.width;
    const bool half = cols_ < nr;
    const int vn = new_var("n", conv_.batch), vg = new_var("g", groups_), vq = new_var("q", task_panels_);
    // One scratch buffer (a task has one arena) for the 16 transformed input
    // planes (v) of each of the task's column panels and, after them, the 16
    // accumulator tiles (m).
    const int64_t panel_v = panel_v_floats(), m_at = panels_per_task_ * panel_v;
    const int v = add_local("v", DType::kF32, m_at + kWinogradPositions * mr * nr, 64);
    kernel_.buffers[static_cast<size_t>(v)].scratch = true;
    const int y = add_local("y", DType::kF32, 4 * mr * nr, 64);
    const int vp = new_var("pp", per_group_);
    const Expr p = var(vg) * per_group_ + var(vp);
    // The task's column panels: panel q = vq * panels_per_task_ + the loop's var. A
    // last task may have fewer.
    auto task_panels = [&](const char* name, const std::function<std::vector<Stmt>(const Expr&, const Expr&)>& body) {
      const int vs = new_var(name, panels_per_task_);
      const Expr q = var(vq) * panels_per_task_ + var(vs);
      std::vector<Stmt> inner = body(q, var(vs) * panel_v);
      if (col_panels_ % panels_per_task_ != 0) inner = {make_if(lt(q, int_imm(col_panels_)), std::move(inner))};
      return make_for(vs, int_imm(panels_per_task_), LoopKind::kSerial, std::move(inner));
    };
    // A task: the transformed planes of each source's channels (several
    // for a Concat along them) into their rows of v, then the row panels.
    std::vector<Stmt> task_body;
    task_body.push_back(task_panels("qv", [&](const Expr& q, const Expr& at) {
      std::vector<Stmt> transforms;
      for (const scheduler::WinogradSource& src : conv_.sources) {
        const int64_t channels = src.end - src.begin;
        transforms.push_back(make_call(str_cat("tg_winograd::input_tiles<", channels, ", ", h, ", ", w, ", ",
                                               half ? "true" : "false", ", ", c, ">"),
                                       {{src.input_slot, var(vn) * (channels * h * w)},
                                        {v, at + int_imm(src.begin * nr)},
                                        {-1, q * cols_}}));
      }
      return transforms;
    }));
    // Row panel p over the column panel whose V is at v_at (`rows` filters).
    auto row_panel = [&](int64_t rows, const Expr& v_at) {
      return make_call(str_cat("tg_winograd::row_panel<", c, ", ", half ? "true" : "false", ", ", mr, ", ", rows, ">"),
                       {{u_, p * (kWinogradPositions * c * mr)}, {v, v_at}, {v, int_imm(m_at)}, {y, int_imm(0)}});
    };
    // The last panel's filters, when they do not fill it.
    const int64_t tail = conv_.filters - (row_panels_ - 1) * mr;
    Stmt panels = task_panels("qs", [&](const Expr& q, const Expr& at) {
      const Stmt gemms = tail == mr ? row_panel(mr, at)
                                    : make_seq({make_if(lt(p, int_imm(row_panels_ - 1)), {row_panel(mr, at)}),
                                                make_if(lt(int_imm(row_panels_ - 2), p), {row_panel(tail, at)})});
      return std::vector<Stmt>{gemms, store_outputs(vn, q, p, y)};
    });
    // The short last group's panels past the last.
    if (row_panels_ % per_group_ != 0) panels = make_if(lt(p, int_imm(row_panels_)), {std::move(panels)});
    const Stmt panel = make_for(vp, int_imm(per_group_), LoopKind::kSerial, {std::move(panels)});
    task_body.push_back(panel);
    const Stmt task = make_allocate(v, {make_allocate(y, std::move(task_body))});
    // Groups outside the column panels: a static split then gives each
    // thread whole groups over all panels, where a short last panel (a
    // 14 x 14 map: 32 and 17 tiles) would otherwise land on one thread.
    kernel_.body = make_for(vn, int_imm(conv_.batch), LoopKind::kParallel,
                            {make_for(vg, int_imm(groups_), LoopKind::kSerial,
                                      {make_for(vq, int_imm(task_panels_), LoopKind::kSerial, {task})})},
                            3);
    kernel_.flops = 2 * kWinogradPositions * conv_.batch * conv_.tiles() * c * conv_.filters;
    kernel_.ukernel_params = {{"mr", mr},
                              {"nr", nr},
                              {"panel_tiles", cols_},
                              {"row_panel_groups", groups_},
                              {"panels_per_task", panels_per_task_}};
    return std::move(kernel_);
  }

 private:
  // One column panel's V: 16 planes of C x NR floats, each padded
  // (kWinogradPlanePad).
  int64_t panel_v_floats() const {
    return kWinogradPositions * (conv_.channels * variant_.nr + kWinogradPlanePad);
  }

  // The row panel's outputs from the local result y (by output row, dx
  // interleaved: winograd_f23_<variant>.h's row_panel), through the epilogue: per
  // filter row r, the tile rows the column panel touches (at most
  // (panel tiles - 1) / tiles_w + 2), their two output rows each, and in each the
  // panel's run of tiles on that row [begin, end) as one vectorized loop:
  // the run is contiguous in y as in the output.
  Stmt store_outputs(int vn, const Expr& q, const Expr& p, int y) {
    const int64_t mr = mr_, nr = variant_.nr, tw = conv_.tiles_w(), cols = cols_;
    const int64_t span = std::min((cols - 1) / tw + 2, conv_.tiles_h());
    const int vr = new_var("r", mr), vt = new_var("tr", span), vy = new_var("dy", 2);
    const Expr first = q * cols;
    const Expr tile_row = floordiv(first, tw) + var(vt);
    const Expr begin = max(first, tile_row * tw);
    const Expr end = min(min(first + cols, tile_row * tw + tw), int_imm(conv_.tiles()));
    // An odd width's last tile has one output column.
    const Expr run = max(int_imm(0), min((end - tile_row * tw) * 2, int_imm(conv_.width)) - (begin - tile_row * tw) * 2);
    const int vx = new_var("ox", 2 * std::min(cols, tw));
    const Expr oy = tile_row * 2 + var(vy);
    const Expr ox = (begin - tile_row * tw) * 2 + var(vx);
    const Expr at = (var(vy) * mr + var(vr)) * (2 * nr) + (begin - first) * 2 + var(vx);
    const Expr acc = load(y, DType::kF32, {at});
    const std::vector<Expr> coords{var(vn), p * mr + var(vr), oy, ox};
    Stmt row = make_for(vx, run, LoopKind::kVectorized,
                        {epilogue_output_store(g_, phases_, shape_, epilogue_buffers_, output_, bounds_, coords, acc)});
    if (conv_.height % 2 != 0) row = make_if(lt(oy, int_imm(conv_.height)), {row});
    Stmt filter_rows =
        make_for(vt, int_imm(span), LoopKind::kSerial, {make_for(vy, int_imm(2), LoopKind::kSerial, {row})});
    if (conv_.filters % mr != 0) filter_rows = make_if(lt(p * mr + var(vr), int_imm(conv_.filters)), {filter_rows});
    return make_for(vr, int_imm(mr), LoopKind::kSerial, {filter_rows});
  }

  std::vector<Op> phases_;
  FloatGemmVariant variant_;
  scheduler::WinogradConv conv_;
  std::vector<int> epilogue_buffers_;
  int u_ = -1, output_ = -1;
  int64_t mr_ = 0;  // filters per row panel (winograd_panel_rows)
  int64_t panels_per_task_ = 1, task_panels_ = 0;  // column panels per task; tasks per image
  Shape shape_;
  int64_t row_panels_ = 0, col_panels_ = 0, groups_ = 1, per_group_ = 1;  // row panels: groups of per_group_
  int64_t cols_ = 0;  // tiles per column panel (WinogradConv::panel_tiles)
};

}  // namespace

Kernel lower_winograd_conv_kernel(const Graph& g, const scheduler::KernelSchedule& ks, const FloatGemmVariant& variant,
                                  TensorId u, const scheduler::ArchSpec& arch) {
  return WinogradConvLowering(g, ks, variant, u, arch).build();
}

}  // namespace tilegraph::codegen
