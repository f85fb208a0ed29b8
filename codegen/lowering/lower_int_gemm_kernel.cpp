#include "codegen/lowering/lower_int_gemm_kernel.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "codegen/lowering/gemm_coords.h"
#include "codegen/lowering/int_gemm_task_grid.h"
#include "codegen/lowering/kernel_builder.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/int_math.h"
#include "compiler/ir/simplify.h"
#include "scheduler/int_gemm.h"

namespace tilegraph::codegen {

namespace {

// The GEMM's shape in micro-kernel terms.
struct Geometry {
  scheduler::Gemm m;
  IntGemmVariant v;
  int64_t k_groups = 0;      // ceil(K / KU)
  int64_t col_panels = 0;    // ceil(N / NR)
  int64_t a_panel = 0;       // values of one packed A panel (MR rows), padded to 64 bytes
  int64_t b_panel = 0;       // bytes of one packed B panel (NR columns), padded to 64
  int64_t panels = 0;          // ceil(M / MR)
  int a_offset = 0;          // added to A's values when packing (uint8 <-> int8)
  int b_offset = 0;
  DType a_packed = DType::kI8;

  Geometry(const scheduler::Gemm& gemm, const IntGemmVariant& variant) : m(gemm), v(variant) {
    k_groups = (m.k + v.ku - 1) / v.ku;
    col_panels = (m.cols() + v.nr - 1) / v.nr;
    a_panel = round_up(k_groups * v.mr * v.ku * v.a_bytes, 64) / v.a_bytes;
    b_panel = round_up(k_groups * v.nr * v.ku, 64);
    panels = (m.rows() + v.mr - 1) / v.mr;
    const bool a_u8 = m.a->dtype == DType::kU8;
    // int16 holds A's uint8 or int8 values as they are; bytes shift them by
    // 128 into the variant's signedness.
    a_offset = v.a_bytes == 2 ? 0 : v.a_unsigned ? (a_u8 ? 0 : 128) : (a_u8 ? -128 : 0);
    b_offset = m.b->dtype == DType::kU8 ? -128 : 0;
    a_packed = v.a_bytes == 2 ? DType::kI16 : v.a_unsigned ? DType::kU8 : DType::kI8;
  }
  int64_t a_panel_bytes() const { return a_panel * v.a_bytes; }
  std::vector<Expr> coords(const Expr& b, const Expr& r, const Expr& c) const { return gemm_coords(m, b, r, c); }
  std::vector<Expr> op_vars(const Expr& b, const Expr& r, const Expr& c, const Expr& k) const {
    return gemm_op_vars(m, b, r, c, k);
  }
};

}  // namespace

PackedWeights prepack_int_gemm_weights(Graph& g, const scheduler::KernelSchedule& ks,
                                       const IntGemmVariant& variant) {
  const Op gemm = gemm_kernel_phases(g, ks, "an int GEMM kernel").front();
  const auto match = scheduler::match_int_gemm(g, gemm);
  TG_CHECK(match.has_value(), "kernel ", gemm.name, " is not an int GEMM");
  if (!scheduler::reads_only_constants(g, gemm, match->b)) return {};
  const Geometry geo(*match, variant);
  const int64_t nr = variant.nr, ku = variant.ku;
  const int64_t panel_values = geo.k_groups * nr * ku;
  // packed[e]: e = (bb * col_panels + panel) * b_panel + (group * NR + j) * KU + u
  Op pack;
  pack.name = gemm.name + "_pack_b";
  pack.inputs = gemm.inputs;
  const Expr e = var(0);
  const Expr panel_flat = floordiv(e, geo.b_panel), within = floormod(e, geo.b_panel);
  const Expr bb = floordiv(panel_flat, geo.col_panels), panel = floormod(panel_flat, geo.col_panels);
  // within = group * NR * KU + ((u / KB) * NR + j) * KB + u % KB (KB: the
  // variant's run of one column's bytes, KU but for AMX).
  const int64_t kb = variant.b_run();
  const Expr in_group = floormod(within, nr * ku);
  const Expr group = floordiv(within, nr * ku), j = floormod(floordiv(in_group, kb), nr);
  const Expr u = kb == ku ? floormod(within, ku) : floordiv(in_group, nr * kb) * kb + floormod(in_group, kb);
  const Expr k = group * ku + u, n = panel * nr + j;
  const Expr value = substitute_vars(match->b, geo.op_vars(bb, int_imm(0), n, k));
  const Expr valid = logical_and(logical_and(lt(within, int_imm(panel_values)), lt(k, int_imm(match->k))),
                                 lt(n, int_imm(match->cols())));
  pack.body = select(valid, cast(DType::kI8, cast(DType::kI32, value) + int_imm(geo.b_offset, DType::kI32)),
                     int_imm(0, DType::kI8));
  Tensor packed_t;
  packed_t.name = pack.name;
  packed_t.dtype = DType::kI8;
  packed_t.shape = {geo.m.batches() * geo.col_panels * geo.b_panel};
  packed_t.kind = TensorKind::kConstant;
  pack.output = g.add_tensor(packed_t);
  drop_unused_inputs(pack);
  auto bytes = evaluate_op(g, pack);
  // Column sums of the packed values, for the zero-point correction.
  std::vector<uint8_t> sums(static_cast<size_t>(geo.m.batches() * geo.col_panels * nr * 4));
  for (int64_t p = 0; p < geo.m.batches() * geo.col_panels; ++p)
    for (int64_t jj = 0; jj < nr; ++jj) {
      int32_t s = 0;
      for (int64_t gg = 0; gg < geo.k_groups; ++gg)
        for (int64_t uu = 0; uu < ku; ++uu)
          s += static_cast<int8_t>((*bytes)[static_cast<size_t>(p * geo.b_panel + variant.b_offset(gg, jj, uu))]);
      std::memcpy(&sums[static_cast<size_t>((p * nr + jj) * 4)], &s, 4);
    }
  g.tensor(pack.output).data = bytes;
  Tensor colsum_t;
  colsum_t.name = gemm.name + "_colsum_b";
  colsum_t.dtype = DType::kI32;
  colsum_t.shape = {geo.m.batches() * geo.col_panels * nr};
  colsum_t.kind = TensorKind::kConstant;
  colsum_t.data = std::make_shared<const std::vector<uint8_t>>(std::move(sums));
  return {pack.output, g.add_tensor(colsum_t)};
}

namespace {

// Packing one B panel at run time (B not a constant: q @ k^T), in units of
// one micro-kernel call on a packed A panel: a byte gather per packed value
// against MR*NR/16-ish vector MACs per k group.
constexpr double kRuntimeBPanelCost = 8;

// A row block's packed A panels up to this size are a stack array.
constexpr int64_t kStackPanelBytes = 65536;

class IntGemmLowering : KernelBuilder {
 public:
  IntGemmLowering(const Graph& g, const scheduler::KernelSchedule& ks, const IntGemmVariant& v,
                  const PackedWeights& packed, const scheduler::ArchSpec& arch)
      : KernelBuilder(g), phases_(gemm_kernel_phases(g, ks, "an int GEMM kernel")), gemm_(phases_.front()),
        geo_(*scheduler::match_int_gemm(g, gemm_), v), packed_(packed),
        // Row blocks' packed panels within the L2 share of int_gemm_blocking;
        // how many blocks, and column chunks, balanced_int_gemm_grid decides
        // for the core count.
        blocking_(scheduler::int_gemm_blocking(arch, geo_.k_groups, v.nr, v.ku, geo_.a_panel_bytes())),
        grid_(balanced_int_gemm_grid(geo_.m.batches(), geo_.panels, blocking_.max_row_panels, geo_.col_panels,
                                     packed.panels >= 0 ? 0.0 : kRuntimeBPanelCost,
                                     std::max(1, arch.compute_units))) {
    epilogue_buffers_ = begin_gemm_kernel(phases_, ks, "qgemm_" + v.name);
    if (packed_.panels >= 0) {
      panels_ = add_global(packed_.panels, false);
      colsums_ = add_global(packed_.colsums, false);
    }
    output_ = add_global(phases_.back().output, true);
  }

