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

TEST(CpuFeatures, BadListsAreUserErrors) {
  EXPECT_THROW(with_features("neoverse-n2", "dotprod"), UserError);     // no sign
  EXPECT_THROW(with_features("neoverse-n2", "+sve2"), UserError);       // unknown
  EXPECT_THROW(with_features("neoverse-n2", "-avx2"), UserError);       // x86 on AArch64
  EXPECT_THROW(with_features("host", "-i8mm"), UserError);              // AArch64 on x86 (this host)
  EXPECT_THROW(with_features("H100", "+dotprod"), UserError);           // a GPU
}

}  // namespace
}  // namespace tilegraph
