// The `tilegraph` command line: tune (compile a model into a project and build
// it), run (benchmark / run it via main_test), ops (list supported ONNX ops).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/driver/pipeline.h"
#include "compiler/ir/error.h"
#include "frontends/onnx/import.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/tensor_proto.h"

namespace fs = std::filesystem;
using namespace tilegraph;

namespace {

std::string project_dir(const std::string& prefix, const std::string& arch) {
  return (fs::path(prefix) / "tilegraph_rt" / arch).string();
}

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--input-shape '" + spec + "': expected NAME=DIMS, e.g. input_ids=1x128");
    shapes[spec.substr(0, eq)] = onnx_frontend::parse_shape(spec.substr(eq + 1));
  }
  return shapes;
}

// NAME=FILE.pb pairs: FILE holds a serialized onnx TensorProto (the ONNX
// test-data format), e.g. written by onnx.numpy_helper.from_array(...).SerializeToString().
std::map<std::string, Tensor> read_frozen_inputs(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> frozen;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--freeze-input '" + spec + "': expected NAME=FILE.pb");
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    std::ifstream in(file, std::ios::binary);
    if (!in) throw UserError("--freeze-input " + name + ": cannot open '" + file + "'");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes))
      throw UserError("--freeze-input " + name + ": '" + file + "' is not a serialized onnx TensorProto");
    frozen[name] = onnx_frontend::tensor_from_proto(proto, "", "--freeze-input " + name);
  }
  return frozen;
}

int tune(const std::string& prefix, const std::string& model, const std::string& arch, int topk,
         const std::vector<std::string>& input_shapes, const std::vector<std::string>& frozen_inputs,
         bool no_build, int jobs,
         const std::vector<std::string>& dump_after, bool verbose) {
  driver::CompileOptions o;
  o.model_path = model.empty() ? (fs::path(prefix) / "model.onnx").string() : model;
  if (!fs::exists(o.model_path))
    throw UserError("no model at '" + o.model_path + "' (tune expects PREFIX/model.onnx, or --model FILE)");
  o.output_dir = project_dir(prefix, arch);
  o.arch = arch;
  o.topk = topk;
  o.input_shapes = parse_input_shapes(input_shapes);
  o.frozen_inputs = read_frozen_inputs(frozen_inputs);
  o.build = !no_build;
  o.build_jobs = jobs;
  o.dump_after = dump_after;
  o.verbose = verbose;
  const auto report = driver::compile(o);
  std::cerr << "tuned " << report.num_kernels << " kernels in "
            << report.seconds_frontend + report.seconds_passes + report.seconds_schedule +
                   report.seconds_codegen + report.seconds_build
            << " s; project: " << o.output_dir << "\n";
  if (o.build) std::cerr << "run it: tilegraph run " << prefix << (arch == "host" ? "" : " --arch " + arch) << "\n";
  return 0;
}

// Replaces this process with main_test, forwarding the run flags.
int run(const std::string& prefix, const std::string& arch, const std::vector<std::string>& args) {
  const fs::path exe = fs::path(project_dir(prefix, arch)) / "build" / "main_test";
  if (!fs::exists(exe))
    throw UserError("no compiled project at '" + project_dir(prefix, arch) + "'; run `tilegraph tune " +
                    prefix + (arch == "host" ? "" : " --arch " + arch) + "` first");
  std::vector<std::string> argv_storage{exe.string(), "--weights",
                                        (fs::path(project_dir(prefix, arch)) / "weights.bin").string()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(exe.c_str(), argv.data());
  throw UserError("cannot execute '" + exe.string() + "'");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tilegraph: an ahead-of-time tile-graph DNN compiler (ONNX in, C++ project out)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tilegraph 0.1");

  std::string prefix, model, arch = "host";
  int topk = 20, jobs = 0;
  bool no_build = false, verbose = false;
  std::vector<std::string> input_shapes, frozen_inputs, dump_after;
  auto* tune_cmd = app.add_subcommand("tune", "compile PREFIX/model.onnx into PREFIX/tilegraph_rt/<arch>/ and build it");
  tune_cmd->add_option("prefix", prefix, "model folder holding model.onnx (and its external data)")->required();
  tune_cmd->add_option("--model", model, "ONNX file to compile instead of PREFIX/model.onnx");
  tune_cmd->add_option("--arch", arch, "target: host (the CPU this runs on)")->capture_default_str();
  tune_cmd->add_option("--topk", topk, "tile configs kept per subgraph for on-device profiling (GPU targets; the CPU target ignores it)")->capture_default_str();
  tune_cmd->add_option("--input-shape", input_shapes, "NAME=DIMS static shape for an input, e.g. input_ids=1x128 (repeatable)");
  tune_cmd->add_option("--freeze-input", frozen_inputs, "NAME=FILE.pb: bake an input's value (an onnx TensorProto file) into the model as a constant (repeatable)");
  tune_cmd->add_flag("--no-build", no_build, "write the project but do not build it");
  tune_cmd->add_option("--jobs,-j", jobs, "parallel build jobs (default: all cores)");
  tune_cmd->add_option("--dump-after", dump_after, "print the IR after a pass: import, inline_index_maps, simplify_indices, eliminate_dead_ops, materialize_outputs, all");
  tune_cmd->add_flag("--verbose,-v", verbose, "log passes and print the Kernel IR");

  std::string run_prefix, run_arch = "host";
  std::vector<std::string> run_args;
  auto* run_cmd = app.add_subcommand("run", "run the compiled model with main_test (flags after PREFIX go to main_test: --inputs DIR --outputs DIR --warmup N --iters N --duration S --threads N --profile --expected DIR --export-json FILE)");
  run_cmd->add_option("prefix", run_prefix, "model folder given to tune")->required();
  run_cmd->add_option("--arch", run_arch, "target the project was tuned for")->capture_default_str();
  run_cmd->allow_extras();

  auto* ops_cmd = app.add_subcommand("ops", "list the ONNX operators tilegraph lowers");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*tune_cmd) return tune(prefix, model, arch, topk, input_shapes, frozen_inputs, no_build, jobs, dump_after, verbose);
    if (*run_cmd) return run(run_prefix, run_arch, run_cmd->remaining());
    if (*ops_cmd) {
      for (const std::string& op : onnx_frontend::supported_op_types()) std::cout << op << "\n";
      return 0;
    }
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\n(this is a tilegraph bug; please report it with the model)\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
