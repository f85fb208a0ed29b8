#include "codegen/project/project_files.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "codegen/project/embedded_runtime.h"
#include "compiler/ir/error.h"
#include "compiler/ir/replace_file.h"
#include "scheduler/int_gemm.h"

namespace tilegraph::codegen {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& contents) {
  // Unchanged files keep their timestamps, so re-tuning rebuilds only what
  // changed; only a regular file counts (a symlink is replaced, not read).
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(path, ec))) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (old == contents) return;
    }
  }
  replace_file(path, contents);
}

std::string tensor_info_table(const Graph& g, const std::vector<TensorId>& ids, const char* prefix) {
  std::ostringstream out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Tensor& t = g.tensor(ids[i]);
    out << "const int64_t " << prefix << "_shape_" << i << "[] = {";
    for (size_t d = 0; d < t.shape.size(); ++d) out << (d ? ", " : "") << t.shape[d];
    if (t.shape.empty()) out << "0";
    out << "};\n";
  }
  out << "const tg_tensor_info " << prefix << "_info[] = {\n";
  for (size_t i = 0; i < ids.size(); ++i) {
    const Tensor& t = g.tensor(ids[i]);
    out << "    {" << c_string_literal(t.name) << ", " << static_cast<int>(t.dtype) << ", "
        << t.shape.size() << ", " << prefix << "_shape_" << i << "},\n";
  }
  if (ids.empty()) out << "    {\"\", 0, 0, nullptr},\n";
  out << "};\n";
  return out.str();
}

Graph whole_batch_io(const Graph& g, int64_t chunks) {
  if (chunks == 1) return g;
  Graph whole = g;
  for (const std::vector<TensorId>* ids : {&g.inputs, &g.outputs})
    for (TensorId id : *ids) {
      Shape& shape = whole.tensor(id).shape;
      TG_CHECK(!shape.empty(), "a batch-tiled graph's input or output '", g.tensor(id).name, "' is a scalar");
      shape[0] = g.tensor(id).shape[0] * chunks;
    }
  return whole;
}

