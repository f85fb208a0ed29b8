#include "codegen/lowering/int_gemm_variant.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "compiler/ir/error.h"
#include "scheduler/cpu_features.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tilegraph::codegen {

namespace {

// Mirrors the constants in codegen/ukernels/qgemm_*.h (the generated code
// static_asserts that they agree: int_gemm_tile_assert).
const std::vector<IntGemmVariant>& variants() {
  static const std::vector<IntGemmVariant> table = {
      {"amx", 32, 32, 64, true, 4},
      {"avx512vnni", 8, 32, 4, true}, {"avx2", 6, 8, 4, false, 0, 2},  {"i8mm", 8, 8, 8, false},
      {"dotprod", 8, 8, 4, false},    {"neon", 4, 4, 16, false}, {"scalar", 4, 4, 4, false},
  };
  return table;
}

std::set<std::string> host_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w;
    while (words >> w) flags.insert(w);
    break;
  }
  return flags;
}

// Does the OS let a process use the AMX tile state? (Linux 5.16+ grants it on
// request; the generated qgemm_amx.h asks the same way and aborts if refused,
// so the host gets AMX only where this succeeds.)
bool os_grants_amx() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

IntGemmVariant int_gemm_variant_named(const std::string& name) {
  std::string known;
  for (const IntGemmVariant& v : variants()) {
    if (v.name == name) return v;
    known += (known.empty() ? "" : ", ") + v.name;
  }
  throw UserError(str_cat("unknown int8 GEMM micro-kernel '", name, "' (known: ", known, ")"));
}

std::string int_gemm_tile_assert(const IntGemmVariant& v) {
  return str_cat("static_assert(tg_qgemm::kMR == ", v.mr, " && tg_qgemm::kNR == ", v.nr, " && tg_qgemm::kKU == ", v.ku,
                 v.kb > 0 ? str_cat(" && tg_qgemm::kKB == ", v.kb) : std::string(),
                 " && tg_qgemm::kAUnsigned == ", v.a_unsigned ? "true" : "false", " && tg_qgemm::kABytes == ",
                 v.a_bytes, ",\n              \"", v.header(),
                 " does not have the tile the packing loops were generated for (", v.mr, " x ", v.nr, " x ", v.ku,
                 ", A ", v.a_bytes == 2 ? "int16" : v.a_unsigned ? "unsigned" : "signed", ")\");\n");
}

std::string float_gemm_tile_assert(const FloatGemmVariant& v) {
  const std::string wide = v.wide_mr > 0 ? str_cat(" && tg_sgemm::wide::kMR == ", v.wide_mr) : std::string();
  return str_cat("static_assert(tg_sgemm::kMR == ", v.mr, " && tg_sgemm::kNR == ", v.nr, wide, ",\n              \"",
                 v.header(), " does not have the tile the packing loops were generated for (", v.mr, " x ", v.nr,
                 v.wide_mr > 0 ? str_cat(", wide panels of ", v.wide_mr, " rows") : std::string(), ")\");\n");
}

IntGemmVariant int_gemm_variant_for(const scheduler::ArchSpec& arch) {
  if (const char* forced = std::getenv("TILEGRAPH_QGEMM_VARIANT"); forced && *forced)
    return int_gemm_variant_named(forced);
  const std::string& isa = arch.isa;
  auto allowed = [&](const char* feature) { return !scheduler::cpu_feature_disabled(arch, feature); };
  if (arch.name == "host") {
    const std::set<std::string> f = host_cpu_flags();
    if (allowed("amx") && f.count("amx_int8") && f.count("amx_tile") && os_grants_amx())
      return int_gemm_variant_named("amx");
    if (allowed("avx512vnni") && allowed("avx512f") && f.count("avx512_vnni") && f.count("avx512bw")) return int_gemm_variant_named("avx512vnni");
    if (allowed("avx2") && f.count("avx2")) return int_gemm_variant_named("avx2");
    if (allowed("i8mm") && f.count("i8mm")) return int_gemm_variant_named("i8mm");
    if (allowed("dotprod") && f.count("asimddp")) return int_gemm_variant_named("dotprod");
    if (isa.rfind("armv8", 0) == 0) return int_gemm_variant_named("neon");
    return int_gemm_variant_named("scalar");
  }
  if (isa.find("+i8mm") != std::string::npos) return int_gemm_variant_named("i8mm");
  if (isa.find("+dotprod") != std::string::npos) return int_gemm_variant_named("dotprod");
  if (isa.rfind("armv8", 0) == 0) return int_gemm_variant_named("neon");
  if (isa.find("avx512") != std::string::npos && allowed("avx512vnni")) return int_gemm_variant_named("avx512vnni");
  if (isa.find("avx") != std::string::npos && allowed("avx2")) return int_gemm_variant_named("avx2");
  return int_gemm_variant_named("scalar");
}