  Kernel build() {
    const scheduler::Gemm& m = geo_.m;
    const IntGemmVariant& v = geo_.v;
    kernel_.flops = gemm_flops(m.batches(), m.rows(), m.cols(), m.k);
    const int vb = new_var("b", m.batches()), vm = new_var("mb", grid_.row_blocks);
    const Expr row0 = var(vm) * (grid_.row_panels * v.mr);
    const int64_t a_block_bytes = grid_.row_panels * geo_.a_panel_bytes();
    const int apack = add_local("a_panels", geo_.a_packed, grid_.row_panels * geo_.a_panel, kUkernelAlignment);
    // A row block packed once for its chunks at one thread
    // (a_reuse_run_var; ViT-B/16's 197-row GEMMs in 2 chunks at one thread:
    // each packed A twice). The row sums, on the stack, are recomputed.
    const int a_run = a_reuse_run_var(m.batches(), grid_.row_blocks, grid_.chunks);
    // Past 64 KiB, or kept for the next task, the row block's panels live in
    // the thread's heap scratch (tg_block_scratch), not on its stack.
    if (a_block_bytes > kStackPanelBytes || a_run >= 0) kernel_.buffers[static_cast<size_t>(apack)].scratch = true;
    const int rowsum = add_local("a_rowsums", DType::kI32, grid_.row_panels * v.mr, kUkernelAlignment);
    // With kc blocks, every A panel of the row block keeps its C tile across
    // the blocks (the epilogue runs after the last one).
    const bool kc_blocks = blocking_.k_blocks > 1;
    const int64_t tile_values = v.mr * v.nr;
    const int ctile = add_local("c_tile", DType::kI32, kc_blocks ? grid_.row_panels * tile_values : tile_values,
                                kUkernelAlignment);

    // Column panels in chunks (each packs its own copy of the A block, unless
    // the same thread packed it for the previous chunk).
    const int64_t chunk_panels = grid_.chunk_panels;
    const int vc = new_var("nc", grid_.chunks);
    std::vector<Stmt> block{unless_packed_for_previous_chunk(a_run, vc, pack_a(vb, row0, apack)),
                            row_sums(vb, row0, rowsum)};
    const int vnl = new_var("nb", chunk_panels);
    const Expr nb = var(vc) * chunk_panels + var(vnl);
    CallArg b_arg;
    Expr colsum;  // of column j (var) of panel vn
    const int vj = new_var("j", v.nr);
    std::vector<Stmt> panel_body;
    int bpack = -1, bsum = -1;
    if (panels_ >= 0) {
      const Expr bb = var(vb);
      b_arg = {panels_, (bb * geo_.col_panels + nb) * geo_.b_panel};
      colsum = load(colsums_, DType::kI32, {(bb * geo_.col_panels + nb) * v.nr + var(vj)});
    } else {
      bpack = add_local("b_panel", DType::kI8, geo_.b_panel, kUkernelAlignment);
      bsum = add_local("b_colsums", DType::kI32, v.nr, kUkernelAlignment);
      panel_body.push_back(pack_b(vb, nb, bpack));
      panel_body.push_back(col_sums(bpack, bsum));
      b_arg = {bpack, int_imm(0)};
      colsum = load(bsum, DType::kI32, {var(vj)});
    }
    // The epilogue of panel `vp`'s C tile: right after the panel's last
    // micro-kernel call, while the tile is in L1 (with kc blocks, the whole
    // row block's tiles, 25 KB for 197 rows, had left it by the time a loop
    // after the blocks read them back).
    const int vi = new_var("i", v.mr);
    const PanelStmt finish_tile = [&](int vp) -> Stmt {
      const Expr row = row0 + var(vp) * v.mr + var(vi), col = nb * v.nr + var(vj);
      // za' and zb' include the packing offsets.
      const Expr za = op_value(gemm_, geo_.m.za, geo_.op_vars(var(vb), clamp_to_last(row, m.rows()), int_imm(0),
                                                               int_imm(0))) + int_imm(geo_.a_offset, DType::kI32);
      const Expr zb = op_value(gemm_, geo_.m.zb, geo_.op_vars(var(vb), int_imm(0), clamp_to_last(col, m.cols()),
                                                               int_imm(0))) + int_imm(geo_.b_offset, DType::kI32);
      const Expr c_base = kc_blocks ? var(vp) * tile_values : int_imm(0);
      const Expr c = load(ctile, DType::kI32, {c_base + var(vi) * v.nr + var(vj)});
      const Expr rs = load(rowsum, DType::kI32, {var(vp) * v.mr + var(vi)});
      const Expr acc = c - zb * rs - za * colsum + int_imm(m.k, DType::kI32) * za * zb;
      // Guards only where a dimension has a tail; without one the column loop
      // (the epilogue: requantize, scale, bias) vectorizes.
      const bool col_tail = m.cols() % v.nr != 0;
      Stmt store = output_store(var(vb), row, col, acc);
      Stmt cols;
      if (col_tail) {
        // The last panel's loop stops at the last column: a bound, not a
        // guard per column, so the epilogue still vectorizes (with a guard,
        // q @ k^T's 197 columns requantized every output in scalar code).
        const Expr columns_here = min(int_imm(v.nr), int_imm(m.cols()) - nb * v.nr);
        cols = make_for(vj, simplify(columns_here, bounds_), LoopKind::kVectorized, {store});
      } else {
        cols = split_table_lookup(store, vj);
        if (!cols) cols = make_for(vj, int_imm(v.nr), LoopKind::kVectorized, {store});
      }
      return make_for(vi, int_imm(v.mr), LoopKind::kUnrolled, {make_if(lt(row, int_imm(m.rows())), {cols})});
    };
    const RowPanels rows{row0, grid_.row_panels, v.mr, m.rows()};
    if (kc_blocks) {
      panel_body.push_back(kc_block_calls(rows, apack, b_arg, ctile, finish_tile));
    } else {
      const int vp = new_var("p", grid_.row_panels);
      Stmt call = make_call("tg_qgemm::tile", {{-1, int_imm(geo_.k_groups)},
                                               {apack, var(vp) * geo_.a_panel},
                                               b_arg,
                                               {ctile, int_imm(0)}});
      panel_body.push_back(row_panel_loop(vp, rows, {call, finish_tile(vp)}));
    }
    Stmt in_range = geo_.col_panels % chunk_panels == 0 ? make_seq(panel_body)
                                                        : make_if(lt(nb, int_imm(geo_.col_panels)), panel_body);
    Stmt panels = make_for(vnl, int_imm(chunk_panels), LoopKind::kSerial, {in_range});
    if (bpack >= 0) panels = make_allocate(bpack, {make_allocate(bsum, {panels})});
    block.push_back(make_allocate(ctile, {panels}));
    Stmt body = make_allocate(apack, {make_allocate(rowsum, block)});
    // Chunks outside row blocks: a static split of (batch, chunk, row block)
    // gives each core whole chunks of every row block, equal work even when
    // the last row block is short.
    body = make_for(vm, int_imm(grid_.row_blocks), LoopKind::kSerial, {body});
    body = make_for(vc, int_imm(grid_.chunks), LoopKind::kSerial, {body});
    kernel_.body = make_parallel_for(vb, int_imm(m.batches()), {body}, 3, a_run);
    return std::move(kernel_);
  }

