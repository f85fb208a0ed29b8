// The emulation's sanitizer mode (codegen/sanitizer/tg_sanitizer.h) catches
// the bugs that break GPU kernels on real hardware but pass the plain CPU
// emulation: each test seeds one into a real lowered block kernel (a dropped
// barrier, an off-by-one tile bound, a shared buffer too small, a misaligned
// shared buffer, a 32-lane warp step on a 64-lane target), prints it with the
// sanitizer dialect into a standalone program, runs it, and checks the report.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "codegen/printing/c_printer.h"
#include "codegen/kernel_ir/emulate_threads.h"
#include "codegen/lowering/lower_block_kernel.h"
#include "driver/pipeline.h"
#include "scheduler/block_plan.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using testing::OnnxModelBuilder;
constexpr int kF32 = onnx::TensorProto::FLOAT, kF16 = onnx::TensorProto::FLOAT16;

// Softmax over rows of 40 on H100, 2 rows a block, 32 threads: three phases
// separated by barriers, shared row maxima and sums.
codegen::Kernel softmax_kernel() {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {4, 40}).output("y");
  OnnxModelBuilder::attr_int(b.node("Softmax", {"x"}, {"y"}, "row_softmax"), "axis", -1);
  const Graph g = driver::optimize_graph({}, b.import_as("sanitizer_softmax"));
  const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
  scheduler::KernelSchedule k = scheduler::schedule_tile_graph(g, h100, {}).kernels.at(0);
  k.config.tile = {2, 40};
  k.config.threads = 32;
  return codegen::lower_block_kernel(g, k, scheduler::plan_block_kernel(g, k, k.config, h100));
}

// A half matmul on H100's tensor cores (WarpMma steps).
codegen::Kernel tensor_core_kernel() {
  OnnxModelBuilder b(13);
  b.input("x", kF16, {2, 64, 64}).input("w", kF16, {64, 32}).output("y", kF16);
  b.node("MatMul", {"x", "w"}, {"y"});
  const Graph g = driver::optimize_graph({}, b.import_as("sanitizer_mma"));
  const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
  for (const scheduler::KernelSchedule& k : scheduler::schedule_tile_graph(g, h100, {}).kernels) {
    codegen::Kernel kernel = codegen::lower_block_kernel(g, k, scheduler::plan_block_kernel(g, k, k.config, h100));
    if (kernel.tensor_cores) return kernel;
  }
  ADD_FAILURE() << "no tensor-core kernel";
  return {};
}

// Rebuilds s with `edit` applied to every statement, bottom-up; edit may
// return nullptr to drop one.
codegen::Stmt edit_stmts(const codegen::Stmt& s, const std::function<codegen::Stmt(const codegen::Stmt&)>& edit) {
  codegen::StmtNode n = *s;
  std::vector<codegen::Stmt> body;
  for (const codegen::Stmt& c : n.body)
    if (codegen::Stmt e = edit_stmts(c, edit)) body.push_back(e);
  n.body = std::move(body);
  return edit(std::make_shared<const codegen::StmtNode>(std::move(n)));
}

struct Outcome {
  int status = -1;
  std::string stderr_text;
};

// Prints the (emulation-expanded) kernel with the sanitizer dialect into a
// program that calls it once on filled buffers; builds and runs it.
Outcome run_sanitized(const codegen::Kernel& kernel, int warp_size, const std::string& name) {
  const codegen::Kernel k = codegen::expand_thread_locals(kernel);
  const codegen::Dialect d = codegen::sanitizer_dialect(warp_size);
  const fs::path dir = testing::unit_temp_dir() / "sanitizer" / name;
  fs::create_directories(dir);
  std::ostringstream src;
  src << codegen::kernel_prelude(d) << "namespace tg_kernels {\n" << codegen::print_kernel(k, d) << "}\n"
      << "#include <vector>\nint main() {\n";
  std::string args;
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    const codegen::Buffer& b = k.buffers[i];
    if (b.scope != codegen::MemoryScope::kGlobal) continue;
    const std::string type = codegen::storage_c_type(b.dtype);
    // Half buffers hold 1.0 (0x3c00); others small values.
    src << "  std::vector<" << type << "> g" << i << "(" << b.elements << ", (" << type << ")"
        << (b.dtype == DType::kF16 ? "0x3c00" : "1") << ");\n";
    args += (args.empty() ? "g" : ", g") + std::to_string(i) + ".data()";
  }
  src << "  tg_kernels::" << k.name << "(" << args << ");\n  return 0;\n}\n";
  std::ofstream(dir / "main.cpp") << src.str();
  const std::string build = "g++ -std=c++17 -O1 -fopenmp -w -o " + (dir / "main").string() + " " +
                            (dir / "main.cpp").string() + " 2> " + (dir / "build.log").string();
  Outcome o;
  if (std::system(build.c_str()) != 0) {
    std::ifstream log(dir / "build.log");
    o.stderr_text = std::string(std::istreambuf_iterator<char>(log), {});
    ADD_FAILURE() << "the sanitized kernel does not compile:\n" << o.stderr_text;
    return o;
  }
  const int rc = std::system(((dir / "main").string() + " 2> " + (dir / "run.log").string()).c_str());
  o.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream log(dir / "run.log");
  o.stderr_text = std::string(std::istreambuf_iterator<char>(log), {});
  return o;
}