namespace {

// Mirrors the constants in codegen/ukernels/sgemm_*.h.
const std::vector<FloatGemmVariant>& float_variants() {
  static const std::vector<FloatGemmVariant> table = {
      {"avx512", 8, 32, 16, 12}, {"avx2", 6, 16, 8}, {"neon", 8, 12, 4}, {"scalar", 4, 8, 4}};
  return table;
}

}  // namespace

FloatGemmVariant float_gemm_variant_named(const std::string& name) {
  std::string known;
  for (const FloatGemmVariant& v : float_variants()) {
    if (v.name == name) return v;
    known += (known.empty() ? "" : ", ") + v.name;
  }
  throw UserError(str_cat("unknown float GEMM micro-kernel '", name, "' (known: ", known, ")"));
}

namespace {

FloatGemmVariant float_gemm_isa_variant_for(const scheduler::ArchSpec& arch) {
  if (const char* forced = std::getenv("TILEGRAPH_SGEMM_VARIANT"); forced && *forced)
    return float_gemm_variant_named(forced);
  const std::string& isa = arch.isa;
  auto allowed = [&](const char* feature) { return !scheduler::cpu_feature_disabled(arch, feature); };
  if (arch.name == "host") {
    // The host project builds with -march=native: what /proc/cpuinfo lists
    // is what the compiler enables.
    const std::set<std::string> f = host_cpu_flags();
    if (allowed("avx512f") && f.count("avx512f")) return float_gemm_variant_named("avx512");
    if (allowed("avx2") && f.count("avx2") && f.count("fma")) return float_gemm_variant_named("avx2");
    if (isa.rfind("armv8", 0) == 0 || f.count("asimd")) return float_gemm_variant_named("neon");
    return float_gemm_variant_named("scalar");
  }
  if (isa.rfind("armv8", 0) == 0 || isa.rfind("armv9", 0) == 0) return float_gemm_variant_named("neon");
  if (isa.find("avx512") != std::string::npos && allowed("avx512f")) return float_gemm_variant_named("avx512");
  if (isa.find("avx") != std::string::npos && allowed("avx2")) return float_gemm_variant_named("avx2");
  return float_gemm_variant_named("scalar");
}

// The wide panels feed 24 FMAs per loaded B row instead of 16; a core that
// runs each 512-bit FMA as two halves (arch.half_width_fma) is bound by the
// FMAs either way, and the 12-row panels only waste rows and registers.
bool wide_panels_pay(const scheduler::ArchSpec& arch) {
  const char* forced = std::getenv("TILEGRAPH_WIDE_PANELS");
  if (forced && std::string(forced) == "off") return false;
  if (forced && std::string(forced) == "on") return true;
  return !arch.half_width_fma;
}

}  // namespace

FloatGemmVariant float_gemm_variant_for(const scheduler::ArchSpec& arch) {
  FloatGemmVariant v = float_gemm_isa_variant_for(arch);
  if (!wide_panels_pay(arch)) v.wide_mr = 0;
  return v;
}

std::string depthwise_variant_for(const scheduler::ArchSpec& arch) {
  if (const char* forced = std::getenv("TILEGRAPH_DWCONV_VARIANT"); forced && std::string(forced) == "none") return "";
  const std::string& name = float_gemm_variant_for(arch).name;
  return name == "avx512" || name == "avx2" ? name : "";
}

std::string max_pool_variant_for(const scheduler::ArchSpec& arch) {
  if (const char* forced = std::getenv("TILEGRAPH_MAXPOOL_VARIANT"); forced && std::string(forced) == "none") return "";
  const std::string& name = float_gemm_variant_for(arch).name;
  return name == "avx512" || name == "avx2" ? "avx2" : "";
}

namespace {

// The float GEMM's variant where it is "avx512" or "avx2" and the environment
// variable `off_switch` is not "none", else empty.
std::string x86_vector_variant_for(const scheduler::ArchSpec& arch, const char* off_switch) {
  if (const char* forced = std::getenv(off_switch); forced && std::string(forced) == "none") return "";
  const std::string& name = float_gemm_variant_for(arch).name;
  return name == "avx512" || name == "avx2" ? name : "";
}

}  // namespace

std::string softmax_variant_for(const scheduler::ArchSpec& arch) {
  return x86_vector_variant_for(arch, "TILEGRAPH_SOFTMAX_VARIANT");
}

std::string quantize_variant_for(const scheduler::ArchSpec& arch) {
  const std::string variant = x86_vector_variant_for(arch, "TILEGRAPH_QUANTIZE_VARIANT");
  // An AVX-512 target runs the AVX2 variant too (tests/quantized checks both).
  if (const char* forced = std::getenv("TILEGRAPH_QUANTIZE_VARIANT");
      forced && std::string(forced) == "avx2" && !variant.empty())
    return "avx2";
  return variant;
}

}  // namespace tilegraph::codegen
