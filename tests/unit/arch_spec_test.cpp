// Arch specs (scheduler/arch_spec.h): the embedded JSON files parse, hold the
// invariants the scheduler relies on, and bad input fails as a UserError that
// names the culprit.
#include "scheduler/arch_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compiler/ir/error.h"
#include "scheduler/embedded_arch_files.h"

namespace tilegraph::scheduler {
namespace {

// The message of the UserError `f` throws ("" if it throws none).
template <typename F>
std::string user_error_of(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ArchSpec, EveryKnownArchParses) {
  const std::vector<std::string> names = known_arch_names();
  ASSERT_GE(names.size(), 8u);  // host + the seven embedded files
  EXPECT_EQ(names.front(), "host");
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const ArchSpec a = arch_by_name(name);
    EXPECT_EQ(a.name, name);
    EXPECT_FALSE(a.isa.empty());
    EXPECT_FALSE(a.levels.empty());
    EXPECT_EQ(a.dram().name, "dram");
    EXPECT_EQ(a.dram().scope, LevelScope::kDevice);
    EXPECT_EQ(a.cores, a.compute_units);
    EXPECT_GE(a.compute_units, 1);
    EXPECT_LE(a.shared_bytes_per_block, a.shared_bytes_per_unit);
    EXPECT_LE(a.max_threads_per_block, a.max_threads_per_unit);
    EXPECT_GT(a.peak_fp32_flops, 0);
    EXPECT_GE(a.peak_fp16_flops, a.peak_fp32_flops);
    for (size_t i = 1; i < a.levels.size(); ++i) {
      SCOPED_TRACE(a.levels[i].name);
      // Whatever is inside DRAM is smaller than DRAM, and no slower to read.
      EXPECT_LT(a.levels[i].capacity_bytes, a.dram().capacity_bytes);
      EXPECT_GT(a.levels[i].bandwidth_bytes_per_s, a.dram().bandwidth_bytes_per_s);
      EXPECT_GE(a.levels[i].scope, a.levels[i - 1].scope);
    }
    EXPECT_EQ(a.levels.back().scope, LevelScope::kThread);
  }
}

TEST(ArchSpec, EmbeddedFileNamesMatchArchNames) {
  for (const EmbeddedFile& file : embedded_arch_files()) {
    const ArchSpec a = parse_arch_json(std::string(file.contents), std::string(file.name));
    EXPECT_EQ(a.name + ".json", file.name);
  }
}

TEST(ArchSpec, GpuLevelsGoFromDramToRegisters) {
  for (const std::string& name : known_arch_names()) {
    const ArchSpec a = arch_by_name(name);
    if (!a.is_gpu()) continue;
    SCOPED_TRACE(name);
    ASSERT_EQ(a.levels.size(), 4u);
    EXPECT_EQ(a.levels[1].name, "l2");
    EXPECT_EQ(a.levels[2].name, "shared");
    EXPECT_EQ(a.levels.back().name, "registers");
    EXPECT_EQ(a.level("shared")->capacity_bytes, a.shared_bytes_per_unit);
    EXPECT_EQ(a.level("registers")->capacity_bytes, 4 * a.max_registers_per_thread);
    EXPECT_EQ(a.l2_bytes, a.level("l2")->capacity_bytes);
    EXPECT_EQ(a.max_threads_per_block % a.warp_size, 0);
  }
}

TEST(ArchSpec, H100Numbers) {
  const ArchSpec a = arch_by_name("H100");
  EXPECT_EQ(a.target, "cuda");
  EXPECT_EQ(a.isa, "sm_90");
  EXPECT_EQ(a.compute_units, 132);
  EXPECT_EQ(a.warp_size, 32);
  EXPECT_EQ(a.shared_bytes_per_block, 227 << 10);
  EXPECT_DOUBLE_EQ(a.dram().bandwidth_bytes_per_s, 3.35e12);
  EXPECT_EQ(arch_by_name("MI250").warp_size, 64);
  EXPECT_EQ(arch_by_name("MI250").target, "hip");
  EXPECT_EQ(arch_by_name("neoverse-n2").target, "cpu");
  EXPECT_EQ(arch_by_name("neoverse-n2").vector_bytes, 16);
}

TEST(ArchSpec, LookupIsCaseInsensitive) {
  EXPECT_EQ(arch_by_name("h100").name, "H100");
  EXPECT_EQ(arch_by_name("Neoverse-N2").name, "neoverse-n2");
  EXPECT_EQ(arch_by_name("HOST").name, "host");
  EXPECT_EQ(arch_by_name("x86").name, "host");
  EXPECT_EQ(arch_by_name("cpu").name, "host");
}

TEST(ArchSpec, UnknownNameListsKnownOnes) {
  const std::string message = user_error_of([] { arch_by_name("h1000"); });
  EXPECT_NE(message.find("unknown --arch 'h1000'"), std::string::npos) << message;
  EXPECT_NE(message.find("host"), std::string::npos) << message;
  EXPECT_NE(message.find("H100"), std::string::npos) << message;
}

TEST(ArchSpec, HostArch) {
  const ArchSpec a = host_arch();
  EXPECT_EQ(a.target, "cpu");
  EXPECT_FALSE(a.is_gpu());
  EXPECT_GE(a.cores, 1);
  EXPECT_EQ(a.compute_units, a.cores);
  EXPECT_EQ(a.warp_size, 1);
  ASSERT_GE(a.levels.size(), 4u);
  EXPECT_EQ(a.dram().name, "dram");
  EXPECT_LE(a.dram().bandwidth_bytes_per_s, 50e9);
  EXPECT_EQ(a.levels.back().name, "registers");
  EXPECT_EQ(a.shared_bytes_per_block, a.l2_bytes);
  EXPECT_GT(a.peak_fp32_flops, 0);
}

// host_arch(N): the machine's per-core rates and caches, the totals for N
// cores (what a tune whose kernels run on N threads is priced for).
TEST(ArchSpec, HostArchForAGivenCoreCount) {
  const ArchSpec one = host_arch(1), four = host_arch(4);
  EXPECT_EQ(one.cores, 1);
  EXPECT_EQ(one.compute_units, 1);
  EXPECT_EQ(four.compute_units, 4);
  EXPECT_DOUBLE_EQ(four.peak_fp32_flops, 4 * one.peak_fp32_flops);
  EXPECT_DOUBLE_EQ(four.peak_int8_ops, 4 * one.peak_int8_ops);
  for (const char* level : {"l1", "l2"}) {
    EXPECT_DOUBLE_EQ(four.level(level)->bandwidth_bytes_per_s, 4 * one.level(level)->bandwidth_bytes_per_s) << level;
    EXPECT_EQ(four.level(level)->capacity_bytes, one.level(level)->capacity_bytes) << level;
  }
  EXPECT_EQ(four.l1_bytes, one.l1_bytes);
  EXPECT_EQ(four.shared_bytes_per_block, one.shared_bytes_per_block);
  EXPECT_NE(one.description.find("as 1 core"), std::string::npos) << one.description;
  // No count: the machine's own, as before.
  EXPECT_EQ(host_arch().compute_units, host_arch(host_arch().cores).compute_units);
}

// A valid document to break one field at a time.
nlohmann::json valid_spec() {
  return nlohmann::json::parse(R"({
    "name": "toy", "target": "cuda", "description": "a toy GPU", "isa": "sm_80",
    "source": "made up", "compute_units": 2, "warp_size": 32,
    "max_threads_per_block": 256, "max_threads_per_unit": 512, "max_blocks_per_unit": 4,
    "shared_bytes_per_block": 4096, "shared_bytes_per_unit": 8192,
    "registers_per_unit": 1024, "max_registers_per_thread": 64,
    "kernel_launch_seconds": 1e-6, "peak_fp32_flops": 1e9, "peak_fp16_flops": 2e9,
    "peak_int8_ops": 4e9, "vector_bytes": 16,
    "levels": [
      {"name": "dram", "scope": "device", "capacity_bytes": 1048576,
       "bandwidth_bytes_per_s": 1e9, "transaction_bytes": 32},
      {"name": "registers", "scope": "thread", "capacity_bytes": 256,
       "bandwidth_bytes_per_s": 1e11, "transaction_bytes": 4}
    ]})");
}