 private:
  // An expression of the gemm op (its loads are kernel buffers = its slots) at `vars`.
  Expr op_value(const Op& op, const Expr& e, const std::vector<Expr>& vars) {
    return finalize_indices(to_kernel_loads(g_, op, substitute_vars(e, vars), bounds_), bounds_);
  }

  // The micro-kernel calls of one B panel (b_arg: its first byte) over the
  // row block's A panels, kc block by kc block (k_block_calls). Panel p
  // accumulates into c_tile[p * MR * NR ..]: `tile` for the first block,
  // `tile_accumulate` for the others.
  Stmt kc_block_calls(const RowPanels& rows, int apack, const CallArg& b_arg, int ctile,
                      const PanelStmt& finish_tile) {
    const IntGemmVariant& v = geo_.v;
    const int64_t kc = blocking_.kc_groups, tile_values = v.mr * v.nr;
    auto call = [&](int vp, const Expr& kb, const Expr& accumulate) {
      int64_t adds = 0;
      is_const_int(accumulate, &adds);
      const Expr groups =
          adds ? simplify(min(int_imm(kc), int_imm(geo_.k_groups) - kb * kc), bounds_) : int_imm(kc);
      return make_call(adds ? "tg_qgemm::tile_accumulate" : "tg_qgemm::tile",
                       {{-1, groups},
                        {apack, var(vp) * geo_.a_panel + kb * (kc * v.mr * v.ku)},
                        {b_arg.buffer, b_arg.value + kb * (kc * v.nr * v.ku)},
                        {ctile, var(vp) * tile_values}});
    };
    return k_block_calls({blocking_.k_blocks, true, "kb", "pk"}, rows, nullptr, call, nullptr, nullptr, finish_tile);
  }

