// One golden per kernel kind x dialect (tests/unit/golden_file.h): small
// graphs built here, scheduled on fixed arch specs, lowered, verified and
// printed, so a change to a lowering or a printer shows up as a diff.
//   block kernel          CPU (host, one thread), CUDA, HIP, emulation
//   tensor-core kernel    CUDA, emulation (no mma.sync on CPU or HIP)
//   int GEMM              CPU (GPUs run int8 GEMMs as block kernels)
//   library GEMM          CUDA (the cuBLASLt call in model.cu), emulation
//                         (--skip-dot is CUDA only)
// (The CPU loop-nest kernel and the CUDA softmax block kernel have their
// goldens in passes_and_codegen_test and tile_graph_scheduler_test.)
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "codegen/printing/c_printer.h"
#include "codegen/project/emit_cuda_project.h"
#include "codegen/kernel_ir/emulate_threads.h"
#include "codegen/lowering/lower_block_kernel.h"
#include "codegen/lowering/lower_kernel.h"
#include "codegen/lowering/lower_int_gemm_kernel.h"
#include "codegen/lowering/lower_library_gemm.h"
#include "codegen/project/memory_plan.h"
#include "codegen/kernel_ir/verify_kernel.h"
#include "driver/pipeline.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/block_plan.h"
#include "scheduler/cost_model.h"
#include "scheduler/graph_connecting.h"
#include "scheduler/int_gemm.h"
#include "tests/unit/golden_file.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using testing::matches_golden;
using testing::OnnxModelBuilder;

constexpr int kF32 = 1, kF16 = 10;

Graph optimized(const OnnxModelBuilder& b, const std::string& name) {
  const std::string path = testing::test_model_path("golden_kernels", name);
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

// The host CPU as a fixed spec (whatever this machine is): 2 cores, AVX2.
scheduler::ArchSpec fixed_host() {
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.cores = 2;
  arch.compute_units = 2;
  arch.vector_bytes = 32;
  arch.registers_per_unit = 16 * 32 / 4;
  return arch;
}

// x [4, 40] -> Softmax over the last axis: one fused block kernel.
Graph softmax_graph() {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {4, 40}).output("y");
  OnnxModelBuilder::attr_int(b.node("Softmax", {"x"}, {"y"}), "axis", -1);
  return optimized(b, "softmax");
}

// The only kernel of g's schedule on arch, lowered as a block kernel (its
// config as given when set) and verified.
codegen::Kernel only_block_kernel(const Graph& g, const scheduler::ArchSpec& arch,
                                  const std::vector<int64_t>& tile = {}, int threads = 0) {
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, arch, {});
  EXPECT_EQ(s.kernels.size(), 1u);
  scheduler::KernelSchedule k = s.kernels.at(0);
  EXPECT_EQ(k.kind, scheduler::KernelKind::kBlock);
  if (!tile.empty()) k.config.tile = tile;
  if (threads > 0) k.config.threads = threads;
  codegen::Kernel kernel = codegen::lower_block_kernel(g, k, scheduler::plan_block_kernel(g, k, k.config, arch));
  codegen::verify(kernel);
  return kernel;
}

codegen::Kernel emulated(const codegen::Kernel& k) {
  codegen::Kernel e = codegen::expand_thread_locals(k);
  codegen::verify(e);
  return e;
}

// ---------------------------------------------------------------- block kernels

