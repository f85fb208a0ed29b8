#include "scheduler/arch_spec.h"

#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/ir/error.h"
#include "scheduler/embedded_arch_files.h"

namespace tilegraph::scheduler {

namespace {

using nlohmann::json;

// Reads the fields of one JSON object. Every error names the document
// (`origin`) and the field's full path ("levels[2].capacity_bytes"), and a
// field nobody asked for is an error too, so a misspelt key cannot be
// silently ignored.
class FieldReader {
 public:
  FieldReader(const json& object, std::string origin, std::string prefix)
      : object_(object), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!object_.is_object())
      fail_at(prefix_.empty() ? "(top level)" : prefix_, "must be an object");
  }

  std::string string(const char* key) {
    const json& v = field(key);
    if (!v.is_string() || v.get<std::string>().empty()) fail(key, "must be a non-empty string");
    return v.get<std::string>();
  }

  int64_t integer(const char* key, int64_t max = INT64_MAX) {
    const json& v = field(key);
    if (!v.is_number_integer()) fail(key, str_cat("must be an integer, got ", v.dump()));
    // nlohmann keeps non-negative integers unsigned and negative ones signed.
    const bool in_range =
        v.is_number_unsigned()
            ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= static_cast<uint64_t>(max)
            : v.get<int64_t>() >= 1 && v.get<int64_t>() <= max;
    if (!in_range)
      fail(key, str_cat("must be a positive integer of at most ", max, ", got ", v.dump()));
    return v.get<int64_t>();
  }

  int small_integer(const char* key) { return static_cast<int>(integer(key, INT_MAX)); }

  // A finite number > 0 (or >= 0 when zero_ok).
  double number(const char* key, bool zero_ok = false) {
    const json& v = field(key);
    if (!v.is_number()) fail(key, str_cat("must be a number, got ", v.dump()));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || (d == 0 && !zero_ok))
      fail(key, str_cat("must be ", zero_ok ? "non-negative" : "positive", ", got ", v.dump()));
    return d;
  }

  // An optional number (>= 0): `fallback` when the key is absent.
  bool optional_bool(const char* key, bool fallback) {
    if (!object_.contains(key)) {
      read_.insert(key);
      return fallback;
    }
    const json& v = field(key);
    if (!v.is_boolean()) fail(key, str_cat("must be true or false, got ", v.dump()));
    return v.get<bool>();
  }

  double optional_number(const char* key, double fallback) {
    if (!object_.contains(key)) {
      read_.insert(key);
      return fallback;
    }
    return number(key, /*zero_ok=*/true);
  }

  const json& array(const char* key) {
    const json& v = field(key);
    if (!v.is_array() || v.empty()) fail(key, "must be a non-empty array");
    return v;
  }

  // Accepts a documentation-only key ("source") without reading it.
  void ignore(const char* key) { read_.insert(key); }

  void reject_unread_fields() const {
    for (const auto& [key, value] : object_.items())
      if (!read_.count(key)) fail_at(prefix_ + key, "is not an arch spec field");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    fail_at(prefix_ + key, what);
  }

 private:
  const json& field(const char* key) {
    read_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end()) fail_at(prefix_ + key, "is missing");
    return *it;
  }

  [[noreturn]] void fail_at(const std::string& path, const std::string& what) const {
    throw UserError(str_cat(origin_, ": field '", path, "' ", what));
  }

  const json& object_;
  std::string origin_;
  std::string prefix_;
  std::set<std::string> read_;
};

LevelScope parse_scope(FieldReader& r) {
  const std::string scope = r.string("scope");
  if (scope == "device") return LevelScope::kDevice;
  if (scope == "block") return LevelScope::kBlock;
  if (scope == "thread") return LevelScope::kThread;
  r.fail("scope", str_cat("must be \"device\", \"block\" or \"thread\", got \"", scope, "\""));
}