  // a_panels[(p * a_panel) + (g * MR + i) * KU + u] = A(row0 + p*MR + i, g*KU + u) + offset
  Stmt pack_a(int vb, const Expr& row0, int apack) {
    const IntGemmVariant& v = geo_.v;
    const int vp = new_var("pa", grid_.row_panels), vi = new_var("ia", v.mr), vu = new_var("ua", v.ku);
    // The k groups as nested loops over the reduce axes (the last one in
    // steps of KU) when KU divides it, so that a convolution's window
    // coordinates stay affine instead of a div/mod of a flat k per byte.
    const std::vector<int64_t>& ke = geo_.m.k_extents;
    std::vector<int> group_vars;
    Expr group;
    if (ke.size() > 1 && ke.back() % v.ku == 0) {
      group = int_imm(0);
      for (size_t a = 0; a < ke.size(); ++a) {
        const int64_t extent = a + 1 == ke.size() ? ke[a] / v.ku : ke[a];
        group_vars.push_back(new_var(str_cat("ga", a), extent));
        group = group * extent + var(group_vars.back());
      }
    } else {
      group_vars.push_back(new_var("ga", geo_.k_groups));
      group = var(group_vars.back());
    }
    const Expr row = clamp_to_last(row0 + var(vp) * v.mr + var(vi), geo_.m.rows());
    const Expr k = group * v.ku + var(vu);
    const Expr a = op_value(gemm_, geo_.m.a, geo_.op_vars(var(vb), row, int_imm(0), clamp_to_last(k, geo_.m.k)));
    Expr value = cast(geo_.a_packed, cast(DType::kI32, a) + int_imm(geo_.a_offset, DType::kI32));
    if (geo_.k_groups * v.ku != geo_.m.k) value = select(lt(k, int_imm(geo_.m.k)), value, int_imm(0, geo_.a_packed));
    const Expr index = var(vp) * geo_.a_panel + (group * v.mr + var(vi)) * v.ku + var(vu);
    // Rows outside k: each row's coordinates (a conv's output pixel) are
    // computed once per row, and the source is read along k.
    Stmt s = make_store(apack, finalize_indices(index, bounds_), value);
    s = make_for(vu, int_imm(v.ku), LoopKind::kSerial, {s});
    for (size_t g = group_vars.size(); g-- > 0;)
      s = make_for(group_vars[g], int_imm(bounds_[static_cast<size_t>(group_vars[g])].hi + 1), LoopKind::kSerial, {s});
    s = make_for(vi, int_imm(v.mr), LoopKind::kSerial, {s});
    return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {s});
  }

