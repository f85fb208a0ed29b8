// main_test_options.cpp — see main_test_options.h.
#include "main_test_options.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace tilegraph::rt {

const char kMainTestUsage[] =
    "usage: main_test [flags]\n"
    "Runs the model in libmodel.so, prints latency statistics, and reads/writes .npy tensors.\n"
    "Tensor files are DIR/<name>.npy where <name> is the ONNX name with every character\n"
    "outside [A-Za-z0-9_.-] replaced by '_'.\n"
    "\n"
    "  --weights PATH      weights file (default: weights.bin next to the executable,\n"
    "                      else in its parent folder)\n"
    "  --inputs DIR        read each input from DIR/<name>.npy; missing ones are random\n"
    "  --seed N            seed of the random inputs (default 0): floats uniform in\n"
    "                      [-1,1), integers in {0,1}, bools random; every input has its\n"
    "                      own stream, so the others do not depend on which are given\n"
    "  --save-inputs DIR   write the inputs actually used to DIR/<name>.npy\n"
    "  --outputs DIR       write each output to DIR/<name>.npy (DIR is created)\n"
    "  --expected DIR      compare each output with DIR/<name>.npy; exit 1 when an output\n"
    "                      differs: floats by max |a-b|/max(|b|,1) > rtol, others exactly\n"
    "  --rtol X            tolerance of --expected (default 1e-4)\n"
    "  --warmup N          untimed iterations first (default 10)\n"
    "  --iters N           timed iterations (default 100)\n"
    "  --duration SECONDS  run timed iterations for this long instead (at least one)\n"
    "  --threads N         threads the kernels use (tg_set_num_threads)\n"
    "  --cpu-ids LIST      run on these CPUs only, e.g. 4-7 or 0,2 (sched_setaffinity;\n"
    "                      the big cores of a big.LITTLE phone, like taskset); the\n"
    "                      thread count defaults to the number of CPUs listed\n"
    "  --profile           after timing, run the same number of iterations with per-kernel\n"
    "                      profiling and print the kernels sorted by time\n"
    "  --export-json FILE  write statistics, profile, accuracy and tensor shapes as JSON\n"
    "  --help              print this and exit\n"
    "\n"
    "Exit status: 0 success, 1 outputs differ from --expected, 2 error.\n";

namespace {

[[noreturn]] void bad(const std::string& message) { throw std::invalid_argument(message); }

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min_value, int64_t max_value) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) bad(flag + " expects an integer, got '" + text + "'");
  if (v < min_value) bad(flag + " must be at least " + std::to_string(min_value) + ", got " + text);
  if (v > max_value) bad(flag + " must be at most " + std::to_string(max_value) + ", got " + text);
  return v;
}

double parse_non_negative(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || v < 0) bad(flag + " expects a non-negative number, got '" + text + "'");
  return v;
}

// Stores the value of a flag that is_valued().
void set_valued(MainTestOptions& o, const std::string& flag, const std::string& value) {
  if (flag == "--weights") o.weights = value;
  else if (flag == "--inputs") o.inputs_dir = value;
  else if (flag == "--outputs") o.outputs_dir = value;
  else if (flag == "--expected") o.expected_dir = value;
  else if (flag == "--save-inputs") o.save_inputs_dir = value;
  else if (flag == "--export-json") o.export_json = value;
  else if (flag == "--warmup") o.warmup = parse_int(flag, value, 0, INT64_MAX);
  else if (flag == "--iters") o.iters = parse_int(flag, value, 1, INT64_MAX);
  else if (flag == "--threads") o.threads = int(parse_int(flag, value, 0, INT_MAX));
  else if (flag == "--cpu-ids") o.cpu_ids = parse_cpu_list(value);
  else if (flag == "--seed") o.seed = uint64_t(parse_int(flag, value, 0, INT64_MAX));
  else if (flag == "--rtol") o.rtol = parse_non_negative(flag, value);
  else if (flag == "--duration") {
    o.duration_s = parse_non_negative(flag, value);
    if (o.duration_s <= 0) bad("--duration must be positive, got " + value);
  }
}

bool is_valued(const std::string& flag) {
  static const char* const kValued[] = {"--weights", "--inputs", "--outputs", "--expected",
                                        "--save-inputs", "--export-json", "--warmup", "--iters",
                                        "--duration", "--threads", "--seed", "--rtol", "--cpu-ids"};
  for (const char* known : kValued) {
    if (flag == known) return true;
  }
  return false;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (part.empty()) bad("--cpu-ids has an empty entry in '" + text + "'");
    const size_t dash = part.find('-');
    const int64_t lo = parse_int("--cpu-ids", dash == std::string::npos ? part : part.substr(0, dash), 0, 4095);
    const int64_t hi = dash == std::string::npos ? lo : parse_int("--cpu-ids", part.substr(dash + 1), 0, 4095);
    if (hi < lo) bad("--cpu-ids range '" + part + "' runs backwards");
    for (int64_t c = lo; c <= hi; ++c) cpus.push_back(int(c));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cpus;
}

MainTestOptions parse_main_test_options(int argc, const char* const* argv) {
  MainTestOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--profile") {
      o.profile = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) bad("unexpected argument '" + arg + "' (see --help)");
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    if (flag == "--profile" || flag == "--help") bad(flag + " takes no value");
    if (!is_valued(flag)) bad("unknown flag '" + flag + "' (see --help)");
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc) bad(flag + " needs a value");
      value = argv[++i];
    }
    if (value.empty()) bad(flag + " needs a non-empty value");
    set_valued(o, flag, value);
  }
  return o;
}

}  // namespace tilegraph::rt
