// Passes on before/expected IR, the printer on a golden kernel, the memory
// plan's invariants, and the determinism of project emission.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "codegen/printing/c_printer.h"
#include "codegen/project/emit_cpu_project.h"
#include "codegen/lowering/lower_cpu_kernel.h"
#include "codegen/project/memory_plan.h"
#include "codegen/kernel_ir/verify_kernel.h"
#include "compiler/ir/evaluate.h"
#include "compiler/passes/eliminate_dead_ops.h"
#include "compiler/passes/inline_index_maps.h"
#include "compiler/passes/materialize_outputs.h"
#include "compiler/passes/simplify_indices.h"
#include "frontends/onnx/import.h"
#include "scheduler/schedule.h"
#include "tests/unit/golden_file.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using testing::OnnxModelBuilder;

Graph import_built(OnnxModelBuilder& b, const std::string& name) {
  const std::string path = (testing::unit_temp_dir() / name / "model.onnx").string();
  b.save(path);
  return onnx_frontend::import_model(path);
}

std::vector<uint8_t> floats(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// x:[2,3] -> Transpose -> Relu: the transpose is inlined into the relu.
Graph transpose_relu() {
  OnnxModelBuilder b(13);
  b.input("x", 1, {2, 3}).output("y");
  auto& t = b.node("Transpose", {"x"}, {"t"});
  OnnxModelBuilder::attr_ints(t, "perm", {1, 0});
  b.node("Relu", {"t"}, {"y"});
  return import_built(b, "transpose_relu");
}

TEST(InlineIndexMaps, TransposeVanishesIntoItsConsumer) {
  const Graph g = transpose_relu();
  ASSERT_EQ(g.ops.size(), 2u);
  const Graph inlined = passes::inline_index_maps(g);
  ASSERT_EQ(inlined.ops.size(), 1u);
  EXPECT_EQ(inlined.ops[0].inputs, std::vector<TensorId>{g.inputs[0]});
  EXPECT_EQ(to_string(inlined.ops[0].body), "Max(load0[v1, v0], 0f)");
  // provenance: the kernel names both ONNX nodes
  EXPECT_EQ(inlined.ops[0].source_nodes.size(), 2u);
  // same values before and after
  const auto x = floats({1, -2, 3, -4, 5, -6});
  EXPECT_EQ(evaluate_graph(g, {x}), evaluate_graph(inlined, {x}));
}

TEST(Passes, ReturnTheirInputWhenNothingChanges) {
  const Graph g = passes::inline_index_maps(transpose_relu());
  const Graph again = passes::inline_index_maps(g);
  EXPECT_EQ(again.ops[0].body, g.ops[0].body);  // same node: nothing rebuilt
  EXPECT_EQ(passes::eliminate_dead_ops(g).ops[0].body, g.ops[0].body);
  EXPECT_EQ(passes::simplify_indices(g).ops[0].body, g.ops[0].body);
}

TEST(MaterializeOutputs, InputPassedThroughGetsACopyKernelUnderItsOutputName) {
  OnnxModelBuilder b(13);
  b.input("lengths", 7, {3}).input("x", 1, {2}).output("lengths_out", 7).output("y");
  b.node("Identity", {"lengths"}, {"lengths_out"});
  b.node("Relu", {"x"}, {"y"});
  const Graph g = passes::materialize_outputs(import_built(b, "passthrough"));
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.tensor(g.outputs[0]).name, "lengths_out");
  EXPECT_EQ(g.tensor(g.inputs[0]).name, "lengths");  // the input keeps its name
  EXPECT_EQ(g.producer(g.outputs[0]), 1);
}

TEST(MemoryPlan, OverlappingLifetimesNeverShareBytes) {
  // a chain x -> t1 -> t2 -> t3 -> y: t1 and t3 may share, t1/t2 and t2/t3 may not.
  OnnxModelBuilder b(13);
  b.input("x", 1, {64}).output("y");
  b.node("Relu", {"x"}, {"t1"});
  b.node("Neg", {"t1"}, {"t2"});
  b.node("Exp", {"t2"}, {"t3"});
  b.node("Abs", {"t3"}, {"y"});
  const Graph g = import_built(b, "chain");
  const auto schedule = scheduler::schedule_one_op_per_kernel(g, scheduler::host_arch());
  std::vector<codegen::Kernel> kernels;
  for (const auto& k : schedule.kernels) kernels.push_back(codegen::lower_cpu_kernel(g, k));
  const auto plan = codegen::plan_memory(g, kernels);
  ASSERT_EQ(plan.arena_offsets.size(), 3u);
  auto offset_of = [&](const std::string& name) {
    for (const auto& [id, off] : plan.arena_offsets)
      if (g.tensor(id).name == name) return off;
    return int64_t{-1};
  };
  EXPECT_NE(offset_of("t1"), offset_of("t2"));
  EXPECT_NE(offset_of("t2"), offset_of("t3"));
  EXPECT_EQ(offset_of("t1"), offset_of("t3"));  // reuse once t1 is dead
  EXPECT_EQ(plan.arena_bytes, 2 * 256);
  EXPECT_EQ(plan.naive_bytes, 3 * 256);
}