MemoryLevel parse_level(const json& object, const std::string& origin, const std::string& prefix) {
  FieldReader r(object, origin, prefix);
  MemoryLevel level;
  level.name = r.string("name");
  level.scope = parse_scope(r);
  level.capacity_bytes = r.integer("capacity_bytes");
  level.bandwidth_bytes_per_s = r.number("bandwidth_bytes_per_s");
  level.transaction_bytes = r.small_integer("transaction_bytes");
  r.reject_unread_fields();
  return level;
}

// The capacity of the first level with one of `names`, or 0.
int64_t capacity_of(const ArchSpec& a, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const MemoryLevel* level = a.level(name)) return level->capacity_bytes;
  return 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The embedded specs, parsed once; a broken file fails every --arch lookup,
// which the unit tests catch before anyone ships it.
const std::vector<ArchSpec>& embedded_specs() {
  static const std::vector<ArchSpec> specs = [] {
    std::vector<ArchSpec> out;
    for (const EmbeddedFile& file : embedded_arch_files())
      out.push_back(parse_arch_json(std::string(file.contents),
                                    str_cat("scheduler/arch/", file.name)));
    return out;
  }();
  return specs;
}

// ---- The host CPU ----------------------------------------------------------
//
// Rates the OS does not tell us are estimates, chosen to be conservative for a
// current x86 or Arm server core; the cost model only needs their ratios to
// be roughly right:
constexpr double kHostClockHz = 2.5e9;  // sustained all-core clock
constexpr int kHostFmaUnits = 2;        // vector FMA pipes per core
// One core streams about 10 GB/s from DRAM; a few channels cap the socket.
constexpr double kHostDramBytesPerSPerCore = 10e9;
constexpr double kHostDramBytesPerSCap = 50e9;
// Bytes per core per clock: L1 serves two vector loads, L2 half a 64 B line,
// a shared L3 a quarter of one.
constexpr double kHostL2BytesPerClock = 32;
constexpr double kHostL3BytesPerClock = 16;
// A kernel call whose parallel loop runs on one core (the OpenMP runtime's
// entry and exit); waking and joining the other cores adds a region's cost;
// each tile a core runs adds its loop and scratch set-up. Measured on a
// 2-core x86 box with the profiling harness (tune --profile-topk on); the
// `tilegraph calibrate` spec replaces them with this machine's.
constexpr double kHostKernelLaunchSeconds = 0.5e-6;
constexpr double kHostParallelRegionSeconds = 0.3e-6;
constexpr double kHostBlockOverheadSeconds = 30e-9;

struct HostCaches {
  int64_t l1 = 0, l2 = 0, l3 = 0;
  bool found = false;  // sysfs described at least one cache
};

std::string read_word(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

// Walks /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}: the
// index numbering differs between machines, the level and type files do not.
HostCaches read_host_caches() {
  HostCaches caches;
  for (int index = 0;; ++index) {
    const std::string dir = str_cat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    const std::string level = read_word(dir + "level");
    if (level.empty()) break;
    if (read_word(dir + "type") == "Instruction") continue;
    const std::string size = read_word(dir + "size");  // "48K", "2048K", "32M"
    int64_t bytes = std::atoll(size.c_str());
    if (!size.empty() && size.back() == 'K') bytes <<= 10;
    if (!size.empty() && size.back() == 'M') bytes <<= 20;
    if (bytes <= 0) continue;
    if (level == "1") caches.l1 = bytes;
    if (level == "2") caches.l2 = bytes;
    if (level == "3") caches.l3 = bytes;
    caches.found = true;
  }
  return caches;
}

}  // namespace

const MemoryLevel* ArchSpec::level(const std::string& level_name) const {
  for (const MemoryLevel& l : levels)
    if (l.name == level_name) return &l;
  return nullptr;
}