  // Sums along k of each packed row (of each packed column for B).
  Stmt sums(int packed, DType packed_type, int sum_buffer, int64_t panels, int64_t panel_bytes, int64_t lanes,
            const std::string& tag) {
    const IntGemmVariant& v = geo_.v;
    const int vp = new_var("p" + tag, panels), vl = new_var("l" + tag, lanes);
    const int vg = new_var("g" + tag, geo_.k_groups), vu = new_var("u" + tag, v.ku);
    const Expr slot = var(vp) * lanes + var(vl);
    // A's rows are runs of KU bytes; B's columns runs of KB (b_offset).
    const int64_t run = tag == "c" ? v.b_run() : v.ku;
    const Expr within = run == v.ku ? (var(vg) * lanes + var(vl)) * v.ku + var(vu)
                                    : var(vg) * (lanes * v.ku) + (floordiv(var(vu), run) * lanes + var(vl)) * run +
                                          floormod(var(vu), run);
    const Expr value = load(packed, packed_type, {var(vp) * panel_bytes + within});
    // Lanes innermost: every k adds into all of a panel's sums at once, a
    // vector add, where a k loop per lane was a serial chain through memory.
    Stmt add = make_store(sum_buffer, slot, load(sum_buffer, DType::kI32, {slot}) + cast(DType::kI32, value));
    add = make_for(vl, int_imm(lanes), LoopKind::kVectorized, {add});
    add = make_for(vu, int_imm(v.ku), LoopKind::kSerial, {add});
    add = make_for(vg, int_imm(geo_.k_groups), LoopKind::kSerial, {add});
    const Stmt zero = make_for(vl, int_imm(lanes), LoopKind::kVectorized,
                               {make_store(sum_buffer, slot, int_imm(0, DType::kI32))});
    return make_for(vp, int_imm(panels), LoopKind::kSerial, {zero, add});
  }
  // Each packed row's sum along k, read from the source in k order (the
  // packed layout interleaves rows every KU bytes): the innermost reduce
  // axis is a vectorized reduction (LoopKind::kReduce).
  Stmt row_sums(int vb, const Expr& row0, int rowsum) {
    const IntGemmVariant& v = geo_.v;
    const int vp = new_var("pr", grid_.row_panels), vi = new_var("lr", v.mr);
    const std::vector<int64_t>& ke = geo_.m.k_extents;
    std::vector<int> k_vars;
    Expr k = int_imm(0);
    for (size_t a = 0; a < ke.size(); ++a) {
      k_vars.push_back(new_var(str_cat("kr", a), ke[a]));
      k = k * ke[a] + var(k_vars.back());
    }
    const Expr row = clamp_to_last(row0 + var(vp) * v.mr + var(vi), geo_.m.rows());
    const Expr a = op_value(gemm_, geo_.m.a, geo_.op_vars(var(vb), row, int_imm(0), k));
    const Expr packed = cast(geo_.a_packed, cast(DType::kI32, a) + int_imm(geo_.a_offset, DType::kI32));
    const Expr slot = var(vp) * v.mr + var(vi);
    Stmt add = make_store(rowsum, slot, load(rowsum, DType::kI32, {slot}) + cast(DType::kI32, packed));
    for (size_t a = k_vars.size(); a-- > 0;)
      add = make_for(k_vars[a], int_imm(ke[a]), a + 1 == k_vars.size() ? LoopKind::kReduce : LoopKind::kSerial, {add});
    Stmt lane = make_for(vi, int_imm(v.mr), LoopKind::kSerial, {make_store(rowsum, slot, int_imm(0, DType::kI32)), add});
    return make_for(vp, int_imm(grid_.row_panels), LoopKind::kSerial, {lane});
  }
  Stmt col_sums(int bpack, int bsum) { return sums(bpack, DType::kI8, bsum, 1, geo_.b_panel, geo_.v.nr, "c"); }

