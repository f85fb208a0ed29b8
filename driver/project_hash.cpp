#include "driver/project_hash.h"

#include <fstream>

#include "driver/version.h"
#include "compiler/ir/content_hash.h"
#include "compiler/ir/error.h"
#include "scheduler/arch_spec.h"

namespace tilegraph::driver {

namespace {

std::string_view bytes_of(const Tensor& t) {
  return {reinterpret_cast<const char*>(t.data->data()), t.data->size()};
}

// Streams a file through the hash (a model may be gigabytes).
void add_file(ContentHash& h, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(str_cat("cannot read '", path, "'"));
  std::string chunk(1 << 20, '\0');
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0)
    h.add(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())));
}

// "1" / "0" for full / none, as when fusion was a bool, so those projects'
// hashes (and bytes) do not change; "register" for the level between.
std::string fusion_hash_text(scheduler::FusionLevel level) {
  switch (level) {
    case scheduler::FusionLevel::kNone: return "0";
    case scheduler::FusionLevel::kFull: return "1";
    default: return scheduler::fusion_level_name(level);
  }
}

}  // namespace

std::string project_hash(const CompileOptions& o, const Graph& g, const codegen::MemoryPlan& plan) {
  ContentHash h;
  h.add(str_cat("tilegraph ", kTilegraphVersion, "\narch ", o.arch, "\ncpu_features ", o.cpu_features, "\ntopk ",
                o.topk, "\nfusion ", fusion_hash_text(o.fusion), "\nprofile_topk ", o.profile_topk, "\nfp16 ", o.fp16, "\nemulate ",
                o.emulate, "\nsanitize ", o.sanitize, "\nskip_dot ", o.skip_dot, "\nbuild_gpu ", o.build_gpu, "\n"));
  // Only when given, so projects without a budget keep their hashes.
  if (o.memory_budget > 0) h.add(str_cat("memory_budget ", o.memory_budget, "\n"));
  if (!o.tensor_cores) h.add("tensor_cores 0\n");  // absent by default: existing hashes unchanged
  if (!o.arch_file.empty()) h.add("arch_file " + scheduler::arch_to_json(scheduler::arch_from_file(o.arch_file)));
  for (const auto& [name, shape] : o.input_shapes) h.add(str_cat("input_shape ", name, "=", shape_to_string(shape), "\n"));
  for (const auto& [name, t] : o.frozen_inputs) {
    h.add(str_cat("frozen ", name, " ", dtype_name(t.dtype), "[", shape_to_string(t.shape), "] ",
                  t.data ? t.data->size() : 0, "\n"));
    if (t.data) h.add(bytes_of(t));
  }
  h.add("model\n");
  add_file(h, o.model_path);
  for (const auto& [id, offset] : plan.weights_offsets) {
    const Tensor& t = g.tensor(id);
    h.add(str_cat("\nweights ", offset, " ", t.data->size(), "\n")).add(bytes_of(t));
  }
  return hash_hex(h.value());
}

}  // namespace tilegraph::driver
