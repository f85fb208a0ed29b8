// Which int8 GEMM micro-kernel (codegen/ukernels/qgemm_<name>.h) and which
// float32 one (sgemm_<name>.h) a CPU target gets, and their tile shapes. The packing loops and the prepacked
// weights are generated for that shape, so it is decided at compile time;
// the generated code static_asserts that the header agrees.
#pragma once
#include <string>

#include "scheduler/arch_spec.h"

namespace tilegraph::codegen {

// Bytes the micro-kernels' scratch (packed panels, C tiles) is aligned to,
// for their aligned vector loads.
inline constexpr int kUkernelAlignment = 64;

struct IntGemmVariant {
  std::string name;    // "amx", "avx512vnni", "avx2", "i8mm", "dotprod", "neon", "scalar"
  int mr = 4, nr = 4, ku = 4;
  bool a_unsigned = false;
  // B's bytes of one column come in runs of kb (the header's kKB; 0: ku)
  // within a k group: AMX's B tiles hold 4 k of 16 columns per row.
  int kb = 0;
  // Bytes of one packed A value (the header's kABytes): 1, or 2 where A is
  // packed as int16 holding its int8 or uint8 values unchanged (avx2: the
  // k loop then multiplies A as loaded, without widening it per k group).
  int a_bytes = 1;
  int b_run() const { return kb > 0 ? kb : ku; }
  // Offset of B(g * ku + u, j) in a packed B panel.
  int64_t b_offset(int64_t g, int64_t j, int64_t u) const {
    return g * nr * ku + ((u / b_run()) * nr + j) * b_run() + u % b_run();
  }
  std::string header() const { return "qgemm_" + name + ".h"; }
};

// The best variant for the arch: the host's CPU flags (/proc/cpuinfo), or the
// ISA of an arch spec (armv8.6-a+dotprod+i8mm -> i8mm). TILEGRAPH_QGEMM_VARIANT
// overrides the choice (tests run every variant the machine can execute).
IntGemmVariant int_gemm_variant_for(const scheduler::ArchSpec& arch);
// The variant of that name; a user error listing the known names otherwise.
IntGemmVariant int_gemm_variant_named(const std::string& name);

struct FloatGemmVariant {
  std::string name;  // "avx512", "avx2", "neon", "scalar"
  int mr = 4, nr = 8;
  // The header's kLanes: tile<kCols> computes kCols (a multiple of lanes,
  // below nr) columns, for the last panel of an N whose tail fits them.
  int lanes = 8;
  // Rows of the header's wide A panels (tg_sgemm::wide::, its kMR), 0
  // where it has none. A GEMM packed in them has mr == wide_mr.
  int wide_mr = 0;
  std::string header() const { return "sgemm_" + name + ".h"; }
  bool wide() const { return wide_mr > 0 && mr == wide_mr; }
  // The generated code's name of micro-kernel function `fn` ("tile",
  // "pack_a_rows", ...) for this variant's panels.
  std::string ukernel(const std::string& fn) const { return (wide() ? "tg_sgemm::wide::" : "tg_sgemm::") + fn; }
};

// Chosen like int_gemm_variant_for: the host's CPU flags (avx512f; avx2 with
// fma), or the arch spec's ISA (AArch64: neon). TILEGRAPH_SGEMM_VARIANT
// overrides the choice. Its wide_mr is 0 (no wide panels) where the arch
// runs its widest FMAs in halves (arch.half_width_fma) or with
// TILEGRAPH_WIDE_PANELS=off; TILEGRAPH_WIDE_PANELS=on keeps them there too.
FloatGemmVariant float_gemm_variant_for(const scheduler::ArchSpec& arch);
FloatGemmVariant float_gemm_variant_named(const std::string& name);

// The depthwise convolution micro-kernel (dwconv_<name>.h) of a CPU target:
// "avx512" or "avx2" where the float one is (its ISA), else empty (none: the
// direct conv kernel keeps its generated loops). TILEGRAPH_DWCONV_VARIANT=none
// turns it off (to compare the two).
std::string depthwise_variant_for(const scheduler::ArchSpec& arch);

// The max pooling micro-kernel (maxpool_<name>.h) of a CPU target: "avx2"
// where the float one is AVX2 or AVX-512 (which runs it too), else empty
// (the generated loops). TILEGRAPH_MAXPOOL_VARIANT=none turns it off.
std::string max_pool_variant_for(const scheduler::ArchSpec& arch);

// The softmax micro-kernel (softmax_<name>.h) of a CPU target: the float
// GEMM's variant where it is "avx512" or "avx2", else empty (the generated
// block kernel). TILEGRAPH_SOFTMAX_VARIANT=none turns it off.
std::string softmax_variant_for(const scheduler::ArchSpec& arch);

// The quantize micro-kernel (quantize_<name>.h) of a CPU target: as
// softmax_variant_for. TILEGRAPH_QUANTIZE_VARIANT=none turns it off, =avx2
// takes the AVX2 variant on an AVX-512 target too.
std::string quantize_variant_for(const scheduler::ArchSpec& arch);

// The C++ the generated code places after including the variant's header:
// a static_assert that the header's tile constants (tg_qgemm::kMR, kNR, kKU,
// kAUnsigned) are the ones the packing loops were generated for.
std::string int_gemm_tile_assert(const IntGemmVariant& v);

// The same for the float32 micro-kernel (tg_sgemm::kMR, kNR).
std::string float_gemm_tile_assert(const FloatGemmVariant& v);

}  // namespace tilegraph::codegen