  // b_panel[(g * NR + j) * KU + u] = B(g*KU + u, nb*NR + j) + offset
  Stmt pack_b(int vb, const Expr& nb, int bpack) {
    const IntGemmVariant& v = geo_.v;
    const int vg = new_var("gb", geo_.k_groups), vj = new_var("jb", v.nr), vu = new_var("ub", v.ku);
    const Expr col = nb * v.nr + var(vj), k = var(vg) * v.ku + var(vu);
    const Expr b = op_value(gemm_, geo_.m.b, geo_.op_vars(var(vb), int_imm(0), clamp_to_last(col, geo_.m.cols()),
                                                           clamp_to_last(k, geo_.m.k)));
    Expr value = cast(DType::kI8, cast(DType::kI32, b) + int_imm(geo_.b_offset, DType::kI32));
    value = select(logical_and(lt(k, int_imm(geo_.m.k)), lt(col, int_imm(geo_.m.cols()))), value,
                   int_imm(0, DType::kI8));
    const int64_t run = v.b_run();
    const Expr at = run == v.ku ? (var(vg) * v.nr + var(vj)) * v.ku + var(vu)
                                : var(vg) * (v.nr * v.ku) + (floordiv(var(vu), run) * v.nr + var(vj)) * run +
                                      floormod(var(vu), run);
    Stmt s = make_store(bpack, finalize_indices(at, bounds_), simplify(value, bounds_));
    s = make_for(vu, int_imm(v.ku), LoopKind::kSerial, {s});
    s = make_for(vj, int_imm(v.nr), LoopKind::kSerial, {s});
    return make_for(vg, int_imm(geo_.k_groups), LoopKind::kSerial, {s});
  }

