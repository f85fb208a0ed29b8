// Tests of runtime/kernel_profile: node-list parsing and the exact profile
// table, plus reading counters through the C API of the fake model.
#include "kernel_profile.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace tilegraph::rt;

namespace {

TEST(KernelProfile, SplitsNodeLists) {
  EXPECT_EQ(split_node_list("Mul_0,Add_1"), (std::vector<std::string>{"Mul_0", "Add_1"}));
  EXPECT_EQ(split_node_list(" a , b ,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_node_list("").empty());
  EXPECT_TRUE(split_node_list(nullptr).empty());
}

TEST(KernelProfile, TableIsExact) {
  std::vector<KernelTime> kernels = {
      {2, "matmul_bias_gelu", {"MatMul_3", "Add_4", "Gelu_5"}, 30.0, 2.5},
      {0, "softmax", {"Softmax_1"}, 10.0, 0.75},
  };
  EXPECT_EQ(format_profile_table(kernels, 10, 4.5),
            "profile (10 iterations, 2 kernels):\n"
            "rank  kernel              total ms     ms/iter   median ms       %  onnx nodes\n"
            "   1  matmul_bias_gelu      30.000      3.0000      2.5000   75.0%  MatMul_3, Add_4, Gelu_5\n"
            "   2  softmax               10.000      1.0000      0.7500   25.0%  Softmax_1\n"
            "kernel total: 4.0000 ms/iter (end-to-end mean without profiling: 4.5000 ms)\n");
  EXPECT_EQ(format_profile_table({}, 10, 1.0), "profile: the model reports no kernels\n");
}

TEST(KernelProfile, LongNamesAndNodeListsAreTruncated) {
  std::vector<std::string> nodes;
  for (int i = 0; i < 30; ++i) nodes.push_back("/encoder/layer." + std::to_string(i) + "/Add");
  std::vector<KernelTime> kernels = {{0, std::string(50, 'k'), nodes, 1.0}};
  std::string table = format_profile_table(kernels, 1, 1.0);
  EXPECT_NE(table.find(std::string(37, 'k') + "...  "), std::string::npos) << table;
  EXPECT_NE(table.find("%  /encoder/layer.0/Add, /encoder/layer.1/Add ... (+28 more)\n"), std::string::npos)
      << table;
}

TEST(KernelProfile, RunsGiveEachKernelItsTotalAndMedianSlowestMedianFirst) {
  // The fake model's two kernels; kernel 1 had one slow run (the core taken
  // by another process): its total passes kernel 0's, its median does not.
  const std::vector<std::vector<double>> ms = {{1.0, 1.2, 1.1, 0.9}, {0.1, 4.0, 0.2, 0.1}};
  std::vector<KernelTime> kernels = kernel_times_of_runs(ms);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].index, 0);
  EXPECT_EQ(kernels[0].name, "fused_mul_add");
  EXPECT_DOUBLE_EQ(kernels[0].total_ms, 4.2);
  EXPECT_DOUBLE_EQ(kernels[0].median_ms, 1.05);
  EXPECT_EQ(kernels[1].index, 1);
  EXPECT_DOUBLE_EQ(kernels[1].total_ms, 4.4);
  EXPECT_DOUBLE_EQ(kernels[1].median_ms, 0.15);
  EXPECT_DOUBLE_EQ(kernel_times_of_runs({{3.0, 1.0, 2.0}})[0].median_ms, 2.0);  // odd count: the middle one
}

TEST(KernelProfile, ReadsOneRunOfTheModelsCountersSlowestFirst) {
  tg_model* model = nullptr;
  // The fake model insists on a 24-byte weights file; profiling works on any model.
  std::string path = ::testing::TempDir() + "kernel_profile_weights.bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  float w[6] = {};
  std::fwrite(w, sizeof w, 1, f);
  std::fclose(f);
  ASSERT_EQ(tg_model_create(path.c_str(), &model), 0) << tg_last_error();
  float x[6] = {};
  int64_t ids[4] = {}, ids_out[4];
  float y[6];
  const void* in[] = {x, ids};
  void* out[] = {y, ids_out};
  tg_set_profiling(model, 1);
  ASSERT_EQ(tg_model_run(model, in, out), 0);
  std::vector<std::vector<double>> ms(static_cast<size_t>(tg_num_kernels()));
  for (size_t k = 0; k < ms.size(); ++k) ms[k].push_back(tg_kernel_time_ms(model, int(k)));
  std::vector<KernelTime> kernels = kernel_times_of_runs(ms);
  tg_model_destroy(model);
  std::remove(path.c_str());
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "fused_mul_add");  // busy-waits 50us in the fake model
  EXPECT_EQ(kernels[0].index, 0);
  EXPECT_EQ(kernels[0].nodes, (std::vector<std::string>{"Mul_0", "Add_1"}));
  EXPECT_GE(kernels[0].total_ms, 0.05);
  EXPECT_DOUBLE_EQ(kernels[0].median_ms, kernels[0].total_ms);  // one run
  EXPECT_EQ(kernels[1].name, "copy_ids");
}

}  // namespace
