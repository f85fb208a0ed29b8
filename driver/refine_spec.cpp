#include "driver/refine_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace {

// How far one model's kernels may move a calibrated rate.
constexpr double kMaxScale = 8;
// Kernels whose micro-kernel share of the measured time is below this say
// too little about its rate (the rest of the model's terms dominate).
constexpr double kMinShare = 0.2;

// The spec's rate a GEMM kernel of this compute dtype runs at (nullptr: none).
double scheduler::ArchSpec::*rate_of(const std::string& dtype) {
  if (dtype == "float32") return &scheduler::ArchSpec::ukernel_fp32_flops;
  if (dtype == "int8" || dtype == "uint8") return &scheduler::ArchSpec::ukernel_int8_ops;
  return nullptr;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

Refinement refine_spec(const scheduler::ArchSpec& spec, const nlohmann::json& explain) {
  if (!explain.contains("measured"))
    throw UserError("calibrate --refine: the model's report has no measured kernel times");
  if (spec.is_gpu()) throw UserError("calibrate --refine refines a CPU spec; " + spec.name + " is a GPU");
  // Per rate: the rate each kernel implies / the spec's.
  std::map<bool, std::vector<double>> scales;  // by int8 (else float32)
  for (const nlohmann::json& k : explain.at("subgraphs")) {
    if (!k.contains("measured_ms") || !k.contains("ukernel_ms")) continue;
    const auto rate = rate_of(k.at("compute_dtype").get<std::string>());
    const double predicted = k.at("predicted_ms").get<double>(), measured = k.at("measured_ms").get<double>();
    const double ukernel = k.at("ukernel_ms").get<double>();
    // predicted - ukernel: packing, epilogue, the parallel region...
    const double left = measured - (predicted - ukernel);
    if (rate == nullptr || ukernel <= 0 || measured <= 0 || left < kMinShare * measured) continue;
    scales[rate == &scheduler::ArchSpec::ukernel_int8_ops].push_back(ukernel / left);
  }
  Refinement r;
  r.spec = spec;
  for (const auto& [int8, s] : scales) {
    const auto rate = int8 ? &scheduler::ArchSpec::ukernel_int8_ops : &scheduler::ArchSpec::ukernel_fp32_flops;
    double log_sum = 0;
    for (double x : s) log_sum += std::log(x);
    const double scale = std::clamp(std::exp(log_sum / double(s.size())), 1 / kMaxScale, kMaxScale);
    // An uncalibrated spec's micro-kernels run at its peak (cost_model.cpp).
    const double before = spec.*rate > 0 ? spec.*rate : int8 ? spec.peak_int8_ops : spec.peak_fp32_flops;
    r.spec.*rate = before * scale;
    r.kernels += static_cast<int>(s.size());
    r.summary += str_cat(int8 ? "ukernel_int8_ops " : "ukernel_fp32_flops ", number(before), " -> ",
                         number(r.spec.*rate), " (x", number(scale), ", from ", s.size(),
                         int8 ? " int8" : " float", " GEMM kernels)\n");
  }
  if (r.kernels == 0) r.summary = "no GEMM micro-kernel kernel informs a term; the spec is unchanged\n";
  // The spec must read back as it is written.
  r.spec = scheduler::parse_arch_json(scheduler::arch_to_json(r.spec), "refined spec");
  return r;
}

}  // namespace tilegraph::driver