// Golden kernel: a matmul's CPU code (tests/unit/golden_file.h).
TEST(CPrinter, MatmulKernelMatchesGolden) {
  OnnxModelBuilder b(13);
  b.input("a", 1, {6, 5}).input("w", 1, {5, 18}).output("y");
  b.node("MatMul", {"a", "w"}, {"y"});
  const Graph g = import_built(b, "golden_matmul");
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.cores = 2;
  arch.vector_bytes = 32;  // an AVX2 machine, whatever this one has: 16 ymm registers
  arch.registers_per_unit = 16 * 32 / 4;
  const auto schedule = scheduler::schedule_one_op_per_kernel(g, arch);
  const codegen::Kernel kernel = codegen::lower_cpu_kernel(g, schedule.kernels[0]);
  codegen::verify(kernel);
  EXPECT_EQ(kernel.flops, 2 * 6 * 18 * 5);  // a multiply and an add per (i, j, k)
  const std::string printed = codegen::print_kernel(kernel, codegen::cpu_dialect());
  EXPECT_TRUE(testing::matches_golden("matmul_kernel.cc.txt", printed));
}


// A reduction along the contiguous axis into one value per row keeps the
// running value in a scalar and vectorizes it (LoopKind::kReduce), instead
// of a load-add-store chain through the accumulator array.
TEST(CPrinter, RowReductionIsASimdReductionOverAScalar) {
  for (const auto& [op_type, clause] : std::vector<std::pair<std::string, std::string>>{
           {"ReduceMax", "reduction(max:tg_red)"}, {"ReduceSum", "reduction(+:tg_red)"}}) {
    OnnxModelBuilder b(11);  // axes as an attribute
    b.input("x", 1, {6, 300}).output("y");
    auto& n = b.node(op_type, {"x"}, {"y"});
    OnnxModelBuilder::attr_ints(n, "axes", {1});
    const Graph g = import_built(b, "row_" + op_type);
    const auto schedule = scheduler::schedule_one_op_per_kernel(g, scheduler::host_arch());
    ASSERT_EQ(schedule.kernels.size(), 1u);
    const std::string printed =
        codegen::print_kernel(codegen::lower_cpu_kernel(g, schedule.kernels[0]), codegen::cpu_dialect());
    EXPECT_NE(printed.find(clause), std::string::npos) << printed;
    EXPECT_NE(printed.find("= tg_red;"), std::string::npos) << printed;
  }
}

TEST(EmitCpuProject, SameGraphGivesByteIdenticalProjects) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {4, 8}).output("y");
  b.initializer_f("w", {8, 3}, std::vector<float>(24, 0.5f));
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Tanh", {"h"}, {"y"});
  const Graph g = import_built(b, "determinism");
  const fs::path root = testing::unit_temp_dir() / "determinism";
  for (const char* out : {"p1", "p2"}) {
    const auto schedule = scheduler::schedule_one_op_per_kernel(g, scheduler::host_arch());
    std::vector<codegen::Kernel> kernels;
    for (const auto& k : schedule.kernels) kernels.push_back(codegen::lower_cpu_kernel(g, k));
    codegen::ProjectInfo info;
    info.arch = "host";
    fs::remove_all(root / out);
    codegen::emit_cpu_project(g, kernels, codegen::plan_memory(g, kernels), info, (root / out).string());
  }
  const auto a = testing::read_tree(root / "p1"), b2 = testing::read_tree(root / "p2");
  EXPECT_EQ(a, b2);
  EXPECT_TRUE(a.count("model.cpp") && a.count("weights.bin") && a.count("manifest.json") &&
              a.count("CMakeLists.txt") && a.count("main_test.cpp"));
  EXPECT_EQ(a.at("weights.bin").size(), 64u + 128u);  // the header, 24 floats 64-byte aligned
}

}  // namespace
}  // namespace tilegraph
