// The GPU project emitter on hand-built block kernels: the files and their
// launches, determinism, the HIP spelling, and — where nvcc is installed —
// that the generated library compiles and links (no GPU needed for that).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>

#include <gtest/gtest.h>
#include <unistd.h>

#include "codegen/project/emit_cuda_project.h"
#include "codegen/project/memory_plan.h"
#include "driver/process.h"
#include "compiler/ir/error.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/global_buffer.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using codegen::Buffer;
using testing::global_buffer;
using codegen::Kernel;
using codegen::LoopKind;
using codegen::MemoryScope;

constexpr int64_t kN = 1000;
constexpr int kThreads = 256;
constexpr int64_t kBlocks = (kN + kThreads - 1) / kThreads;
constexpr float kHalf = 0.5f;

// y = tanh(x * w), w = 0.5, as two kernels, h = x * w in the arena between them;
// outputs y and, to cover an output that is also an input, x itself.
struct TwoKernelModel {
  Graph graph;
  std::vector<Kernel> kernels;
};

// Var ids: 0 the block, 1 the thread. Element block * kThreads + thread.
Expr element() { return var(0) * kThreads + var(1); }

TwoKernelModel two_kernel_model() {
  TwoKernelModel m;
  Graph& g = m.graph;
  g.name = "two_kernels";
  const TensorId x = g.add_tensor({"x", DType::kF32, {kN}, TensorKind::kInput, nullptr});
  Tensor w{"w", DType::kF32, {kN}, TensorKind::kConstant, nullptr};
  std::vector<uint8_t> half_bytes(kN * 4);
  for (int64_t e = 0; e < kN; ++e) std::memcpy(half_bytes.data() + e * 4, &kHalf, 4);
  w.data = std::make_shared<std::vector<uint8_t>>(std::move(half_bytes));
  const TensorId wid = g.add_tensor(w);
  const TensorId h = g.add_tensor({"h", DType::kF32, {kN}, TensorKind::kIntermediate, nullptr});
  const TensorId y = g.add_tensor({"y", DType::kF32, {kN}, TensorKind::kIntermediate, nullptr});
  g.inputs = {x};
  g.outputs = {y, x};
  g.output_names = {"y", "x"};

  // scale_0: out[i] = in0[i] * in1[i], guarded tail, no shared memory.
  Kernel scale;
  scale.name = "scale_0";
  scale.source_nodes = {"Mul_0"};
  scale.buffers = {global_buffer("in0", kN, x, false), global_buffer("in1", kN, wid, false),
                   global_buffer("out", kN, h, true)};
  scale.var_names = {"b", "t"};
  const Expr i = element();
  scale.body = codegen::make_for(
      0, int_imm(kBlocks), LoopKind::kBlocks,
      {codegen::make_for(1, int_imm(kThreads), LoopKind::kThreads,
                         {codegen::make_if(lt(i, int_imm(kN)),
                                           {codegen::make_store(2, i, load(0, DType::kF32, {i}) *
                                                                          load(1, DType::kF32, {i}))})})});
  scale.schedule.kind = scheduler::KernelKind::kBlock;
  scale.grid = kBlocks;
  scale.threads = kThreads;

  // staged_tanh_1: stage a tile through 64 KiB of shared memory (over the
  // 48 KiB that needs an opt-in), barrier, then out[i] = tanh(tile[t]).
  Kernel tanh_k;
  tanh_k.name = "staged_tanh_1";
  tanh_k.source_nodes = {"Tanh_1", "Identity_2"};
  Buffer tile;
  tile.name = "tile";
  tile.elements = 16384;
  tile.scope = MemoryScope::kShared;
  tanh_k.buffers = {global_buffer("in0", kN, h, false), global_buffer("out", kN, y, true), tile};
  tanh_k.var_names = {"b", "t"};
  const Expr clamped = min(i, int_imm(kN - 1));
  tanh_k.body = codegen::make_for(
      0, int_imm(kBlocks), LoopKind::kBlocks,
      {codegen::make_allocate(
          2, {codegen::make_for(1, int_imm(kThreads), LoopKind::kThreads,
                                {codegen::make_store(2, var(1), load(0, DType::kF32, {clamped}))}),
              codegen::make_barrier(),
              codegen::make_for(1, int_imm(kThreads), LoopKind::kThreads,
                                {codegen::make_if(lt(i, int_imm(kN)),
                                                  {codegen::make_store(1, i, unary(UnaryOp::kTanh,
                                                                                   load(2, DType::kF32,
                                                                                        {var(1)})))})})})});
  tanh_k.schedule.kind = scheduler::KernelKind::kBlock;
  tanh_k.grid = kBlocks;
  tanh_k.threads = kThreads;
  tanh_k.shared_bytes = 65536;
  m.kernels = {scale, tanh_k};
  return m;
}

