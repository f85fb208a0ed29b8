#include "codegen/lowering/lower_float_gemm_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "codegen/lowering/gemm_coords.h"
#include "codegen/lowering/int_gemm_task_grid.h"
#include "codegen/lowering/kernel_builder.h"
#include "codegen/lowering/narrow_index.h"
#include "codegen/lowering/prefetch_next_tile.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/int_math.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/var_ranges.h"
#include "scheduler/float_gemm_blocking.h"
#include "scheduler/int_gemm.h"

namespace tilegraph::codegen {

namespace {

// Packed panels start on 64-byte lines: 16 floats.
constexpr int64_t kPanelAlign = 16;

// Tensors whose next row block a GEMM's A prefetches at most (a Concat of
// two: NeRF's skip connection).
constexpr size_t kMaxPrefetchedSources = 2;

// Packing one B panel at run time, in units of one micro-kernel call on a
// packed A panel (a gather per value against MR FMAs per k).
constexpr double kRuntimeBPanelCost = 4;

// Reading one B panel where it lies (tg_sgemm::tile_ldb: nothing packed,
// the rows come from the L2 or the other core's cache). Against the packing
// cost, two cores then split a GEMM with few row panels by rows where its
// columns split unevenly: MobileNetV2's 1x1 convs over 14 x 14 pixels (7
// column panels, the last of 4 columns, 8 row panels) ran 4 + 3 panels per
// core; by rows (4 + 4) they took 0.084 ms instead of 0.097 at two threads,
// the same at one (the whole model, two threads: 2.5% less kernel time).
constexpr double kInPlaceBPanelCost = 1;

// Reading one compile-time packed B panel when all of B overflows the L2, so
// every task streams its chunk's panels from L3 or DRAM again. Measured on
// bert-base's FFN (9.4 MB of B, 16 row panels, 96 column panels, one core):
// two row blocks that each streamed all of B took 4.43 ms, one row block
// 3.68 ms: about 2.7 panel tiles per extra panel read, of which the
// prefetchers hide some. With this cost two cores split such GEMMs by
// columns (each streams half of B once) instead of by rows.
constexpr double kStreamedBPanelCost = 2;

// B read where it lies (tg_sgemm::tile_ldb) only where at most this many row
// panels share each B panel: the packing's share of the kernel falls with
// their number, while every call reads the unpacked rows (H x W floats
// apart, so they map to few L1 sets) from the L2. Measured on 1x1 convs of
// ResNet-50's shapes (one core, tile_bias_clamp on packed panels against
// tile_bias_clamp_ldb, N = 3136 or 784): 8 row panels (M = 64, K = 256)
// 10-15% faster in place, 16 (M = 128, K = 256 or 512) 3-13% faster, 32
// (M = 256, K = 128) 15% slower, 64 and 128 5-10% slower.
constexpr int64_t kMaxInPlaceBRowPanels = 16;

// ... and only where B's rows, ldb floats apart, spread over at least this
// many of the L1's 64 sets of 64-byte lines (a 4 KiB period on x86: 32 KiB
// 8-way, 48 KiB 12-way). Rows a multiple of 4 KiB apart all land in one
// set, and a call's K rows of 2 lines each no longer stay in L1 while its
// row panels reuse them (nor in the L2, whose period is 128 KiB): BSRN's
// 64 -> 64 1x1 convs over 256 x 256 pixels (rows 256 KiB apart, one core)
// took 11.2 ms in place, 8.7 packed; its 64 -> 16 ones 5.5 and 2.9. Rows
// 3136 floats apart (ResNet-50's 56 x 56) reach 16 sets, 784 (28 x 28) 64.
constexpr int64_t kMinInPlaceBL1Sets = 16;

// ... or at least this many where B has at most kFewRows rows of A (the
// GEMM's M): there the packing is about as much work as the micro-kernel
// (it copies every value for M FMAs), and the few calls that reread a panel
// take its rows from the L2. MobileNetV2's 32 -> 16 1x1 conv over 112 x 112
// pixels (rows 49 KiB apart: 4 sets), AVX-512 (2 row panels of 8): 0.122 ->
// 0.079 ms at one thread in place, 0.069 -> 0.049 at two; AVX2 on a Zen 1
// core (3 row panels of 6, the last of 4; four alternated runs in the
// model): 0.45-0.53 -> 0.38-0.39. Its 16 -> 96 conv over the same pixels
// (M = 96) went 0.26 -> 0.36 on AVX-512, and BSRN's 64 -> 16 convs with rows
// in one set (above) were slower too.
constexpr int64_t kFewRows = 16;
constexpr int64_t kFewRowsMinL1Sets = 4;

// The L1 sets (of 64) that rows `ld_bytes` apart reach.
int64_t l1_sets_of_rows(int64_t ld_bytes) {
  constexpr int64_t kLine = 64, kSets = 64;
  if (ld_bytes % kLine != 0) return kSets;  // rows start at different offsets in their lines
  return kSets / std::gcd(ld_bytes / kLine % kSets == 0 ? kSets : ld_bytes / kLine % kSets, kSets);
}

// A transposed C tile (tg_sgemm::tile_ct) only in kernels of at most this
// many k blocks: every block's call transposes the tile in and out. Measured
// on ResNet-50's pixel-row convs (one core, alternated A/B): its 1x1 convs
// in 1 to 4 blocks 2-11% faster, in 8 within 2%, its stride-2 3x3 convs in
// 19 and 37 blocks 3-8% slower.
constexpr int64_t kMaxTransposedCKBlocks = 4;

// Pixel rows: the GEMM's rows are the output's innermost axis (a conv on a
// small feature map, whose pixels fill the micro-kernel's rows and its
// filters the columns: scheduler/int_gemm.h).
bool pixel_rows(const scheduler::Gemm& m) {
  return !m.row_axes.empty() && m.row_axes.back() + 1 == static_cast<int>(m.out_shape.size());
}

// Where the variant has wide A panels (tg_sgemm::wide, 12 rows on AVX-512),
// the GEMMs that pack in them: at least kWideMinRows rows (a few dozen
// leave 12-row panels too many wasted rows: ViT-S/32's 50 tokens ran 4-8%
// slower); a K of at least kWideMinK, or of kWideMinWholeK where M fills
// whole wide panels (M mod 12 rows are computed alone, and a whole-panel
// M keeps tile_bias_clamp and the residual prefetch, which need M mod MR
// = 0); no transposed C tile (tile_ct: pixel rows in few k blocks).
// Measured on a 48 KiB-L1 Xeon, one core, every GEMM of a model in 8
// against 12 rows: ResNet-50's convs with K >= 128 5-17% faster, pixel
// rows in 6-25 k blocks too; its 64-deep conv3s over 56 x 56 (M = 256)
// 0-35% slower; its transposed-C convs and MobileNetV2's 7 x 7 ones 0-29%
// slower; MobileNetV2's 1x1 convs with M = 96-576 rows (whole wide panels)
// 3-15% faster from K = 32, its K = 24 and 27 ones 9-14% slower; BERT's
// projections (M = 128 tokens) 3-6% faster.
// A variant without them (float_gemm_variant_for: a Zen 4 core, or
// TILEGRAPH_WIDE_PANELS=off) keeps every GEMM in kMR rows.
constexpr int64_t kWideMinRows = 64;
constexpr int64_t kWideMinK = 128;
constexpr int64_t kWideMinWholeK = 32;

FloatGemmVariant panel_rows_for(const scheduler::Gemm& m, FloatGemmVariant v, const scheduler::ArchSpec& arch,
                                scheduler::PackedOperands packed) {
  if (v.wide_mr == 0 || m.rows() < kWideMinRows) return v;
  if (pixel_rows(m) &&
      scheduler::float_gemm_blocking(m, v.mr, v.nr, arch, packed).k_blocks <= kMaxTransposedCKBlocks)
    return v;
  const bool whole = m.rows() % v.wide_mr == 0;
  if (m.k >= kWideMinK || (whole && m.k >= kWideMinWholeK)) v.mr = v.wide_mr;
  return v;
}

struct FloatGeometry {
  scheduler::Gemm m;
  FloatGemmVariant v;
  scheduler::FloatGemmBlocking blocking;  // kc and the row block's size, from the arch's caches
  int64_t col_panels = 0;      // ceil(N / NR)
  int64_t panels = 0;          // ceil(M / MR)
  int64_t a_panel = 0;         // floats of one packed A panel (MR rows x K)
  int64_t b_panel = 0;         // floats of one packed B panel (K x NR)
  int64_t b_block = 0;         // floats of one k block of a B panel packed at run time (kc x NR)

  FloatGeometry(const scheduler::Gemm& gemm, const FloatGemmVariant& variant, const scheduler::ArchSpec& arch,
                scheduler::PackedOperands packed = {})
      : m(gemm),
        v(panel_rows_for(gemm, variant, arch, packed)),
        blocking(scheduler::float_gemm_blocking(gemm, v.mr, v.nr, arch, packed)) {
    col_panels = (m.cols() + v.nr - 1) / v.nr;
    panels = (m.rows() + v.mr - 1) / v.mr;
    a_panel = round_up(m.k * v.mr, kPanelAlign);
    b_panel = round_up(m.k * v.nr, kPanelAlign);
    b_block = round_up(blocking.kc * v.nr, kPanelAlign);
  }
  bool k_blocked() const { return blocking.k_blocks > 1; }
};

scheduler::Gemm float_gemm_of(const Graph& g, const Op& gemm) {
  const auto match = scheduler::match_gemm(g, gemm);
  TG_CHECK(match.has_value() && match->element == DType::kF32, "kernel ", gemm.name, " is not a float GEMM");
  return *match;
}

// One core's L2, 2 MiB when the arch does not say.
int64_t l2_bytes_of(const scheduler::ArchSpec& arch) { return arch.l2_bytes > 0 ? arch.l2_bytes : (2 << 20); }
int64_t l1_bytes_of(const scheduler::ArchSpec& arch) { return arch.l1_bytes > 0 ? arch.l1_bytes : (32 << 10); }

// A task's cost per B panel in balanced_int_gemm_grid's units: packing it
// when B is packed at run time; streaming it again when B was packed at
// compile time but one batch's B overflows the L2; else nothing (it stays
// cached for the next task).
double b_panel_cost(const FloatGeometry& geo, bool b_prepacked, const scheduler::ArchSpec& arch) {
  if (!b_prepacked) return kRuntimeBPanelCost;
  const int64_t l2 = l2_bytes_of(arch);
  const int64_t b_bytes = geo.col_panels * geo.b_panel * static_cast<int64_t>(sizeof(float));
  return b_bytes > l2 ? kStreamedBPanelCost : 0.0;
}

}  // namespace

namespace {

// The packed layout of constant operand `e` (A or B) as a float32 graph
// constant: [batches][panels][panel floats], a panel holding `width` rows
// (A) or columns (B) per k: panel[k * width + i]. Past M / N it holds 0.
TensorId pack_constant_operand(Graph& g, const Op& gemm, const scheduler::Gemm& m, const FloatGeometry& geo,
                               bool is_a) {
  const int64_t width = is_a ? geo.v.mr : geo.v.nr;
  const int64_t panel_floats = is_a ? geo.a_panel : geo.b_panel;
  const int64_t panels = is_a ? geo.panels : geo.col_panels;
  const int64_t extent = is_a ? m.rows() : m.cols();
  Op pack;
  pack.name = gemm.name + (is_a ? "_pack_a" : "_pack_b");
  pack.inputs = gemm.inputs;
  const Expr e = var(0);
  const Expr panel_flat = floordiv(e, panel_floats), within = floormod(e, panel_floats);
  const Expr bb = floordiv(panel_flat, panels), panel = floormod(panel_flat, panels);
  const Expr k = floordiv(within, width), at = panel * width + floormod(within, width);
  const Expr valid = logical_and(lt(k, int_imm(m.k)), lt(at, int_imm(extent)));
  const Expr at_clamped = clamp_to_last(at, extent), k_clamped = clamp_to_last(k, m.k);
  const Expr value =
      is_a ? substitute_vars(m.a, gemm_op_vars(m, bb, at_clamped, int_imm(0), k_clamped))
           : substitute_vars(m.b, gemm_op_vars(m, bb, int_imm(0), at_clamped, k_clamped));
  pack.body = select(valid, value, float_imm(0.0));
  Tensor packed_t;
  packed_t.name = pack.name;
  packed_t.dtype = DType::kF32;
  packed_t.shape = {m.batches() * panels * panel_floats};
  packed_t.kind = TensorKind::kConstant;
  pack.output = g.add_tensor(packed_t);
  drop_unused_inputs(pack);
  g.tensor(pack.output).data = evaluate_op(g, pack);
  return pack.output;
}

}  // namespace

FloatGemmPacks prepack_float_gemm_operands(Graph& g, const scheduler::KernelSchedule& ks,
                                           const FloatGemmVariant& variant, const scheduler::ArchSpec& arch) {
  const Op gemm = gemm_kernel_phases(g, ks, "a float GEMM kernel").front();
  const scheduler::Gemm m = float_gemm_of(g, gemm);
  const scheduler::PackedOperands constant{scheduler::reads_only_constants(g, gemm, m.a),
                                           scheduler::reads_only_constants(g, gemm, m.b)};
  // The same geometry (panel rows) as lower_float_gemm_kernel's with these packs.
  const FloatGeometry geo(m, variant, arch, constant);
  FloatGemmPacks packs;
  if (constant.a) packs.a = pack_constant_operand(g, gemm, m, geo, true);
  if (constant.b) packs.b = pack_constant_operand(g, gemm, m, geo, false);
  return packs;
}

namespace {

// A range [begin, end) of a reduce axis whose operand values read one input
// (a Concat along K: compiler/ir/var_ranges.h), with those values.
struct KRange {
  int64_t begin = 0, end = 0;
  Expr value, fast_value;
};

std::vector<KRange> peel_k_ranges(const Expr& e, int kv, int64_t extent) {
  std::vector<KRange> ranges;
  for (const VarRange& r : split_var_ranges(e, kv, extent)) ranges.push_back({r.begin, r.end, r.value, nullptr});
  return ranges;
}

// The ranges of value (and fast_value, which must split at the same
// bounds, else neither is split) along reduce var kv of `extent` indices.
std::vector<KRange> k_ranges(const Expr& value, const Expr& fast_value, int kv, int64_t extent) {
  std::vector<KRange> ranges = peel_k_ranges(value, kv, extent);
  if (!fast_value || ranges.size() == 1) return ranges;
  const std::vector<KRange> fast = peel_k_ranges(fast_value, kv, extent);
  if (fast.size() != ranges.size()) return {{0, extent, value, fast_value}};
  for (size_t r = 0; r < ranges.size(); ++r) {
    if (fast[r].end != ranges[r].end) return {{0, extent, value, fast_value}};
    ranges[r].fast_value = fast[r].value;
  }
  return ranges;
}

// A B panel's column table shared by several column panels (k outer: each
// panel of a group fills its copy once, before the k blocks): `copies` of it
// in `buffer` (-1: allocate it), the one at index `copy`.
struct SharedTable {
  int buffer = -1;
  int64_t copies = 1;
  Expr copy;
};

class FloatGemmLowering : KernelBuilder {
 public:
  FloatGemmLowering(const Graph& g, const scheduler::KernelSchedule& ks, const FloatGemmVariant& v,
                    const FloatGemmPacks& packed, const scheduler::ArchSpec& arch)
      : KernelBuilder(g), phases_(gemm_kernel_phases(g, ks, "a float GEMM kernel")), gemm_(phases_.front()),
        geo_(float_gemm_of(g, gemm_), v, arch, {packed.a >= 0, packed.b >= 0}),
        cores_(std::max(1, arch.cores)),
        grid_(balanced_int_gemm_grid(geo_.m.batches(), geo_.panels, geo_.blocking.max_row_panels, geo_.col_panels,
                                     b_panel_cost(geo_, packed.b >= 0, arch), cores_)),
        l2_bytes_(l2_bytes_of(arch)),
        l1_bytes_(l1_bytes_of(arch)) {
    epilogue_buffers_ = begin_gemm_kernel(phases_, ks, "sgemm_" + v.name);
    if (packed.a >= 0) packed_a_ = add_global(packed.a, false);
    if (packed.b >= 0) packed_b_ = add_global(packed.b, false);
    output_ = add_global(phases_.back().output, true);
  }