  // out[b, row, col] = epilogue(acc), or acc itself.
  // An epilogue ending in a table lookup (tabulate_byte_functions: a
  // quantized GELU) gathers bytes, which the compiler does not vectorize, and
  // then leaves the whole requantization before it scalar too. Split it: one
  // vectorized loop computes the row's NR table positions, a second gathers.
  // Null when the store has no lookup.
  Stmt split_table_lookup(const Stmt& store, int vj) {
    Expr lookup;
    visit(store->value, [&](const Expr& e) {
      if (!lookup && e->kind == ExprKind::kLoad && e->args.size() == 1 && has_indirect_load(e)) lookup = e;
    });
    if (!lookup) return nullptr;
    const IntGemmVariant& v = geo_.v;
    const int positions = add_local("positions", DType::kI32, v.nr, kUkernelAlignment);
    const Stmt compute = make_for(vj, int_imm(v.nr), LoopKind::kVectorized,
                                  {make_store(positions, var(vj), cast(DType::kI32, lookup->args[0]))});
    const Expr gathered = load(static_cast<int>(lookup->int_value), lookup->dtype,
                               {cast(DType::kI64, load(positions, DType::kI32, {var(vj)}))});
    const Expr value = rewrite(store->value, [&](const Expr& e) -> Expr { return e == lookup ? gathered : nullptr; });
    const Stmt gather = make_for(vj, int_imm(v.nr), LoopKind::kSerial, {make_store(store->buffer, store->index, value)});
    return make_allocate(positions, {compute, gather});
  }

  Stmt output_store(const Expr& b, const Expr& row, const Expr& col, const Expr& acc) {
    return gemm_output_store(g_, phases_, geo_.m, epilogue_buffers_, output_, bounds_, b, row, col, acc);
  }

  std::vector<Op> phases_;
  Op gemm_;  // phases_.front()
  Geometry geo_;
  PackedWeights packed_;
  std::vector<int> epilogue_buffers_;  // epilogue slot -> kernel buffer (-1: the accumulator)
  int panels_ = -1, colsums_ = -1, output_ = -1;
  scheduler::IntGemmBlocking blocking_;
  IntGemmTaskGrid grid_;
};

}  // namespace

Kernel lower_int_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& ks, const IntGemmVariant& v,
                             const PackedWeights& packed, const scheduler::ArchSpec& arch) {
  return IntGemmLowering(g, ks, v, packed, arch).build();
}

}  // namespace tilegraph::codegen
