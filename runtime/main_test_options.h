// main_test_options.h — the command line of main_test (see kMainTestUsage).
#ifndef TILEGRAPH_RT_MAIN_TEST_OPTIONS_H
#define TILEGRAPH_RT_MAIN_TEST_OPTIONS_H

#include <cstdint>
#include <string>
#include <vector>

namespace tilegraph::rt {

struct MainTestOptions {
  std::string weights;  // empty: weights.bin next to the executable, else one folder up
  std::string inputs_dir, outputs_dir, expected_dir, save_inputs_dir, export_json;
  int64_t warmup = 10;
  int64_t iters = 100;
  double duration_s = 0;  // > 0: time iterations for this long instead of `iters`
  int threads = 0;        // 0: the model's default (one per --cpu-ids entry if given)
  std::vector<int> cpu_ids;  // --cpu-ids: pin the process (and its threads) to these CPUs
  uint64_t seed = 0;
  double rtol = 1e-4;
  bool profile = false;
  bool help = false;
};

// "0,2,4-7" -> {0, 2, 4, 5, 6, 7}; throws std::invalid_argument naming the bad part.
std::vector<int> parse_cpu_list(const std::string& text);

// The --help text.
extern const char kMainTestUsage[];

// Parses argv[1..argc). Flags with a value accept "--flag VALUE" and
// "--flag=VALUE". Throws std::invalid_argument with a one-line message
// ("unknown flag '--x' (see --help)", "--iters must be at least 1, got 0").
MainTestOptions parse_main_test_options(int argc, const char* const* argv);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_MAIN_TEST_OPTIONS_H