TEST(GoldenKernels, BlockKernelOnTheCpu) {
  // One row per tile, pinned: the cost model keeps a kernel this small in
  // one tile (a parallel region and a tile set-up cost more than its work).
  const codegen::Kernel k = only_block_kernel(softmax_graph(), fixed_host(), {1, 40});
  EXPECT_EQ(k.threads, 1);
  EXPECT_TRUE(matches_golden("softmax_block_kernel.cpu.txt", codegen::print_kernel(k, codegen::cpu_dialect())));
  // The host project's dialect: a kernel too short to split (lower_kernel's
  // single_thread) runs on the calling thread; a long one runs its block
  // loop on the thread pool.
  codegen::Kernel short_kernel = k;
  short_kernel.single_thread = true;
  EXPECT_TRUE(matches_golden("softmax_block_kernel.pool_short.txt",
                             codegen::print_kernel(short_kernel, codegen::cpu_pool_dialect())));
  ASSERT_FALSE(k.single_thread);
  EXPECT_TRUE(matches_golden("softmax_block_kernel.pool.txt", codegen::print_kernel(k, codegen::cpu_pool_dialect())));
}

// lower_kernel marks a CPU kernel whose estimate is below the cost model's
// min_parallel_seconds single-threaded; one without an estimate, a longer
// one and a GPU kernel split.
TEST(GoldenKernels, ShortCpuKernelsRunOnOneThread) {
  Graph g = softmax_graph();
  const scheduler::ArchSpec host = fixed_host();
  const double threshold = scheduler::min_parallel_seconds(host);
  scheduler::KernelSchedule k = scheduler::schedule_tile_graph(g, host, {}).kernels.at(0);
  const auto single_thread = [&](double seconds, const scheduler::ArchSpec& arch) {
    k.estimate.seconds = seconds;
    return codegen::lower_kernel(g, k, arch).single_thread;
  };
  EXPECT_TRUE(single_thread(threshold * 0.9, host));
  EXPECT_FALSE(single_thread(threshold * 1.1, host));
  EXPECT_FALSE(single_thread(0, host));
  const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
  k = scheduler::schedule_tile_graph(g, h100, {}).kernels.at(0);
  EXPECT_FALSE(single_thread(1e-9, h100));
}

// A GPU kernel's shared arena is whole 16-byte units (lower_kernel): nvcc may
// merge a loop's shared loads into an aligned 16-byte load reaching past the
// last buffer's end. On an H200, compute-sanitizer's memcheck caught one in
// ResNet-50's 1x1 conv fused with its global average pool, whose 7 x 7 conv
// tile (49 floats) ended the arena at byte 452. The same kernel here: x
// [1, 64, 7, 7], 8 filters, one channel per block, 64 reduce points per step.
TEST(GoldenKernels, GpuSharedArenaIsWholeSixteenByteUnits) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {1, 64, 7, 7}).output("y");
  b.initializer_f("w", {8, 64, 1, 1}, std::vector<float>(8 * 64, 0.5f));
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("GlobalAveragePool", {"c"}, {"y"});
  const Graph g = optimized(b, "conv_global_avg_pool");
  const scheduler::ArchSpec h200 = scheduler::arch_by_name("H200");
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, h200, {});
  ASSERT_EQ(s.kernels.size(), 1u);
  scheduler::KernelSchedule k = s.kernels[0];
  ASSERT_EQ(k.kind, scheduler::KernelKind::kBlock);
  k.config.tile = {1, 1, 1, 1};
  k.config.threads = 32;
  k.config.reduce_step = 64;
  const int64_t planned = scheduler::plan_block_kernel(g, k, k.config, h200).shared.peak_bytes;
  EXPECT_EQ(planned, 64 * 4 + 49 * 4);  // the weights' step, then the conv tile
  const codegen::Kernel lowered = codegen::lower_kernel(g, k, h200);
  codegen::verify(lowered);
  EXPECT_EQ(lowered.shared_bytes, 464);
  // The host's scratch keeps its exact size (CPU projects unchanged).
  const scheduler::ArchSpec host = fixed_host();
  EXPECT_EQ(codegen::lower_kernel(g, k, host).shared_bytes,
            scheduler::plan_block_kernel(g, k, k.config, host).shared.peak_bytes);
}