ArchSpec parse_arch_json(const std::string& text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw UserError(str_cat(origin, ": not valid JSON: ", e.what()));
  }
  FieldReader r(doc, origin, "");
  ArchSpec a;
  a.name = r.string("name");
  a.target = r.string("target");
  if (a.target != "cpu" && a.target != "cuda" && a.target != "hip")
    r.fail("target", str_cat("must be \"cpu\", \"cuda\" or \"hip\", got \"", a.target, "\""));
  a.description = r.string("description");
  a.isa = r.string("isa");
  r.ignore("source");

  a.compute_units = r.small_integer("compute_units");
  a.warp_size = r.small_integer("warp_size");
  a.max_threads_per_block = r.small_integer("max_threads_per_block");
  a.max_threads_per_unit = r.small_integer("max_threads_per_unit");
  a.max_blocks_per_unit = r.small_integer("max_blocks_per_unit");
  a.shared_bytes_per_block = r.integer("shared_bytes_per_block");
  a.shared_bytes_per_unit = r.integer("shared_bytes_per_unit");
  a.registers_per_unit = r.small_integer("registers_per_unit");
  a.max_registers_per_thread = r.small_integer("max_registers_per_thread");
  a.kernel_launch_seconds = r.number("kernel_launch_seconds", /*zero_ok=*/true);
  const bool cpu = a.target == "cpu";
  a.parallel_region_seconds = r.optional_number("parallel_region_seconds", cpu ? kHostParallelRegionSeconds : 0);
  a.block_overhead_seconds = r.optional_number("block_overhead_seconds", cpu ? kHostBlockOverheadSeconds : 0);
  a.ukernel_fp32_flops = r.optional_number("ukernel_fp32_flops", 0);
  a.ukernel_int8_ops = r.optional_number("ukernel_int8_ops", 0);
  a.pack_bytes_per_s = r.optional_number("pack_bytes_per_s", 0);
  a.peak_fp32_flops = r.number("peak_fp32_flops");
  a.peak_fp16_flops = r.number("peak_fp16_flops");
  a.peak_int8_ops = r.number("peak_int8_ops");
  a.tensor_cores = r.optional_bool("tensor_cores", true);
  a.half_width_fma = r.optional_bool("half_width_fma", false);
  a.vector_bytes = r.small_integer("vector_bytes");
  if (a.shared_bytes_per_block > a.shared_bytes_per_unit)
    r.fail("shared_bytes_per_block", "exceeds shared_bytes_per_unit");
  if (a.max_threads_per_block > a.max_threads_per_unit)
    r.fail("max_threads_per_block", "exceeds max_threads_per_unit");

  const json& levels = r.array("levels");
  std::set<std::string> names;
  for (size_t i = 0; i < levels.size(); ++i) {
    const std::string path = str_cat("levels[", i, "]");
    MemoryLevel level = parse_level(levels[i], origin, path + ".");
    if (!names.insert(level.name).second) r.fail(path + ".name", "repeats a level name");
    // Outer levels are shared more widely: device, then block, then thread.
    if (!a.levels.empty() && level.scope < a.levels.back().scope)
      r.fail(path + ".scope", "is wider than the scope of the level before it");
    a.levels.push_back(std::move(level));
  }
  if (a.levels.front().name != "dram" || a.levels.front().scope != LevelScope::kDevice)
    r.fail("levels[0]", "must be the device-scope \"dram\" level (levels go from DRAM inwards)");
  r.reject_unread_fields();

  // The CPU code generator's older fields, derived so the file says each
  // number once. On a GPU the "L1" a tile is sized for is shared memory.
  a.cores = a.compute_units;
  a.l1_bytes = capacity_of(a, {"l1", "shared"});
  a.l2_bytes = capacity_of(a, {"l2"});
  a.l3_bytes = capacity_of(a, {"l3"});
  return a;
}

namespace {

// Whether this x86 core runs its 512-bit FMAs as two 256-bit halves: AMD's
// family 19h (Zen 3 and Zen 4; of the two only Zen 4 has AVX-512). On a Zen 4
// core the float GEMMs of ResNet-50 ran 2.7% faster and MobileViT-S's 2.5%
// in 8-row than in 12-row panels (one core, same run), none slower.
bool host_splits_512bit_fma() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amd = ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  unsigned family = (eax >> 8) & 0xf;
  if (family == 0xf) family += (eax >> 20) & 0xff;
  return family == 0x19;
#else
  return false;
#endif
}

}  // namespace