void expect_report(const Outcome& o, const std::string& check, const std::vector<std::string>& words) {
  EXPECT_EQ(o.status, 2) << o.stderr_text;
  EXPECT_NE(o.stderr_text.find("tilegraph sanitizer (" + check + "): kernel "), std::string::npos) << o.stderr_text;
  for (const std::string& w : words) EXPECT_NE(o.stderr_text.find(w), std::string::npos) << w << "\n" << o.stderr_text;
}

TEST(EmulationSanitizer, CorrectKernelsRunClean) {
  for (const auto& [kernel, name] : {std::pair{softmax_kernel(), "clean_softmax"},
                                     std::pair{tensor_core_kernel(), "clean_mma"}}) {
    const Outcome o = run_sanitized(kernel, 32, name);
    EXPECT_EQ(o.status, 0) << name << ": " << o.stderr_text;
  }
}

TEST(EmulationSanitizer, DroppedBarrierIsARace) {
  codegen::Kernel k = softmax_kernel();
  bool dropped = false;
  k.body = edit_stmts(k.body, [&](const codegen::Stmt& s) -> codegen::Stmt {
    if (s->kind != codegen::StmtKind::kBarrier || dropped) return s;
    dropped = true;
    return nullptr;
  });
  ASSERT_TRUE(dropped);
  expect_report(run_sanitized(k, 32, "dropped_barrier"), "racecheck",
                {"row_softmax", "phase 0", "in the same phase (a missing barrier?)", "thread "});
}

TEST(EmulationSanitizer, OffByOneTileBoundIsOutOfBounds) {
  codegen::Kernel k = softmax_kernel();
  // The widest guard `x < N` (the exp phase's, over the tile's 80 values) becomes `x < N + 1`.
  auto bound_of = [](const codegen::Stmt& s, int64_t* bound) {
    return s->kind == codegen::StmtKind::kIf && s->cond->kind == ExprKind::kBinary &&
           s->cond->binary_op == BinaryOp::kLt && is_const_int(s->cond->args[1], bound);
  };
  int64_t widest = 0;
  edit_stmts(k.body, [&](const codegen::Stmt& s) {
    int64_t bound = 0;
    if (bound_of(s, &bound)) widest = std::max(widest, bound);
    return s;
  });
  ASSERT_EQ(widest, 80);
  k.body = edit_stmts(k.body, [&](const codegen::Stmt& s) -> codegen::Stmt {
    int64_t bound = 0;
    if (!bound_of(s, &bound) || bound != widest) return s;
    codegen::StmtNode n = *s;
    n.cond = lt(s->cond->args[0], int_imm(bound + 1));
    return std::make_shared<const codegen::StmtNode>(std::move(n));
  });
  expect_report(run_sanitized(k, 32, "off_by_one"), "memcheck", {"thread 16 writes", "[80], outside its 80 elements"});
}

TEST(EmulationSanitizer, SharedBufferTooSmall) {
  codegen::Kernel k = softmax_kernel();
  codegen::Buffer* largest = nullptr;  // the exp phase's tile of 80 values
  for (codegen::Buffer& b : k.buffers)
    if (b.scope == codegen::MemoryScope::kShared && (!largest || b.elements > largest->elements)) largest = &b;
  ASSERT_TRUE(largest);
  largest->elements -= 8;
  expect_report(run_sanitized(k, 32, "shared_too_small"), "memcheck", {"outside its 72 elements"});
  // The kernel's shared memory declared smaller than its buffers need
  // (after the emulation's expansion, which appends per-thread copies;
  // expanding again changes nothing).
  k = codegen::expand_thread_locals(softmax_kernel());
  int64_t last_offset = 0;
  for (const codegen::Buffer& b : k.buffers)
    if (b.scope == codegen::MemoryScope::kShared) last_offset = std::max(last_offset, b.offset);
  k.shared_bytes = last_offset + 4;  // the last buffer's first element only
  expect_report(run_sanitized(k, 32, "shared_arena_too_small"), "memcheck",
                {"does not fit the kernel's", "bytes of shared memory"});
}

TEST(EmulationSanitizer, MisalignedSharedBuffer) {
  codegen::Kernel k = softmax_kernel();
  for (codegen::Buffer& b : k.buffers)
    if (b.scope == codegen::MemoryScope::kShared && b.offset > 0) {
      b.offset += 2;
      break;
    }
  k.shared_bytes += 16;
  expect_report(run_sanitized(k, 32, "misaligned"), "alignment", {"is not aligned to its 4-byte elements"});
}

TEST(EmulationSanitizer, WarpStepOnA64LaneTarget) {
  expect_report(run_sanitized(tensor_core_kernel(), 64, "wave64"), "warp size",
                {"32-lane warp-collective step", "warps have 64 lanes"});
}

}  // namespace
}  // namespace tilegraph
