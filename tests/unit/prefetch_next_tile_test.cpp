// prefetch_next_tile: a CPU block kernel's later phase that re-reads an input
// prefetches the next tile's run of it (codegen/lowering/prefetch_next_tile.h).
#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/lowering/lower_block_kernel.h"
#include "codegen/lowering/prefetch_next_tile.h"
#include "codegen/printing/c_printer.h"
#include "compiler/ir/simplify.h"
#include "driver/pipeline.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/block_plan.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/kernel_calls.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::calls_in;
using testing::OnnxModelBuilder;

constexpr int64_t kRows = 8, kCols = 256, kTileRows = 2;
constexpr int64_t kL1 = 48 << 10, kL2 = 2 << 20;

// Softmax over x [8, 256] in tiles of 2 rows (4 tiles): a max phase that
// reads x, an exp phase that reads it again, a sum and a normalize.
codegen::Kernel softmax_kernel() {
  OnnxModelBuilder b(17);
  b.input("x", 1, {kRows, kCols}).output("y");
  OnnxModelBuilder::attr_int(b.node("Softmax", {"x"}, {"y"}), "axis", -1);
  const std::string path = testing::test_model_path("prefetch_next_tile", "softmax");
  b.save(path);
  const Graph g = driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
  const scheduler::ArchSpec arch = scheduler::host_arch();
  scheduler::KernelSchedule k = scheduler::schedule_tile_graph(g, arch, {}).kernels.at(0);
  EXPECT_EQ(k.kind, scheduler::KernelKind::kBlock);
  k.config.tile = {kTileRows, kCols};
  return codegen::lower_block_kernel(g, k, scheduler::plan_block_kernel(g, k, k.config, arch));
}

// The variable of the loop around the call (the row loop) and of the loop
// right after it (the run it prefetches for).
struct Placement {
  int row_var = -1, run_var = -1;
};

bool find_call(const codegen::Stmt& s, int enclosing, Placement* p) {
  if (!s) return false;
  const int here = s->kind == codegen::StmtKind::kFor ? s->var : enclosing;
  for (size_t i = 0; i < s->body.size(); ++i) {
    if (s->body[i]->kind == codegen::StmtKind::kCall) {
      p->row_var = here;
      if (i + 1 < s->body.size() && s->body[i + 1]->kind == codegen::StmtKind::kFor) p->run_var = s->body[i + 1]->var;
      return true;
    }
    if (find_call(s->body[i], here, p)) return true;
  }
  return false;
}

int64_t value_at(const Expr& e, const codegen::Kernel& k, const std::vector<std::pair<int, int64_t>>& at) {
  std::vector<Expr> values(k.var_names.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] = var(static_cast<int>(i));
  for (const auto& [id, v] : at) values[static_cast<size_t>(id)] = int_imm(v);
  int64_t out = 0;
  EXPECT_TRUE(is_const_int(simplify(substitute_vars(e, values), {}), &out)) << to_string(e);
  return out;
}

TEST(PrefetchNextTile, TheExpPhasePrefetchesTheNextTilesRowIntoTheL1) {
  const codegen::Kernel before = softmax_kernel();
  std::vector<codegen::Stmt> none;
  calls_in(before.body, &none);
  ASSERT_TRUE(none.empty());

  const codegen::Kernel k = codegen::prefetch_next_tile(before, kL1, kL2);
  codegen::verify(k);
  std::vector<codegen::Stmt> calls;
  calls_in(k.body, &calls);
  ASSERT_EQ(calls.size(), 1u) << "one input, prefetched once per row of the first phase re-reading it";
  EXPECT_EQ(calls[0]->callee, "tg_prefetch_bytes<3>") << "2 rows of 1 KiB fit half the L1";
  ASSERT_EQ(calls[0]->args.size(), 2u);
  EXPECT_EQ(calls[0]->args[0].buffer, 0) << "x";
  int64_t bytes = 0;
  ASSERT_TRUE(is_const_int(calls[0]->args[1].value, &bytes));
  EXPECT_EQ(bytes, kCols * 4);

  // Row r of tile t prefetches row r of tile t + 1; the last tile's stays
  // inside x.
  Placement p;
  ASSERT_TRUE(find_call(k.body, -1, &p));
  ASSERT_GE(p.row_var, 0);
  ASSERT_GE(p.run_var, 0);
  const Expr& offset = calls[0]->args[0].value;
  int tile_var = -1;
  for (size_t v = 0; v < k.var_names.size(); ++v)
    if (k.var_names[v] == "b0") tile_var = static_cast<int>(v);
  ASSERT_GE(tile_var, 0);
  for (int64_t t = 0; t < kRows / kTileRows; ++t)
    for (int64_t r = 0; r < kTileRows; ++r) {
      const int64_t want = std::min((t + 1) * kTileRows * kCols + r * kCols, kRows * kCols - kCols);
      EXPECT_EQ(value_at(offset, k, {{tile_var, t}, {p.row_var, r}}), want) << "tile " << t << " row " << r;
    }

  // Printed: after the max phase's reduction, before the exp loop.
  const std::string text = codegen::print_kernel(k, codegen::cpu_dialect());
  const size_t max_at = text.find("reduction(max"), call_at = text.find("tg_prefetch_bytes<3>(in0 + "),
               exp_at = text.find("tg_exp(");
  ASSERT_NE(call_at, std::string::npos) << text;
  EXPECT_LT(max_at, call_at);
  EXPECT_LT(call_at, exp_at);
}

TEST(PrefetchNextTile, TilesPastHalfTheL1GoToTheL2AndPastHalfTheL2Nowhere) {
  const codegen::Kernel before = softmax_kernel();
  // The next tile's two rows are 2 KiB.
  std::vector<codegen::Stmt> calls;
  calls_in(codegen::prefetch_next_tile(before, 2048, kL2).body, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->callee, "tg_prefetch_bytes<2>");
  const codegen::Kernel unchanged = codegen::prefetch_next_tile(before, 2048, 2048);
  EXPECT_EQ(unchanged.body, before.body) << "the same statements when nothing is prefetched";
}

}  // namespace
}  // namespace tilegraph
