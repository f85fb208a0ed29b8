#include "driver/measured_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/process.h"
#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

// main_test may take a while on a big model; a hang should not hold explain forever.
constexpr int kProfileTimeoutSeconds = 900;

// How far off a prediction is, either way: max(r, 1/r).
double error_factor(double ratio) { return ratio >= 1 ? ratio : 1 / ratio; }

}  // namespace

std::vector<MeasuredKernel> read_kernel_profile_json(const nlohmann::json& report, const std::string& origin) {
  const auto profile = report.find("profile");
  if (profile == report.end() || !profile->is_object())
    throw UserError("'" + origin + "' has no per-kernel profile (main_test --profile --export-json writes one)");
  std::vector<MeasuredKernel> kernels;
  try {
    for (const nlohmann::json& k : profile->at("kernels")) {
      MeasuredKernel m;
      m.index = k.at("index").get<int>();
      m.name = k.at("name").get<std::string>();
      m.ms = k.contains("median_ms") ? k.at("median_ms").get<double>() : k.at("ms_per_iter").get<double>();
      kernels.push_back(std::move(m));
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError("'" + origin + "': malformed profile (" + one_line(e.what()) + ")");
  }
  std::sort(kernels.begin(), kernels.end(),
            [](const MeasuredKernel& a, const MeasuredKernel& b) { return a.index < b.index; });
  return kernels;
}

std::vector<MeasuredKernel> profile_project_kernels(const std::string& project_dir, const std::string& export_path,
                                                    int iterations) {
  const fs::path dir(project_dir);
  const fs::path exe = dir / "build" / "main_test";
  if (!fs::exists(exe))
    throw UserError("no main_test at '" + exe.string() + "' to measure the kernels with (tune without --no-build)");
  const std::string iters = std::to_string(std::max(iterations, 1));
  ProcessOptions o;
  o.capture = true;
  o.timeout_seconds = kProfileTimeoutSeconds;
  const ProcessResult ran =
      run_process({exe.string(), "--weights", (dir / "weights.bin").string(), "--warmup", "2", "--iters", iters,
                   "--profile", "--export-json", export_path},
                  o);
  if (!ran.ok())
    throw UserError("main_test --profile failed (" + ran.describe(kProfileTimeoutSeconds) + "): " +
                    one_line(ran.output.substr(ran.output.size() > 400 ? ran.output.size() - 400 : 0)));
  std::ifstream in(export_path);
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw UserError("'" + export_path + "' (main_test --export-json) is not valid JSON: " + one_line(e.what()));
  }
  return read_kernel_profile_json(report, export_path);
}

void add_measured_times(nlohmann::json& explain, const std::vector<MeasuredKernel>& measured) {
  nlohmann::json& subgraphs = explain.at("subgraphs");
  if (measured.size() != subgraphs.size())
    throw UserError(str_cat("the profile has ", measured.size(), " kernels but the schedule ", subgraphs.size(),
                            " (a profile of another tune? run again, or drop --profile-json)"));
  nlohmann::json rows = nlohmann::json::array();
  double total = 0, log_error = 0;
  int counted = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    const MeasuredKernel& m = measured[i];
    if (m.index != static_cast<int>(i))
      throw UserError(str_cat("the profile lacks kernel ", i, " (it lists kernel ", m.index, " instead)"));
    nlohmann::json& k = subgraphs[i];
    const double predicted = k.at("predicted_ms").get<double>();
    k["measured_ms"] = m.ms;
    k["kernel"] = m.name;
    total += m.ms;
    // A kernel too short for the clock (an alias copy) has no ratio.
    if (m.ms <= 0 || predicted <= 0) continue;
    const double ratio = predicted / m.ms;
    k["ratio"] = ratio;
    log_error += std::log(error_factor(ratio));
    ++counted;
    rows.push_back({{"index", i}, {"name", k.at("name")}, {"kernel", m.name}, {"kind", k.at("kind")},
                    {"config", k.at("config")},
                    {"predicted_ms", predicted}, {"measured_ms", m.ms}, {"ratio", ratio}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return error_factor(a["ratio"].get<double>()) > error_factor(b["ratio"].get<double>());
  });
  explain["measured"] = rows;
  explain["measured_ms"] = total;
  explain["prediction_error"] = counted > 0 ? std::exp(log_error / counted) : 0.0;
}

std::string measured_text(const nlohmann::json& e) {
  std::ostringstream out;
  const nlohmann::json& rows = e.at("measured");
  char line[320];
  std::snprintf(line, sizeof line, "\npredicted vs measured (%zu kernels, largest error first)\n", rows.size());
  out << line;
  std::snprintf(line, sizeof line, "%5s  %-40s  %-12s  %12s  %12s  %8s\n", "#", "kernel", "kind", "predicted ms",
                "measured ms", "ratio");
  out << line;
  for (const nlohmann::json& r : rows) {
    std::string name = r.at("name").get<std::string>();
    if (name.size() > 40) name = name.substr(0, 37) + "...";
    std::snprintf(line, sizeof line, "%5lld  %-40s  %-12s  %12.4f  %12.4f  %8.3f\n",
                  static_cast<long long>(r.at("index").get<int64_t>()), name.c_str(),
                  r.at("kind").get<std::string>().c_str(),
                  r.at("predicted_ms").get<double>(), r.at("measured_ms").get<double>(), r.at("ratio").get<double>());
    out << line;
  }
  std::snprintf(line, sizeof line,
                "total: predicted %.3f ms, measured %.3f ms (kernels); geometric-mean error %.2fx\n",
                e.at("predicted_ms").get<double>(), e.at("measured_ms").get<double>(),
                e.at("prediction_error").get<double>());
  out << line;
  return out.str();
}

}  // namespace tilegraph::driver