  Kernel build() {
    const scheduler::Gemm& m = geo_.m;
    const FloatGemmVariant& v = geo_.v;
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    kernel_.flops = gemm_flops(m.batches(), m.rows(), m.cols(), m.k);
    const int vb = new_var("b", m.batches());
    // B read in place costs its tasks no packing: where it is read so, the
    // grid is balanced for that. Which GEMMs read it in place stays decided
    // by the packing grid's row blocks (ResNet-50's 1x1 conv of 256 filters
    // over 28 x 28, 22 row panels, in place in two row blocks of 11: 5%
    // slower at one thread).
    const IntGemmTaskGrid in_place_grid = balanced_int_gemm_grid(
        m.batches(), geo_.panels, kb.max_row_panels, geo_.col_panels, kInPlaceBPanelCost, cores_);
    in_place_b_ = find_in_place_b(vb, std::max(grid_.row_panels, in_place_grid.row_panels));
    if (in_place_b_) grid_ = in_place_grid;
    const int vm = new_var("mb", grid_.row_blocks);
    if (!in_place_b_) columns_b_ = find_columns_along_k(vb);
    transposed_c_ = transposes_c();
    kernel_.ukernel_params = {{"mr", v.mr}, {"nr", v.nr}, {"kc", kb.kc}, {"k_blocks", kb.k_blocks},
                              {"row_panels", grid_.row_panels}, {"chunk_panels", grid_.chunk_panels}};
    if (narrow_tail_cols() > 0) kernel_.ukernel_params.push_back({"tail_cols", narrow_tail_cols()});
    if (column_group() > 1) kernel_.ukernel_params.push_back({"column_group", column_group()});
    if (in_place_b_) kernel_.ukernel_params.push_back({"b_in_place", 1});
    if (columns_b_) kernel_.ukernel_params.push_back({"b_columns", 1});
    if (transposed_c_) kernel_.ukernel_params.push_back({"c_transposed", 1});
    const Expr row0 = var(vm) * (grid_.row_panels * v.mr);
    // One scratch buffer (a thread has one arena): the row block's A panels
    // unless A is packed at compile time, then the run-time B panel (one k
    // block of it; a group's panels; the whole chunk's where they are reused
    // across row blocks) unless B is, then with k blocks the row block's C
    // tiles, whose sums wait there for the last block.
    const int64_t a_floats = packed_a_ >= 0 ? 0 : grid_.row_panels * a_panel_floats();
    // In place, only N's tail panel is packed.
    reuses_b_ = reuses_b_across_row_blocks();
    const int64_t b_floats = packed_b_ >= 0 || (in_place_b_ && full_panels() == 0) ? 0
                             : reuses_b_ ? geo_.b_panel * ceil_div(grid_.chunk_panels, column_group()) * column_group()
                                         : geo_.b_block * column_group();
    if (reuses_b_) {
      b_run_ = new_var("run", m.batches() * grid_.chunks * grid_.row_blocks);
      kernel_.ukernel_params.push_back({"b_reused", 1});
    }
    const int64_t tile_floats = int64_t{v.mr} * v.nr;
    // k outer: the C tiles of a group of column panels wait for the last block.
    int64_t group = 1;
    if (kb.k_outer) {
      group = std::min(grid_.chunk_panels, std::max<int64_t>(1, kb.max_c_tiles / grid_.row_panels));
      group = ceil_div(grid_.chunk_panels, ceil_div(grid_.chunk_panels, group));  // even groups
      kernel_.ukernel_params.push_back({"group_panels", group});
      if (kb.a_per_k_block) kernel_.ukernel_params.push_back({"a_per_k_block", 1});
    }
    const int64_t c_floats = geo_.k_blocked() ? grid_.row_panels * group * tile_floats : 0;
    // None at all where A is packed at compile time and B read in place.
    const int64_t scratch_floats = a_floats + b_floats + c_floats;
    const int panels = scratch_floats > 0 ? add_local("panels", DType::kF32, scratch_floats, kUkernelAlignment) : -1;
    if (panels >= 0) kernel_.buffers[static_cast<size_t>(panels)].scratch = true;
    if (in_place_b_ && full_panels() > 0) tail_b_ = CallArg{panels, int_imm(a_floats)};
    const int ctile = geo_.k_blocked() ? -1 : add_local("c_tile", DType::kF32, tile_floats, kUkernelAlignment);

    const int64_t chunk_panels = grid_.chunk_panels;
    const int vc = new_var("nc", grid_.chunks);
    const RowPanels rows{row0, grid_.row_panels, v.mr, m.rows()};
    auto a_at = [&](int vp) {
      return packed_a_ >= 0 ? CallArg{packed_a_, (var(vb) * geo_.panels + var(vm) * grid_.row_panels + var(vp)) * geo_.a_panel}
                            : CallArg{panels, var(vp) * a_panel_floats()};
    };
    Stmt column_panels;
    if (kb.k_outer) {
      column_panels = k_outer_column_panels(vb, vc, rows, panels, a_at, a_floats, a_floats + b_floats, group);
    } else {
      // Column panels one at a time, or packed and run in groups.
      const int64_t cgroup = column_group();
      const int64_t groups = ceil_div(chunk_panels, cgroup);
      const int vnl = new_var(cgroup > 1 ? "ng" : "nb", groups);
      const Expr nb = var(vc) * chunk_panels + (cgroup > 1 ? var(vnl) * cgroup : var(vnl));
      const Expr b_panel_at = (var(vb) * geo_.col_panels + nb) * geo_.b_panel;
      std::vector<Stmt> panel_body;
      if (!geo_.k_blocked()) {
        if (cgroup > 1) {
          panel_body = column_group_body(vb, vm, vnl, nb, rows, panels, a_floats, ctile, a_at);
        } else {
          CallArg b_arg;
          if (packed_b_ >= 0) {
            b_arg = {packed_b_, b_panel_at};
          } else if (in_place_b_) {
            b_arg = b_in_place(nb, int_imm(0));
            if (full_panels() > 0)
              panel_body.push_back(pack_tail_panel(vb, nb, panels, a_floats, nullptr));
          } else {
            panel_body.push_back(pack_b(vb, nb, panels, int_imm(a_floats), nullptr).whole());
            b_arg = {panels, int_imm(a_floats)};
          }
          const int vp = new_var("p", grid_.row_panels);
          const Expr row = row0 + var(vp) * v.mr;
          std::vector<CallArg> next_b;
          std::vector<Stmt> per_panel;
          const std::vector<NextRowBlock> next_a = next_row_block_a(vb, row0);
          if (!next_a.empty()) {
            // The first source through the call's `next`, any other (a
            // Concat's) as a prefetch of its share before the call.
            const Expr share = var(vnl) * grid_.row_panels + var(vp);
            const int64_t calls = groups * grid_.row_panels;
            auto share_of = [&](const NextRowBlock& r) { return prefetch_share(r.buffer, r.first, r.floats, share, calls); };
            next_b = share_of(next_a[0]);
            for (size_t i = 1; i < next_a.size(); ++i) {
              std::vector<CallArg> args = share_of(next_a[i]);
              args[1].value = args[1].value * int_imm(int64_t{sizeof(float)});
              per_panel.push_back(make_call(std::string(kPrefetchBytesCallee) + "<2>", args));
            }
            kernel_.ukernel_params.push_back({"prefetch_next_a", static_cast<int64_t>(next_a.size())});
          } else if (prefetches_b()) {
            add_next_b(&next_b, vp, b_panel_at + geo_.b_panel, m.k);
          }
          for (Stmt& s : panel_tile(vb, vm, vp, nb, row, a_at(vp), b_arg, ctile, next_b)) per_panel.push_back(s);
          panel_body.push_back(row_panel_loop(vp, rows, per_panel));
        }
      } else {
        // K in blocks of kc (scheduler/float_gemm_blocking.h): per column
        // panel, each block's B rows are packed (or read from the packed
        // weights) once and stay in L1 while every row panel's A block streams
        // past them (k_block_calls).
        const int64_t c_offset = a_floats + b_floats;
        BPanelPacking b_pack;
        CallArg b_arg;
        auto pack_block = [&](const Expr& block) -> std::vector<Stmt> {
          if (packed_b_ >= 0) {
            b_arg = {packed_b_, b_panel_at + block * kb.kc * v.nr};
            return {};
          }
          if (in_place_b_) {
            b_arg = b_in_place(nb, block);
            if (full_panels() == 0) return {};
            return {pack_tail_panel(vb, nb, panels, a_floats, block)};
          }
          b_pack = pack_b(vb, nb, panels, int_imm(a_floats), block);
          b_arg = {panels, int_imm(a_floats)};
          return {b_pack.pack};
        };
        auto call = [&](int vp, const Expr& block, const Expr& accumulate) {
          std::vector<CallArg> args = {{-1, k_in_block(block)}, a_in_block(a_at(vp), block), b_arg,
                                       {panels, int_imm(c_offset) + var(vp) * tile_floats}, {-1, accumulate}};
          // The next block: this panel's, or after the last the next panel's first.
          if (prefetches_b())
            add_next_b(&args, vp, b_panel_at + simplify(min((block + 1) * kb.kc, int_imm(m.k)) * v.nr, bounds_), kb.kc);
          return tile_call(nb, args, row0 + var(vp) * v.mr);
        };
        // Each panel's epilogue right after its last block's call, while its
        // C tile is in L1 (in a loop after the blocks, the row block's tiles
        // had to come back from the L2).
        auto finish_tile = [&](int vp) {
          return store_tile(vb, row0 + var(vp) * v.mr, nb, panels, int_imm(c_offset) + var(vp) * tile_floats);
        };
        const Stmt k_blocks =
            k_block_calls({kb.k_blocks, false, "kcb", "p"}, rows, pack_block, call, nullptr, nullptr, finish_tile);
        // A conv's column table is filled once per panel, for every block.
        std::vector<Stmt> blocks = b_pack.fill;
        blocks.push_back(k_blocks);
        panel_body.push_back(b_pack.table >= 0 ? make_allocate(b_pack.table, blocks) : make_seq(blocks));
      }
      // A group guards each of its panels.
      const Stmt in_range = cgroup > 1 ? make_seq(panel_body) : where_column_exists(var(vnl), 1, nb, panel_body);
      column_panels = make_for(vnl, int_imm(groups), LoopKind::kSerial, {in_range});
    }
    std::vector<Stmt> block;
    // A row block packed once for its chunks at one thread
    // (a_reuse_run_var; ResNet-50's 7 x 7 pixel rows at 1 thread: each of 2
    // chunks repacked). (B reused across row blocks has two or more of
    // them: A is packed per task.)
    const bool packs_a_whole = packed_a_ < 0 && !kb.a_per_k_block;
    const int a_run = packs_a_whole ? a_reuse_run_var(m.batches(), grid_.row_blocks, grid_.chunks) : -1;
    if (packs_a_whole) block.push_back(unless_packed_for_previous_chunk(a_run, vc, pack_a(vb, row0, panels)));
    block.push_back(ctile >= 0 ? make_allocate(ctile, {column_panels}) : column_panels);
    Stmt body = panels >= 0 ? make_allocate(panels, block) : make_seq(block);
    // Chunks outside row blocks: a static split of (batch, chunk, row block)
    // gives each core whole chunks of every row block (int_gemm_task_grid.h).
    body = make_for(vm, int_imm(grid_.row_blocks), LoopKind::kSerial, {body});
    body = make_for(vc, int_imm(grid_.chunks), LoopKind::kSerial, {body});
    // B reused: each thread takes a chunk's row blocks together, where there
    // are chunks enough for every core (the pool's chunks of one task each
    // had spread them over both threads, and each repacked).
    const int64_t grain = reuses_b_ && m.batches() * grid_.chunks >= cores_ ? grid_.row_blocks : 1;
    kernel_.body = make_parallel_for(vb, int_imm(m.batches()), {body}, 3, reuses_b_ ? b_run_ : a_run, grain);
    return std::move(kernel_);
  }

 private:
  // The body of group vnl of a chunk's column panels (first panel nb), where
  // B is packed at run time over all of K (column_group()): the group's B
  // panels side by side at a_floats in `panels`, then each row panel over
  // all of them: its A panel stays in L1 and its output rows are written
  // column_group() panels at a time.
  std::vector<Stmt> column_group_body(int vb, int vm, int vnl, const Expr& nb, const RowPanels& rows, int panels,
                                      int64_t a_floats, int ctile, const std::function<CallArg(int)>& a_at) {
    const int64_t cgroup = column_group();
    const int vw = new_var("nw", cgroup), vq = new_var("nq", cgroup);
    const Expr packed_nb = nb + var(vw), run_nb = nb + var(vq);
    auto in_group = [&](int vx, const Expr& panel, std::vector<Stmt> body) {
      return where_column_exists(var(vnl) * cgroup + var(vx), cgroup, panel, std::move(body));
    };
    // Both are built at a column panel var bounded to N's panels, then read
    // at the group's panel, which in_group keeps inside them: the bounds of
    // ng and nw alone reach past N in a short last group, and the packing's
    // reads would be clamped (a min per value, no vector load: MobileNetV2's
    // 112 x 112 1x1 conv in groups of 5 ran 1.6x slower than ungrouped).
    const int vpanel = new_var("ncol", geo_.col_panels);
    // Reused across row blocks: the chunk's panels side by side, this group's
    // from its first.
    const Expr group_b = reuses_b_ ? int_imm(a_floats) + var(vnl) * (cgroup * geo_.b_panel) : int_imm(a_floats);
    const Stmt pack = pack_b(vb, var(vpanel), panels, group_b + var(vw) * geo_.b_panel, nullptr).whole();
    // Where the packing is a plain copy, its k loop goes outside the group's
    // panels: each k reads one run of the group's columns (B's row), where
    // panel by panel it read NR floats of every row before the next panel's.
    // With rows far apart (a 1x1 conv's channels, H x W floats apart) every
    // such read was another stream: BSRN's 64 -> 32 1x1 conv + GELU over
    // 256 x 256 pixels, groups of 8 panels (one core), 18.4 -> 16.8 ms.
    const StmtNode* k_loop = plain_copy_over_k(pack);
    const Stmt per_panel = k_loop ? make_seq(k_loop->body) : pack;
    Stmt group = make_for(vw, int_imm(cgroup), LoopKind::kSerial,
                          {in_group(vw, packed_nb, {with_var(per_panel, vpanel, packed_nb)})});
    if (k_loop) group = make_for(k_loop->var, k_loop->extent, k_loop->loop, {group});
    // The thread's previous task was this chunk's previous row block: its
    // panels are in the scratch arena already.
    if (reuses_b_) group = make_if(lt(min(var(b_run_), var(vm)), int_imm(1)), {group});
    std::vector<Stmt> body = {group};
    const int vp = new_var("p", grid_.row_panels);
    const CallArg b_arg{panels, group_b + var(vq) * geo_.b_panel};
    std::vector<Stmt> tile = panel_tile(vb, vm, vp, var(vpanel), rows.row0 + var(vp) * geo_.v.mr, a_at(vp), b_arg, ctile);
    for (Stmt& t : tile) t = with_var(t, vpanel, run_nb);
    const Stmt over_group = make_for(vq, int_imm(cgroup), LoopKind::kSerial, {in_group(vq, run_nb, std::move(tile))});
    body.push_back(row_panel_loop(vp, rows, {over_group}));
    return body;
  }

  // A packing that is one serial loop over k around one vector loop of one
  // store (a copy of B's values, no column table, guard or tail split): its
  // k loop, else null. Its iterations write disjoint panel values and read
  // only B, so the loops around it may be reordered.
  static const StmtNode* plain_copy_over_k(const Stmt& pack) {
    if (!pack || pack->kind != StmtKind::kFor || pack->loop != LoopKind::kSerial || pack->body.size() != 1) return nullptr;
    const Stmt& inner = pack->body[0];
    if (inner->kind != StmtKind::kFor || inner->body.size() != 1 || inner->body[0]->kind != StmtKind::kStore)
      return nullptr;
    return pack.get();
  }

  // Row panel vp's micro-kernel call on column panel nb (A at `a`, B at
  // b_arg; `next_b`: the call's prefetch arguments, add_next_b) and the
  // epilogue's stores of its C tile (row: the panel's first row), or one
  // call that does both (fused_bias_clamp).
  std::vector<Stmt> panel_tile(int vb, int vm, int vp, const Expr& nb, const Expr& row, const CallArg& a,
                               const CallArg& b_arg, int ctile, const std::vector<CallArg>& next_b = {}) {
    const Stmt tile_loops = store_tile(vb, row, nb, ctile, int_imm(0));
    std::vector<CallArg> args = {{-1, int_imm(geo_.m.k)}, a, b_arg, {ctile, int_imm(0)}, {-1, const_of(0, DType::kBool)}};
    args.insert(args.end(), next_b.begin(), next_b.end());
    const Stmt call = make_call(geo_.v.ukernel("tile"), args);
    if (const std::optional<Stmt> fused = fused_bias_clamp(nb, tile_loops, call, last_panel_call(args), a, b_arg, ctile))
      return {*fused};
    std::vector<Stmt> per_panel = {tile_call(nb, args, row), tile_loops};
    if (const std::optional<Stmt> prefetch = prefetch_next_operand(vp, vm, tile_loops, ctile))
      per_panel.insert(per_panel.begin(), *prefetch);
    // Where M has a tail, its full row panels fused all the same: their
    // epilogue built at the row clamped to the last full panel's (the same
    // row where it runs), whose rows are then provably inside M, and the
    // last panel as above. AVX2's 6-row panels leave a tail on most of
    // MobileNetV2's filter counts (16, 32, 64, 160, 320, 1280).
    const scheduler::Gemm& m = geo_.m;
    if (!transposed_c_ && m.rows() % geo_.v.mr != 0 && m.rows() > geo_.v.mr) {
      const Expr last_full = int_imm(m.rows() - geo_.v.mr);
      const Stmt full_loops = store_tile(vb, min(row, last_full), nb, ctile, int_imm(0), "fr");
      if (const std::optional<Stmt> fused =
              fused_bias_clamp(nb, full_loops, call, last_panel_call(args), a, b_arg, ctile, true))
        return {make_if(lt(row, last_full + 1), {*fused}), make_if(lt(last_full, row), per_panel)};
    }
    return per_panel;
  }