namespace {

nlohmann::json tensor_json(const Graph& g, TensorId id) {
  const Tensor& t = g.tensor(id);
  return {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
}

}  // namespace

std::string index_check_table(const Graph& g) {
  if (g.index_checks.empty()) return "";
  std::ostringstream out;
  out << "\n// Runtime index checks: the node, axis and size behind each site.\n"
      << "struct tg_index_check { const char* node; int axis; long long dim; };\n"
      << "const tg_index_check kIndexChecks[] = {\n";
  for (const IndexCheckSite& s : g.index_checks)
    out << "    {" << c_string_literal(str_cat(s.op_type, " node '", s.node, "'")) << ", " << s.axis << ", "
        << s.dim << "},\n";
  out << "};\n"
      << "std::string index_error_message(long long site, long long index) {\n"
      << "  if (site < 0 || site >= (long long)(sizeof kIndexChecks / sizeof kIndexChecks[0]))\n"
      << "    return \"index \" + std::to_string(index) + \" out of range\";\n"
      << "  const tg_index_check& c = kIndexChecks[site];\n"
      << "  return std::string(c.node) + \": index \" + std::to_string(index) + \" out of range [\" +\n"
      << "         std::to_string(-c.dim) + \", \" + std::to_string(c.dim) + \") for axis \" + std::to_string(c.axis);\n"
      << "}\n";
  return out.str();
}

nlohmann::json manifest_json(const Graph& g, const std::vector<Kernel>& kernels,
                             const MemoryPlan& plan, const ProjectInfo& info) {
  nlohmann::json m;
  m["format"] = "tilegraph-manifest/1";
  m["model"] = info.model_path;
  m["graph"] = g.name;
  m["arch"] = info.arch;
  m["project_hash"] = info.project_hash;
  if (info.sanitizer_warp_size > 0) m["sanitizer"] = {{"warp_size", info.sanitizer_warp_size}};
  for (TensorId i : g.inputs) m["inputs"].push_back(tensor_json(g, i));
  for (TensorId o : g.outputs) m["outputs"].push_back(tensor_json(g, o));
  m["memory_plan"] = {{"arena_bytes", plan.arena_bytes},
                      {"arena_bytes_without_reuse", plan.naive_bytes},
                      {"weights_bytes", plan.weights_bytes}};
  nlohmann::json buffers = nlohmann::json::array();
  for (const auto& [id, offset] : plan.arena_offsets)
    buffers.push_back({{"tensor", g.tensor(id).name}, {"memory", "arena"}, {"offset", offset},
                       {"bytes", g.tensor(id).bytes()}, {"dtype", dtype_name(g.tensor(id).dtype)}});
  for (const auto& [id, offset] : plan.weights_offsets)
    buffers.push_back({{"tensor", g.tensor(id).name}, {"memory", "weights"}, {"offset", offset},
                       {"bytes", g.tensor(id).bytes()}, {"dtype", dtype_name(g.tensor(id).dtype)}});
  m["buffers"] = buffers;
  nlohmann::json ks = nlohmann::json::array();
  for (const Kernel& k : kernels) {
    nlohmann::json params = nlohmann::json::array();
    for (const Buffer* b : global_buffers(k))
      params.push_back({{"tensor", g.tensor(b->tensor).name}, {"written", b->written}});
    ks.push_back({{"name", k.name},
                  {"onnx_nodes", k.source_nodes},
                  {"params", params},
                  {"flops", k.flops},
                  {"schedule",
                   {{"kind", scheduler::kernel_kind_name(k.schedule.kind)},
                    {"ops", k.schedule.ops.size()},
                    {"parallel_depth", k.schedule.parallel_depth},
                    {"row_axis", k.schedule.row_axis},
                    {"tile_rows", k.schedule.tile_rows},
                    {"tile_cols", k.schedule.tile_cols}}}});
    bool int8_matmul = false;
    for (int op : k.schedule.ops) int8_matmul |= scheduler::is_int8_contraction(g, g.ops[static_cast<size_t>(op)]);
    ks.back()["int8_matmul"] = int8_matmul;
    if (!k.ukernel.empty()) ks.back()["ukernel"] = k.ukernel;
    for (const auto& [param, value] : k.ukernel_params) ks.back()["ukernel_params"][param] = value;
    if (!k.schedule.measured_seconds.empty()) {  // --profile-topk: every candidate's time, in candidate order
      nlohmann::json profile = nlohmann::json::array();
      for (size_t c = 0; c < k.schedule.candidates.size(); ++c)
        profile.push_back({{"config", k.schedule.candidates[c].to_string()},
                           {"measured_ms", k.schedule.measured_seconds[c] * 1e3}});
      ks.back()["profile"] = profile;
    }
    if (const auto& gemm = k.schedule.library_gemm) {
      auto matrix = [](const scheduler::GemmMatrix& x) {
        return nlohmann::json{{"offset", x.offset}, {"batch_stride", x.batch_stride},
                              {"order", x.row_major ? "row" : "col"}, {"ld", x.ld}};
      };
      // A GPU project calls cuBLASLt here; its CPU emulation a reference GEMM.
      ks.back()["library"] = "cublasLt";
      ks.back()["gemm"] = {{"dtype", dtype_name(gemm->dtype)}, {"batch", gemm->batch}, {"m", gemm->m},
                           {"n", gemm->n}, {"k", gemm->k}, {"a", matrix(gemm->a)}, {"b", matrix(gemm->b)},
                           {"c", matrix(gemm->c)}, {"epilogue", gemm->epilogue_name()}};
    }
    if (k.schedule.kind == scheduler::KernelKind::kBlock)
      ks.back()["launch"] = {{"grid", k.grid}, {"threads", k.threads}, {"shared_bytes", k.shared_bytes},
                             {"config", k.schedule.config.to_string()}, {"tensor_cores", k.tensor_cores}};
  }
  m["kernels"] = ks;
  m["num_kernels"] = kernels.size();
  m["compile"] = info.compile_stats;
  if (!info.explain.is_null()) m["explain"] = info.explain;
  return m;
}

std::string kernel_name_tables(const std::vector<Kernel>& kernels) {
  std::ostringstream out;
  out << "const char* const kKernelNames[] = {\n";
  for (const Kernel& k : kernels) out << "    " << c_string_literal(k.name) << ",\n";
  if (kernels.empty()) out << "    \"\",\n";
  out << "};\nconst char* const kKernelNodes[] = {\n";
  for (const Kernel& k : kernels) {
    std::string nodes;
    for (size_t i = 0; i < k.source_nodes.size(); ++i) nodes += (i ? "," : "") + k.source_nodes[i];
    out << "    " << c_string_literal(nodes) << ",\n";
  }
  if (kernels.empty()) out << "    \"\",\n";
  out << "};\n";
  return out.str();
}

std::vector<const Buffer*> global_buffers(const Kernel& k) {
  std::vector<const Buffer*> params;
  for (const Buffer& b : k.buffers)
    if (b.scope == MemoryScope::kGlobal) params.push_back(&b);
  return params;
}

std::string param_type(const Buffer& b) {
  return std::string(b.written ? "" : "const ") + storage_c_type(b.dtype) + "*";
}

TensorSlots tensor_slots(const Graph& g) {
  TensorSlots slots{std::vector<int>(g.tensors.size(), -1), std::vector<int>(g.tensors.size(), -1)};
  for (size_t i = 0; i < g.inputs.size(); ++i) slots.input[g.inputs[i]] = static_cast<int>(i);
  for (size_t i = 0; i < g.outputs.size(); ++i) slots.output[g.outputs[i]] = static_cast<int>(i);
  return slots;
}

std::string pointer_expr(const Graph& g, const MemoryPlan& plan, TensorId id, const TensorSlots& slots,
                         ModelMemory& memory) {
  const Tensor& t = g.tensor(id);
  const std::string storage = storage_c_type(t.dtype);
  if (t.kind == TensorKind::kConstant) {
    TG_CHECK(plan.weights_offsets.count(id), "constant '", t.name, "' has no offset in weights.bin");
    memory.weights = true;
    return str_cat("(const ", storage, "*)(W + ", plan.weights_offsets.at(id), ")");
  }
  if (slots.input[id] >= 0) {
    memory.input = true;
    return str_cat("(const ", storage, "*)(", memory.inputs, "[", slots.input[id], "])");
  }
  if (slots.output[id] >= 0) {
    memory.output = true;
    return str_cat("(", storage, "*)(", memory.outputs, "[", slots.output[id], "])");
  }
  TG_CHECK(plan.arena_offsets.count(id), "intermediate '", t.name, "' has no offset in the arena");
  memory.arena = true;
  return str_cat("(", storage, "*)(A + ", plan.arena_offsets.at(id), ")");
}

std::string byte_sizes(const Graph& g, const std::vector<TensorId>& ids, const char* name) {
  std::ostringstream out;
  out << "const int64_t " << name << "[] = {";
  for (size_t i = 0; i < ids.size(); ++i) out << (i ? ", " : "") << g.tensor(ids[i]).bytes();
  if (ids.empty()) out << "0";
  out << "};\n";
  return out.str();
}

std::vector<std::string> write_numbered_sources(
    const std::string& out_dir, const std::string& stem, const std::string& ext, size_t count,
    const std::function<std::string(size_t file, size_t first, size_t last)>& contents) {
  auto name = [&](size_t file) {
    char number[32];
    std::snprintf(number, sizeof number, "_%03zu", file);
    return stem + number + ext;
  };
  std::vector<std::string> names;
  for (size_t first = 0; first < count; first += kKernelsPerSourceFile) {
    names.push_back(name(names.size()));
    write_file(fs::path(out_dir) / names.back(),
               contents(names.size() - 1, first, std::min(count, first + kKernelsPerSourceFile)));
  }
  for (size_t file = names.size(); fs::exists(fs::path(out_dir) / name(file)); ++file)
    fs::remove(fs::path(out_dir) / name(file));
  return names;
}

namespace {

void write_model_runtime_file(const std::string& name, const std::string& out_dir) {
  const std::vector<EmbeddedFile>& files = embedded_model_runtime_files();
  const auto f = std::find_if(files.begin(), files.end(), [&](const EmbeddedFile& e) { return e.name == name; });
  TG_CHECK(f != files.end(), "runtime/model/", name, " is not embedded in the compiler");
  write_file(fs::path(out_dir) / name, std::string(f->contents));
}

}  // namespace

void write_device_shim(const ProjectTarget& t, const std::string& out_dir) {
  TG_CHECK(t.gpu(), "a CPU project has no device shim");
  write_model_runtime_file(t.device_shim, out_dir);
}

void write_profile_timing(const std::string& out_dir) { write_model_runtime_file("tg_profile_timing.h", out_dir); }

void write_model_runtime_files(const ProjectTarget& t, const std::string& out_dir) {
  write_model_runtime_file("tg_model_info.h", out_dir);
  write_model_runtime_file(t.gpu() ? "gpu_model_runtime.h" : "cpu_model_runtime.h", out_dir);
  if (t.gpu()) write_device_shim(t, out_dir);
}

std::string main_test_cmake(const std::vector<std::string>& main_test_sources) {
  std::ostringstream out;
  out << "add_executable(main_test";
  for (const std::string& s : main_test_sources) out << " " << s;
  out << ")\ntarget_compile_options(main_test PRIVATE -O2)\n"
      << "target_link_libraries(main_test PRIVATE model)\n"
      << "set_target_properties(main_test PROPERTIES BUILD_RPATH \"$ORIGIN\" INSTALL_RPATH \"$ORIGIN\")\n";
  return out.str();
}

std::vector<std::string> write_runtime_files(const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw UserError(str_cat("cannot create '", out_dir, "': ", ec.message()));
  std::vector<std::string> main_test_sources;
  for (const EmbeddedFile& f : embedded_runtime_files()) {
    write_file(fs::path(out_dir) / std::string(f.name), std::string(f.contents));
    const std::string name(f.name);
    if (name.size() > 4 && name.substr(name.size() - 4) == ".cpp" && name != "weights_file.cpp")
      main_test_sources.push_back(name);
  }
  std::sort(main_test_sources.begin(), main_test_sources.end());
  return main_test_sources;
}

std::string project_hash_constant(const ProjectInfo& info) {
  return "const char kProjectHash[] = \"" + info.project_hash + "\";  // weights.bin must carry the same\n";
}

void write_weights(const Graph& g, const MemoryPlan& plan, const ProjectInfo& info, const std::string& out_dir) {
  TG_CHECK(info.project_hash.size() == 16, "project hash '", info.project_hash, "' is not 16 hex digits");
  std::string weights(static_cast<size_t>(kWeightsHeaderBytes + plan.weights_bytes), '\0');
  const std::string header = "tilegraph-weights/1 " + info.project_hash + "\n";
  std::copy(header.begin(), header.end(), weights.begin());
  for (const auto& [id, offset] : plan.weights_offsets) {
    const Tensor& t = g.tensor(id);
    std::copy(t.data->begin(), t.data->end(), weights.begin() + kWeightsHeaderBytes + offset);
  }
  write_file(fs::path(out_dir) / "weights.bin", weights);
}

}  // namespace tilegraph::codegen