std::string error_for(const nlohmann::json& spec) {
  return user_error_of([&] { parse_arch_json(spec.dump(), "toy.json"); });
}

TEST(ArchSpec, ValidDocumentParses) {
  const ArchSpec a = parse_arch_json(valid_spec().dump(), "toy.json");
  EXPECT_EQ(a.name, "toy");
  EXPECT_EQ(a.cores, 2);
  EXPECT_EQ(a.l2_bytes, 0);  // no "l2" level
  EXPECT_EQ(a.levels[1].scope, LevelScope::kThread);
}

TEST(ArchSpec, CpuOverheadsAreOptionalKeys) {
  nlohmann::json gpu = valid_spec();
  EXPECT_EQ(parse_arch_json(gpu.dump(), "toy.json").parallel_region_seconds, 0);
  nlohmann::json cpu = valid_spec();
  cpu["target"] = "cpu";
  // Absent from a CPU spec: the host's defaults.
  const ArchSpec defaults = parse_arch_json(cpu.dump(), "toy.json");
  EXPECT_EQ(defaults.parallel_region_seconds, host_arch().parallel_region_seconds);
  EXPECT_EQ(defaults.block_overhead_seconds, host_arch().block_overhead_seconds);
  EXPECT_GT(defaults.block_overhead_seconds, 0);
  cpu["parallel_region_seconds"] = 4e-7;
  cpu["block_overhead_seconds"] = 0;
  const ArchSpec given = parse_arch_json(cpu.dump(), "toy.json");
  EXPECT_EQ(given.parallel_region_seconds, 4e-7);
  EXPECT_EQ(given.block_overhead_seconds, 0);
  cpu["block_overhead_seconds"] = -1;
  EXPECT_EQ(error_for(cpu), "toy.json: field 'block_overhead_seconds' must be non-negative, got -1");
}

