// Float GEMMs whose N has a tail that fits fewer vectors than the
// micro-kernel's NR columns: the last column panel calls tg_sgemm::tile<W>
// (lower_float_gemm_kernel.cpp, narrow_tail_cols), the full panels tile().
// The lowered kernels are printed, built with their micro-kernel header and
// run against a double-precision reference GEMM: N = 8, 9, 36, 49, 196 on
// the scalar variant and every x86 variant this CPU runs, with B the packed
// weights (x @ W) or packed at run time (two activations), K in one block
// or in blocks of 32 (a small L1), and the k-outer loop (a small L2). Each
// M (13 rows per batch) has a tail for every variant: its last row panel
// calls tile<W, M mod MR>.
// (Below 8 columns a GEMM stays off the micro-kernel: float_gemm_pays.)
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "codegen/lowering/lower_float_gemm_kernel.h"
#include "codegen/printing/c_printer.h"
#include "compiler/ir/error.h"
#include "driver/pipeline.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/graph_connecting.h"
#include "scheduler/int_gemm.h"
#include "tests/unit/cpu_test_program.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;

constexpr int64_t kBatches = 2, kRows = 13;

// Values of operand `seed` at index i: small, distinct, not integers.
float value_at(int seed, int64_t i) { return std::sin(static_cast<float>(i * 7 + seed * 131)) * 0.5f; }

std::vector<float> values(int seed, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value_at(seed, i);
  return v;
}

// x @ W (B the packed weights), x @ y (B packed at run time), or a 1x1
// conv over an N x 1 map (the filters A, packed at compile time; its input
// B, packed at run time: the k-outer loop's case).
enum class BKind { kWeights, kActivations, kConv };

constexpr int64_t kFilters = 24;

struct Case {
  std::string variant;
  int64_t n, k;
  BKind b;
  scheduler::ArchSpec arch;
  std::string arch_name;  // for messages
};

std::string case_name(const Case& c) {
  const char* kind = c.b == BKind::kWeights ? "_weights_" : c.b == BKind::kActivations ? "_activations_" : "_conv_";
  return str_cat(c.variant, "_n", c.n, "_k", c.k, kind, c.arch_name);
}

// A conv over few pixels takes them as the GEMM's rows, its filters as columns.
bool pixel_rows(const Case& c) { return c.n < 64; }

int64_t batches(const Case& c) { return c.b == BKind::kConv ? 1 : kBatches; }
int64_t rows(const Case& c) { return c.b == BKind::kConv ? kFilters : kRows; }

// x [2, 13, K] @ w [K, N] (a constant) or @ y [2, K, N] (an input); or
// w [24, K, 1, 1] (a constant) over x [1, K, N, 1].
Graph gemm_graph(const Case& c) {
  OnnxModelBuilder b(13);
  if (c.b == BKind::kConv) {
    b.input("x", 1, {1, c.k, c.n, 1}).output("out");
    b.initializer_f("w", {kFilters, c.k, 1, 1}, values(1, kFilters * c.k));
    b.node("Conv", {"x", "w"}, {"out"});
  } else {
    b.input("x", 1, {kBatches, kRows, c.k}).output("out");
    if (c.b == BKind::kWeights) {
      b.initializer_f("w", {c.k, c.n}, values(1, c.k * c.n));
    } else {
      b.input("y", 1, {kBatches, c.k, c.n});
    }
    b.node("MatMul", {"x", c.b == BKind::kWeights ? "w" : "y"}, {"out"});
  }
  const std::string path = (testing::unit_temp_dir() / "float_gemm_column_tail" / case_name(c) / "model.onnx").string();
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

int64_t param(const codegen::Kernel& k, const std::string& name) {
  for (const auto& [p, value] : k.ukernel_params)
    if (p == name) return value;
  return 0;
}

void calls_in(const codegen::Stmt& s, const std::string& callee, int* count) {
  if (!s) return;
  if (s->kind == codegen::StmtKind::kCall && s->callee == callee) ++*count;
  for (const codegen::Stmt& c : s->body) calls_in(c, callee, count);
}

// The GEMM lowered for c.variant (its constants packed at compile time).
codegen::Kernel lower(Graph& g, const Case& c) {
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::host_arch(), {});
  EXPECT_EQ(scheduler::use_gemm_ukernels(g, s, true).float_gemms, 1) << case_name(c);
  const codegen::FloatGemmVariant v = codegen::float_gemm_variant_named(c.variant);
  const codegen::FloatGemmPacks packs = codegen::prepack_float_gemm_operands(g, s.kernels.at(0), v, c.arch);
  codegen::Kernel k = codegen::lower_float_gemm_kernel(g, s.kernels.at(0), v, packs, c.arch);
  codegen::verify(k);
  return k;
}

