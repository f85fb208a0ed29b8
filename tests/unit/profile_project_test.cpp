// The top-k profiling harness (codegen/project/emit_profile_project.h): what it
// writes for CUDA candidates, and that nvcc builds it (a GPU runs it; the
// host CPU harness is run end to end by tests/models).
#include "codegen/project/emit_profile_project.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "codegen/lowering/lower_block_kernel.h"
#include "driver/process.h"
#include "frontends/onnx/import.h"
#include "scheduler/block_plan.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using testing::OnnxModelBuilder;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProfileProject, CudaHarnessTimesEveryCandidateAndNvccBuildsIt) {
  OnnxModelBuilder b(13);
  b.input("x", 10, {1, 64, 64}).input("w", 10, {64, 64}).output("y", 10);
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Relu", {"h"}, {"y"});
  const fs::path dir = testing::unit_temp_dir() / "profile_cuda";
  fs::remove_all(dir);
  b.save((dir / "model.onnx").string());
  const Graph g = onnx_frontend::import_model((dir / "model.onnx").string());
  const scheduler::ArchSpec arch = scheduler::arch_by_name("H100");
  scheduler::TileGraphOptions options;
  options.topk = 3;
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, arch, options);
  std::vector<codegen::Kernel> variants;
  for (const scheduler::KernelSchedule& k : s.kernels)
    for (const scheduler::TileConfig& c : k.candidates) {
      scheduler::KernelSchedule v = k;
      v.config = c;
      variants.push_back(codegen::lower_block_kernel(g, v, scheduler::plan_block_kernel(g, v, c, arch)));
      variants.back().name += "_c" + std::to_string(variants.size());
    }
  ASSERT_GE(variants.size(), 2u);
  codegen::emit_profile_project(variants, "90", (dir / "harness").string());

  const std::string main_source = read(dir / "harness" / "main.cpp");
  const std::string kernels = read(dir / "harness" / "variants_000.cu");
  for (size_t v = 0; v < variants.size(); ++v) {
    EXPECT_NE(main_source.find("std::printf(\"" + std::to_string(v) + " %.9g\\n\", profile_" + variants[v].name),
              std::string::npos);
    EXPECT_NE(kernels.find("tg_kernels::launch_" + variants[v].name + "("), std::string::npos);
  }
  EXPECT_NE(read(dir / "harness" / "profile.h").find("#define TG_PROFILE_ON_DEVICE 1\n"), std::string::npos);
  EXPECT_NE(read(dir / "harness" / "tg_profile_timing.h").find("tg_device_event_elapsed_ms"), std::string::npos);
  EXPECT_NE(read(dir / "harness" / "profile.h").find("#include \"device_shim_cuda.h\""), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "harness" / "device_shim_cuda.h"));
  EXPECT_NE(read(dir / "harness" / "CMakeLists.txt").find("set(CMAKE_CUDA_ARCHITECTURES 90)"), std::string::npos);

  if (driver::find_on_path("nvcc").empty()) GTEST_SKIP() << "nvcc not on PATH: harness not built";
  const fs::path h = dir / "harness";
  driver::ProcessOptions to_log;
  to_log.stdout_path = to_log.stderr_path = (h / "nvcc.log").string();
  EXPECT_TRUE(driver::run_process({"nvcc", "-std=c++17", "-arch=sm_90", "-o", (h / "profile").string(),
                                   (h / "main.cpp").string(), (h / "variants_000.cu").string()},
                                  to_log)
                  .ok())
      << read(h / "nvcc.log");
}

}  // namespace
}  // namespace tilegraph