  // `body` where column panel `column` exists, the one `in_chunk` panels
  // into its chunk, which runs in groups of `group`: inside the chunk (its
  // last group may be short) and inside N's panels (the last chunk may be).
  Stmt where_column_exists(const Expr& in_chunk, int64_t group, const Expr& column, std::vector<Stmt> body) const {
    const int64_t chunk = grid_.chunk_panels;
    Expr guard;
    if (chunk % group != 0) guard = lt(in_chunk, int_imm(chunk));
    if (geo_.col_panels % chunk != 0) {
      const Expr in_n = lt(column, int_imm(geo_.col_panels));
      guard = guard ? logical_and(guard, in_n) : in_n;
    }
    return guard ? make_if(guard, std::move(body)) : make_seq(std::move(body));
  }

  // s read at var v = value: built at a var with narrower bounds than
  // value's, so that its indices need no clamps, then placed where guards
  // keep value inside those bounds.
  Stmt with_var(const Stmt& s, int v, const Expr& value) const {
    std::vector<Expr> at = vars_as_themselves();
    at[static_cast<size_t>(v)] = value;
    return rewrite_stmt_exprs(s, [&](const Expr& e) { return substitute_vars(e, at); });
  }

  // Whether a chunk's B panels, packed at run time, stay in the scratch arena
  // for the same thread's next row block of that chunk (tasks run chunk by
  // chunk, row blocks innermost: int_gemm_task_grid.h), where each row block
  // repacked them: B packed over all of K in groups (column_group_body), two
  // or more row blocks, and the chunk's panels within the L2. ResNet-50's
  // stride-2 1x1 downsample (256 -> 512 over 28 x 28, 3 row blocks, 25
  // panels of 16 KiB per chunk: each a gather of every other pixel of 256
  // channels) spent 27% of its time packing B, one core (perf).
  // TILEGRAPH_REUSE_B=off repacks per row block (for comparison).
  bool reuses_b_across_row_blocks() const {
    if (const char* off = std::getenv("TILEGRAPH_REUSE_B"); off && std::string(off) == "off") return false;
    if (packed_b_ >= 0 || in_place_b_ || geo_.k_blocked() || column_group() < 2 || grid_.row_blocks < 2) return false;
    const int64_t chunk_bytes = grid_.chunk_panels * geo_.b_panel * static_cast<int64_t>(sizeof(float));
    return chunk_bytes <= l2_bytes_;
  }

  // Column panels packed and run together (FloatGemmBlocking::b_group: 1
  // unless B is packed at run time as one k block), spread evenly over a
  // chunk's panels.
  int64_t column_group() const {
    if (in_place_b_) return 1;  // nothing packed to share
    const int64_t group = std::min(geo_.blocking.b_group, grid_.chunk_panels);
    return ceil_div(grid_.chunk_panels, ceil_div(grid_.chunk_panels, group));
  }

  // Whether the row panels' calls prefetch the next B block, each its
  // share: where B is packed at compile time (the weights), which streams
  // from L3 or DRAM. Pixel rows (a conv on a small map) have few row panels
  // per B block, so the block's first call would wait on its weights; x @ W
  // has more, and without the shares each call had the micro-kernel fetch
  // the whole next block again (one thread: bert-base 128.8 -> 112.8 ms,
  // its FFN input matmuls 3.4 -> 2.9; ViT-B/16 192 -> 178).
  bool prefetches_b() const { return packed_b_ >= 0; }

  // Row panel vp's share of the next B block (k values of NR floats at
  // `next` in the packed B) as the tile call's prefetch arguments
  // (sgemm_*.h: `next`, `next_floats`): its 1/row_panels, kept inside the
  // packed weights (the last block of the last panel has no next).
  void add_next_b(std::vector<CallArg>* args, int vp, const Expr& next, int64_t k) {
    for (CallArg& arg : prefetch_share(packed_b_, next, k * geo_.v.nr, var(vp), grid_.row_panels))
      args->push_back(std::move(arg));
  }

  // Call `share` of `calls`: its slice (whole lines) of the `floats` floats
  // of `buffer` from `first` on, as the tile call's prefetch arguments
  // (sgemm_*.h: `next`, `next_floats`), kept inside the buffer.
  std::vector<CallArg> prefetch_share(int buffer, const Expr& first, int64_t floats, const Expr& share,
                                      int64_t calls) const {
    const int64_t total = kernel_.buffers[static_cast<size_t>(buffer)].elements;
    const int64_t slice = std::min(total, round_up(ceil_div(floats, std::max<int64_t>(calls, 1)), kPanelAlign));
    return {{buffer, simplify(min(first + share * slice, int_imm(total - slice)), bounds_)}, {-1, int_imm(slice)}};
  }

  // The next row block's A where the tile calls prefetch it (next_row_block_a):
  // `floats` floats of buffer `buffer` from `first` on.
  struct NextRowBlock {
    int buffer = -1;
    Expr first;
    int64_t floats = 0;
  };

  // Whether the row block's tile calls prefetch the next row block's A
  // instead of the weights' next B block, and where that A lies (one run
  // per tensor A reads: two for a Concat's): where A is an activation in
  // rows along k, packed whole per row block, several row blocks follow
  // each other, all of A overflows the L2 and all of the packed B stays
  // cached (a quarter of the L2 at most, so its next block needs no
  // prefetch). Each row block's packing otherwise waited on its rows from
  // DRAM while the tiles before it left the memory idle: NeRF's 64 -> 64
  // layers over 2 M points (A 530 MB, B 16 KB), one core, kernel alone:
  // 257-273 -> 226-238 ms. Each tensor's rows of the next block, first row
  // (vm + 1) x rows per block, lie in one run when its consecutive rows are
  // at most 2K floats apart (a Split's columns leave gaps: prefetched with
  // them). Empty elsewhere, or with TILEGRAPH_PREFETCH_NEXT_A=off.
  std::vector<NextRowBlock> next_row_block_a(int vb, const Expr& row0) {
    if (const char* off = std::getenv("TILEGRAPH_PREFETCH_NEXT_A"); off && std::string(off) == "off") return {};
    const scheduler::Gemm& m = geo_.m;
    if (packed_a_ >= 0 || packed_b_ < 0 || geo_.blocking.a_per_k_block || geo_.k_blocked() ||
        grid_.row_blocks < 2 || m.k_extents.size() != 1)
      return {};
    const int64_t b_bytes = geo_.col_panels * geo_.b_panel * int64_t{sizeof(float)};
    const int64_t a_bytes = m.batches() * m.rows() * m.k * int64_t{sizeof(float)};
    if (b_bytes > l2_bytes_ / 4 || a_bytes <= l2_bytes_) return {};
    const int64_t block_rows = grid_.row_panels * geo_.v.mr;
    // The loads of A's value at `row` and a k var (a constant k would fold
    // a Concat's select to one of them).
    const int vk = new_var("k_next", m.k);
    auto loads_at = [&](const Expr& row) {
      std::vector<Expr> loads;
      visit(op_value(m.a, gemm_op_vars(m, var(vb), row, int_imm(0), {var(vk)})), [&](const Expr& n) {
        if (n->kind == ExprKind::kLoad) loads.push_back(n);
      });
      return loads;
    };
    auto at_k = [&](const Expr& e, const Expr& k) {
      std::vector<Expr> values = vars_as_themselves();
      values[static_cast<size_t>(vk)] = k;
      return simplify(substitute_vars(e, values), bounds_);
    };
    // The steps along k and along the rows, read at the first rows (the
    // value's clamp of the row to M's last does not fold at a variable one).
    const std::vector<Expr> origin = loads_at(int_imm(0)), second_row = loads_at(int_imm(1));
    const std::vector<Expr> next = loads_at(row0 + int_imm(block_rows));
    if (origin.empty() || origin.size() > kMaxPrefetchedSources || second_row.size() != origin.size() ||
        next.size() != origin.size())
      return {};
    std::vector<NextRowBlock> runs;
    for (size_t i = 0; i < origin.size(); ++i) {
      const Expr& load = origin[i];
      if (load->args.size() != 1 || load->dtype != DType::kF32 || second_row[i]->int_value != load->int_value ||
          next[i]->int_value != load->int_value)
        return {};
      // A Concat clamps each input's column into that input (min(k, 23),
      // max(k - 24, 0)): the row's start is at k = 0, and the step along k
      // is 1 inside the input's own columns, found at one of a few k.
      const Expr index = load->args[0];
      int64_t row_step = 0;
      if (!is_const_int(simplify(at_k(second_row[i]->args[0], int_imm(0)) - at_k(index, int_imm(0)), bounds_),
                        &row_step) ||
          row_step < 1 || row_step > 2 * m.k)
        return {};
      bool along_k = false;
      for (int64_t k : {int64_t{0}, m.k / 2, m.k - 2}) {
        int64_t step = 0;
        along_k = along_k || (k >= 0 && is_const_int(at_k(index, int_imm(k + 1)) - at_k(index, int_imm(k)), &step) &&
                              step == 1);
      }
      if (!along_k) return {};
      // Floored at 0: a share's offset then stays inside the buffer at both ends.
      const Expr first = simplify(max(at_k(next[i]->args[0], int_imm(0)), int_imm(0)), bounds_);
      runs.push_back({static_cast<int>(load->int_value), first, block_rows * row_step});
    }
    return runs;
  }

  // K's extent in k block `block`: kc, or what is left of K in the last one.
  Expr k_in_block(const Expr& block) {
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    if (geo_.m.k % kb.kc == 0) return int_imm(kb.kc);
    return simplify(min(int_imm(kb.kc), int_imm(geo_.m.k) - block * kb.kc), bounds_);
  }

  // A row panel's packed A, advanced to k block `block` (panels are k-major,
  // MR floats per k); a panel packed per k block holds that block only.
  CallArg a_in_block(CallArg a, const Expr& block) const {
    if (geo_.blocking.a_per_k_block) return a;
    a.value = a.value + block * geo_.blocking.kc * geo_.v.mr;
    return a;
  }

  // Floats of one row panel's A in the scratch arena: all of K, or one k
  // block where A is packed per block.
  int64_t a_panel_floats() const {
    return geo_.blocking.a_per_k_block ? round_up(geo_.blocking.kc * geo_.v.mr, kPanelAlign) : geo_.a_panel;
  }

  // The chunk's column panels with the k-block loop outside them
  // (scheduler/float_gemm_blocking.h, k outer), in groups of `group`: per
  // group and k block, each column panel's B block is packed once (at
  // b_offset in `panels`) and every row panel's call adds into the C tile of
  // (row panel p, column q of the group) at c_offset + (p * group + q) *
  // MR * NR; the epilogue stores the group's tiles after the last block.
  Stmt k_outer_column_panels(int vb, int vc, const RowPanels& rows, int panels,
                             const std::function<CallArg(int)>& a_at, int64_t b_offset, int64_t c_offset,
                             int64_t group) {
    const FloatGemmVariant& v = geo_.v;
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    const int64_t chunk = grid_.chunk_panels, groups = ceil_div(chunk, group);
    const int64_t tile_floats = int64_t{v.mr} * v.nr;
    const int vg = new_var("ng", groups);
    auto column = [&](int vq) { return var(vc) * chunk + var(vg) * group + var(vq); };
    auto in_range = [&](int vq, std::vector<Stmt> body) {
      return where_column_exists(var(vg) * group + var(vq), group, column(vq), std::move(body));
    };
    // A conv's column tables: one per column panel of the group, filled
    // once before the k blocks (a probe packing at the fill's own column var
    // yields the table and its fill; its packing loops go unused).
    BPanelPacking tables;
    if (packed_b_ < 0) {
      const int vqt = new_var("nqt", group);
      tables = pack_b_at(vb, column(vqt), panels, int_imm(b_offset), nullptr, false, "t", {-1, group, var(vqt)});
      tables.fill = {make_for(vqt, int_imm(group), LoopKind::kSerial, {in_range(vqt, tables.fill)})};
    }
    const int vq = new_var("nq", group);
    auto pack_block = [&](const Expr& block) -> std::vector<Stmt> {
      if (packed_b_ >= 0) return {};
      if (tables.table < 0) return {pack_b(vb, column(vq), panels, int_imm(b_offset), block).pack};
      return {pack_b_at(vb, column(vq), panels, int_imm(b_offset), block, false, "", {tables.table, group, var(vq)}).pack};
    };
    auto b_at = [&](const Expr& block) -> CallArg {
      if (packed_b_ < 0) return {panels, int_imm(b_offset)};
      return {packed_b_, (var(vb) * geo_.col_panels + column(vq)) * geo_.b_panel + block * kb.kc * v.nr};
    };
    auto call = [&](int vp, const Expr& block, const Expr& accumulate) {
      std::vector<CallArg> args = {{-1, k_in_block(block)}, a_in_block(a_at(vp), block), b_at(block),
                                   {panels, int_imm(c_offset) + (var(vp) * group + var(vq)) * tile_floats},
                                   {-1, accumulate}};
      // The weights' block the calls need next is the next column panel's
      // at this k block (the row panels run inside the column panels): each
      // row panel's call prefetches its share of it. Without `next` the
      // micro-kernel fetches this panel's next k block, which the loops
      // reach only after every column panel (ViT-B/16's FFN output, 197 x
      // 3072 @ 3072 x 768 in k blocks of 192, one core: 200 -> 209 GFLOP/s
      // as a loop of micro-kernel calls).
      if (prefetches_b()) add_next_b(&args, vp, simplify(b_at(block).value + geo_.b_panel, bounds_), kb.kc);
      return tile_call(column(vq), args, rows.row0 + var(vp) * v.mr);
    };
    auto columns = [&](std::vector<Stmt> body) -> std::vector<Stmt> {
      return {make_for(vq, int_imm(group), LoopKind::kSerial, {in_range(vq, std::move(body))})};
    };
    BlockStmts pack_a_slice;
    if (kb.a_per_k_block) pack_a_slice = [&](const Expr& block) -> std::vector<Stmt> { return {pack_a_block(vb, rows.row0, panels, block)}; };
    const Stmt blocks = k_block_calls({kb.k_blocks, false, "kcb", "p"}, rows, pack_block, call, columns, pack_a_slice);
    const int vqe = new_var("nqe", group), ve = new_var("pe", rows.count);
    const Stmt store = store_tile(vb, rows.row0 + var(ve) * v.mr, column(vqe), panels,
                                  int_imm(c_offset) + (var(ve) * group + var(vqe)) * tile_floats);
    const Stmt epilogue = make_for(vqe, int_imm(group), LoopKind::kSerial,
                                   {in_range(vqe, {row_panel_loop(ve, rows, {store})})});
    if (tables.table < 0) return make_for(vg, int_imm(groups), LoopKind::kSerial, {blocks, epilogue});
    std::vector<Stmt> filled = tables.fill;
    filled.push_back(blocks);
    return make_for(vg, int_imm(groups), LoopKind::kSerial, {make_allocate(tables.table, filled), epilogue});
  }

  // An expression of the gemm op (its loads are kernel buffers = its slots) at `vars`.
  Expr op_value(const Expr& e, const std::vector<Expr>& vars) {
    return finalize_indices(to_kernel_loads(g_, gemm_, substitute_vars(e, vars), bounds_), bounds_);
  }

  // op_value with a padded window read under its guard (to_guarded_kernel_loads).
  Expr guarded_op_value(const Expr& e, const std::vector<Expr>& vars) {
    return finalize_indices(to_guarded_kernel_loads(g_, gemm_, substitute_vars(e, vars), bounds_), bounds_);
  }

  // B's value at `vars`, its padded window reads unclamped under their
  // guard where guarded_b_packing says so.
  Expr b_value(const std::vector<Expr>& vars) {
    return guarded_b_packing() ? guarded_op_value(geo_.m.b, vars) : op_value(geo_.m.b, vars);
  }

  // Whether the target loads under a mask: GCC turns `c ? x[i] : 0` of a
  // vectorized loop into a masked load (AVX-512, AVX2), a masked gather
  // where i is read from a table; elsewhere (NEON) into a branch per lane.
  bool masked_loads() const { return geo_.v.name == "avx512" || geo_.v.name == "avx2"; }

  // One loop var per reduce axis (a conv's channel, kh, kw stay affine
  // instead of a div/mod of a flat k per value); *flat_k is their flattening.
  std::vector<int> k_loop_vars(const std::string& tag, std::vector<Expr>* ks, Expr* flat_k) {
    std::vector<int> vars;
    *flat_k = int_imm(0);
    for (size_t a = 0; a < geo_.m.k_extents.size(); ++a) {
      vars.push_back(new_var(str_cat("k", tag, a), geo_.m.k_extents[a]));
      ks->push_back(var(vars.back()));
      *flat_k = *flat_k * geo_.m.k_extents[a] + var(vars.back());
    }
    return vars;
  }

