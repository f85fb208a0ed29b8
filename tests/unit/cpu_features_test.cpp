// --cpu-features: ISA edits on CPU archs and the int8 micro-kernel they select.
#include <gtest/gtest.h>

#include "codegen/lowering/int_gemm_variant.h"
#include "compiler/ir/error.h"
#include "scheduler/arch_spec.h"
#include "scheduler/cpu_features.h"

namespace tilegraph {
namespace {

scheduler::ArchSpec with_features(const std::string& arch, const std::string& features) {
  scheduler::ArchSpec a = scheduler::arch_by_name(arch);
  scheduler::apply_cpu_features(a, features);
  return a;
}

TEST(CpuFeatures, AArch64FeaturesEditTheIsaAndPickTheMicroKernel) {
  EXPECT_EQ(codegen::int_gemm_variant_for(with_features("neoverse-n2", "")).name, "i8mm");
  const scheduler::ArchSpec no_i8mm = with_features("neoverse-n2", "-i8mm");
  EXPECT_EQ(no_i8mm.isa, "armv8.6-a+dotprod");
  EXPECT_EQ(codegen::int_gemm_variant_for(no_i8mm).name, "dotprod");
  EXPECT_EQ(codegen::int_gemm_variant_for(with_features("neoverse-n2", "-i8mm,-dotprod")).name, "neon");
  const scheduler::ArchSpec a72 = with_features("cortex-a72", "+dotprod,+i8mm");
  EXPECT_NE(a72.isa.find("+dotprod"), std::string::npos);
  EXPECT_EQ(codegen::int_gemm_variant_for(a72).name, "i8mm");
  // Adding what is there changes nothing.
  EXPECT_EQ(with_features("neoverse-n2", "+i8mm").isa, "armv8.6-a+dotprod+i8mm");
}

TEST(CpuFeatures, TheHostCanOnlyLoseFeatures) {
  const scheduler::ArchSpec host = with_features("host", "-avx512vnni");
  EXPECT_TRUE(scheduler::cpu_feature_disabled(host, "avx512vnni"));
  EXPECT_FALSE(scheduler::cpu_feature_disabled(host, "avx2"));
  EXPECT_NE(codegen::int_gemm_variant_for(host).name, "avx512vnni");
  EXPECT_EQ(codegen::int_gemm_variant_for(with_features("host", "-amx,-avx512vnni,-avx2")).name, "scalar");
  EXPECT_NE(codegen::int_gemm_variant_for(with_features("host", "-amx")).name, "amx");
  EXPECT_THROW(with_features("host", "+avx512vnni"), UserError);
}

// An x86 AVX-512 target (not the host: its ISA decides) takes the float
// GEMM's 12-row panels unless its 512-bit FMAs run in halves (Zen 4);
// TILEGRAPH_WIDE_PANELS=off and =on override the arch either way.
TEST(CpuFeatures, WidePanelsOnlyWhereTheFmasAreFullWidth) {
  scheduler::ArchSpec x86 = scheduler::arch_by_name("host");
  x86.name = "x86-avx512-box";
  x86.isa = "x86-64-avx512";
  x86.half_width_fma = false;
  EXPECT_EQ(codegen::float_gemm_variant_for(x86).name, "avx512");
  EXPECT_EQ(codegen::float_gemm_variant_for(x86).wide_mr, 12);
  scheduler::ArchSpec zen4 = x86;
  zen4.half_width_fma = true;
  EXPECT_EQ(codegen::float_gemm_variant_for(zen4).name, "avx512");
  EXPECT_EQ(codegen::float_gemm_variant_for(zen4).wide_mr, 0);
  ASSERT_EQ(setenv("TILEGRAPH_WIDE_PANELS", "on", 1), 0);
  EXPECT_EQ(codegen::float_gemm_variant_for(zen4).wide_mr, 12);
  ASSERT_EQ(setenv("TILEGRAPH_WIDE_PANELS", "off", 1), 0);
  EXPECT_EQ(codegen::float_gemm_variant_for(x86).wide_mr, 0);
  unsetenv("TILEGRAPH_WIDE_PANELS");
  EXPECT_EQ(codegen::float_gemm_variant_named("avx512").wide_mr, 12);  // the header's panels stay
}

TEST(CpuFeatures, BadListsAreUserErrors) {
  EXPECT_THROW(with_features("neoverse-n2", "dotprod"), UserError);     // no sign
  EXPECT_THROW(with_features("neoverse-n2", "+sve2"), UserError);       // unknown
  EXPECT_THROW(with_features("neoverse-n2", "-avx2"), UserError);       // x86 on AArch64
  EXPECT_THROW(with_features("host", "-i8mm"), UserError);              // AArch64 on x86 (this host)
  EXPECT_THROW(with_features("H100", "+dotprod"), UserError);           // a GPU
}

}  // namespace
}  // namespace tilegraph