// Each test writes under its own folder, one per process (ctest may run this
// test from several build trees at once), removed unless the test failed.
class EmitCudaProject : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / "tilegraph_unit" / str_cat("emit_cuda_project_", ::getpid()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
  }
  void TearDown() override {
    if (HasFailure()) {
      std::cout << "generated files kept in " << root_.string() << "\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(root_, ec);
    fs::remove(root_.parent_path(), ec);  // only once empty
  }
  fs::path test_dir(const std::string& name) const { return root_ / name; }

 private:
  fs::path root_;
};


std::map<std::string, std::string> emit(const TwoKernelModel& m, const std::string& gpu_arch, const fs::path& dir) {
  fs::remove_all(dir);
  codegen::ProjectInfo info;
  info.arch = "H100";
  codegen::emit_cuda_project(m.graph, m.kernels, codegen::plan_memory(m.graph, m.kernels), info, gpu_arch,
                             dir.string());
  return testing::read_tree(dir);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Whether text calls the CUDA runtime itself (cudaMalloc, cuda_runtime.h ...)
// rather than through the device shim.
bool spells_cuda_api(const std::string& text) { return std::regex_search(text, std::regex("cuda([A-Z]|_runtime)")); }

TEST_F(EmitCudaProject, WritesKernelsLaunchesAndModel) {
  const auto files = emit(two_kernel_model(), "sm_90", test_dir("cuda"));
  for (const char* name : {"model.cu", "kernels.h", "kernels_000.cu", "CMakeLists.txt", "weights.bin",
                           "manifest.json", "main_test.cpp", "weights_file.cpp", "tilegraph_model.h"})
    EXPECT_TRUE(files.count(name)) << name;
  EXPECT_FALSE(files.count("kernels_001.cu"));

  const std::string& kernels = files.at("kernels_000.cu");
  EXPECT_TRUE(contains(kernels, "__global__ void scale_0("));
  EXPECT_TRUE(contains(kernels, "scale_0<<<4, 256, 0, tg_stream>>>(in0, in1, out);"));
  EXPECT_TRUE(contains(kernels, "staged_tanh_1<<<4, 256, 65536, tg_stream>>>(in0, out);"));
  EXPECT_TRUE(contains(kernels, "tg_device_allow_shared_bytes(\n      reinterpret_cast<const void*>(&staged_tanh_1), 65536)"));
  // Only the kernel above 48 KiB opts in.
  EXPECT_EQ(kernels.find("tg_device_allow_shared_bytes"), kernels.rfind("tg_device_allow_shared_bytes"));
  EXPECT_TRUE(contains(files.at("kernels.h"),
                       "tg_device_error launch_scale_0(const float* in0, const float* in1, float* out, "
                       "tg_device_stream tg_stream);"));
  // The host code is the GPU model runtime over CUDA's device shim, written
  // unchanged from runtime/model/.
  EXPECT_TRUE(contains(files.at("kernels.h"), "#include \"device_shim_cuda.h\"\n"));
  EXPECT_TRUE(contains(files.at("device_shim_cuda.h"), "return cudaMalloc(p, bytes);"));
  EXPECT_TRUE(contains(files.at("device_shim_cuda.h"), "cudaGraphInstantiateWithFlags(exec, g, 0)"));
  EXPECT_FALSE(files.count("device_shim_hip.h"));
  EXPECT_FALSE(spells_cuda_api(files.at("gpu_model_runtime.h")));
  EXPECT_TRUE(contains(files.at("gpu_model_runtime.h"), "tg_device_graph_launch(m->graph, m->stream)"));

  const std::string& model = files.at("model.cu");
  EXPECT_TRUE(contains(model, "launch_scale_0((const float*)(d_in[0]), (const float*)(W + 0), (float*)(A + 0), m->stream)"));
  EXPECT_TRUE(contains(model, "launch_staged_tanh_1((float*)(A + 0), (float*)(d_out[0]), m->stream)"));
  EXPECT_LT(model.find("launch_scale_0("), model.find("launch_staged_tanh_1("));
  // Output 1 is input 0: copied back from the input's device buffer.
  EXPECT_TRUE(contains(model, "copy_output(m, 1, (const float*)(d_in[0]), outputs[1])"));
  EXPECT_TRUE(contains(model, "\"Tanh_1,Identity_2\""));
  // model.cu: the tables, the runtime, then the launch sequence it calls.
  EXPECT_FALSE(spells_cuda_api(model));
  EXPECT_LT(model.find("const int kNumKernels = 2;"), model.find("#include \"gpu_model_runtime.h\""));
  EXPECT_LT(model.find("#include \"gpu_model_runtime.h\""), model.find("int enqueue_kernels(tg_model* m)"));
  EXPECT_TRUE(contains(model, "int take_index_errors() {\n  return 0;\n}"));
  EXPECT_LT(model.find("int enqueue_kernels(tg_model* m)"), model.find("launch_scale_0("));
  EXPECT_LT(model.find("launch_staged_tanh_1("), model.find("int copy_outputs("));

  const std::string& cmake = files.at("CMakeLists.txt");
  EXPECT_TRUE(contains(cmake, "project(tilegraph_model CXX CUDA)"));
  EXPECT_TRUE(contains(cmake, "set(CMAKE_CUDA_ARCHITECTURES 90)"));
  EXPECT_TRUE(contains(cmake, "-lineinfo"));
  EXPECT_FALSE(contains(cmake, "fast_math") || contains(cmake, "fast-math"));

  const auto manifest = nlohmann::json::parse(files.at("manifest.json"));
  EXPECT_EQ(manifest["target"], "cuda");
  EXPECT_EQ(manifest["gpu_arch"], "sm_90");
  EXPECT_EQ(manifest["kernels"][1]["launch"]["shared_bytes"], 65536);
  EXPECT_EQ(files.at("weights.bin").size(), 64u + 4032u);  // the header, 1000 floats 64-byte aligned
  EXPECT_EQ(files.at("weights.bin").substr(0, 37), "tilegraph-weights/1 0000000000000000\n");
  EXPECT_TRUE(contains(files.at("model.cu"), "const char kProjectHash[] = \"0000000000000000\";"));
  EXPECT_EQ(manifest["project_hash"], "0000000000000000");
}

TEST_F(EmitCudaProject, SameInputGivesByteIdenticalProjects) {
  const TwoKernelModel m = two_kernel_model();
  EXPECT_EQ(emit(m, "sm_80", test_dir("p1")), emit(m, "sm_80", test_dir("p2")));
  EXPECT_TRUE(contains(emit(m, "sm_86", test_dir("p1")).at("CMakeLists.txt"), "set(CMAKE_CUDA_ARCHITECTURES 86)"));
}

TEST_F(EmitCudaProject, HipProjectDiffersOnlyInItsDeviceShim) {
  const auto files = emit(two_kernel_model(), "gfx90a", test_dir("hip"));
  for (const char* name : {"model.hip", "kernels.h", "kernels_000.hip", "CMakeLists.txt"})
    EXPECT_TRUE(files.count(name)) << name;
  EXPECT_FALSE(files.count("model.cu"));
  // The same model runtime and launchers as CUDA's, over HIP's device shim.
  const auto cuda = emit(two_kernel_model(), "sm_90", test_dir("cuda"));
  EXPECT_EQ(files.at("gpu_model_runtime.h"), cuda.at("gpu_model_runtime.h"));
  EXPECT_EQ(files.at("model.hip"), cuda.at("model.cu"));
  EXPECT_EQ(files.at("kernels_000.hip").find("tg_device_allow_shared_bytes"),
            cuda.at("kernels_000.cu").find("tg_device_allow_shared_bytes"));
  EXPECT_FALSE(files.count("device_shim_cuda.h"));
  for (const char* name : {"model.hip", "kernels.h", "kernels_000.hip", "device_shim_hip.h", "gpu_model_runtime.h"})
    EXPECT_FALSE(spells_cuda_api(files.at(name))) << name;
  EXPECT_TRUE(contains(files.at("kernels.h"), "#include \"device_shim_hip.h\"\n"));
  EXPECT_TRUE(contains(files.at("device_shim_hip.h"), "#include <hip/hip_runtime.h>"));
  EXPECT_TRUE(contains(files.at("device_shim_hip.h"), "return hipMalloc(p, bytes);"));
  EXPECT_TRUE(contains(files.at("device_shim_hip.h"), "hipGraphInstantiate(exec, g, nullptr, nullptr, 0)"));
  // hipcc is the C++ compiler (Debian's ROCm has no HIP language package for CMake).
  const std::string& cmake = files.at("CMakeLists.txt");
  EXPECT_TRUE(contains(cmake, "set(CMAKE_CXX_COMPILER hipcc)"));
  EXPECT_TRUE(contains(cmake, "project(tilegraph_model CXX)"));
  EXPECT_TRUE(contains(cmake, "set(TG_HIP_ARCHITECTURES gfx90a CACHE STRING"));
  EXPECT_TRUE(contains(cmake, "add_compile_options(--offload-arch=${TG_HIP_ARCHITECTURES})"));
  EXPECT_FALSE(contains(cmake, "HIP)"));
  EXPECT_EQ(nlohmann::json::parse(files.at("manifest.json"))["target"], "hip");
}

TEST_F(EmitCudaProject, RejectsUnknownArchAndNonBlockKernels) {
  TwoKernelModel m = two_kernel_model();
  EXPECT_THROW(emit(m, "x86-64-avx2", test_dir("bad")), UserError);
  m.kernels[0].grid = 0;
  EXPECT_THROW(emit(m, "sm_90", test_dir("bad")), InternalError);
}

bool on_path(const std::string& tool) { return !driver::find_on_path(tool).empty(); }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The last `count` floats of an .npy file (its data; the header comes first).
std::vector<float> npy_floats(const fs::path& p, size_t count) {
  const std::string bytes = read_text(p);
  std::vector<float> v(count);
  if (bytes.size() >= count * 4) std::memcpy(v.data(), bytes.data() + bytes.size() - count * 4, count * 4);
  return v;
}

// Configures and builds the project in dir (build/), logging to build.log.
bool cmake_build(const fs::path& dir) {
  const std::string d = dir.string();
  driver::ProcessOptions to_log;
  to_log.stdout_path = to_log.stderr_path = d + "/build.log";
  const bool configured = driver::run_process({"cmake", "-S", d, "-B", d + "/build"}, to_log).ok();
  to_log.append = true;
  return configured && driver::run_process({"cmake", "--build", d + "/build", "-j", "2"}, to_log).ok();
}

// Configures and builds the generated project with CMake (nvcc compiles the
// kernels and model.cu; linking needs the CUDA runtime, not a driver), then
// runs main_test: without a usable GPU it must stop at its first CUDA call
// with a clean error; with one, its outputs must be y = tanh(x * 0.5) and x.
TEST_F(EmitCudaProject, GeneratedProjectBuildsWithCMakeAndRuns) {
  if (!on_path("nvcc") || !on_path("cmake"))
    GTEST_SKIP() << "nvcc or cmake not on PATH: the generated CUDA project is not built";
  const fs::path dir = test_dir("cmake");
  emit(two_kernel_model(), "sm_90", dir);
  const std::string d = dir.string();
  ASSERT_TRUE(cmake_build(dir)) << read_text(dir / "build.log");
  EXPECT_FALSE(contains(read_text(dir / "build.log"), "warning")) << read_text(dir / "build.log");

  driver::ProcessOptions run_log;
  run_log.stdout_path = run_log.stderr_path = d + "/run.log";
  if (!driver::run_process({d + "/build/main_test", "--warmup", "1", "--iters", "2", "--profile", "--save-inputs",
                            d + "/in", "--outputs", d + "/out"},
                           run_log)
           .ok()) {
    EXPECT_TRUE(contains(read_text(dir / "run.log"), "error: cannot create the model: creating a stream: "))
        << read_text(dir / "run.log");
    return;
  }
  const std::vector<float> x = npy_floats(dir / "in" / "x.npy", kN);
  const std::vector<float> y = npy_floats(dir / "out" / "y.npy", kN);
  EXPECT_EQ(npy_floats(dir / "out" / "x.npy", kN), x);
  for (int64_t i = 0; i < kN; ++i) EXPECT_NEAR(y[i], std::tanh(x[i] * 0.5f), 1e-6f) << i;
  // Without profiling the kernels replay from a CUDA graph; with
  // TILEGRAPH_GPU_GRAPH=0 they launch one by one. Same inputs, same outputs.
  for (const std::string env : {"", "0"}) {
    driver::ProcessOptions replay;
    replay.stdout_path = replay.stderr_path = d + "/run2.log";
    if (!env.empty()) replay.extra_env["TILEGRAPH_GPU_GRAPH"] = env;
    ASSERT_TRUE(driver::run_process({d + "/build/main_test", "--warmup", "1", "--iters", "3", "--inputs", d + "/in",
                                     "--outputs", d + "/out2"},
                                    replay)
                    .ok())
        << env << read_text(dir / "run2.log");
    EXPECT_EQ(npy_floats(dir / "out2" / "y.npy", kN), y) << env;
  }
}

// The HIP project configures and builds with Debian's ROCm hipcc (5.2) as
// the C++ compiler, without a warning (every device call's status is used).
// No AMD GPU here: building is the check.
TEST_F(EmitCudaProject, GeneratedHipProjectBuildsWithHipcc) {
  if (!on_path("hipcc") || !on_path("cmake"))
    GTEST_SKIP() << "hipcc or cmake not on PATH: the generated HIP project is not built";
  const fs::path dir = test_dir("hip_cmake");
  emit(two_kernel_model(), "gfx90a", dir);
  ASSERT_TRUE(cmake_build(dir)) << read_text(dir / "build.log");
  EXPECT_FALSE(contains(read_text(dir / "build.log"), "warning")) << read_text(dir / "build.log");
  EXPECT_TRUE(fs::exists(dir / "build" / "libmodel.so") && fs::exists(dir / "build" / "main_test"));
}

}  // namespace
}  // namespace tilegraph