ArchSpec host_arch(int cores) {
  ArchSpec a;
  a.name = "host";
  a.target = "cpu";
  a.description = "the host CPU";
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  a.cores = cores > 0 ? cores : online > 0 ? static_cast<int>(online) : 1;
  if (cores > 0 && cores != online) a.description = str_cat("the host CPU, as ", cores, cores == 1 ? " core" : " cores");
  const HostCaches caches = read_host_caches();
  if (caches.found) {  // otherwise keep the header's defaults
    if (caches.l1 > 0) a.l1_bytes = caches.l1;
    if (caches.l2 > 0) a.l2_bytes = caches.l2;
    a.l3_bytes = caches.l3;  // 0: this machine has no L3
  }

  // The widest vector the compiler was built for. The compiler is usually
  // built without -march while the generated code gets -march=native, so a
  // plain x86-64 build assumes AVX2, as it always has.
  int vector_registers = 16;
#if defined(__AVX512F__)
  a.vector_bytes = 64;
  vector_registers = 32;
  a.isa = "x86-64-avx512";
#elif defined(__aarch64__)
  a.vector_bytes = 16;
  vector_registers = 32;
  a.isa = "armv8-a";
#if defined(__ARM_FEATURE_DOTPROD)
  a.isa += "+dotprod";
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
  a.isa += "+i8mm";
#endif
#elif defined(__x86_64__)
  // The generated code gets -march=native: size register tiles for the
  // vectors this machine has (4x16 fp32 tiles, two AVX2 registers wide, were
  // one AVX-512 register and four accumulator chains: half the FMA rate).
  if (__builtin_cpu_supports("avx512f")) {
    a.vector_bytes = 64;
    vector_registers = 32;
    a.isa = "x86-64-avx512";
  } else {
    a.vector_bytes = 32;
    a.isa = "x86-64-avx2";
  }
#else
  a.vector_bytes = 32;
  a.isa = "generic";
#endif

  a.half_width_fma = a.vector_bytes == 64 && host_splits_512bit_fma();

  // One thread per core, one "block" (a core's tile, kept in its L2) at a time.
  a.compute_units = a.cores;
  a.warp_size = 1;
  a.max_threads_per_block = 1;
  a.max_threads_per_unit = 1;
  a.max_blocks_per_unit = 1;
  a.shared_bytes_per_block = a.l2_bytes;
  a.shared_bytes_per_unit = a.l2_bytes;
  const int register_bytes = vector_registers * a.vector_bytes;
  a.registers_per_unit = register_bytes / 4;
  a.max_registers_per_thread = register_bytes / 4;
  a.kernel_launch_seconds = kHostKernelLaunchSeconds;
  a.parallel_region_seconds = kHostParallelRegionSeconds;
  a.block_overhead_seconds = kHostBlockOverheadSeconds;

  // Every FMA pipe retires one vector FMA (2 flops per fp32 lane) per clock.
  const double per_clock = a.cores * kHostClockHz;
  a.peak_fp32_flops = per_clock * kHostFmaUnits * 2 * (a.vector_bytes / 4);
  a.peak_fp16_flops = a.peak_fp32_flops;  // no fp16 matrix units assumed: fp16 computes in fp32
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__) || defined(__ARM_FEATURE_DOTPROD)
  a.peak_int8_ops = 4 * a.peak_fp32_flops;  // a dot-product instruction: 4 MACs per 32-bit lane
#else
  a.peak_int8_ops = 2 * a.peak_fp32_flops;  // pmaddubsw + pmaddwd: about half that