TEST(ArchSpec, WrittenSpecReadsBackTheSame) {
  for (const std::string& name : {std::string("host"), std::string("H100"), std::string("cortex-a76")}) {
    const ArchSpec a = arch_by_name(name);
    const std::string text = arch_to_json(a);
    const ArchSpec b = parse_arch_json(text, name);
    EXPECT_EQ(arch_to_json(b), text) << name;
    EXPECT_EQ(b.cores, a.cores) << name;
    EXPECT_EQ(b.l1_bytes, a.l1_bytes) << name;
    EXPECT_EQ(b.l2_bytes, a.l2_bytes) << name;
    EXPECT_EQ(b.peak_fp32_flops, a.peak_fp32_flops) << name;
    EXPECT_EQ(b.block_overhead_seconds, a.block_overhead_seconds) << name;
  }
}

TEST(ArchSpec, ArchFileErrorsNameTheFile) {
  const std::string missing = user_error_of([] { arch_from_file("/nonexistent/spec.json"); });
  EXPECT_NE(missing.find("--arch-file '/nonexistent/spec.json'"), std::string::npos) << missing;
}

TEST(ArchSpec, MalformedJsonNamesOriginAndField) {
  const std::string not_json = user_error_of([] { parse_arch_json("{", "toy.json"); });
  EXPECT_NE(not_json.find("toy.json: not valid JSON"), std::string::npos) << not_json;

  nlohmann::json missing = valid_spec();
  missing.erase("warp_size");
  EXPECT_EQ(error_for(missing), "toy.json: field 'warp_size' is missing");

  nlohmann::json wrong_type = valid_spec();
  wrong_type["compute_units"] = "two";
  EXPECT_NE(error_for(wrong_type).find("toy.json: field 'compute_units' must be an integer"),
            std::string::npos);

  nlohmann::json negative = valid_spec();
  negative["levels"][1]["bandwidth_bytes_per_s"] = -5;
  EXPECT_NE(error_for(negative).find("field 'levels[1].bandwidth_bytes_per_s' must be positive"),
            std::string::npos);

  nlohmann::json zero = valid_spec();
  zero["levels"][0]["capacity_bytes"] = 0;
  EXPECT_NE(error_for(zero).find("'levels[0].capacity_bytes' must be a positive integer"),
            std::string::npos);

  nlohmann::json typo = valid_spec();
  typo["peak_fp64_flops"] = 1e9;
  EXPECT_EQ(error_for(typo), "toy.json: field 'peak_fp64_flops' is not an arch spec field");

  nlohmann::json bad_scope = valid_spec();
  bad_scope["levels"][1]["scope"] = "warp";
  EXPECT_NE(error_for(bad_scope).find("'levels[1].scope' must be"), std::string::npos);

  nlohmann::json bad_target = valid_spec();
  bad_target["target"] = "tpu";
  EXPECT_NE(error_for(bad_target).find("'target' must be"), std::string::npos);
}