  // panels[p * a_panel + k * MR + i] = A(row0 + p*MR + i, k). Rows past M
  // repeat row M-1 (their results are never stored).
  Stmt pack_a(int vb, const Expr& row0, int panels) {
    const FloatGemmVariant& v = geo_.v;
    const int vp = new_var("pa", grid_.row_panels), vi = new_var("ia", v.mr);
    std::vector<Expr> ks;
    Expr k;
    const std::vector<int> k_vars = k_loop_vars("a", &ks, &k);
    const Expr row = clamp_to_last(row0 + var(vp) * v.mr + var(vi), geo_.m.rows());
    const Expr a = op_value(geo_.m.a, gemm_op_vars(geo_.m, var(vb), row, int_imm(0), ks));
    const Expr index = var(vp) * geo_.a_panel + k * v.mr + var(vi);
    if (pixel_rows(geo_.m) && divides(a)) {
      // A panel wholly inside M may read its window under the padding test
      // (row_table_panel with runs).
      Expr guarded, inside;
      if (masked_loads()) {
        guarded = guarded_op_value(geo_.m.a, gemm_op_vars(geo_.m, var(vb), row0 + var(vp) * v.mr + var(vi),
                                                          int_imm(0), ks));
        inside = lt(row0 + var(vp) * v.mr + int_imm(v.mr - 1), int_imm(geo_.m.rows()));
      }
      if (Stmt s = pack_a_by_row_table(vp, vi, k_vars, a, panels, index, guarded, inside)) return s;
    }
    if (k_vars.size() == 1) {
      if (Stmt call = pack_a_rows_call(vi, k_vars[0], a, int_imm(0), int_imm(geo_.m.k), {panels, var(vp) * geo_.a_panel}))
        return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {call});
    }
    Stmt s = make_store(panels, finalize_indices(index, bounds_), a);
    if (!divides(a) && !k_vars.empty() && !unit_stride_along(a, k_vars.back())) {
      // Rows inside k where A is read along its rows, not along k (a 1x1
      // conv with the pixels as rows, ResNet-50's layer4): each k step
      // stores MR contiguous floats, where along k it scattered them MR apart
      // while reading a column with stride H x W.
      auto rows_inside_k = [&](int row_var, const std::vector<int>& ks_vars, const Expr& value, const Expr& at) {
        Stmt nest = make_for(row_var, int_imm(v.mr), LoopKind::kVectorized,
                             {make_store(panels, finalize_indices(at, bounds_), value)});
        for (size_t i = ks_vars.size(); i-- > 0;)
          nest = make_for(ks_vars[i], int_imm(geo_.m.k_extents[i]), LoopKind::kSerial, {nest});
        return nest;
      };
      // A panel inside M reads its rows unclamped: the clamp (a min per
      // value) kept GCC from vectorizing the copy, which then took a quarter
      // of MobileNetV2's 7 x 7 projection kernels. Only the panel across M's
      // end clamps; one wholly past it (a row block's last panels) is not
      // packed: no tile reads it.
      const Expr first = row0 + var(vp) * v.mr, last = first + int_imm(v.mr - 1), rows = int_imm(geo_.m.rows());
      // min(first, M - MR) is `first` inside M; written so, the row's bounds
      // show the read inside A (no clamp per value) with a loop-invariant min.
      const Expr inside_first = min(first, int_imm(std::max<int64_t>(geo_.m.rows() - v.mr, 0)));
      const Expr unclamped =
          op_value(geo_.m.a, gemm_op_vars(geo_.m, var(vb), inside_first + var(vi), int_imm(0), ks));
      const Stmt inside = make_if(lt(last, rows), {rows_inside_k(vi, k_vars, unclamped, index)});
      // The panel across M's end: the clamped value `a` at `index`, over
      // loop vars of its own (a var is bound by one loop).
      const int ti = new_var("il", v.mr);
      std::vector<Expr> tail_ks;
      Expr tail_k;
      const std::vector<int> tail_k_vars = k_loop_vars("l", &tail_ks, &tail_k);
      std::vector<Expr> to_tail = vars_as_themselves();
      to_tail[static_cast<size_t>(vi)] = var(ti);
      for (size_t i = 0; i < k_vars.size(); ++i) to_tail[static_cast<size_t>(k_vars[i])] = tail_ks[i];
      const Stmt across = make_if(logical_and(ge(last, rows), lt(first, rows)),
                                  {rows_inside_k(ti, tail_k_vars, substitute_vars(a, to_tail), substitute_vars(index, to_tail))});
      return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {inside, across});
    }
    // Rows outside k: each row's coordinates (a conv's output pixel) are
    // computed once per row, and the source is read along k.
    for (size_t i = k_vars.size(); i-- > 0;)
      s = make_for(k_vars[i], int_imm(geo_.m.k_extents[i]), i + 1 == k_vars.size() ? LoopKind::kVectorized
                                                                                    : LoopKind::kSerial, {s});
    s = make_for(vi, int_imm(v.mr), LoopKind::kSerial, {s});
    return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {s});
  }

  // One k block of the row block's A panels (A packed per k block, the
  // weights as B: scheduler/float_gemm_blocking.h):
  // panels[p * kc*MR + kk * MR + i] = A(row0 + p*MR + i, block*kc + kk), k
  // clamped to K - 1 in a short last block (those values are never read:
  // the call's k is the block's). One reduce axis, read along k.
  Stmt pack_a_block(int vb, const Expr& row0, int panels, const Expr& block) {
    const FloatGemmVariant& v = geo_.v;
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    TG_CHECK(geo_.m.k_extents.size() == 1, "A packed per k block needs one reduce axis");
    const int vp = new_var("pa", grid_.row_panels), vi = new_var("ia", v.mr), vk = new_var("ka", kb.kc);
    Expr k = block * kb.kc + var(vk);
    if (geo_.m.k % kb.kc != 0) k = clamp_to_last(k, geo_.m.k);
    const Expr row = clamp_to_last(row0 + var(vp) * v.mr + var(vi), geo_.m.rows());
    const Expr a = op_value(geo_.m.a, gemm_op_vars(geo_.m, var(vb), row, int_imm(0), {k}));
    const Expr index = var(vp) * a_panel_floats() + var(vk) * v.mr + var(vi);
    // The block's k values that exist: K's last block may be short.
    const Expr count = geo_.m.k % kb.kc == 0 ? int_imm(kb.kc) : min(int_imm(kb.kc), int_imm(geo_.m.k) - block * kb.kc);
    const Expr a_unclamped = op_value(geo_.m.a, gemm_op_vars(geo_.m, var(vb), row, int_imm(0), {var(vk)}));
    if (Stmt call = pack_a_rows_call(vi, vk, a_unclamped, block * kb.kc, count, {panels, var(vp) * a_panel_floats()}))
      return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {call});
    Stmt s = make_store(panels, finalize_indices(index, bounds_), a);
    if (!divides(a) && !unit_stride_along(a, vk)) {
      // Rows inside k where A is read along its rows (as pack_a).
      s = make_for(vi, int_imm(v.mr), LoopKind::kVectorized, {s});
      s = make_for(vk, int_imm(kb.kc), LoopKind::kSerial, {s});
    } else {
      s = make_for(vk, int_imm(kb.kc), LoopKind::kVectorized, {s});
      s = make_for(vi, int_imm(v.mr), LoopKind::kSerial, {s});
    }
    return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {s});
  }

  // One A panel packed by tg_sgemm::pack_a_rows (codegen/ukernels/README.md):
  // `count` k values from `k_first` into `dst`, where A (`a`, at row var vi
  // and k var vk) is a float load that steps by one element along k over
  // the whole of K: a row-major activation (x @ W, attention's attn @ V).
  // Each of the MR rows is passed as a pointer to its value at k_first, so
  // clamped padding rows and head or batch offsets cost nothing per value.
  // The generated loop stored each value MR floats apart, which the
  // compiler vectorizes as scatters or not at all (MobileViT at one
  // thread: 64.1 -> 62.6 ms, ViT-S/32 34.6 -> 33.6 ms). Null where A is
  // anything else (an expression, a conv's patches, strided along k), or
  // with TILEGRAPH_PACK_A_ROWS=off (for comparison).
  Stmt pack_a_rows_call(int vi, int vk, const Expr& a, const Expr& k_first, const Expr& count, const CallArg& dst) {
    if (const char* off = std::getenv("TILEGRAPH_PACK_A_ROWS"); off && std::string(off) == "off") return nullptr;
    if (a->kind != ExprKind::kLoad || a->args.size() != 1 || a->dtype != DType::kF32) return nullptr;
    const Expr index = a->args[0];
    std::vector<Expr> at = vars_as_themselves();
    at[static_cast<size_t>(vk)] = int_imm(0);
    const Expr along_k = simplify(index - substitute_vars(index, at), bounds_);
    if (!same_expr(along_k, var(vk))) return nullptr;
    std::vector<CallArg> args = {{-1, count}, dst};
    at[static_cast<size_t>(vk)] = k_first;
    for (int i = 0; i < geo_.v.mr; ++i) {
      at[static_cast<size_t>(vi)] = int_imm(i);
      args.push_back({static_cast<int>(a->int_value), simplify(substitute_vars(index, at), bounds_)});
    }
    return make_call(geo_.v.ukernel("pack_a_rows"), args);
  }

  // A conv's pixel rows packed along the rows (pack_a), with what a row
  // needs besides the channel (its pixel's input offset and padding test
  // per window position: div/mod by the output width) read from a table
  // filled once per row panel, so the per-k loop adds the channel's offset
  // and reads MR values (ResNet-50's layer4 3x3 convs: 0.34 -> 0.08 ms
  // packing, where the rows outside k evaluated the div/mod per value).
  // table[(term * positions + window position) * MR + i]. Null where A has
  // no such terms.
  // With `guarded` (A's value at unclamped rows, its padded window read
  // under the padding test: to_guarded_kernel_loads), a panel where
  // `inside` holds packs from row_table_panel's runs instead where they apply.
  Stmt pack_a_by_row_table(int vp, int vi, const std::vector<int>& k_vars, const Expr& a, int panels,
                           const Expr& index, const Expr& guarded = nullptr, const Expr& inside = nullptr) {
    Stmt panel = row_table_panel(vi, k_vars, a, panels, index, false);
    if (!panel) return nullptr;
    if (guarded && any_node(guarded, is_guarded_select))
      if (Stmt run = row_table_panel(vi, k_vars, guarded, panels, index, true))
        panel = make_seq({make_if(inside, {run}), make_if(unary(UnaryOp::kNot, inside), {panel})});
    return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {panel});
  }

  // One row panel's table and packing (pack_a_by_row_table). With `runs`:
  // each of A's offset terms is its row 0's plus the row (a stride-1
  // 'same' conv whose padding reads are guarded: the offsets stay affine
  // across output rows and the padding), so a panel's MR values at one k
  // are one masked vector load at the table's first offset, not a gather
  // (ResNet-50's 14x14 and 7x7 3x3 convs: the gathers were 70% of those
  // kernels' own time); null where some offset term is not.
  Stmt row_table_panel(int vi, const std::vector<int>& k_vars, const Expr& a, int panels, const Expr& index,
                       bool runs) {
    const FloatGemmVariant& v = geo_.v;
    const ColumnTable t = column_table(k_vars);
    const Expr value = reassociate_loads(simplify(a, bounds_), t.hoisted);
    std::vector<Expr> terms;
    collect_column_terms(value, vi, t, &terms);
    if (terms.empty()) return nullptr;
    if (runs) {
      std::vector<Expr> row0 = vars_as_themselves();
      row0[static_cast<size_t>(vi)] = int_imm(0);
      for (const Expr& term : terms)
        if (term->dtype != DType::kBool && !same_expr(simplify(term - substitute_vars(term, row0), bounds_), var(vi)))
          return nullptr;
    }
    // The fill's own vars for the window axes and the row.
    const int vt = new_var(runs ? "itg" : "it", v.mr);
    std::vector<Expr> at = vars_as_themselves();
    at[static_cast<size_t>(vi)] = var(vt);
    std::vector<int> fill_vars;
    for (size_t w = 0; w < t.window.size(); ++w) {
      fill_vars.push_back(new_var(str_cat(runs ? "krg" : "kr", w), geo_.m.k_extents[t.window_axes[w]]));
      at.push_back(var(fill_vars.back()));
      at[static_cast<size_t>(t.window[w])] = var(fill_vars.back());
    }
    const TableEntries entries = table_entries(terms, at);
    const DType entry = entries.type;
    const int64_t per_term = t.positions * v.mr;
    const int table = add_local(runs ? "rows_guarded" : "rows", entry, static_cast<int64_t>(terms.size()) * per_term,
                                kUkernelAlignment);
    Expr fill_position = int_imm(0);
    for (size_t w = 0; w < t.window.size(); ++w)
      fill_position = fill_position * geo_.m.k_extents[t.window_axes[w]] + var(fill_vars[w]);
    std::vector<Stmt> stores;
    for (size_t i = 0; i < terms.size(); ++i) {
      Expr term = entries.values[i];
      if (term->dtype == DType::kBool) term = cast(entry, term);
      const Expr at_term = int_imm(static_cast<int64_t>(i) * per_term) + fill_position * v.mr + var(vt);
      stores.push_back(make_store(table, finalize_indices(at_term, bounds_), term));
    }
    Stmt fill = make_for(vt, int_imm(v.mr), LoopKind::kVectorized, stores);
    for (size_t w = fill_vars.size(); w-- > 0;)
      fill = make_for(fill_vars[w], int_imm(geo_.m.k_extents[t.window_axes[w]]), LoopKind::kSerial, {fill});
    const Expr position = window_position(t) * v.mr;
    const Expr read = replace_terms(value, terms, [&](size_t i, const Expr& term) {
      const Expr first = int_imm(static_cast<int64_t>(i) * per_term) + position;
      if (runs && term->dtype != DType::kBool) return table_read(term, table, entry, first) + var(vi);
      return table_read(term, table, entry, first + var(vi));
    });
    Stmt pack = make_store(panels, finalize_indices(index, bounds_), read);
    pack = make_for(vi, int_imm(v.mr), LoopKind::kVectorized, {pack});
    if (runs) pack = hoist_run_offsets(vi, pack);
    const std::optional<Stmt> ahead = runs ? std::nullopt : prefetch_channels_ahead(read, k_vars, vi, v.mr);
    for (size_t i = k_vars.size(); i-- > 0;) {
      std::vector<Stmt> body{pack};
      if (ahead && i == 0) body.insert(body.begin(), *ahead);
      pack = make_for(k_vars[i], int_imm(geo_.m.k_extents[i]), LoopKind::kSerial, body);
    }
    return make_allocate(table, {fill, pack});
  }

  // A row or column table's entries: `terms` at `at` (their vars
  // substituted), in int32 where every one computes in it (narrow_index.h),
  // else all in int64.
  struct TableEntries {
    std::vector<Expr> values;
    DType type;
  };
  TableEntries table_entries(const std::vector<Expr>& terms, const std::vector<Expr>& at) const {
    std::vector<Expr> wide, narrowed;
    bool narrow = true;
    for (const Expr& term : terms) {
      wide.push_back(substitute_vars(term, at));
      narrowed.push_back(narrow_index_to_i32(wide.back(), bounds_));
      narrow = narrow && narrowed.back();
    }
    return narrow ? TableEntries{std::move(narrowed), DType::kI32} : TableEntries{std::move(wide), DType::kI64};
  }

  // e with each of `terms` replaced by read(i, term). Top-down: a term is
  // replaced whole, before any part of it could match another.
  static Expr replace_terms(const Expr& e, const std::vector<Expr>& terms,
                            const std::function<Expr(size_t, const Expr&)>& read) {
    for (size_t i = 0; i < terms.size(); ++i)
      if (same_expr(terms[i], e)) return read(i, e);
    if (e->args.empty()) return e;
    auto copy = std::make_shared<ExprNode>(*e);
    bool changed = false;
    for (Expr& arg : copy->args) {
      Expr r = replace_terms(arg, terms, read);
      changed = changed || r != arg;
      arg = std::move(r);
    }
    return changed ? Expr(copy) : e;
  }

  // A table entry read back as the term it replaces: bool, or int64.
  static Expr table_read(const Expr& term, int table, DType entry, const Expr& at) {
    const Expr value = load(table, entry, {at});
    if (term->dtype == DType::kBool) return cast(DType::kBool, value);
    return entry == DType::kI64 ? value : cast(DType::kI64, value);
  }

  static bool divides(const Expr& e) {
    return any_node(e, [](const Expr& n) {
      return n->kind == ExprKind::kBinary && (n->binary_op == BinaryOp::kDiv || n->binary_op == BinaryOp::kRem ||
                                              n->binary_op == BinaryOp::kFloorDiv || n->binary_op == BinaryOp::kFloorMod);
    });
  }

  // Whether some load of e steps by one element as var kv steps by one.
  bool unit_stride_along(const Expr& e, int kv) const {
    std::vector<Expr> next = vars_as_themselves();
    next[static_cast<size_t>(kv)] = var(kv) + 1;
    return any_node(e, [&](const Expr& n) {
      if (n->kind != ExprKind::kLoad || n->args.size() != 1) return false;
      int64_t step = 0;
      return is_const_int(simplify(substitute_vars(n->args[0], next) - n->args[0], bounds_), &step) && step == 1;
    });
  }

  // The tile's call and epilogue as one tg_sgemm::tile_bias_clamp call
  // (codegen/ukernels/README.md) where the epilogue of the full tiles
  // (`tile_loops`, store_tile's loops over the C tile in `c_buffer`) is
  // out[o + i * ldc + j] = min(max(acc + bias[r + i], lo), hi), Min and Max
  // optional, their bound second (tg_max(x, lo) keeps a NaN x): a conv's
  // bias with ReLU, Clip or nothing. The micro-kernel applies it to its
  // accumulators and stores the output rows itself; the C tile's store,
  // reload and loop go (MobileNet-v2's 1x1 convs: the epilogue was a fifth
  // of the 16 -> 96 expand over 112 x 112). Where N has a tail, its last
  // panel keeps its call (`last_call`: narrowed where N's tail fits fewer
  // vectors) and the epilogue loops. None where M has a tail (the
  // rows past M would be stored; full_rows: `tile_loops` are a full row
  // panel's, panel_tile calls it there alone) or the epilogue is anything else.
  std::optional<Stmt> fused_bias_clamp(const Expr& nb, const Stmt& tile_loops, const Stmt& call, const Stmt& last_call,
                                       const CallArg& a, const CallArg& b, int c_buffer, bool full_rows = false) const {
    const FloatGemmVariant& v = geo_.v;
    if (geo_.m.rows() % v.mr != 0 && !full_rows) return std::nullopt;
    const bool split = full_panels() > 0;
    int vi = -1, vj = -1;
    const Stmt store = full_tile_store(tile_loops, &vi, &vj);
    if (!store) return std::nullopt;
    if (kernel_.buffers[static_cast<size_t>(store.get()->buffer)].dtype != DType::kF32) return std::nullopt;
    // The value: peel Min(x, hi) and Max(x, lo), then acc + bias[r + i] (either order).
    Expr x = store->value;
    double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
    auto bound = [](const Expr& e, BinaryOp op, double* value) {
      if (e->kind != ExprKind::kBinary || e->binary_op != op || e->args[1]->kind != ExprKind::kFloatImm ||
          e->args[1]->dtype != DType::kF32)
        return false;
      *value = e->args[1]->float_value;
      return true;
    };
    if (bound(x, BinaryOp::kMin, &hi)) x = x->args[0];
    if (bound(x, BinaryOp::kMax, &lo)) x = x->args[0];
    if (x->kind != ExprKind::kBinary || x->binary_op != BinaryOp::kAdd || x->dtype != DType::kF32) return std::nullopt;
    auto is_load_of = [](const Expr& e, int buffer) {
      return e->kind == ExprKind::kLoad && e->args.size() == 1 && (buffer < 0 || e->int_value == buffer);
    };
    const bool acc_first = is_load_of(x->args[0], c_buffer);
    const Expr acc = x->args[acc_first ? 0 : 1], bias = x->args[acc_first ? 1 : 0];
    if (!is_load_of(acc, c_buffer) || !is_load_of(bias, -1) || bias->int_value == c_buffer ||
        bias->dtype != DType::kF32)
      return std::nullopt;
    // Offsets: acc at i * NR + j, the bias at its row's + i, the output at o + i * ldc + j.
    auto at = [&](const Expr& e, int64_t i, int64_t j) { return tile_at(e, vi, vj, i, j); };
    auto step = [&](const Expr& e, int64_t i, int64_t j, int64_t* d) { return tile_step(e, vi, vj, i, j, d); };
    auto affine = [&](const Expr& e, int64_t di, int64_t dj) { return tile_affine(e, vi, vj, di, dj); };
    const Expr acc_at = acc->args[0], bias_at = bias->args[0], out_at = store->index;
    int64_t ldc = 0;
    if (!affine(acc_at, v.nr, 1) || !affine(bias_at, 1, 0) ||
        !step(out_at, 1, 0, &ldc) || ldc < v.nr || !affine(out_at, ldc, 1))
      return std::nullopt;
    int64_t acc_first_at = -1;
    if (!is_const_int(at(acc_at, 0, 0), &acc_first_at) || acc_first_at != 0) return std::nullopt;
    const Stmt fused = ukernel_call(geo_.v.ukernel("tile_bias_clamp"),
                                 {call->args[0], a, b, {store->buffer, at(out_at, 0, 0)}, {-1, int_imm(ldc)},
                                  {static_cast<int>(bias->int_value), at(bias_at, 0, 0)},
                                  {-1, float_imm(lo)}, {-1, float_imm(hi)}});
    if (!split) return fused;
    const int64_t full = full_panels();
    const Stmt tail = tile_loops->body[1]->body[0];
    return make_seq({make_if(lt(nb, int_imm(full)), {fused}), make_if(lt(int_imm(full - 1), nb), {last_call, tail})});
  }

  // B where it lies: buffer and the index of B(0, 0) in batch vb, and the
  // stride between B's rows (k), each of whose N columns are contiguous.
  struct InPlaceB {
    int buffer = -1;
    Expr first;
    int64_t ldb = 0;
  };

  // B read by the micro-kernel where it lies (tg_sgemm::tile_ldb; nothing
  // packed) when B is one float input read at first + k * ldb + column: a
  // stride-1 1x1 conv's activation (channels k, pixels the columns), an
  // attention's V. The full column panels only: where N has a tail, its
  // panel would read past the row, and is packed as before (tail_b_). Only
  // with few row panels per B panel (kMaxInPlaceBRowPanels) and rows spread
  // over the L1's sets (kMinInPlaceBL1Sets, kFewRowsMinL1Sets), on AVX-512 and
  // AVX2 (the variants with tile_ldb), and where B would be packed at run time over all
  // of K or in k blocks (not k outer, whose column tables serve packing).
  // Not with a batch folded into the columns (two images' pixels: a panel
  // is then not one run of each row; the affine test fails). Unused vars
  // kbp and jbp stay behind where it fails. TILEGRAPH_B_IN_PLACE=off packs
  // as before (for comparison).
  std::optional<InPlaceB> find_in_place_b(int vb, int64_t row_panels) {
    if (const char* off = std::getenv("TILEGRAPH_B_IN_PLACE"); off && std::string(off) == "off") return std::nullopt;
    const scheduler::Gemm& m = geo_.m;
    if ((geo_.v.name != "avx512" && geo_.v.name != "avx2") || packed_b_ >= 0 || geo_.blocking.k_outer || m.k_extents.size() != 1 ||
        m.cols() < geo_.v.nr || row_panels > kMaxInPlaceBRowPanels)
      return std::nullopt;
    const std::optional<StridedB> b = strided_b(vb, "p");
    const int64_t min_sets = m.rows() <= kFewRows ? kFewRowsMinL1Sets : kMinInPlaceBL1Sets;
    if (!b || b->column_step != 1 || b->k_step < geo_.v.nr ||
        kernel_.buffers[static_cast<size_t>(b->buffer)].scope != MemoryScope::kGlobal ||
        l1_sets_of_rows(b->k_step * 4) < min_sets)
      return std::nullopt;
    return InPlaceB{b->buffer, b->first, b->k_step};
  }

  // B as one float load at first + k * k_step + column * column_step, one
  // reduce axis: where it lies, for find_in_place_b (column_step 1) and
  // find_columns_along_k (k_step 1). `tag` names the probe's vars (kb<tag>,
  // jb<tag>), which stay behind unused.
  struct StridedB {
    int buffer = -1;
    Expr first;  // the index of B(0, 0) in batch vb
    int64_t k_step = 0, column_step = 0;
  };
  std::optional<StridedB> strided_b(int vb, const std::string& tag) {
    const scheduler::Gemm& m = geo_.m;
    if (m.k_extents.size() != 1) return std::nullopt;
    const int vk = new_var("kb" + tag, m.k), vj = new_var("jb" + tag, m.cols());
    const Expr b = op_value(m.b, gemm_op_vars(m, var(vb), int_imm(0), var(vj), std::vector<Expr>{var(vk)}));
    if (b->kind != ExprKind::kLoad || b->args.size() != 1 || b->dtype != DType::kF32) return std::nullopt;
    const Expr index = b->args[0];
    auto at = [&](int64_t k, int64_t j) {
      std::vector<Expr> vars = vars_as_themselves();
      vars[static_cast<size_t>(vk)] = int_imm(k);
      vars[static_cast<size_t>(vj)] = int_imm(j);
      return simplify(substitute_vars(index, vars), bounds_);
    };
    StridedB s{static_cast<int>(b->int_value), at(0, 0)};
    int64_t rest = -1;
    if (!is_const_int(simplify(at(1, 0) - s.first, bounds_), &s.k_step) ||
        !is_const_int(simplify(at(0, 1) - s.first, bounds_), &s.column_step) ||
        !is_const_int(simplify(index - s.first - var(vk) * s.k_step - var(vj) * s.column_step, bounds_), &rest) ||
        rest != 0)
      return std::nullopt;
    return s;
  }

  // B packed by tg_sgemm::pack_b_columns (codegen/ukernels/README.md) where
  // it is one float load at first + column * ld + k, one reduce axis: the
  // transposed operand of q @ k^T (attention heads, Restormer's channel
  // attention over the pixels). The generated loop gathered each k step's
  // NR values ld floats apart. TILEGRAPH_PACK_B_COLUMNS=off packs as before
  // (for comparison).
  std::optional<StridedB> find_columns_along_k(int vb) {
    if (const char* off = std::getenv("TILEGRAPH_PACK_B_COLUMNS"); off && std::string(off) == "off")
      return std::nullopt;
    if (packed_b_ >= 0 || geo_.m.k < 2) return std::nullopt;
    std::optional<StridedB> b = strided_b(vb, "c");
    if (!b || b->k_step != 1 || b->column_step < 2) return std::nullopt;
    return b;
  }

  // Column panel nb's B (over all of K, block null, or k block `block`)
  // packed into `panels` at `offset` from its columns (columns_b_).
  Stmt pack_b_columns_call(const Expr& nb, int panels, const Expr& offset, const Expr& block) {
    const scheduler::Gemm& m = geo_.m;
    const int64_t nr = geo_.v.nr;
    const Expr k_first = block ? block * geo_.blocking.kc : int_imm(0);
    const Expr count = block ? k_in_block(block) : int_imm(m.k);
    const int64_t ld = columns_b_->column_step;
    const Expr source = simplify(columns_b_->first + nb * (nr * ld) + k_first, bounds_);
    const Expr cols = m.cols() % nr == 0 ? int_imm(nr) : simplify(min(int_imm(nr), int_imm(m.cols()) - nb * nr), bounds_);
    return make_call("tg_sgemm::pack_b_columns", {{-1, count}, {panels, offset}, {columns_b_->buffer, source},
                                                  {-1, int_imm(ld)}, {-1, cols}});
  }

  // The micro-kernel's B argument where B is read in place: column panel
  // nb's first column in k block `block`.
  CallArg b_in_place(const Expr& nb, const Expr& block) const {
    const Expr rows = block * geo_.blocking.kc * in_place_b_->ldb;
    return {in_place_b_->buffer, simplify(in_place_b_->first + nb * geo_.v.nr + rows, bounds_)};
  }

  // Whether the C tile is stored transposed (tg_sgemm::tile_ct), for an
  // epilogue over one column's MR rows at a time: pixel rows, whose rows are
  // the output's innermost axis, on AVX-512 or AVX2 (the variants with tile_ct), in
  // at most kMaxTransposedCKBlocks k blocks (each block's call loads and
  // stores the tile transposed). TILEGRAPH_TRANSPOSED_C=off keeps the
  // row-major tile (for comparison).
  bool transposes_c() const {
    if (const char* off = std::getenv("TILEGRAPH_TRANSPOSED_C"); off && std::string(off) == "off") return false;
    return (geo_.v.name == "avx512" || geo_.v.name == "avx2") && pixel_rows(geo_.m) && !in_place_b_ &&
           geo_.blocking.k_blocks <= kMaxTransposedCKBlocks;
  }

  // A micro-kernel call (tg_sgemm::tile..., tile_bias_clamp) with `args`
  // (k, a, b, ...): its _ldb form, with B's row stride after b, where B is
  // read in place; its _ct form where the C tile is transposed.
  Stmt ukernel_call(const std::string& name, std::vector<CallArg> args) const {
    const size_t templ = std::min(name.find('<'), name.size());
    std::string callee = name.substr(0, templ);
    if (in_place_b_) {
      args.insert(args.begin() + 3, CallArg{-1, int_imm(in_place_b_->ldb)});
      callee += "_ldb";
    }
    if (transposed_c_) callee += "_ct";
    return make_call(callee + name.substr(templ), std::move(args));
  }

  // The last column panel's call: on B read in place, except where N's
  // tail panel is packed (tail_b_).
  Stmt packed_call(const std::string& name, std::vector<CallArg> args) const {
    return tail_b_ ? make_call(name, std::move(args)) : ukernel_call(name, std::move(args));
  }

  // N's tail panel packed at a_floats in `panels` (over all of K, block
  // null, or k block `block`), where the full panels are read in place.
  Stmt pack_tail_panel(int vb, const Expr& nb, int panels, int64_t a_floats, const Expr& block) {
    return make_if(lt(int_imm(full_panels() - 1), nb), {pack_b(vb, nb, panels, int_imm(a_floats), block).whole()});
  }

  // Columns of the last column panel's call where N's tail (N mod NR) fits
  // fewer of the micro-kernel's vectors than NR: the tail rounded up to
  // them (tg_sgemm::tile<W>); 0 where N has no tail or it needs all of NR.
  // The panel's layout stays NR wide (its other columns are zeros, unread),
  // so packing and the prepacked weights are unchanged. MobileViT's
  // attention heads of 36 (AVX-512, NR 32): 48 columns computed instead of
  // 64; its 144- and 240-wide projections: the last 16 in 16 instead of 32.
  int64_t narrow_tail_cols() const {
    const int64_t tail = geo_.m.cols() % geo_.v.nr;
    if (tail == 0) return 0;
    const int64_t cols = round_up(tail, geo_.v.lanes);
    return cols < geo_.v.nr ? cols : 0;
  }

  // The micro-kernel call with `args` for the last column panel:
  // tg_sgemm::tile<W> where N's tail fits W columns (narrow_tail_cols),
  // else tg_sgemm::tile; on `rows` rows only where rows > 0.
  Stmt last_panel_call(std::vector<CallArg> args, int64_t rows = 0) const {
    if (tail_b_) args[2] = *tail_b_;  // B read in place but for this panel
    const int64_t cols = narrow_tail_cols();
    const std::string tile = geo_.v.ukernel("tile");
    if (rows > 0) return packed_call(str_cat(tile, "<", cols > 0 ? cols : geo_.v.nr, ", ", rows, ">"), args);
    return packed_call(cols > 0 ? str_cat(tile, "<", cols, ">") : tile, args);
  }

  // The micro-kernel call with `args` for column panel nb: the full panels'
  // and the last one's (last_panel_call) where they differ.
  Stmt column_panel_call(const Expr& nb, const std::vector<CallArg>& args, int64_t rows = 0) const {
    const Stmt call = rows > 0 ? ukernel_call(str_cat(geo_.v.ukernel("tile"), "<", geo_.v.nr, ", ", rows, ">"), args)
                               : ukernel_call(geo_.v.ukernel("tile"), args);
    if (narrow_tail_cols() == 0 && !tail_b_) return call;
    if (geo_.col_panels == 1) return last_panel_call(args, rows);
    return split_full_panels(nb, call, last_panel_call(args, rows));
  }

  // The micro-kernel call with `args` for column panel nb and the row panel
  // starting at row `first`: where M has a tail of R rows (M mod MR), the
  // last row panel computes those R rows alone (tile<kCols, kRows>), where
  // it computed MR rows of which MR - R are M's last repeated and never
  // stored (ViT-S/32's 50 tokens: its last panel of 8 rows has 2). Its C
  // tile's other rows are then not written; the epilogue reads only rows
  // below M.
  Stmt tile_call(const Expr& nb, const std::vector<CallArg>& args, const Expr& first) const {
    const Stmt call = column_panel_call(nb, args);
    const int64_t m = geo_.m.rows(), tail = m % geo_.v.mr;
    if (tail == 0) return call;
    const Stmt tail_call = column_panel_call(nb, args, tail);
    if (m < geo_.v.mr) return tail_call;
    const Expr last_full = int_imm(m - geo_.v.mr);  // the last row a full panel may start at
    return make_seq({make_if(lt(first, last_full + 1), {call}), make_if(lt(last_full, first), {tail_call})});
  }

  // The epilogue's read of an activation the size of the output (a
  // residual add), prefetched for the next row panel before this panel's
  // tile() call: tg_sgemm::prefetch_tile on its MR rows x NR columns. With
  // the channels as rows, each tile reads MR rows H x W floats apart, too
  // many streams for the hardware prefetchers: the reads waited on the L3
  // (ResNet-50's 56 x 56 conv3 + Add + Relu, one thread: 1.24 -> 0.86 ms).
  // The next panel is clamped to M's last, so every prefetched row exists.
  // None where M has a tail, the epilogue reads no such operand (only
  // weights, a bias) or reads it along the rows (pixel rows: MR contiguous
  // floats per column).
  std::optional<Stmt> prefetch_next_operand(int vp, int vm, const Stmt& tile_loops, int c_buffer) const {
    const FloatGemmVariant& v = geo_.v;
    if (geo_.m.rows() % v.mr != 0) return std::nullopt;
    int vi = -1, vj = -1;
    const Stmt store = full_tile_store(tile_loops, &vi, &vj);
    if (!store) return std::nullopt;
    std::optional<Expr> read;
    int64_t ld = 0;  // the read's row stride
    visit(store->value, [&](const Expr& e) {
      if (read || e->kind != ExprKind::kLoad || e->args.size() != 1 || e->int_value == c_buffer) return;
      const Buffer& b = kernel_.buffers[static_cast<size_t>(e->int_value)];
      if (b.scope != MemoryScope::kGlobal || b.dtype != DType::kF32 || b.tensor < 0 ||
          g_.tensor(b.tensor).kind == TensorKind::kConstant)
        return;
      if (tile_step(e->args[0], vi, vj, 1, 0, &ld) && ld >= v.nr && tile_affine(e->args[0], vi, vj, ld, 1)) read = e;
    });
    if (!read) return std::nullopt;
    // The next panel of the row block, or M's last: row panel
    // M / MR - 1 - vm * row_panels of this block.
    std::vector<Expr> next = vars_as_themselves();
    next[static_cast<size_t>(vp)] = min(var(vp) + 1, int_imm(geo_.m.rows() / v.mr - 1) - var(vm) * grid_.row_panels);
    const Expr first = simplify(substitute_vars(tile_at((*read)->args[0], vi, vj, 0, 0), next), bounds_);
    return make_call(geo_.v.ukernel("prefetch_tile"),
                     {{static_cast<int>((*read)->int_value), first}, {-1, int_imm(ld)}});
  }

  // store_tile's store of a full tile (`tile_loops`: For i (MR) { If (row +
  // i < M) { For j (NR) { Store } } }, for the full panels under
  // split_full_panels' first If), with its row and column vars; null where
  // the loops have another shape.
  Stmt full_tile_store(const Stmt& tile_loops, int* vi, int* vj) const {
    const Stmt whole = full_panels() > 0 ? tile_loops->body[0]->body[0] : tile_loops;
    if (whole->kind != StmtKind::kFor || whole->body.size() != 1 || whole->body[0]->kind != StmtKind::kIf ||
        whole->body[0]->body.size() != 1)
      return nullptr;
    const Stmt cols = whole->body[0]->body[0];
    int64_t nr = 0;
    if (cols->kind != StmtKind::kFor || !is_const_int(cols->extent, &nr) || nr != geo_.v.nr ||
        cols->body.size() != 1 || cols->body[0]->kind != StmtKind::kStore)
      return nullptr;
    *vi = whole->var;
    *vj = cols->var;
    return cols->body[0];
  }

  // e at row i, column j of the tile (vi, vj replaced).
  Expr tile_at(const Expr& e, int vi, int vj, int64_t i, int64_t j) const {
    std::vector<Expr> vars = vars_as_themselves();
    vars[static_cast<size_t>(vi)] = int_imm(i);
    vars[static_cast<size_t>(vj)] = int_imm(j);
    return simplify(substitute_vars(e, vars), bounds_);
  }

  // *d = e(i, j) - e(0, 0), where that is a constant.
  bool tile_step(const Expr& e, int vi, int vj, int64_t i, int64_t j, int64_t* d) const {
    return is_const_int(simplify(tile_at(e, vi, vj, i, j) - tile_at(e, vi, vj, 0, 0), bounds_), d);
  }

  // e == e(0, 0) + i * di + j * dj.
  bool tile_affine(const Expr& e, int vi, int vj, int64_t di, int64_t dj) const {
    int64_t zero = -1;
    return is_const_int(simplify(e - tile_at(e, vi, vj, 0, 0) - var(vi) * di - var(vj) * dj, bounds_), &zero) &&
           zero == 0;
  }

  // The output stores of one MR x NR tile, whose first row is `row`, from
  // c_buffer[c_offset + i * NR + j] through the fused epilogue.
  // Where N has a tail, the full panels get their own copy (split_full_panels).
  // `tag`: distinguishes the var names of a second copy.
  // Every caller runs it for a column panel of N alone (nb < N's panels),
  // but nb's bounds may say more (a group of panels past the last one,
  // skipped by a guard): built at nb clamped to the last panel (the same
  // panel where it runs), its columns are provably inside N, and the
  // epilogue's reads along them (a bias per column) stay contiguous instead
  // of clamping each index, which GCC does not vectorize (ViT-B/16's FFN:
  // its GELU epilogue ran scalar, 8 ms of its 33 ms GEMM on a Zen 1 core).
  Stmt store_tile(int vb, const Expr& row, const Expr& nb, int c_buffer, const Expr& c_offset,
                  const std::string& tag = "") {
    const int64_t last_panel = ceil_div(geo_.m.cols(), geo_.v.nr) - 1;
    const Stmt tail = store_tile_at(vb, row, min(nb, int_imm(last_panel)), c_buffer, c_offset, false, tag);
    if (full_panels() == 0) return tail;
    return split_full_panels(
        nb, store_tile_at(vb, row, min(nb, int_imm(full_panels() - 1)), c_buffer, c_offset, true, tag), tail);
  }

  // N's full column panels where N has a tail (0: none, or no tail).
  int64_t full_panels() const { return geo_.m.cols() % geo_.v.nr == 0 ? 0 : geo_.m.cols() / geo_.v.nr; }

  // `whole` for the full column panels (nb < full_panels()), `tail` for the
  // last one. `whole` was built at nb clamped to the last full panel: the
  // same panel where it runs, but its columns are then provably below N, so
  // an index that splits a column into (output row, output column) and
  // joins them again simplifies back to the column, without the clamps that
  // the tail needs. A 1x1 conv's B panel and a residual add in the epilogue
  // read contiguous vectors instead of gathering through int64 division
  // (ResNet-50's 28 x 28 and 14 x 14 maps: 784 and 196 columns, NR 32).
  Stmt split_full_panels(const Expr& nb, const Stmt& whole, const Stmt& tail) const {
    const int64_t full = full_panels();
    return make_seq({make_if(lt(nb, int_imm(full)), {whole}), make_if(lt(int_imm(full - 1), nb), {tail})});
  }

  Stmt store_tile_at(int vb, const Expr& row, const Expr& nb, int c_buffer, const Expr& c_offset, bool full,
                     const std::string& tag) {
    const scheduler::Gemm& m = geo_.m;
    const FloatGemmVariant& v = geo_.v;
    const std::string sfx = (full ? "w" : "") + tag;  // the full panels' copy: its own var names
    // The last panel's column loop stops at the last column: a bound, not a
    // guard per column, so the epilogue still vectorizes.
    const Expr columns_here = m.cols() % v.nr == 0 || full
                                  ? int_imm(v.nr)
                                  : simplify(min(int_imm(v.nr), int_imm(m.cols()) - nb * v.nr), bounds_);
    // The C tile's loops at rows from `first`, `rows` of them (transposed:
    // the bound of the vectorized row loop; else each row's guard).
    auto tile_loops = [&](const Expr& first, const Expr& rows, const std::string& tag) {
      const int vi = new_var("i" + tag, v.mr), vj = new_var("j" + tag, v.nr);
      int64_t zero = -1;
      const Expr within = transposed_c_ ? var(vj) * v.mr + var(vi) : var(vi) * v.nr + var(vj);
      const Expr at = is_const_int(c_offset, &zero) && zero == 0 ? within : c_offset + within;
      const Expr acc = load(c_buffer, DType::kF32, {at});
      const Stmt store = gemm_output_store(g_, phases_, m, epilogue_buffers_, output_, bounds_, var(vb),
                                           first + var(vi), nb * v.nr + var(vj), acc);
      // Transposed: one column's rows at a time, contiguous in the output.
      if (transposed_c_)
        return make_for(vj, columns_here, LoopKind::kSerial, {make_for(vi, rows, LoopKind::kVectorized, {store})});
      const Stmt cols = make_for(vj, columns_here, LoopKind::kVectorized, {store});
      return make_for(vi, int_imm(v.mr), LoopKind::kUnrolled, {make_if(lt(first + var(vi), rows), {cols})});
    };
    if (!transposed_c_) return tile_loops(row, int_imm(m.rows()), sfx);
    if (m.rows() % v.mr == 0) return tile_loops(row, int_imm(v.mr), sfx);
    const Stmt tail = tile_loops(row, simplify(min(int_imm(v.mr), int_imm(m.rows()) - row), bounds_), sfx);
    if (m.rows() < v.mr) return tail;  // no full row panel (a 2 x 2 map's 4 pixels)
    // Where M has a tail, the full row panels get their own copy, built at
    // the row clamped to the last full panel's (the same row where it runs):
    // its pixels are then provably below M, so an epilogue operand indexed
    // by the pixel's (y, x) reads row + i again, a vector, instead of a
    // division and a gather per value (ResNet-50's 14 x 14 residual adds).
    const Expr last_full = int_imm(m.rows() - v.mr);
    const Stmt whole = tile_loops(min(row, last_full), int_imm(v.mr), sfx + "r");
    return make_seq({make_if(lt(row, last_full + 1), {whole}), make_if(lt(last_full, row), {tail})});
  }

  // Packing one B panel: the column table's fill (once per panel) and the
  // packing loops.
  struct BPanelPacking {
    int table = -1;          // the column table's buffer, -1: none
    std::vector<Stmt> fill;  // fills it
    Stmt pack;
    // Both, for a panel packed whole.
    Stmt whole() const {
      if (table < 0) return pack;
      std::vector<Stmt> all = fill;
      all.push_back(pack);
      return make_allocate(table, all);
    }
  };

  // panels[offset + k * NR + j] = B(k, nb*NR + j), 0 past N: over all of K
  // (block null), or over k block `block` (k = block * kc + the index
  // packed at k), stepping the blocked reduce axis from block * axis_step.
  // Where N has a tail and the panel needs no column table, the full panels
  // get their own copy of the packing loops (split_full_panels).
  BPanelPacking pack_b(int vb, const Expr& nb, int panels, const Expr& offset, const Expr& block) {
    if (columns_b_) return {-1, {}, pack_b_columns_call(nb, panels, offset, block)};
    BPanelPacking tail = pack_b_at(vb, nb, panels, offset, block, false);
    if (tail.table >= 0) return tail;
    if (full_panels() > 0) {
      const BPanelPacking whole = pack_b_at(vb, min(nb, int_imm(full_panels() - 1)), panels, offset, block, true);
      if (whole.table >= 0) return tail;
      tail.pack = split_full_panels(nb, whole.pack, tail.pack);
    }
    const InteriorPanels& in = interior_panels(vb);
    if (in.var < 0) return tail;
    // Built at a var bounded to the interior panels, then read at nb, which
    // the If keeps inside them.
    bounds_[static_cast<size_t>(in.var)] = {in.first, in.last};
    const Stmt inside = with_var(pack_b_at(vb, var(in.var), panels, offset, block, true, "i").pack, in.var, nb);
    const Expr is_inside = logical_and(lt(int_imm(in.first - 1), nb), lt(nb, int_imm(in.last + 1)));
    tail.pack = make_seq({make_if(is_inside, {inside}), make_if(unary(UnaryOp::kNot, is_inside), {tail.pack})});
    return tail;
  }

  // Interior column panels: where B's value has padding selects or clamped
  // indices but no column table (a conv whose window is its only reduce
  // axis: Conformer's depthwise Conv1d, 31 taps, one filter row), the
  // panels whose every window lies inside the input read it with neither:
  // one contiguous vector load per k instead of a gather per value (the
  // packing, not the tile, took most of those convs' time). The widest
  // range [first, last] of full panels, starting in the first 4 and ending
  // in the last 4, under which B's value has the fewest selects, mins and
  // maxes, if fewer than over all panels; var < 0 where none.
  struct InteriorPanels {
    int var = -1;  // bounded to [first, last] while the interior packing is built
    int64_t first = 0, last = -1;
  };
  static constexpr int64_t kInteriorSearch = 4;

  const InteriorPanels& interior_panels(int vb) {
    if (interior_) return *interior_;
    interior_ = InteriorPanels{};
    const int64_t panels = full_panels() > 0 ? full_panels() : geo_.col_panels;
    if (panels < 3 || !any_node(geo_.m.b, [](const Expr& n) { return n->kind == ExprKind::kSelect; }))
      return *interior_;
    std::vector<Expr> ks;
    Expr k;
    k_loop_vars("q", &ks, &k);
    const int vj = new_var("jq", geo_.v.nr), vn = new_var("nbi", panels);
    const Expr value =
        op_value(geo_.m.b, gemm_op_vars(geo_.m, var(vb), int_imm(0), var(vn) * geo_.v.nr + var(vj), ks));
    auto guards_within = [&](int64_t first, int64_t last) {
      bounds_[static_cast<size_t>(vn)] = {first, last};
      int count = 0;
      visit(simplify(value, bounds_), [&](const Expr& n) {
        count += n->kind == ExprKind::kSelect ||
                 (n->kind == ExprKind::kBinary && (n->binary_op == BinaryOp::kMin || n->binary_op == BinaryOp::kMax));
      });
      return count;
    };
    const int everywhere = guards_within(0, panels - 1);
    int fewest = everywhere;
    for (int64_t first = 0; first < std::min(kInteriorSearch, panels); ++first)
      for (int64_t last = panels - 1; last >= std::max(first, panels - kInteriorSearch); --last) {
        const int count = guards_within(first, last);
        const bool wider = last - first > interior_->last - interior_->first;
        if (count < fewest || (count == fewest && count < everywhere && wider)) {
          fewest = count;
          *interior_ = {vn, first, last};
        }
      }
    bounds_[static_cast<size_t>(vn)] = Interval::range(panels);
    return *interior_;
  }

  // Guarded packing of a padded conv's B (to_guarded_kernel_loads): where
  // the target loads under a mask (masked_loads) and the column table's
  // runs step by one. A run's offsets then stay affine across the padding,
  // and across output rows where input and output rows are as wide (a
  // stride-1 'same' conv), so every run reads one masked vector: clamped,
  // those runs that touched the padding or crossed a row (a quarter of
  // ResNet-50's 3x3 convs over 56x56) gathered. Stride 2 stays clamped: a
  // guarded widened_run needs a second bound in its mask (the run may start
  // before the input), and ResNet-50's stride-2 convs ran 4-6% slower so,
  // the stem too, whose runs at the padding it spared the gathers. Once per
  // kernel: packings that share a column table must agree on its terms.
  bool guarded_b_packing() {
    if (guarded_b_) return *guarded_b_;
    guarded_b_ = false;
    if (!masked_loads()) return false;
    std::vector<Expr> ks;
    Expr k;
    const std::vector<int> k_vars = k_loop_vars("g", &ks, &k);
    const int vj = new_var("jg", geo_.v.nr), vn = new_var("nbg", geo_.col_panels),
              vb = new_var("bg", geo_.m.batches());
    const Expr col = clamp_to_last(var(vn) * geo_.v.nr + var(vj), geo_.m.cols());
    const Expr b = simplify(guarded_op_value(geo_.m.b, gemm_op_vars(geo_.m, var(vb), int_imm(0), col, ks)), bounds_);
    if (!any_node(b, is_guarded_select)) return false;
    const ColumnTable t = column_table(k_vars);
    std::vector<Expr> terms;
    collect_column_terms(reassociate_loads(b, t.hoisted), vj, t, &terms);
    const RunFlags runs = run_flags(terms, t, vj);
    guarded_b_ = runs.groups > 0 && runs.step == 1;
    return *guarded_b_;
  }

  // `tag` distinguishes the var names of several packings of one kernel.
  BPanelPacking pack_b_at(int vb, const Expr& nb, int panels, const Expr& offset, const Expr& block, bool full,
                          const std::string& tag = "", const SharedTable& shared = {}) {
    const FloatGemmVariant& v = geo_.v;
    std::vector<Expr> ks;
    Expr k;
    const std::string sfx = full && tag.empty() ? "w" : tag;  // the full panels' copy: its own var names
    const std::vector<int> k_vars = k_loop_vars("b" + sfx, &ks, &k);
    const int vj = new_var("jb" + sfx, v.nr);
    const Expr col = nb * v.nr + var(vj);
    const bool tail = geo_.m.cols() % v.nr != 0 && !full;
    const Expr b = b_value(gemm_op_vars(geo_.m, var(vb), int_imm(0), full ? col : clamp_to_last(col, geo_.m.cols()), ks));
    Expr value = simplify(tail ? select(lt(col, int_imm(geo_.m.cols())), b, float_imm(0.0)) : b, bounds_);
    // What a column needs besides the first reduce axis (a conv's input
    // channel) goes into a table per panel: its output pixel (div/mod by the
    // output width) and, per window position (kh, kw), its input offset and
    // padding test. The per-k loop then adds the channel's offset and reads.
    // A window over kTableWindow positions keeps only the column terms.
    const ColumnTable t = column_table(k_vars);
    const Expr reassociated = reassociate_loads(value, t.hoisted);
    std::vector<Expr> terms;
    collect_column_terms(reassociated, vj, t, &terms);
    int table = -1;
    std::vector<Stmt> fill;
    Expr fast_value, run_flag;  // the packing's contiguous runs (RunFlags), where the table has offsets
    int run_var = -1, lane_var = -1;  // the packing's run of columns and lane in it
    int64_t run_step = 1;             // between its columns' input offsets
    if (!terms.empty()) {
      const int64_t per_term = t.positions * v.nr;
      const int64_t terms_size = static_cast<int64_t>(terms.size()) * per_term;
      const RunFlags runs = run_flags(terms, t, vj);
      const int64_t table_size = terms_size + runs.size(t);
      // The fill loops: their own vars for the window axes and the column.
      const int vt = new_var("jt" + sfx, v.nr);
      std::vector<Expr> at(static_cast<size_t>(vt) + 1);
      for (int i = 0; i < vt; ++i) at[static_cast<size_t>(i)] = var(i);
      at[static_cast<size_t>(vj)] = var(vt);
      std::vector<int> fill_vars;
      Expr position = int_imm(0);
      for (size_t w = 0; w < t.window.size(); ++w) {
        const int kv = t.window[w];
        fill_vars.push_back(new_var(str_cat("kt", sfx, w), geo_.m.k_extents[t.window_axes[w]]));
        at.resize(std::max(at.size(), static_cast<size_t>(fill_vars.back()) + 1));
        at[static_cast<size_t>(kv)] = var(fill_vars.back());
        position = position * geo_.m.k_extents[t.window_axes[w]] + var(fill_vars.back());
      }
      for (size_t i = 0; i < at.size(); ++i)
        if (!at[i]) at[i] = var(static_cast<int>(i));
      // Entries in int32 where every term computes in it (narrow_index.h);
      // a table the k-outer group shares (its copies filled by another
      // packing of the same terms) narrows alike.
      const TableEntries entries = table_entries(terms, at);
      const std::vector<Expr>& filled = entries.values;
      const DType entry = entries.type;
      table = shared.buffer >= 0 ? shared.buffer
                                 : add_local("columns" + sfx, entry, table_size * shared.copies, kUkernelAlignment);
      TG_CHECK(kernel_.buffers[static_cast<size_t>(table)].dtype == entry, "column table ", sfx,
               ": a shared table of another entry type");
      const Expr base = shared.copy ? shared.copy * table_size : int_imm(0);
      value = replace_column_terms(reassociated, vj, t, terms, table, base, entry, nullptr);
      if (runs.groups > 0) {
        run_step = runs.step;
        run_var = new_var("gb" + sfx, runs.groups);
        lane_var = new_var("lb" + sfx, kRunLanes);
        const Expr first_lane = var(run_var) * kRunLanes;
        fast_value = replace_column_terms(reassociated, vj, t, terms, table, base, entry, &first_lane,
                                          var(lane_var) * runs.step);
        run_flag = load(table, entry, {finalize_indices(base + int_imm(terms_size) + window_position(t) * runs.groups +
                                                            var(run_var), bounds_)});
      }
      std::vector<Stmt> stores;
      for (size_t i = 0; i < terms.size(); ++i) {
        Expr term = filled[i];
        if (term->dtype == DType::kBool) term = cast(entry, term);
        const Expr at_term = int_imm(static_cast<int64_t>(i) * per_term) + position * v.nr + var(vt);
        stores.push_back(make_store(table, finalize_indices(shared.copy ? base + at_term : at_term, bounds_), term));
      }
      Stmt f = make_for(vt, int_imm(v.nr), LoopKind::kVectorized, stores);
      for (size_t w = fill_vars.size(); w-- > 0;)
        f = make_for(fill_vars[w], int_imm(geo_.m.k_extents[t.window_axes[w]]), LoopKind::kSerial, {f});
      fill.push_back(f);
      if (runs.groups > 0) fill.push_back(fill_run_flags(runs, t, table, base, terms_size, entry, sfx));
    }
    // In a k block the blocked axis's loop var counts from the block's
    // first index: the value reads at their sum, the panel stores from 0.
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    const size_t ax = static_cast<size_t>(kb.k_axis);
    std::vector<Expr> extents;
    for (int64_t e : geo_.m.k_extents) extents.push_back(int_imm(e));
    // A Concat along the blocked axis: each of its ranges reads one input.
    const std::vector<KRange> ranges = k_ranges(value, fast_value, k_vars[ax], geo_.m.k_extents[ax]);
    auto row = [&](const Expr& at, const Expr& value_here, const Expr& fast_here) {
      return pack_b_row(at, value_here, fast_here, run_flag, vj, run_var, lane_var, panels);
    };
    if (ranges.size() > 1)
      return {table, fill, pack_b_ranges(ranges, k_vars, k * v.nr + var(vj) + offset, block, sfx, row)};
    if (block) {
      const Expr first = block * kb.axis_step;
      std::vector<Expr> at = vars_as_themselves();
      at[static_cast<size_t>(k_vars[ax])] = first + var(k_vars[ax]);
      value = simplify(substitute_vars(value, at), bounds_);
      if (fast_value) fast_value = simplify(substitute_vars(fast_value, at), bounds_);
      extents[ax] = block_extent(first);
    }
    const Expr panel_at = offset + k * v.nr + var(vj);
    Stmt s = row(panel_at, value, fast_value);
    const std::optional<Stmt> ahead =
        fast_value ? prefetch_panels_ahead(fast_value, lane_var, run_var, k_vars, extents, run_step) : std::nullopt;
    for (size_t i = k_vars.size(); i-- > 0;) {
      std::vector<Stmt> body{s};
      if (ahead && i + 2 == k_vars.size()) body.insert(body.begin(), *ahead);
      s = make_for(k_vars[i], extents[i], LoopKind::kSerial, body);
    }
    return {table, fill, s};
  }

  // A conv's packing over few input rows (a stem conv over the RGB image:
  // 3 channels x 7 or 3 window rows), its columns' runs flagged: before each
  // (channel, window row)'s loop over the window's columns, the input that
  // the panel kPanelsAhead further packs at that row is prefetched into the
  // L1: its first column's offset (the window's first column) plus
  // kPanelsAhead panels of columns at the runs' step, nr x step + the
  // window's width floats. The hardware prefetchers lose the image's rows
  // behind one stream per (channel, window row) advancing a panel at a time
  // (MobileNetV2's 3x3 stem: its packing waited on the input: 11% of the
  // kernel). The prefetch assumes the next panels continue the output row
  // (a row of 112 pixels spans 3.5 panels of 32); where they do not, it is a
  // hint that missed. Only where every (channel, window row)'s lines of one
  // panel fit a quarter of the L1, so that they are still there when read:
  // with many channels they would have left it before their panel comes.
  static constexpr int64_t kPanelsAhead = 2;
  std::optional<Stmt> prefetch_panels_ahead(const Expr& fast_value, int lane_var, int run_var,
                                            const std::vector<int>& k_vars, const std::vector<Expr>& extents,
                                            int64_t step) {
    if (k_vars.size() < 2 || lane_var < 0 || run_var < 0) return std::nullopt;
    const Expr read = lone_read_along(fast_value, lane_var);
    if (!read || read->args.size() != 1) return std::nullopt;
    const int input = static_cast<int>(read->int_value);
    const Buffer& b = kernel_.buffers[static_cast<size_t>(input)];
    int64_t width = 0, rows = 1;
    if (b.scope != MemoryScope::kGlobal || !is_const_int(extents.back(), &width)) return std::nullopt;
    for (size_t i = 0; i + 1 < extents.size(); ++i) {
      int64_t e = 0;
      if (!is_const_int(extents[i], &e)) return std::nullopt;
      rows *= e;
    }
    const int64_t floats = geo_.v.nr * step + width, bytes = floats * int64_t{sizeof(float)};
    if (floats > b.elements || rows * bytes > l1_bytes_ / 4) return std::nullopt;
    std::vector<Expr> at = vars_as_themselves();
    at[static_cast<size_t>(lane_var)] = int_imm(0);
    at[static_cast<size_t>(run_var)] = int_imm(0);
    at[static_cast<size_t>(k_vars.back())] = int_imm(0);
    const Expr first = substitute_vars(read->args[0], at);
    // The last panels' lies past the input: clamped (a Call's pointer stays
    // inside its buffer; a prefetch would not fault).
    const Expr next =
        simplify(min(first + int_imm(kPanelsAhead * geo_.v.nr * step), int_imm(b.elements - floats)), bounds_);
    return make_call(std::string(kPrefetchBytesCallee) + "<3>", {CallArg{input, next}, CallArg{-1, int_imm(bytes)}});
  }

  // An A packing that gathers (a strided conv with the pixels as rows, its
  // window read through the row table: each of a panel's MR values at one
  // channel its own load), walking the input channels (k_vars[0]) one plane
  // apart: before each channel, the lines the channel kChannelsAhead
  // further reads, at the panel's first and last row (`lane` at 0 and at
  // `lanes` - 1) and each window row at its first column, are prefetched
  // into the L1. The hardware prefetchers do not follow gathers: ResNet-50's
  // stride-2 convs on 28 x 28 and 14 x 14 inputs waited on each channel's
  // plane (layer3's 1x1 downsample, relu_89: 56% of its packing and epilogue
  // time in the gathers). The same for B's gathered runs (a conv with the
  // channels as rows, its runs across an output row) gained nothing
  // measurable. Not for fewer than 4 x kChannelsAhead channels nor windows
  // of more than kMaxPrefetchRows rows, nor channels less than a line apart.
  static constexpr int64_t kChannelsAhead = 8;
  static constexpr int64_t kMaxPrefetchRows = 8;
  static constexpr int64_t kLineFloats = 16;  // a 64-byte cache line
  std::optional<Stmt> prefetch_channels_ahead(const Expr& value, const std::vector<int>& k_vars, int lane,
                                              int64_t lanes) {
    if (k_vars.empty() || geo_.m.k_extents[0] < 4 * kChannelsAhead) return std::nullopt;
    std::vector<Expr> reads;
    visit(value, [&](const Expr& n) {
      if (n->kind == ExprKind::kLoad && n->dtype == DType::kF32 &&
          kernel_.buffers[static_cast<size_t>(n->int_value)].scope == MemoryScope::kGlobal)
        reads.push_back(n);
    });
    if (reads.size() != 1 || reads.front()->args.size() != 1 || !uses_var(reads.front(), k_vars[0])) return std::nullopt;
    // Channels a line or more apart (planes), not interleaved (channels last).
    std::vector<Expr> next = vars_as_themselves();
    next[static_cast<size_t>(k_vars[0])] = var(k_vars[0]) + int_imm(1);
    const Expr& index = reads.front()->args[0];
    int64_t plane = 0;
    if (!is_const_int(simplify(substitute_vars(index, next) - index, bounds_), &plane) || plane < kLineFloats)
      return std::nullopt;
    const int input = static_cast<int>(reads.front()->int_value);
    const int64_t elements = kernel_.buffers[static_cast<size_t>(input)].elements;
    const int64_t rows = k_vars.size() >= 3 ? geo_.m.k_extents[1] : 1;
    if (rows > kMaxPrefetchRows) return std::nullopt;
    std::vector<Stmt> calls;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t at_lane : {int64_t{0}, lanes - 1}) {
        std::vector<Expr> at = vars_as_themselves();
        at[static_cast<size_t>(k_vars[0])] = var(k_vars[0]) + int_imm(kChannelsAhead);
        for (size_t i = 1; i < k_vars.size(); ++i)
          at[static_cast<size_t>(k_vars[i])] = int_imm(i == 1 && k_vars.size() >= 3 ? r : 0);
        at[static_cast<size_t>(lane)] = int_imm(at_lane);
        // The last channels' lie past the input: clamped (a Call's pointer
        // stays inside its buffer).
        const Expr ahead = simplify(min(substitute_vars(index, at), int_imm(elements - 1)), bounds_);
        calls.push_back(make_call(std::string(kPrefetchBytesCallee) + "<3>", {CallArg{input, ahead}, CallArg{-1, int_imm(1)}}));
      }
    return make_seq(calls);
  }

  // The blocked axis's indices in the k block starting at `first`.
  Expr block_extent(const Expr& first) {
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    const int64_t whole = geo_.m.k_extents[static_cast<size_t>(kb.k_axis)];
    return whole % kb.axis_step == 0 ? int_imm(kb.axis_step)
                                     : simplify(min(int_imm(kb.axis_step), int_imm(whole) - first), bounds_);
  }

  // The B panel packed by ranges of the blocked reduce axis (k_ranges), one
  // loop per range whose values read that range's input alone, where one
  // loop would evaluate every input's load per value (select is eager in
  // the printed code). In a k block the ranges are cut to the block's
  // indices: each loop runs from its range's start (or the block's) to its
  // end (or the block's), possibly no iterations.
  // panel_at: where k's row starts in the panel; row(at, value, fast_value)
  // packs one; sfx: the packing's var names' tag.
  Stmt pack_b_ranges(const std::vector<KRange>& ranges, const std::vector<int>& k_vars, const Expr& panel_at,
                     const Expr& block, const std::string& sfx,
                     const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& row) {
    const scheduler::FloatGemmBlocking& kb = geo_.blocking;
    const size_t ax = static_cast<size_t>(kb.k_axis);
    const int kv = k_vars[ax];
    const int64_t whole = geo_.m.k_extents[ax];
    const Expr first = block ? block * kb.axis_step : int_imm(0);
    const Expr extent = block ? block_extent(first) : int_imm(whole);
    const int64_t most = block ? kb.axis_step : whole;
    std::vector<Stmt> loops;
    for (size_t r = 0; r < ranges.size(); ++r) {
      // The range in the block's indices: [begin, end) within [0, extent).
      auto local = [&](int64_t at) { return simplify(min(max(int_imm(at) - first, int_imm(0)), extent), bounds_); };
      const Expr begin = local(ranges[r].begin), end = local(ranges[r].end);
      int64_t count = 0;
      if (is_const_int(simplify(end - begin, bounds_), &count) && count <= 0) continue;
      const int vr = new_var(str_cat("kbr", sfx, r), std::min(most, ranges[r].end - ranges[r].begin));
      std::vector<Expr> read_at = vars_as_themselves();
      std::vector<Expr> store_at = read_at;
      read_at[static_cast<size_t>(kv)] = first + begin + var(vr);
      store_at[static_cast<size_t>(kv)] = begin + var(vr);
      auto read = [&](const Expr& e) { return e ? simplify(substitute_vars(e, read_at), bounds_) : e; };
      Stmt s = row(simplify(substitute_vars(panel_at, store_at), bounds_), read(ranges[r].value),
                   read(ranges[r].fast_value));
      for (size_t i = k_vars.size(); i-- > ax + 1;)
        s = make_for(k_vars[i], int_imm(geo_.m.k_extents[i]), LoopKind::kSerial, {s});
      loops.push_back(make_for(vr, simplify(end - begin, bounds_), LoopKind::kSerial, {s}));
    }
    Stmt s = make_seq(loops);
    for (size_t i = ax; i-- > 0;) s = make_for(k_vars[i], int_imm(geo_.m.k_extents[i]), LoopKind::kSerial, {s});
    return s;
  }

  // One k's row of a B panel: panels[panel_at] = value over the panel's
  // columns; with runs (fast_value), per run of kRunLanes columns.
  Stmt pack_b_row(const Expr& panel_at, const Expr& value, const Expr& fast_value, const Expr& run_flag, int vj,
                  int run_var, int lane_var, int panels) {
    const FloatGemmVariant& v = geo_.v;
    Stmt s;
    if (!fast_value) {
      s = make_store(panels, finalize_indices(panel_at, bounds_), value);
      s = make_for(vj, int_imm(v.nr), LoopKind::kVectorized, {s});
    } else {
      // Per run of kRunLanes columns: its flag says whether the table's
      // offsets step by one across it (a plain load), else each is read.
      const int vg = run_var, vl = lane_var;
      std::vector<Expr> at = vars_as_themselves();
      at[static_cast<size_t>(vj)] = var(vg) * kRunLanes + var(vl);
      auto run = [&](const Expr& e) { return simplify(substitute_vars(e, at), bounds_); };
      const Expr index = finalize_indices(run(panel_at), bounds_);
      const Expr flag = binary(BinaryOp::kNe, run_flag, int_imm(0, run_flag->dtype));
      Stmt fast = widened_run(vl, index, run(fast_value), panels);
      if (!fast)
        fast = hoist_run_offsets(
            vl, make_for(vl, int_imm(kRunLanes), LoopKind::kVectorized, {make_store(panels, index, run(fast_value))}));
      const Stmt each = make_for(vl, int_imm(kRunLanes), LoopKind::kVectorized,
                                 {make_store(panels, index, run(value))});
      s = make_for(vg, int_imm(v.nr / kRunLanes), LoopKind::kSerial,
                   {make_if(flag, {fast}), make_if(unary(UnaryOp::kNot, flag), {each})});
    }
    return s;
  }

  // The one float load of `value` whose index uses `lane_var` (a run's read
  // of the conv's input), or null where there are none or several.
  static Expr lone_read_along(const Expr& value, int lane_var) {
    std::vector<Expr> reads;
    visit(value, [&](const Expr& n) {
      if (n->kind == ExprKind::kLoad && n->dtype == DType::kF32 && uses_var(n, lane_var)) reads.push_back(n);
    });
    return reads.size() == 1 ? reads.front() : nullptr;
  }

  // A run whose input offsets step by two (a stride-2 conv), where the
  // target loads under a mask: its 2 x kRunLanes contiguous input values
  // first (a masked load, the mask keeping the last one inside the input,
  // into a local GCC keeps in registers), then every other one of them
  // into the panel (one permute). Written directly, GCC read the run as a
  // half-width permute, a quarter-width load and four scalars, peeling the
  // last lanes because a full two-vector load could read one value past
  // the input (MobileNetV2's stem: half of its kernel's own time). Null
  // where the run reads its input otherwise.
  Stmt widened_run(int lane_var, const Expr& index, const Expr& value, int panels) {
    if (!masked_loads()) return nullptr;
    const Expr read = lone_read_along(value, lane_var);
    if (!read) return nullptr;
    std::vector<Expr> lane0 = vars_as_themselves();
    lane0[static_cast<size_t>(lane_var)] = int_imm(0);
    const Expr first = simplify(substitute_vars(read->args[0], lane0), bounds_);
    if (!same_expr(simplify(read->args[0] - first, bounds_), simplify(var(lane_var) * 2, bounds_))) return nullptr;
    const int n = widened_runs_++;
    const int wide = add_local(str_cat("run_wide", n), DType::kF32, 2 * kRunLanes);
    const int vw = new_var(str_cat("lw", n), 2 * kRunLanes);
    const int input = static_cast<int>(read->int_value);
    const int64_t elements = kernel_.buffers[static_cast<size_t>(input)].elements;
    const Expr at = first + var(vw);
    // Only a run within 2 x kRunLanes of the input's end needs the mask;
    // every other one loads plainly. Tested once per run, that spares the
    // lanes' 64-bit index compares, which took most of ResNet-50's stem's
    // packing time.
    const Expr inside = lt(first + int_imm(2 * kRunLanes - 1), int_imm(elements));
    const Stmt plain = make_for(vw, int_imm(2 * kRunLanes), LoopKind::kVectorized,
                                {make_store(wide, var(vw), load(input, DType::kF32, {at}))});
    const Stmt masked = hoist_run_offsets(
        vw, make_for(vw, int_imm(2 * kRunLanes), LoopKind::kVectorized,
                     {make_store(wide, var(vw),
                                 guarded_select(lt(at, int_imm(elements)), load(input, DType::kF32, {at}),
                                                float_imm(0.0)))}));
    const Stmt fill = make_seq({make_if(inside, {plain}), make_if(unary(UnaryOp::kNot, inside), {masked})});
    const Expr picked = rewrite(value, [&](const Expr& x) -> Expr {
      return same_expr(x, read) ? load(wide, DType::kF32, {var(lane_var) * 2}) : nullptr;
    });
    return make_allocate(wide, {fill, make_for(lane_var, int_imm(kRunLanes), LoopKind::kVectorized,
                                               {make_store(panels, index, picked)})});
  }

  // A guarded run (guarded_b_packing) with its first offsets read into a
  // local before its lane loop: GCC 12 vectorizes no masked load whose
  // address reads memory inside the loop, even where that read is
  // invariant (a scalar copy per lane instead). Only reads of the kernel's
  // own tables move: a read of a tensor may be in bounds only under the
  // guard it would leave. Others as they are.
  Stmt hoist_run_offsets(int lane_var, const Stmt& loop) {
    const Expr& value = loop->body.front()->value;
    if (!any_node(value, is_guarded_select)) return loop;
    std::vector<Expr> firsts;
    visit(value, [&](const Expr& n) {
      if (n->kind != ExprKind::kLoad || !is_integer(n->dtype) || uses_var(n, lane_var) ||
          kernel_.buffers[static_cast<size_t>(n->int_value)].scope != MemoryScope::kLocal)
        return;
      for (const Expr& f : firsts)
        if (same_expr(f, n)) return;
      firsts.push_back(n);
    });
    if (firsts.empty()) return loop;
    const DType entry = firsts.front()->dtype;
    for (const Expr& f : firsts)
      if (f->dtype != entry) return loop;
    const int local = add_local(str_cat("run_first", hoisted_runs_++), entry, static_cast<int64_t>(firsts.size()));
    std::vector<Stmt> body;
    for (size_t i = 0; i < firsts.size(); ++i)
      body.push_back(make_store(local, int_imm(static_cast<int64_t>(i)), firsts[i]));
    const Expr hoisted = rewrite(value, [&](const Expr& n) -> Expr {
      for (size_t i = 0; i < firsts.size(); ++i)
        if (same_expr(firsts[i], n)) return load(local, entry, {int_imm(static_cast<int64_t>(i))});
      return nullptr;
    });
    const Stmt& store = loop->body.front();
    body.push_back(make_for(lane_var, loop->extent, loop->loop, {make_store(store->buffer, store->index, hoisted)}));
    return make_allocate(local, body);
  }

  // The B panel's table layout: the reduce axes it is indexed by (the
  // window) and those whose terms stay in the per-k loop (hoisted: the
  // first axis, or all when the window is large).
  struct ColumnTable {
    std::vector<int> hoisted;      // k vars the table does not depend on
    std::vector<int> window;       // k vars that index it
    std::vector<size_t> window_axes;
    int64_t positions = 1;         // product of the window's extents
  };

  // Window positions a table may hold per column (a 7x7 stem: 49).
  static constexpr int64_t kTableWindow = 64;

  ColumnTable column_table(const std::vector<int>& k_vars) const {
    ColumnTable t;
    int64_t positions = 1;
    for (size_t i = 1; i < k_vars.size(); ++i) positions *= geo_.m.k_extents[i];
    for (size_t i = 0; i < k_vars.size(); ++i) {
      if (i == 0 || positions > kTableWindow) {
        t.hoisted.push_back(k_vars[i]);
      } else {
        t.window.push_back(k_vars[i]);
        t.window_axes.push_back(i);
        t.positions *= geo_.m.k_extents[i];
      }
    }
    return t;
  }

  // Runs in a conv's packing: a stride-1 conv's input offsets step by one
  // across most runs of kRunLanes columns of a panel (those within one
  // input row and off the padding), so they read with a plain vector load
  // instead of a gather (ResNet-50's 3x3 convs over 56x56: 1.63 -> 1.43
  // ms); a stride-2 conv's step by two, a load GCC makes of two vectors
  // and a permute (ResNet-50's 7x7 stem, MobileNetV2's 3x3 one). Per
  // window position and run the table holds a flag after its entries: 1
  // where every offset term of the run's columns is its first column's
  // plus the lane times the step. Padding tests still apply lane by lane;
  // an offset that only clamps (padding) breaks the run, so a run never
  // reads past what its columns read.
  static constexpr int64_t kRunLanes = 16;
  static constexpr int64_t kMaxRunStep = 2;

  struct RunFlags {
    std::vector<size_t> offsets;  // the terms that are offsets (int, not padding tests)
    int64_t groups = 0;           // runs per panel (0: no flags)
    int64_t step = 1;             // between the offsets of a run's neighbouring columns
    int64_t size(const ColumnTable& t) const { return t.positions * groups; }
  };

  // None where the first panel has no run at the window's centre (output
  // rows narrower than a run, strides above kMaxRunStep): there the flags
  // and the branch per run cost and save nothing.
  RunFlags run_flags(const std::vector<Expr>& terms, const ColumnTable& t, int vj) const {
    RunFlags r;
    for (size_t i = 0; i < terms.size(); ++i)
      if (terms[i]->dtype != DType::kBool) r.offsets.push_back(i);
    if (r.offsets.empty() || geo_.v.nr % kRunLanes != 0) return r;
    std::vector<Expr> at(bounds_.size(), int_imm(0));
    for (size_t w = 0; w < t.window.size(); ++w)
      at[static_cast<size_t>(t.window[w])] = int_imm(geo_.m.k_extents[t.window_axes[w]] / 2);
    auto value_at = [&](const Expr& term, int64_t column) -> std::optional<int64_t> {
      at[static_cast<size_t>(vj)] = int_imm(column);
      int64_t v = 0;
      if (!is_const_int(simplify(substitute_vars(term, at), bounds_), &v)) return std::nullopt;
      return v;
    };
    for (int64_t step = 1; step <= kMaxRunStep; ++step)
      for (int64_t first = 0; first + kRunLanes <= geo_.v.nr; first += kRunLanes) {
        bool run = true;
        for (size_t i : r.offsets) {
          const std::optional<int64_t> base = value_at(terms[i], first);
          for (int64_t lane = 1; run && lane < kRunLanes; ++lane) {
            const std::optional<int64_t> v = value_at(terms[i], first + lane);
            run = base && v && *v == *base + lane * step;
          }
        }
        if (run) {
          r.groups = geo_.v.nr / kRunLanes;
          r.step = step;
          return r;
        }
      }
    return r;
  }

  // The window position (kh, kw flattened) of the packing's window vars.
  Expr window_position(const ColumnTable& t) const {
    Expr position = int_imm(0);
    for (size_t w = 0; w < t.window.size(); ++w)
      position = position * geo_.m.k_extents[t.window_axes[w]] + var(t.window[w]);
    return position;
  }

  // flags[position * groups + g] = every offset term i at lane l of run g
  // equals its lane 0's + l * step (after the table's fill).
  Stmt fill_run_flags(const RunFlags& runs, const ColumnTable& t, int table, const Expr& base, int64_t terms_size,
                      DType entry, const std::string& sfx) {
    const int64_t nr = geo_.v.nr;
    const int vp = new_var("pr" + sfx, t.positions), vg = new_var("gr" + sfx, runs.groups),
              vl = new_var("lr" + sfx, kRunLanes);
    auto entry_at = [&](size_t term, const Expr& column) {
      const Expr at = int_imm(static_cast<int64_t>(term) * t.positions * nr) + var(vp) * nr + column;
      return load(table, entry, {finalize_indices(base + at, bounds_)});
    };
    // In the entries' type: a lane's offset minus the run's first (both
    // offsets into one tensor, so the difference fits) against the lane's
    // step. Widened to int64 first, as the sum was, each run's 16 lanes were
    // two halves converted and compared apart: 8% of MobileNetV2's stem
    // kernel (3 channels, so a panel's table costs as much as its packing).
    Expr steps;
    for (size_t i : runs.offsets) {
      const Expr lane = entry == DType::kI64 ? var(vl) * runs.step : cast(entry, var(vl) * runs.step);
      const Expr step = binary(BinaryOp::kEq, entry_at(i, var(vg) * kRunLanes + var(vl)) - entry_at(i, var(vg) * kRunLanes),
                               lane);
      steps = steps ? logical_and(steps, step) : step;
    }
    const Expr flag_at = finalize_indices(base + int_imm(terms_size) + var(vp) * runs.groups + var(vg), bounds_);
    // A min over the lanes (a vectorized reduction), where a branch per lane
    // ran scalar: 49 positions x 2 runs x 16 lanes per panel of the 7x7 stem.
    const Expr flag = load(table, entry, {flag_at});
    const Stmt lanes = make_for(vl, int_imm(kRunLanes), LoopKind::kReduce,
                                {make_store(table, flag_at, min(flag, cast(entry, steps)))});
    return make_for(vp, int_imm(t.positions), LoopKind::kSerial,
                    {make_for(vg, int_imm(runs.groups), LoopKind::kSerial,
                              {make_store(table, flag_at, int_imm(1, entry)), lanes})});
  }

  static bool uses_any(const Expr& e, const std::vector<int>& vars) {
    for (int v : vars)
      if (uses_var(e, v)) return true;
    return false;
  }

  static void summands(const Expr& e, std::vector<Expr>* out) {
    if (e->kind == ExprKind::kBinary && e->binary_op == BinaryOp::kAdd) {
      summands(e->args[0], out);
      summands(e->args[1], out);
    } else {
      out->push_back(e);
    }
  }

  // Each flat load index as (terms of the hoisted axes) + (the rest), so
  // that the rest is one subexpression the table can hold.
  static Expr reassociate_loads(const Expr& e, const std::vector<int>& hoisted) {
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->kind != ExprKind::kLoad || n->args.size() != 1) return nullptr;
      std::vector<Expr> all;
      summands(n->args[0], &all);
      Expr moving, rest;
      for (const Expr& x : all) {
        Expr& into = uses_any(x, hoisted) ? moving : rest;
        into = into ? into + x : x;
      }
      if (!moving || !rest) return nullptr;
      auto copy = std::make_shared<ExprNode>(*n);
      copy->args[0] = moving + rest;
      return copy;
    });
  }

  // Subexpressions of a B value worth a table entry: integer or bool, of
  // the column (vj) and no hoisted axis, and either dividing (div/mod:
  // 64-bit, not vectorized) or depending on the window (padding tests,
  // clamps, offsets). A plain clamp of the column stays inline: read
  // through a table, a contiguous load would become a gather.
  static bool is_column_term(const Expr& e, int vj, const ColumnTable& t) {
    if ((e->dtype != DType::kI64 && e->dtype != DType::kBool) || e->kind != ExprKind::kBinary ||
        !uses_var(e, vj) || uses_any(e, t.hoisted))
      return false;
    return (uses_any(e, t.window) || divides(e)) && !has_load(e);
  }

  // The maximal column terms of e, each once.
  static void collect_column_terms(const Expr& e, int vj, const ColumnTable& t, std::vector<Expr>* terms) {
    if (is_column_term(e, vj, t)) {
      for (const Expr& x : *terms)
        if (same_expr(x, e)) return;
      terms->push_back(e);
      return;
    }
    for (const Expr& a : e->args) collect_column_terms(a, vj, t, terms);
  }

  // e with each of `terms` read from table[base + (t * positions + window) * NR + vj],
  // whose entries are of type `entry` (int64, or int32: widened as read).
  // With run_first (a run of offsets, RunFlags), an offset term is instead
  // its entry at column *run_first plus `lane` (the lane times the run's step).
  Expr replace_column_terms(const Expr& e, int vj, const ColumnTable& t, const std::vector<Expr>& terms,
                            int table, const Expr& base, DType entry, const Expr* run_first,
                            const Expr& lane = nullptr) const {
    return replace_terms(e, terms, [&](size_t i, const Expr& term) {
      const bool offset = run_first && term->dtype != DType::kBool;
      const Expr column = offset ? *run_first : var(vj);
      const Expr at = int_imm(static_cast<int64_t>(i) * t.positions * geo_.v.nr) + window_position(t) * geo_.v.nr +
                      column;
      int64_t zero = -1;
      const Expr read = table_read(term, table, entry, is_const_int(base, &zero) && zero == 0 ? at : base + at);
      return offset ? read + lane : read;
    });
  }

  std::vector<Op> phases_;
  Op gemm_;  // phases_.front()
  FloatGeometry geo_;
  int cores_ = 1;  // the arch's, at least 1: the task grids' cores
  IntGemmTaskGrid grid_;
  int64_t l2_bytes_ = 0;  // l2_bytes_of(arch)
  int64_t l1_bytes_ = 0;  // l1_bytes_of(arch)
  std::optional<InteriorPanels> interior_;  // interior_panels, once per kernel
  std::optional<InPlaceB> in_place_b_;      // find_in_place_b, once per kernel
  std::optional<CallArg> tail_b_;           // N's tail panel, packed where B is read in place
  std::optional<StridedB> columns_b_;       // find_columns_along_k, once per kernel
  bool transposed_c_ = false;               // transposes_c(), once per kernel
  bool reuses_b_ = false;                   // reuses_b_across_row_blocks(), once per kernel
  int b_run_ = -1;                          // its run var (StmtNode::run_var)
  std::optional<bool> guarded_b_;           // guarded_b_packing, once per kernel
  int hoisted_runs_ = 0;                    // hoist_run_offsets' locals so far
  int widened_runs_ = 0;                    // widened_run's locals so far
  std::vector<int> epilogue_buffers_;  // epilogue slot -> kernel buffer (-1: the accumulator)
  int packed_a_ = -1, packed_b_ = -1, output_ = -1;
};

}  // namespace

Kernel lower_float_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& ks, const FloatGemmVariant& v,
                               const FloatGemmPacks& packed, const scheduler::ArchSpec& arch) {
  return FloatGemmLowering(g, ks, v, packed, arch).build();
}

}  // namespace tilegraph::codegen
