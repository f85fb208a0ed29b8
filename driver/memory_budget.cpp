#include "driver/memory_budget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace {

[[noreturn]] void bad_size(const std::string& text, const std::string& why) {
  throw UserError(str_cat("--memory-budget '", text, "': ", why,
                          " (give bytes such as 4096, 64M or 1.5G; K, M, G, T are powers of 1024)"));
}

int64_t unit_of(const std::string& text, std::string suffix) {
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() == 3 && suffix.substr(1) == "IB") suffix = suffix.substr(0, 1);
  if (suffix.size() == 2 && suffix[1] == 'B') suffix = suffix.substr(0, 1);
  if (suffix.empty() || suffix == "B") return 1;
  if (suffix == "K") return int64_t{1} << 10;
  if (suffix == "M") return int64_t{1} << 20;
  if (suffix == "G") return int64_t{1} << 30;
  if (suffix == "T") return int64_t{1} << 40;
  bad_size(text, "unknown unit '" + suffix + "'");
}

}  // namespace

int64_t parse_byte_size(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  const std::string number = text.substr(0, end);
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".")
    bad_size(text, text.empty() ? "empty" : "not a size");
  const int64_t unit = unit_of(text, text.substr(end));
  const double bytes = std::stod(number) * static_cast<double>(unit);
  if (!(bytes >= 1)) bad_size(text, "the budget must be at least one byte");
  if (bytes > 9.0e18) bad_size(text, "too large");
  return static_cast<int64_t>(std::floor(bytes));
}

std::string format_bytes(int64_t bytes) {
  char text[64];
  if (bytes < 1024) std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  else if (bytes < (int64_t{1} << 20)) std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  else if (bytes < (int64_t{1} << 30)) std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  else std::snprintf(text, sizeof text, "%.2f GiB", bytes / 1073741824.0);
  return text;
}

nlohmann::json MemoryPeak::to_json() const {
  return {{"arena_bytes", arena}, {"weights_bytes", weights}, {"scratch_bytes", scratch}, {"io_bytes", io},
          {"total_bytes", total()}};
}

MemoryPeak memory_peak(const Graph& g, const codegen::MemoryPlan& plan, const std::vector<codegen::Kernel>& kernels,
                       int threads, bool gpu) {
  MemoryPeak peak;
  peak.arena = plan.arena_bytes;
  peak.weights = plan.weights_bytes;
  // A CPU thread keeps one scratch buffer, grown to the largest request
  // (tg_block_scratch in the kernel prelude): the block arena or a scratch
  // Local, whichever a kernel asks for.
  int64_t per_thread = 0;
  for (const codegen::Kernel& k : kernels) {
    per_thread = std::max(per_thread, k.shared_bytes);
    for (const codegen::Buffer& b : k.buffers)
      if (b.scratch) per_thread = std::max(per_thread, b.elements * std::max<int64_t>(dtype_size(b.dtype), 4));
  }
  peak.scratch = per_thread * std::max(threads, 0);
  if (gpu) {
    for (TensorId t : g.inputs) peak.io += g.tensor(t).bytes();
    for (TensorId t : g.outputs) peak.io += g.tensor(t).bytes();
  }
  return peak;
}

std::vector<int64_t> micro_batch_candidates(int64_t batch, const MemoryPeak& untiled, int64_t budget) {
  std::vector<int64_t> candidates;
  for (int64_t m = batch - 1; m >= 1; --m) {
    if (batch % m != 0) continue;
    // A lower bound: the arena and the device inputs/outputs shrink with the
    // batch; weights and scratch may change with the micro-batch's schedule
    // (another kernel kind, other packed weights), so they are not counted.
    const double estimate = static_cast<double>(untiled.arena + untiled.io) * static_cast<double>(m) / batch;
    if (candidates.empty() && estimate > static_cast<double>(budget) && m > 1) continue;
    candidates.push_back(m);
  }
  return candidates;
}

std::string peak_holder(const Graph& g, const codegen::MemoryPlan& plan, const MemoryPeak& peak) {
  const int64_t largest = std::max({peak.arena, peak.weights, peak.scratch, peak.io});
  if (largest == peak.weights) return str_cat("the weights (", format_bytes(peak.weights), ")");
  if (largest == peak.scratch) return str_cat("the kernels' per-thread scratch (", format_bytes(peak.scratch), ")");
  if (largest == peak.io) return str_cat("the device copies of the inputs and outputs (", format_bytes(peak.io), ")");
  TensorId biggest = -1;
  for (const auto& [id, offset] : plan.arena_offsets)
    if (biggest < 0 || g.tensor(id).bytes() > g.tensor(biggest).bytes()) biggest = id;
  std::string what = str_cat("the activation arena (", format_bytes(peak.arena));
  if (biggest >= 0) {
    what += str_cat("; its largest tensor '", g.tensor(biggest).name, "', ", format_bytes(g.tensor(biggest).bytes()));
    const int producer = g.producer(biggest);
    if (producer >= 0 && !g.ops[static_cast<size_t>(producer)].source_nodes.empty())
      what += str_cat(", from ONNX node '", g.ops[static_cast<size_t>(producer)].source_nodes[0], "'");
  }
  return what + ")";
}

}  // namespace tilegraph::driver