TEST(ArchSpec, LevelOrderIsChecked) {
  nlohmann::json no_levels = valid_spec();
  no_levels["levels"] = nlohmann::json::array();
  EXPECT_NE(error_for(no_levels).find("'levels' must be a non-empty array"), std::string::npos);

  nlohmann::json registers_first = valid_spec();
  std::swap(registers_first["levels"][0], registers_first["levels"][1]);
  EXPECT_NE(error_for(registers_first).find("'levels[1].scope' is wider"), std::string::npos);

  nlohmann::json no_dram = valid_spec();
  no_dram["levels"][0]["name"] = "hbm";
  EXPECT_NE(error_for(no_dram).find("'levels[0]' must be the device-scope \"dram\" level"),
            std::string::npos);

  nlohmann::json too_much_shared = valid_spec();
  too_much_shared["shared_bytes_per_block"] = 16384;
  EXPECT_NE(error_for(too_much_shared).find("'shared_bytes_per_block' exceeds"), std::string::npos);
}

}  // namespace

// tune --no-tensor-cores: the spec says so in its JSON (the schedule cache's key
// changes with it), reads back the same, and prices fp16 at the fp32 rate.
TEST(ArchSpec, WithoutTensorCoresIsItsOwnSpec) {
  const ArchSpec h100 = arch_by_name("H100");
  EXPECT_TRUE(h100.tensor_cores);
  const ArchSpec off = without_tensor_cores(h100);
  EXPECT_FALSE(off.tensor_cores);
  EXPECT_EQ(off.peak_fp16_flops, h100.peak_fp32_flops);
  EXPECT_EQ(off.peak_fp32_flops, h100.peak_fp32_flops);
  const std::string text = arch_to_json(off);
  EXPECT_NE(text, arch_to_json(h100));
  EXPECT_EQ(arch_to_json(h100).find("tensor_cores"), std::string::npos);
  const ArchSpec back = parse_arch_json(text, "off.json");
  EXPECT_FALSE(back.tensor_cores);
  EXPECT_EQ(arch_to_json(back), text);
  nlohmann::json j = nlohmann::json::parse(text);
  j["tensor_cores"] = "no";
  EXPECT_EQ(error_for(j), "toy.json: field 'tensor_cores' must be true or false, got \"no\"");
}

// half_width_fma: an optional boolean key, written only when true (specs
// without it keep their text, and so their schedule cache keys).
TEST(ArchSpec, HalfWidthFmaIsWrittenOnlyWhenSet) {
  const ArchSpec a76 = arch_by_name("cortex-a76");
  EXPECT_FALSE(a76.half_width_fma);
  EXPECT_EQ(arch_to_json(a76).find("half_width_fma"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(arch_to_json(a76));
  j["half_width_fma"] = true;
  const ArchSpec split = parse_arch_json(j.dump(), "split.json");
  EXPECT_TRUE(split.half_width_fma);
  EXPECT_NE(arch_to_json(split).find("\"half_width_fma\": true"), std::string::npos);
  EXPECT_TRUE(parse_arch_json(arch_to_json(split), "again.json").half_width_fma);
  j["half_width_fma"] = 1;
  EXPECT_EQ(error_for(j), "toy.json: field 'half_width_fma' must be true or false, got 1");
}

}  // namespace tilegraph::scheduler