#endif

  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  const int64_t dram_bytes =
      pages > 0 && page_bytes > 0 ? int64_t{pages} * page_bytes : int64_t{8} << 30;
  a.levels.push_back({"dram", LevelScope::kDevice, dram_bytes,
                      std::min(kHostDramBytesPerSPerCore * a.cores, kHostDramBytesPerSCap), 64});
  if (a.l3_bytes > 0)  // sysfs gives one L3 instance; several (AMD CCDs) only add room
    a.levels.push_back(
        {"l3", LevelScope::kDevice, a.l3_bytes, per_clock * kHostL3BytesPerClock, 64});
  a.levels.push_back({"l2", LevelScope::kBlock, a.l2_bytes, per_clock * kHostL2BytesPerClock, 64});
  a.levels.push_back({"l1", LevelScope::kBlock, a.l1_bytes, per_clock * 2 * a.vector_bytes, 64});
  // Three vector operands per FMA per pipe per clock.
  a.levels.push_back({"registers", LevelScope::kThread, register_bytes,
                      per_clock * kHostFmaUnits * 3 * a.vector_bytes, a.vector_bytes});
  return a;
}

ArchSpec arch_by_name(const std::string& name) {
  const std::string wanted = lower(name);
  if (wanted == "host" || wanted == "x86" || wanted == "cpu") return host_arch();
  for (const ArchSpec& spec : embedded_specs())
    if (lower(spec.name) == wanted) return spec;
  std::string known;
  for (const std::string& n : known_arch_names()) known += (known.empty() ? "" : ", ") + n;
  throw UserError(str_cat("unknown --arch '", name, "'; known: ", known));
}

std::vector<std::string> known_arch_names() {
  std::vector<std::string> names = {"host"};
  for (const ArchSpec& spec : embedded_specs()) names.push_back(spec.name);
  return names;
}

}  // namespace tilegraph::scheduler

namespace tilegraph::scheduler {

ArchSpec without_tensor_cores(ArchSpec arch) {
  arch.tensor_cores = false;
  arch.peak_fp16_flops = arch.peak_fp32_flops;
  return arch;
}

ArchSpec arch_from_file(const std::string& path, const std::string& origin) {
  const std::string named = origin.empty() ? "--arch-file '" + path + "'" : origin;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(named + ": cannot open it");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_arch_json(text, named);
}

std::string arch_to_json(const ArchSpec& a) {
  static const char* const kScopes[] = {"device", "block", "thread"};
  json levels = json::array();
  for (const MemoryLevel& l : a.levels)
    levels.push_back({{"name", l.name},
                      {"scope", kScopes[static_cast<int>(l.scope)]},
                      {"capacity_bytes", l.capacity_bytes},
                      {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s},
                      {"transaction_bytes", l.transaction_bytes}});
  json j = {{"name", a.name},
                  {"target", a.target},
                  {"description", a.description},
                  {"isa", a.isa},
                  {"compute_units", a.compute_units},
                  {"warp_size", a.warp_size},
                  {"max_threads_per_block", a.max_threads_per_block},
                  {"max_threads_per_unit", a.max_threads_per_unit},
                  {"max_blocks_per_unit", a.max_blocks_per_unit},
                  {"shared_bytes_per_block", a.shared_bytes_per_block},
                  {"shared_bytes_per_unit", a.shared_bytes_per_unit},
                  {"registers_per_unit", a.registers_per_unit},
                  {"max_registers_per_thread", a.max_registers_per_thread},
                  {"kernel_launch_seconds", a.kernel_launch_seconds},
                  {"parallel_region_seconds", a.parallel_region_seconds},
                  {"block_overhead_seconds", a.block_overhead_seconds},
                  {"ukernel_fp32_flops", a.ukernel_fp32_flops},
                  {"ukernel_int8_ops", a.ukernel_int8_ops},
                  {"pack_bytes_per_s", a.pack_bytes_per_s},
                  {"peak_fp32_flops", a.peak_fp32_flops},
                  {"peak_fp16_flops", a.peak_fp16_flops},
                  {"peak_int8_ops", a.peak_int8_ops},
                  {"vector_bytes", a.vector_bytes},
                  {"levels", levels}};
  if (!a.tensor_cores) j["tensor_cores"] = false;  // absent by default: default specs' text (cache keys) unchanged
  if (a.half_width_fma) j["half_width_fma"] = true;
  return j.dump(2) + "\n";
}

}  // namespace tilegraph::scheduler