TEST(GoldenKernels, BlockKernelInHip) {
  const codegen::Kernel k = only_block_kernel(softmax_graph(), scheduler::arch_by_name("MI250"), {2, 40}, 64);
  EXPECT_EQ(k.threads, 64);
  EXPECT_TRUE(matches_golden("softmax_block_kernel.hip.txt", codegen::print_kernel(k, codegen::hip_dialect())));
}

TEST(GoldenKernels, BlockKernelInTheEmulation) {
  const codegen::Kernel k = emulated(only_block_kernel(softmax_graph(), scheduler::arch_by_name("H100"), {2, 40}, 32));
  EXPECT_TRUE(matches_golden("softmax_block_kernel.emulation.txt", codegen::print_kernel(k, codegen::cpu_dialect())));
}

// ---------------------------------------------------------------- tensor cores

// x [2, 32, 40] (half) @ w [40, 32]: a matmul on mma.sync on H100; the
// third 16-deep step is padded (40 reduce points), its fragments zeroed.
codegen::Kernel tensor_core_kernel() {
  OnnxModelBuilder b(13);
  b.input("x", kF16, {2, 32, 40}).input("w", kF16, {40, 32}).output("y", kF16);
  b.node("MatMul", {"x", "w"}, {"y"});
  const codegen::Kernel k = only_block_kernel(optimized(b, "half_matmul"), scheduler::arch_by_name("H100"));
  EXPECT_TRUE(k.tensor_cores);
  return k;
}

TEST(GoldenKernels, TensorCoreKernelInCuda) {
  const std::string cuda = codegen::cuda_kernel_with_launcher(tensor_core_kernel());
  EXPECT_NE(cuda.find("tg_mma_m16n8k16("), std::string::npos);
  EXPECT_TRUE(matches_golden("half_matmul_mma_kernel.cu.txt", cuda));
}

TEST(GoldenKernels, TensorCoreKernelInTheEmulation) {
  const std::string cpu = codegen::print_kernel(emulated(tensor_core_kernel()), codegen::cpu_dialect());
  EXPECT_NE(cpu.find("tg_warp_mma_m16n8k16("), std::string::npos);
  EXPECT_TRUE(matches_golden("half_matmul_mma_kernel.emulation.txt", cpu));
}

// ---------------------------------------------------------------- int GEMM

// QLinearMatMul (uint8 a [6, 20], int8 weights [20, 12]) requantized to
// uint8: the avx2 micro-kernel (6 x 8 x 4) with a row and a column tail.
TEST(GoldenKernels, IntGemmOnTheCpu) {
  OnnxModelBuilder b(13);
  b.input("a", 2, {6, 20}).output("y", 2);
  for (const char* s : {"sa", "sb", "sy"}) b.initializer_f(s, {}, {0.1f});
  b.initializer_8bit("za", 2, {}, {128});
  std::vector<int> w;
  for (int i = 0; i < 20 * 12; ++i) w.push_back(-128 + (i * 37) % 256);
  b.initializer_8bit("w", 3, {20, 12}, w);
  b.initializer_8bit("zb", 3, {}, {0});
  b.initializer_8bit("zy", 2, {}, {100});
  b.node("QLinearMatMul", {"a", "sa", "za", "w", "sb", "zb", "sy", "zy"}, {"y"});
  Graph g = optimized(b, "qlinear_matmul");
  scheduler::Schedule s = scheduler::schedule_tile_graph(g, fixed_host(), {});
  ASSERT_EQ(scheduler::use_gemm_ukernels(g, s, false).int_gemms, 1);
  ASSERT_EQ(s.kernels.size(), 1u);
  const codegen::IntGemmVariant avx2 = codegen::int_gemm_variant_named("avx2");
  const codegen::Kernel k = codegen::lower_int_gemm_kernel(
      g, s.kernels[0], avx2, codegen::prepack_int_gemm_weights(g, s.kernels[0], avx2), fixed_host());
  codegen::verify(k);
  EXPECT_EQ(k.ukernel, "qgemm_avx2");
  EXPECT_TRUE(matches_golden("qlinear_matmul_int_gemm.cpu.txt", codegen::print_kernel(k, codegen::cpu_dialect())));
  // The host project's dialect: the collapsed task grid on the thread pool.
  ASSERT_FALSE(k.single_thread);
  EXPECT_TRUE(matches_golden("qlinear_matmul_int_gemm.pool.txt", codegen::print_kernel(k, codegen::cpu_pool_dialect())));
}

