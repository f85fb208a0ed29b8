// End-to-end tests of runtime/main_test.cpp, built against the hand-written
// model in runtime_fake_model.cpp (y = 2x + w, ids_out = ids:0) exactly as a
// generated project builds it. Each test runs the executable and checks exit
// code, stdout, stderr and the files it writes.
#include "npy.h"
#include "tilegraph_model.h"

#include "driver/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace tilegraph::rt;

namespace {

const float kW[6] = {0.5f, -1.0f, 2.0f, 0.0f, 3.25f, -0.125f};
const float kX[6] = {1.0f, 2.0f, -3.0f, 0.25f, 1e-3f, 7.0f};
const int64_t kIds[4] = {3, 1, 4, 1};

struct Result {
  int code = -1;
  std::string out, err;
};

NpyArray f32_array(std::vector<int64_t> shape, const float* values) {
  NpyArray a;
  a.dtype = TG_F32;
  a.shape = shape;
  size_t n = size_t(shape_num_elements(shape));
  a.data.resize(n * 4);
  std::memcpy(a.data.data(), values, n * 4);
  return a;
}

NpyArray i64_array(std::vector<int64_t> shape, const int64_t* values) {
  NpyArray a;
  a.dtype = TG_I64;
  a.shape = shape;
  a.data.resize(size_t(shape_num_elements(shape)) * 8);
  std::memcpy(a.data.data(), values, a.data.size());
  return a;
}

std::vector<float> floats(const NpyArray& a) {
  std::vector<float> v(a.data.size() / 4);
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

class MainTestE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("tg_e2e_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
    fs::create_directories(dir_ / "expected");
    std::ofstream(p("weights.bin"), std::ios::binary).write(reinterpret_cast<const char*>(kW), sizeof kW);
    write_npy(p("in/x.npy"), f32_array({2, 3}, kX));
    write_npy(p("in/ids_0.npy"), i64_array({4}, kIds));
    float y[6];
    for (int i = 0; i < 6; ++i) y[i] = 2.0f * kX[i] + kW[i];
    write_npy(p("expected/y.npy"), f32_array({2, 3}, y));
    write_npy(p("expected/ids_out.npy"), i64_array({4}, kIds));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string p(const std::string& rel) const { return (dir_ / rel).string(); }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  // The words of a test's argument string: split at spaces, except inside
  // single quotes, which group a path (no shell is involved; nothing else
  // is interpreted).
  static std::vector<std::string> words(const std::string& args) {
    std::vector<std::string> out;
    std::string word;
    bool quoted = false, any = false;
    for (char c : args) {
      if (c == '\'') {
        quoted = !quoted;
        any = true;
      } else if (c == ' ' && !quoted) {
        if (any) out.push_back(word);
        word.clear();
        any = false;
      } else {
        word += c;
        any = true;
      }
    }
    if (any) out.push_back(word);
    return out;
  }

  // Runs `exe args` (no shell) with stdout and stderr captured separately.
  Result run_exe(const std::string& exe, const std::string& args) {
    std::vector<std::string> argv = words(args);
    argv.insert(argv.begin(), exe);
    tilegraph::driver::ProcessOptions to_files;
    to_files.stdout_path = p("stdout.txt");
    to_files.stderr_path = p("stderr.txt");
    const tilegraph::driver::ProcessResult result = tilegraph::driver::run_process(argv, to_files);
    Result r;
    r.code = result.signal != 0 ? 128 + result.signal : result.exit_code;
    r.out = slurp(p("stdout.txt"));
    r.err = slurp(p("stderr.txt"));
    return r;
  }
  Result run(const std::string& args) { return run_exe(TG_FAKE_MAIN_TEST, args); }

  // The default arguments of most tests: explicit weights, few iterations.
  std::string base() const { return "--weights '" + p("weights.bin") + "' --warmup 1 --iters 3"; }

  fs::path dir_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(MainTestE2E, FullRunWritesOutputsMatchesExpectedAndExportsJson) {
  Result r = run(base() + " --warmup 2 --iters 7 --inputs '" + p("in") + "' --outputs '" + p("out/nested") +
                 "' --expected '" + p("expected") + "' --export-json '" + p("stats.json") + "' --profile");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "model: 2 inputs, 2 outputs, 2 kernels\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "input 'x' float32 [2,3] <- " + p("in/x.npy") + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "input 'ids:0' int64 [4] <- " + p("in/ids_0.npy") + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "output 'y' float32 [2,3]\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "latency (ms): min ")) << r.out;
  EXPECT_TRUE(contains(r.out, "  (7 iters)\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "throughput: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "profile (7 iterations, 2 kernels):\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank  kernel           total ms     ms/iter   median ms       %  onnx nodes\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n   1  fused_mul_add  ")) << r.out;
  EXPECT_TRUE(contains(r.out, "%  Mul_0, Add_1\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n   2  copy_ids       ")) << r.out;
  EXPECT_TRUE(contains(r.out, "output 'y': max abs err 0  max rel err 0  ok\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "output 'ids_out': 0 of 4 elements differ  ok\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "accuracy: all 2 outputs match")) << r.out;

  NpyArray y = read_npy(p("out/nested/y.npy"));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> yv = floats(y);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(yv[i], 2.0f * kX[i] + kW[i]);
  NpyArray ids = read_npy(p("out/nested/ids_out.npy"));
  EXPECT_EQ(ids.dtype, TG_I64);
  EXPECT_EQ(ids.data, i64_array({4}, kIds).data);

  nlohmann::json j = nlohmann::json::parse(slurp(p("stats.json")));
  EXPECT_EQ(j["weights"], p("weights.bin"));
  EXPECT_EQ(j["config"]["warmup"], 2);
  EXPECT_EQ(j["config"]["iters"], 7);
  EXPECT_EQ(j["latency_ms"]["iterations"], 7);
  EXPECT_EQ(j["samples_ms"].size(), 7u);
  EXPECT_LE(j["latency_ms"]["min"].get<double>(), j["latency_ms"]["median"].get<double>());
  EXPECT_LE(j["latency_ms"]["median"].get<double>(), j["latency_ms"]["max"].get<double>());
  EXPECT_GT(j["throughput_per_s"].get<double>(), 0);
  // Its own VmHWM: a small program's few MiB, not 0 and not a large parent's heap.
  EXPECT_GT(j["peak_host_memory_bytes"].get<int64_t>(), 1 << 20);
  EXPECT_LT(j["peak_host_memory_bytes"].get<int64_t>(), int64_t(1) << 30);
  ASSERT_EQ(j["inputs"].size(), 2u);
  EXPECT_EQ(j["inputs"][1]["name"], "ids:0");
  EXPECT_EQ(j["inputs"][1]["file"], "ids_0.npy");
  EXPECT_EQ(j["inputs"][1]["dtype"], "int64");
  EXPECT_EQ(j["inputs"][1]["shape"], nlohmann::json::array({4}));
  EXPECT_EQ(j["inputs"][0]["source"], p("in/x.npy"));
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({2, 3}));
  ASSERT_EQ(j["profile"]["kernels"].size(), 2u);
  EXPECT_EQ(j["profile"]["iterations"], 7);
  EXPECT_EQ(j["profile"]["kernels"][0]["name"], "fused_mul_add");
  EXPECT_EQ(j["profile"]["kernels"][0]["rank"], 1);
  EXPECT_EQ(j["profile"]["kernels"][0]["nodes"], nlohmann::json::array({"Mul_0", "Add_1"}));
  EXPECT_GE(j["profile"]["kernels"][0]["total_ms"].get<double>(), 7 * 0.05);
  // One run's median: the fake kernel busy-waits 50 us per run.
  EXPECT_GE(j["profile"]["kernels"][0]["median_ms"].get<double>(), 0.05);
  EXPECT_LE(j["profile"]["kernels"][0]["median_ms"].get<double>(),
            j["profile"]["kernels"][0]["total_ms"].get<double>() / 7 * 1.5);
  EXPECT_NEAR(j["profile"]["kernels"][0]["percent"].get<double>() + j["profile"]["kernels"][1]["percent"].get<double>(),
              100.0, 1e-6);
  EXPECT_EQ(j["accuracy"]["passed"], true);
  EXPECT_EQ(j["accuracy"]["outputs"][1]["name"], "ids_out");
  EXPECT_EQ(j["accuracy"]["outputs"][1]["mismatches"], 0);
}

