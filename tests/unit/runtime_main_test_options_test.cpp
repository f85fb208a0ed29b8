// Tests of runtime/main_test_options: every flag, both value spellings, and
// the one-line errors main_test prints for bad command lines.
#include "main_test_options.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace tilegraph::rt;

namespace {

MainTestOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "main_test");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_main_test_options(int(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MainTestOptions, Defaults) {
  MainTestOptions o = parse({});
  EXPECT_EQ(o.weights, "");
  EXPECT_EQ(o.warmup, 10);
  EXPECT_EQ(o.iters, 100);
  EXPECT_EQ(o.duration_s, 0);
  EXPECT_EQ(o.threads, 0);
  EXPECT_EQ(o.seed, 0u);
  EXPECT_EQ(o.rtol, 1e-4);
  EXPECT_FALSE(o.profile);
  EXPECT_FALSE(o.help);
}

TEST(MainTestOptions, EveryFlagInBothSpellings) {
  MainTestOptions o = parse({"--weights", "w.bin", "--inputs=in", "--outputs", "out", "--expected=exp",
                             "--save-inputs", "saved", "--export-json=s.json", "--warmup", "0", "--iters=5",
                             "--duration", "1.5", "--threads=4", "--seed", "42", "--rtol=1e-3", "--profile"});
  EXPECT_EQ(o.weights, "w.bin");
  EXPECT_EQ(o.inputs_dir, "in");
  EXPECT_EQ(o.outputs_dir, "out");
  EXPECT_EQ(o.expected_dir, "exp");
  EXPECT_EQ(o.save_inputs_dir, "saved");
  EXPECT_EQ(o.export_json, "s.json");
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.iters, 5);
  EXPECT_EQ(o.duration_s, 1.5);
  EXPECT_EQ(o.threads, 4);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.rtol, 1e-3);
  EXPECT_TRUE(o.profile);
  EXPECT_TRUE(parse({"-h"}).help);
  EXPECT_TRUE(parse({"--iters", "3", "--help"}).help);
  EXPECT_EQ(parse({"--weights=a=b"}).weights, "a=b");  // only the first '=' splits
}

TEST(MainTestOptions, OneLineErrors) {
  EXPECT_EQ(error_of({"--bogus"}), "unknown flag '--bogus' (see --help)");
  EXPECT_EQ(error_of({"--bogus=1"}), "unknown flag '--bogus' (see --help)");
  EXPECT_EQ(error_of({"model.onnx"}), "unexpected argument 'model.onnx' (see --help)");
  EXPECT_EQ(error_of({"--iters"}), "--iters needs a value");
  EXPECT_EQ(error_of({"--inputs="}), "--inputs needs a non-empty value");
  EXPECT_EQ(error_of({"--iters", "0"}), "--iters must be at least 1, got 0");
  EXPECT_EQ(error_of({"--iters", "1x"}), "--iters expects an integer, got '1x'");
  EXPECT_EQ(error_of({"--iters", "99999999999999999999"}),
            "--iters expects an integer, got '99999999999999999999'");
  EXPECT_EQ(error_of({"--threads", "3000000000"}), "--threads must be at most 2147483647, got 3000000000");
  EXPECT_EQ(error_of({"--seed", "-1"}), "--seed must be at least 0, got -1");
  EXPECT_EQ(error_of({"--duration", "0"}), "--duration must be positive, got 0");
  EXPECT_EQ(error_of({"--rtol", "-1"}), "--rtol expects a non-negative number, got '-1'");
  EXPECT_EQ(error_of({"--rtol", "inf"}), "--rtol expects a non-negative number, got 'inf'");
  EXPECT_EQ(error_of({"--profile=1"}), "--profile takes no value");
  EXPECT_EQ(error_of({"--cpu-ids", "3-1"}), "--cpu-ids range '3-1' runs backwards");
  EXPECT_EQ(error_of({"--cpu-ids", "0,x"}), "--cpu-ids expects an integer, got 'x'");
  EXPECT_EQ(error_of({"--cpu-ids", "0,,1"}), "--cpu-ids has an empty entry in '0,,1'");
}

TEST(MainTestOptions, CpuIdsListsAndRanges) {
  EXPECT_EQ(parse({"--cpu-ids", "4-7"}).cpu_ids, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(parse({"--cpu-ids=0,2,5-6"}).cpu_ids, (std::vector<int>{0, 2, 5, 6}));
  EXPECT_EQ(parse({"--cpu-ids", "3"}).cpu_ids, (std::vector<int>{3}));
  EXPECT_TRUE(parse({}).cpu_ids.empty());
}

TEST(MainTestOptions, UsageMentionsEveryFlag) {
  std::string usage = kMainTestUsage;
  for (const char* flag : {"--weights", "--inputs", "--seed", "--save-inputs", "--outputs", "--expected", "--rtol",
                           "--warmup", "--iters", "--duration", "--threads", "--cpu-ids", "--profile", "--export-json",
                           "--help"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
