#include "codegen/lowering/lower_library_gemm.h"

#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/flops.h"

namespace tilegraph::codegen {

namespace {

// The three scalar arguments describing one matrix.
void matrix_args(const scheduler::GemmMatrix& x, std::vector<CallArg>& args) {
  args.push_back({-1, int_imm(x.row_major ? 1 : 0)});
  args.push_back({-1, int_imm(x.ld)});
  args.push_back({-1, int_imm(x.batch_stride)});
}

}  // namespace

Kernel lower_library_gemm_kernel(const Graph& g, const scheduler::KernelSchedule& schedule) {
  TG_CHECK(schedule.kind == scheduler::KernelKind::kLibraryGemm && schedule.library_gemm, "kernel is not a library GEMM");
  const scheduler::LibraryGemm& gemm = *schedule.library_gemm;
  const bool bias = gemm.bias_op >= 0;
  TG_CHECK(schedule.ops.size() == 1u + gemm.epilogue_ops(), "a library GEMM kernel is the GEMM and its epilogue");
  const Op& op = g.ops.at(static_cast<size_t>(schedule.ops.front()));
  const Op& root = g.ops.at(static_cast<size_t>(schedule.ops.back()));
  const Op* bias_add = bias ? &g.ops.at(static_cast<size_t>(gemm.bias_op)) : nullptr;
  Kernel k;
  k.name = root.name;
  k.source_nodes = op.source_nodes;
  for (size_t e = 1; e < schedule.ops.size(); ++e) {
    const Op& epilogue = g.ops.at(static_cast<size_t>(schedule.ops[e]));
    k.source_nodes.insert(k.source_nodes.end(), epilogue.source_nodes.begin(), epilogue.source_nodes.end());
  }
  k.schedule = schedule;
  // Buffers in slot order, then the bias, then the output (the epilogue's when there is one).
  std::vector<int> buffer_of_slot;
  for (TensorId in : op.inputs) buffer_of_slot.push_back(add_global_buffer(k, g, in, false));
  const int bias_buffer =
      bias ? add_global_buffer(k, g, bias_add->inputs.at(static_cast<size_t>(gemm.bias_slot)), false) : -1;
  const int out = add_global_buffer(k, g, root.output, true);
  std::vector<CallArg> args{{buffer_of_slot.at(static_cast<size_t>(gemm.a_slot)), int_imm(gemm.a.offset)},
                            {buffer_of_slot.at(static_cast<size_t>(gemm.b_slot)), int_imm(gemm.b.offset)},
                            {out, int_imm(gemm.c.offset)}};
  for (int64_t v : {gemm.batch, gemm.m, gemm.n, gemm.k}) args.push_back({-1, int_imm(v)});
  matrix_args(gemm.a, args);
  matrix_args(gemm.b, args);
  matrix_args(gemm.c, args);
  // The bias vector (length n, added to every row), or C itself unused;
  // then the epilogue: bit 0 the bias, bit 1 a ReLU.
  args.push_back({bias ? bias_buffer : out, int_imm(0)});
  args.push_back({-1, int_imm((bias ? 1 : 0) | (gemm.relu_op >= 0 ? 2 : 0))});
  k.body = make_call(kLibraryGemmCallee, std::move(args));
  k.flops = gemm_flops(gemm.batch, gemm.m, gemm.n, gemm.k);
  return k;
}

bool is_library_gemm(const Kernel& k) { return k.schedule.kind == scheduler::KernelKind::kLibraryGemm; }

std::string library_gemm_reference_source() {
  return R"GEMM(
// tg_gemm: the CPU stand-in for a cuBLASLt GEMM (tune --skip-dot).
// C[b] = A[b] * B[b] (m x n, inner dimension k) for b < batch; element (r, c)
// of a matrix at r * ld + c when row-major, else r + c * ld, plus b times its
// batch stride. Float accumulation, as cuBLASLt's CUBLAS_COMPUTE_32F; the
// epilogue's bit 0 adds bias[c] to column c (CUBLASLT_EPILOGUE_BIAS), bit 1
// then applies max(x, 0) (RELU), before the result is stored.
static inline float tg_gemm_value(float x) { return x; }
static inline float tg_gemm_value(uint16_t x) { return tg_h2f(x); }
static inline void tg_gemm_store(float* p, float v) { *p = v; }
static inline void tg_gemm_store(uint16_t* p, float v) { *p = tg_f2h(v); }
template <typename T>
static void tg_gemm(const T* A, const T* B, T* C, int64_t batch, int64_t m, int64_t n, int64_t k,
                    int64_t a_row_major, int64_t lda, int64_t a_batch_stride,
                    int64_t b_row_major, int64_t ldb, int64_t b_batch_stride,
                    int64_t c_row_major, int64_t ldc, int64_t c_batch_stride, const T* bias, int64_t epilogue) {
  // Steps along each matrix's rows and columns.
  const int64_t a_r = a_row_major ? lda : 1, a_c = a_row_major ? 1 : lda;
  const int64_t b_r = b_row_major ? ldb : 1, b_c = b_row_major ? 1 : ldb;
  const int64_t c_r = c_row_major ? ldc : 1, c_c = c_row_major ? 1 : ldc;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      const T* a = A + b * a_batch_stride + i * a_r;
      const T* bm = B + b * b_batch_stride;
      T* c = C + b * c_batch_stride + i * c_r;
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p) acc += tg_gemm_value(a[p * a_c]) * tg_gemm_value(bm[p * b_r + j * b_c]);
        if (epilogue & 1) acc += tg_gemm_value(bias[j]);  // epilogues act before C is rounded
        if ((epilogue & 2) && !(acc > 0.0f)) acc = 0.0f;
        tg_gemm_store(c + j * c_c, acc);
      }
    }
  }
}
)GEMM";
}

}  // namespace tilegraph::codegen