// ---------------------------------------------------------------- library GEMM

// a [1, 16, 32] @ w [32, 24] + bias, ReLU, then a fused Mul: under
// --skip-dot on H100 the GEMM with its bias+relu epilogue is a cuBLASLt call.
struct LibraryGemmModel {
  Graph g;
  std::vector<codegen::Kernel> kernels;
  LibraryGemmModel() {
    OnnxModelBuilder b(13);
    b.input("a", kF32, {1, 16, 32}).output("y");
    b.initializer_f("w", {32, 24}, std::vector<float>(32 * 24, 0.01f));
    b.initializer_f("bias", {24}, std::vector<float>(24, 0.5f));
    b.node("MatMul", {"a", "w"}, {"mm"});
    b.node("Add", {"mm", "bias"}, {"biased"});
    b.node("Relu", {"biased"}, {"r"});
    b.node("Mul", {"r", "r"}, {"y"});
    g = optimized(b, "gemm_bias_relu");
    scheduler::TileGraphOptions options;
    options.library_gemms = true;
    const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
    for (const scheduler::KernelSchedule& k : scheduler::schedule_tile_graph(g, h100, options).kernels)
      kernels.push_back(k.library_gemm ? codegen::lower_library_gemm_kernel(g, k)
                                       : codegen::lower_block_kernel(g, k, scheduler::plan_block_kernel(g, k, k.config, h100)));
    for (const codegen::Kernel& k : kernels) codegen::verify(k);
  }
  const codegen::Kernel& gemm() const {
    for (const codegen::Kernel& k : kernels)
      if (codegen::is_library_gemm(k)) return k;
    throw std::runtime_error("no library GEMM");
  }
};

TEST(GoldenKernels, LibraryGemmInTheEmulation) {
  const LibraryGemmModel m;
  EXPECT_TRUE(matches_golden("gemm_bias_relu_library_gemm.emulation.txt",
                             codegen::print_kernel(emulated(m.gemm()), codegen::cpu_dialect())));
}

// The lines of text from the one starting with `first` through the next
// line equal to `last`.
std::string section(const std::string& text, const std::string& first, const std::string& last) {
  const size_t begin = text.find(first);
  if (begin == std::string::npos) return "(no '" + first + "')";
  const size_t end = text.find("\n" + last + "\n", begin);
  return end == std::string::npos ? text.substr(begin) : text.substr(begin, end + last.size() + 2 - begin);
}

TEST(GoldenKernels, LibraryGemmInCuda) {
  const LibraryGemmModel m;
  const fs::path dir = testing::unit_temp_dir() / "golden_kernels" / "gemm_bias_relu_cuda";
  codegen::ProjectInfo info;
  info.arch = "H100";
  codegen::emit_cuda_project(m.g, m.kernels, codegen::plan_memory(m.g, m.kernels), info, "sm_90", dir.string());
  std::ifstream in(dir / "model.cu");
  std::stringstream model;
  model << in.rdbuf();
  // The GEMM's shape table and the launch sequence calling cuBLASLt.
  const std::string calls = section(model.str(), "const tg_gemm_shape kGemmShapes[]", "};") + "...\n" +
                            section(model.str(), "int enqueue_kernels(tg_model* m) {", "}");
  EXPECT_NE(calls.find("tg_blas_gemm(&m->blas, 0"), std::string::npos) << calls;
  EXPECT_TRUE(matches_golden("gemm_bias_relu_library_gemm.cu.txt", calls));
}

}  // namespace
}  // namespace tilegraph