// A C array initializer of floats, exact (hexadecimal literals).
std::string float_array(const std::vector<float>& v) {
  std::ostringstream out;
  out << std::hexfloat << "{";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << static_cast<double>(v[i]);
  out << "}";
  return out.str();
}

bool cpu_runs(const std::string& variant) {
  __builtin_cpu_init();
  if (variant == "avx512") return __builtin_cpu_supports("avx512f");
  if (variant == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return true;
}

// One case's GEMM, lowered (its kernel renamed to be unique in the program).
struct Lowered {
  Case c;
  Graph g;
  codegen::Kernel k;
};

// Checks where the narrowed call is: exactly where N's tail fits fewer vectors than NR.
void expect_narrow_calls(const Lowered& l) {
  const Case& c = l.c;
  const codegen::FloatGemmVariant v = codegen::float_gemm_variant_named(c.variant);
  // The GEMM's columns: N, or a conv's filters where its pixels are the rows.
  int64_t n = 0, rows = 0;
  for (const Op& op : l.g.ops)
    if (const auto m = scheduler::match_gemm(l.g, op)) {
      n = m->cols();
      rows = m->rows();
    }
  EXPECT_EQ(n, c.b == BKind::kConv && pixel_rows(c) ? kFilters : c.n) << case_name(c);
  const int64_t tail = n % v.nr, rounded = (tail + v.lanes - 1) / v.lanes * v.lanes;
  const int64_t want_cols = tail == 0 || rounded == v.nr ? 0 : rounded;
  EXPECT_EQ(param(l.k, "tail_cols"), want_cols) << case_name(c);
  if (c.arch_name != "host") {
    EXPECT_EQ(param(l.k, "k_blocks"), 3) << case_name(c) << ": K = 70 in 3 blocks";
  }
  // k outer with the small L2: the filters as A (packed whole), or for a
  // 1x1 conv over few pixels the weights as B and A packed per k block.
  EXPECT_EQ(param(l.k, "group_panels") > 0, c.arch_name == "small_l2") << case_name(c) << ": k outer";
  EXPECT_EQ(param(l.k, "a_per_k_block"), c.arch_name == "small_l2" && pixel_rows(c) ? 1 : 0)
      << case_name(c) << ": A per k block";
  int narrow = 0, full = 0;
  calls_in(l.k.body, str_cat("tg_sgemm::tile<", want_cols, ">"), &narrow);
  calls_in(l.k.body, "tg_sgemm::tile", &full);
  calls_in(l.k.body, "tg_sgemm::tile_ldb", &full);  // B read in place (activations)
  if (want_cols > 0) {
    EXPECT_GE(narrow, 1) << case_name(c);
    EXPECT_EQ(full > 0, n > v.nr) << case_name(c) << ": tile() on the full panels only";
  }
  // M's tail: the last row panel computes its rows alone, on the narrowed
  // columns in the last column panel.
  int row_tail = 0;
  if (rows % v.mr != 0)
    calls_in(l.k.body, str_cat("tg_sgemm::tile<", want_cols > 0 ? want_cols : v.nr, ", ", rows % v.mr, ">"),
             &row_tail);
  EXPECT_EQ(row_tail > 0, rows % v.mr != 0) << case_name(c) << ": M = " << rows;
}

// The cases' kernels (all of one variant) built into one program with
// their micro-kernel header and run; each one's output against the
// reference GEMM.
void expect_matches_reference(const std::string& variant, const std::vector<Case>& cases) {
  std::vector<Lowered> lowered;
  for (const Case& c : cases) {
    Lowered l{c, gemm_graph(c), {}};
    l.k = lower(l.g, c);
    l.k.name = str_cat("gemm_case", lowered.size());
    expect_narrow_calls(l);
    lowered.push_back(std::move(l));
  }
  if (!cpu_runs(variant)) return;
  const codegen::Dialect& d = codegen::cpu_dialect();
  std::ostringstream src;
  src << codegen::kernel_prelude(d) << "#include \"" << TG_SOURCE_DIR << "/codegen/ukernels/sgemm_" << variant
      << ".h\"\nnamespace tg_kernels {\n";
  for (const Lowered& l : lowered) src << codegen::print_kernel(l.k, d) << "\n";
  src << "}\n#include <cstdio>\n";
  std::vector<int64_t> out_elements;
  std::ostringstream calls;
  for (size_t i = 0; i < lowered.size(); ++i) {
    const Lowered& l = lowered[i];
    std::string args, out_name;
    src << "namespace case" << i << " {\n";
    for (const codegen::Buffer& b : l.k.buffers) {
      if (b.scope != codegen::MemoryScope::kGlobal) continue;
      const Tensor& t = l.g.tensor(b.tensor);
      std::vector<float> data(static_cast<size_t>(b.elements), 0.0f);
      if (t.kind == TensorKind::kConstant) {
        std::memcpy(data.data(), t.data->data(), data.size() * sizeof(float));
      } else if (t.name == "x" || t.name == "y") {
        data = values(t.name == "x" ? 0 : 1, b.elements);
      }
      if (b.written) {
        out_name = b.name;
        out_elements.push_back(b.elements);
        src << "static float " << b.name << "[" << b.elements << "];\n";
      } else {
        src << "static const float " << b.name << "[" << b.elements << "] = " << float_array(data) << ";\n";
      }
      args += (args.empty() ? "" : ", ") + b.name;
    }
    src << "}  // namespace case" << i << "\n";
    calls << "  { using namespace case" << i << "; tg_kernels::" << l.k.name << "(" << args << ");\n"
          << "    for (float v : " << out_name << ") std::printf(\"%.9g\\n\", v); }\n";
  }
  src << "int main() {\n" << calls.str() << "  return 0;\n}\n";
  const std::vector<std::string> flags = variant == "avx512" ? std::vector<std::string>{"-mavx512f"}
                                         : variant == "avx2" ? std::vector<std::string>{"-mavx2", "-mfma"}
                                                             : std::vector<std::string>{};
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::string printed;
  ASSERT_TRUE(testing::run_cpu_test_program(testing::unit_temp_dir() / "float_gemm_column_tail" / test / variant,
                                            src.str(), &printed, flags));
  std::istringstream in(printed);
  for (size_t i = 0; i < lowered.size(); ++i) {
    const Case& c = lowered[i].c;
    ASSERT_EQ(out_elements[i], batches(c) * rows(c) * c.n) << case_name(c);
    std::vector<double> got;
    for (int64_t e = 0; e < out_elements[i]; ++e) {
      double v = 0;
      ASSERT_TRUE(in >> v) << case_name(c) << ": the program printed too few values";
      got.push_back(v);
    }
    // x and w (or y) as generated above; A(b, r, k) and B(b, k, j) of the GEMM.
    const std::vector<float> x = values(0, kBatches * kRows * c.k * c.n), w = values(1, kBatches * kFilters * c.k * c.n);
    auto a_at = [&](int64_t b, int64_t r, int64_t kk) {
      return c.b == BKind::kConv ? w[static_cast<size_t>(r * c.k + kk)]
                                 : x[static_cast<size_t>((b * kRows + r) * c.k + kk)];
    };
    auto b_at = [&](int64_t b, int64_t kk, int64_t j) {
      return c.b == BKind::kConv      ? x[static_cast<size_t>(kk * c.n + j)]
             : c.b == BKind::kWeights ? w[static_cast<size_t>(kk * c.n + j)]
                                      : w[static_cast<size_t>((b * c.k + kk) * c.n + j)];
    };
    for (int64_t b = 0; b < batches(c); ++b)
      for (int64_t r = 0; r < rows(c); ++r)
        for (int64_t j = 0; j < c.n; ++j) {
          double want = 0, magnitude = 0;
          for (int64_t kk = 0; kk < c.k; ++kk) {
            const double prod = static_cast<double>(a_at(b, r, kk)) * b_at(b, kk, j);
            want += prod;
            magnitude += std::fabs(prod);
          }
          ASSERT_NEAR(got[static_cast<size_t>((b * rows(c) + r) * c.n + j)], want, 1e-6 + magnitude * 1e-6)
              << case_name(c) << " at (" << b << ", " << r << ", " << j << ")";
        }
  }
}

// The host with an L1 that holds a B block of 32 k values of the variant's
// NR columns (K = 70: blocks of 24, 23, 23); with `small_l2`, a conv's filter
// panels overflow a row block's share of the L2 (the k-block loop outside
// the column panels).
scheduler::ArchSpec small_caches(const std::string& variant, bool small_l2) {
  scheduler::ArchSpec a = scheduler::host_arch();
  a.l1_bytes = 2 * 32 * codegen::float_gemm_variant_named(variant).nr * 4;
  if (small_l2) a.l2_bytes = 2048;
  return a;
}

TEST(FloatGemmColumnTail, NarrowLastPanelMatchesTheReference) {
  for (const std::string variant : {"scalar", "avx2", "avx512"}) {
    std::vector<Case> cases;
    for (const int64_t n : {8, 9, 36, 49, 196})
      for (const BKind b : {BKind::kWeights, BKind::kActivations, BKind::kConv})
        cases.push_back({variant, n, 19, b, scheduler::host_arch(), "host"});
    expect_matches_reference(variant, cases);
  }
}

TEST(FloatGemmColumnTail, NarrowLastPanelInKBlocksMatchesTheReference) {
  for (const std::string variant : {"scalar", "avx2", "avx512"}) {
    std::vector<Case> cases;
    for (const int64_t n : {9, 36, 196}) {
      for (const BKind b : {BKind::kWeights, BKind::kActivations, BKind::kConv})
        cases.push_back({variant, n, 70, b, small_caches(variant, false), "small_l1"});
      cases.push_back({variant, n, 70, BKind::kConv, small_caches(variant, true), "small_l2"});
    }
    expect_matches_reference(variant, cases);
  }
}

// N a multiple of NR, or a tail that needs all of NR's vectors: no narrowed
// call (only M's tail calls tile<NR, M mod MR>), and no tail_cols
// parameter.
TEST(FloatGemmColumnTail, WholeOrWideTailsKeepOneCall) {
  for (const auto& [variant, n] : std::vector<std::pair<std::string, int64_t>>{
           {"avx512", 64}, {"avx512", 60}, {"avx512", 49}, {"avx2", 48}, {"avx2", 30}, {"scalar", 13}}) {
    Case c{variant, n, 19, BKind::kWeights, scheduler::host_arch(), "host"};
    Graph g = gemm_graph(c);
    const codegen::Kernel k = lower(g, c);
    EXPECT_EQ(param(k, "tail_cols"), 0) << case_name(c);
    std::ostringstream printed;
    printed << codegen::print_kernel(k, codegen::cpu_dialect());
    const codegen::FloatGemmVariant v = codegen::float_gemm_variant_named(variant);
    int64_t rows = 0;
    for (const Op& op : g.ops)
      if (const auto m = scheduler::match_gemm(g, op)) rows = m->rows();
    ASSERT_NE(rows % v.mr, 0) << case_name(c);
    const std::string text = printed.str(), row_tail = str_cat("tg_sgemm::tile<", v.nr, ", ", rows % v.mr, ">(");
    size_t templated = 0, row_tails = 0;
    for (size_t at = text.find("tg_sgemm::tile<"); at != std::string::npos; at = text.find("tg_sgemm::tile<", at + 1))
      ++templated;
    for (size_t at = text.find(row_tail); at != std::string::npos; at = text.find(row_tail, at + 1)) ++row_tails;
    EXPECT_GE(row_tails, 1u) << case_name(c);
    EXPECT_EQ(templated, row_tails) << case_name(c);
  }
}

}  // namespace
}  // namespace tilegraph