TEST_F(MainTestE2E, WrongShapeInputIsAnErrorNamingTheFile) {
  float x[6] = {};
  write_npy(p("in/x.npy"), f32_array({3, 2}, x));
  Result r = run(base() + " --inputs '" + p("in") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: input 'x' (x.npy): expected float32 [2,3], got float32 [3,2]\n");
}

TEST_F(MainTestE2E, WrongDtypeInputIsAnError) {
  NpyArray ids;
  ids.dtype = TG_I32;
  ids.shape = {4};
  ids.data.assign(16, 0);
  write_npy(p("in/ids_0.npy"), ids);
  Result r = run(base() + " --inputs '" + p("in") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: input 'ids:0' (ids_0.npy): expected int64 [4], got int32 [4]\n");
}

TEST_F(MainTestE2E, GarbageInputFileIsAnError) {
  std::ofstream(p("in/x.npy")) << "definitely not numpy";
  Result r = run(base() + " --inputs '" + p("in") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: input 'x': " + p("in/x.npy") + ": not a .npy file (bad magic)\n");
}

TEST_F(MainTestE2E, FloatMismatchBeyondRtolExitsOne) {
  float y[6];
  for (int i = 0; i < 6; ++i) y[i] = 2.0f * kX[i] + kW[i];
  y[4] += 0.5f;  // element [1,1]
  write_npy(p("expected/y.npy"), f32_array({2, 3}, y));
  Result r = run(base() + " --inputs '" + p("in") + "' --expected '" + p("expected") + "'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "output 'y': max abs err 0.5  max rel err 0.133  MISMATCH: 1 of 6 elements exceed "
                              "rtol 0.0001, worst at [1,1]: got 3.25200009, expected 3.75200009\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "accuracy: 1 of 2 outputs MISMATCH")) << r.out;

  // The same error passes a looser tolerance.
  r = run(base() + " --inputs '" + p("in") + "' --expected '" + p("expected") + "' --rtol 0.2");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST_F(MainTestE2E, SmallFloatErrorWithinRtolPasses) {
  float y[6];
  for (int i = 0; i < 6; ++i) y[i] = (2.0f * kX[i] + kW[i]) * (1.0f + 2e-6f);
  write_npy(p("expected/y.npy"), f32_array({2, 3}, y));
  Result r = run(base() + " --inputs '" + p("in") + "' --expected '" + p("expected") + "'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "output 'y': max abs err ")) << r.out;
}

TEST_F(MainTestE2E, IntegerOutputsMustMatchExactly) {
  int64_t ids[4] = {3, 1, 5, 1};
  write_npy(p("expected/ids_out.npy"), i64_array({4}, ids));
  Result r = run(base() + " --inputs '" + p("in") + "' --expected '" + p("expected") + "' --rtol 10");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "output 'ids_out': 1 of 4 elements differ  MISMATCH: first at [2]: got 4, expected 5\n"))
      << r.out;
}

TEST_F(MainTestE2E, ExpectedShapeMismatchIsAnError) {
  float y[6] = {};
  write_npy(p("expected/y.npy"), f32_array({6}, y));
  Result r = run(base() + " --expected '" + p("expected") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: expected output 'y' (y.npy): model gives float32 [2,3], file has float32 [6]\n");
}

TEST_F(MainTestE2E, MissingExpectedFileIsAnError) {
  fs::remove(p("expected/ids_out.npy"));
  Result r = run(base() + " --expected '" + p("expected") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: expected output 'ids_out': " + p("expected/ids_out.npy") +
                       ": cannot open: No such file or directory\n");
}

TEST_F(MainTestE2E, MissingInputsAreRandomAndDeterministic) {
  fs::remove(p("in/ids_0.npy"));
  std::ofstream(p("in/typo.npy")) << "x";
  Result r = run(base() + " --inputs '" + p("in") + "' --outputs '" + p("o1") + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "input 'x' float32 [2,3] <- " + p("in/x.npy") + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "input 'ids:0' int64 [4] <- random (seed 0)\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "note: " + p("in/typo.npy") + " matches no model input, ignored\n")) << r.out;

  // No --inputs at all: everything random; same seed -> same bytes.
  ASSERT_EQ(run(base() + " --outputs '" + p("o2") + "' --save-inputs '" + p("saved") + "'").code, 0);
  ASSERT_EQ(run(base() + " --outputs '" + p("o3") + "' --seed 0").code, 0);
  ASSERT_EQ(run(base() + " --outputs '" + p("o4") + "' --seed 7").code, 0);
  EXPECT_EQ(slurp(p("o2/y.npy")), slurp(p("o3/y.npy")));
  EXPECT_EQ(slurp(p("o2/ids_out.npy")), slurp(p("o3/ids_out.npy")));
  EXPECT_NE(slurp(p("o2/y.npy")), slurp(p("o4/y.npy")));
  // Each input has its own stream: a random ids:0 does not depend on x's source.
  EXPECT_EQ(slurp(p("o1/ids_out.npy")), slurp(p("o2/ids_out.npy")));

  // Random floats in [-1, 1), ints in {0, 1}; --save-inputs wrote what was used.
  NpyArray x = read_npy(p("saved/x.npy"));
  std::vector<float> xv = floats(x);
  std::vector<float> yv = floats(read_npy(p("o2/y.npy")));
  bool all_same = true;
  for (int i = 0; i < 6; ++i) {
    EXPECT_GE(xv[i], -1.0f);
    EXPECT_LT(xv[i], 1.0f);
    EXPECT_EQ(yv[i], 2.0f * xv[i] + kW[i]);
    all_same = all_same && xv[i] == xv[0];
  }
  EXPECT_FALSE(all_same);
  NpyArray ids = read_npy(p("saved/ids_0.npy"));
  EXPECT_EQ(ids.data, read_npy(p("o2/ids_out.npy")).data);
  for (int i = 0; i < 4; ++i) {
    int64_t v;
    std::memcpy(&v, ids.data.data() + 8 * i, 8);
    EXPECT_TRUE(v == 0 || v == 1) << v;
  }
}

TEST_F(MainTestE2E, DurationRunsAtLeastOneIteration) {
  // A weights path with characters JSON must escape checks the writer too.
  std::string weights = p("we\"ird\\na\tme.bin");
  fs::copy_file(p("weights.bin"), weights);
  Result r = run("--weights '" + weights + "' --warmup 0 --duration 0.02 --export-json '" + p("d.json") + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(p("d.json")));
  EXPECT_EQ(j["weights"], weights);
  EXPECT_GE(j["latency_ms"]["iterations"].get<int>(), 1);
  EXPECT_EQ(j["config"]["duration_s"], 0.02);
  EXPECT_FALSE(j.contains("profile"));
  EXPECT_FALSE(j.contains("accuracy"));
}

TEST_F(MainTestE2E, BadFlagsAreOneLineErrors) {
  struct Case {
    std::string args, err;
  } cases[] = {
      {"--bogus", "error: unknown flag '--bogus' (see --help)\n"},
      {"stray", "error: unexpected argument 'stray' (see --help)\n"},
      {"--iters 0", "error: --iters must be at least 1, got 0\n"},
      {"--iters abc", "error: --iters expects an integer, got 'abc'\n"},
      {"--warmup=-1", "error: --warmup must be at least 0, got -1\n"},
      {"--duration 0", "error: --duration must be positive, got 0\n"},
      {"--rtol nan", "error: --rtol expects a non-negative number, got 'nan'\n"},
      {"--inputs", "error: --inputs needs a value\n"},
      {"--outputs=", "error: --outputs needs a non-empty value\n"},
      {"--profile=yes", "error: --profile takes no value\n"},
      {"--inputs /nonexistent/dir", "error: --inputs: '/nonexistent/dir' is not a directory\n"},
  };
  for (const Case& c : cases) {
    Result r = run(base() + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
  }
}

TEST_F(MainTestE2E, HelpExitsZero) {
  Result r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "usage: main_test [flags]")) << r.out;
  EXPECT_TRUE(contains(r.out, "--export-json FILE")) << r.out;
}

TEST_F(MainTestE2E, WeightsErrorsComeFromTheModel) {
  Result r = run("--weights /nonexistent/w.bin");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "error: cannot create the model: weights file '/nonexistent/w.bin': cannot open: No such file or "
            "directory\n");
  std::ofstream(p("short.bin")) << "abc";
  r = run("--weights '" + p("short.bin") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: cannot create the model: weights file '" + p("short.bin") +
                       "' has 3 bytes, expected 24\n");
}

TEST_F(MainTestE2E, ModelRunFailureIsAnError) {
  float x[6] = {0, 0, 999, 0, 0, 0};
  write_npy(p("in/x.npy"), f32_array({2, 3}, x));
  Result r = run(base() + " --inputs '" + p("in") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: tg_model_run failed: fake model: x contains 999\n");
}

// A generated project puts main_test in build/ and weights.bin beside it.
TEST_F(MainTestE2E, DefaultWeightsNextToOrAboveTheExecutable) {
  fs::create_directories(dir_ / "proj" / "build");
  fs::copy_file(TG_FAKE_MAIN_TEST, dir_ / "proj" / "build" / "main_test");
  std::string exe = p("proj/build/main_test");

  Result r = run_exe(exe, "--warmup 0 --iters 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: no weights.bin next to the executable (" + p("proj/build") +
                       ") or in its parent folder; pass --weights PATH\n");

  fs::copy_file(p("weights.bin"), dir_ / "proj" / "weights.bin");
  r = run_exe(exe, "--warmup 0 --iters 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "weights: " + p("proj/weights.bin") + "\n")) << r.out;

  fs::copy_file(p("weights.bin"), dir_ / "proj" / "build" / "weights.bin");
  r = run_exe(exe, "--warmup 0 --iters 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "weights: " + p("proj/build/weights.bin") + "\n")) << r.out;
}

}  // namespace
