// The Kernel IR verifier (codegen/kernel_ir/verify_kernel.h): a well-formed kernel
// passes, and each deliberately broken one fails naming the kernel and the
// invariant it breaks. Real lowered models pass it inside every compile
// (the pipeline runs it); the golden tests verify their kernels too.
#include "codegen/kernel_ir/verify_kernel.h"

#include <gtest/gtest.h>

#include "codegen/lowering/lower_library_gemm.h"
#include "compiler/ir/error.h"
#include "tests/unit/global_buffer.h"

namespace tilegraph {
namespace {

using namespace codegen;
using testing::global_buffer;

// The verifier's message for k ("" when it passes).
std::string verify_error(const Kernel& k) {
  try {
    verify(k);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_BREAKS(kernel, invariant)                                        \
  do {                                                                          \
    const std::string message = verify_error(kernel);                           \
    EXPECT_NE(message.find("Kernel IR of kernel 'copy':"), std::string::npos)   \
        << message;                                                             \
    EXPECT_NE(message.find(invariant), std::string::npos) << message;           \
  } while (0)

// A block kernel of 4 blocks x 16 threads that reverses each 16-element
// chunk of in0 through shared memory:
//   for b < 4 blocks: shared s[16] {
//     for tid < 16 threads: s[tid] = in0[b * 16 + tid]
//     barrier
//     for tid < 16 threads: out[b * 16 + tid] = s[15 - tid] }
// Buffers: 0 in0, 1 out, 2 s (shared), 3 acc (local). Vars: 0 b, 1 tid, 2 i.
struct BlockKernel {
  static constexpr int kIn = 0, kOut = 1, kShared = 2, kLocal = 3;
  static constexpr int kB = 0, kTid = 1, kI = 2;
  Kernel k;

  BlockKernel() {
    k.name = "copy";
    k.buffers = {global_buffer("in0", 64, 0, false), global_buffer("out", 64, 1, true)};
    Buffer s;
    s.name = "s";
    s.elements = 16;
    s.scope = MemoryScope::kShared;
    k.buffers.push_back(s);
    Buffer acc;
    acc.name = "acc";
    acc.elements = 4;
    acc.scope = MemoryScope::kLocal;
    k.buffers.push_back(acc);
    k.var_names = {"b", "tid", "i"};
    k.grid = 4;
    k.threads = 16;
    k.shared_bytes = 64;
    k.body = grid({load_phase(), make_barrier(), store_phase()});
  }

  static Expr flat() { return var(kB) * 16 + var(kTid); }
  static Stmt threads(std::vector<Stmt> body, int64_t extent = 16) {
    return make_for(kTid, int_imm(extent), LoopKind::kThreads, std::move(body));
  }
  static Stmt load_phase() {
    return threads({make_store(kShared, var(kTid), load(kIn, DType::kF32, {flat()}))});
  }
  static Stmt store_phase() {
    return threads({make_store(kOut, flat(), load(kShared, DType::kF32, {int_imm(15) - var(kTid)}))});
  }
  static Stmt grid(std::vector<Stmt> block) {
    return make_for(kB, int_imm(4), LoopKind::kBlocks, {make_allocate(kShared, std::move(block))});
  }
};

TEST(VerifyKernel, AWellFormedBlockKernelPasses) {
  EXPECT_EQ(verify_error(BlockKernel().k), "");
}

TEST(VerifyKernel, StoreAtBlockLevelOfSeveralThreads) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::load_phase(), make_barrier(),
                     make_store(BlockKernel::kOut, var(BlockKernel::kB), float_imm(0))});
  EXPECT_BREAKS(b.k, "no Store at block level");
  // With one thread per block the block level is the thread: allowed.
  b.k.threads = 1;
  b.k.body = BlockKernel::grid({make_store(BlockKernel::kOut, var(BlockKernel::kB), float_imm(0))});
  EXPECT_EQ(verify_error(b.k), "");
}

TEST(VerifyKernel, BarrierInsideAThreadsLoop) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_barrier()}), BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a Barrier is at block level");
}

TEST(VerifyKernel, ThreadsLoopExtentIsKernelThreads) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({}, 8), BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a kThreads loop has extent Kernel::threads");
}

TEST(VerifyKernel, ThreadsLoopInsideAThreadsLoop) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_for(BlockKernel::kI, int_imm(16), LoopKind::kThreads, {})}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a kThreads loop is at block level");
}

TEST(VerifyKernel, ThreadsLoopOutsideTheGrid) {
  BlockKernel b;
  b.k.grid = 0;
  b.k.body = BlockKernel::store_phase();
  EXPECT_BREAKS(b.k, "a kernel without launch grid (Kernel::grid 0) has one thread");
  Kernel cpu;
  cpu.name = "copy";
  cpu.buffers = {global_buffer("out", 1, 0, true)};
  cpu.var_names = {"tid"};
  cpu.body = make_for(0, int_imm(1), LoopKind::kThreads, {make_store(0, var(0), float_imm(0))});
  EXPECT_BREAKS(cpu, "a kThreads loop is at block level");
}

TEST(VerifyKernel, GridIsTheProductOfTheBlockLoops) {
  BlockKernel b;
  b.k.grid = 8;
  EXPECT_BREAKS(b.k, "Kernel::grid is the product of the kBlocks loops' extents: 8 vs 4");
}

TEST(VerifyKernel, StatementOutsideTheGridOfABlockKernel) {
  BlockKernel b;
  b.k.body = make_seq({make_store(BlockKernel::kOut, int_imm(0), float_imm(0)), b.k.body});
  EXPECT_BREAKS(b.k, "a block kernel's statements are inside its kBlocks loop");
}

TEST(VerifyKernel, NestedBlockLoops) {
  BlockKernel b;
  b.k.body = make_for(BlockKernel::kI, int_imm(1), LoopKind::kBlocks, {b.k.body});
  EXPECT_BREAKS(b.k, "kBlocks loops are not nested");
}

TEST(VerifyKernel, CollapseBindsPerfectlyNestedLoops) {
  BlockKernel b;
  b.k.body = make_for(BlockKernel::kI, int_imm(1), LoopKind::kBlocks, b.k.body->body, 2);
  EXPECT_BREAKS(b.k, "perfectly nested directly inside it");
  Kernel cpu;
  cpu.name = "copy";
  cpu.buffers = {global_buffer("in0", 64, 0, false), global_buffer("out", 64, 1, true)};
  cpu.var_names = {"i", "j"};
  const Stmt store = make_store(1, var(0) * 8 + var(1), load(0, DType::kF32, {var(0) * 8 + var(1)}));
  cpu.body = make_for(0, int_imm(8), LoopKind::kParallel, {make_for(1, int_imm(8), LoopKind::kSerial, {store})}, 2);
  EXPECT_EQ(verify_error(cpu), "");
  cpu.body = make_for(0, int_imm(8), LoopKind::kParallel, {make_for(1, int_imm(8), LoopKind::kVectorized, {store})}, 2);
  EXPECT_BREAKS(cpu, "the loops a kParallel collapse binds are kSerial loops");
  cpu.body = make_for(0, int_imm(8), LoopKind::kSerial, {make_for(1, int_imm(8), LoopKind::kSerial, {store})}, 2);
  EXPECT_BREAKS(cpu, "only kParallel and kBlocks loops collapse");
}

// A parallel nest's run var (iterations the thread ran before this one) is
// bound inside the nest, under its flattened extent, and only a kParallel
// loop binds one.
TEST(VerifyKernel, RunVarIsBoundInsideItsParallelNest) {
  Kernel cpu;
  cpu.name = "copy";
  cpu.buffers = {global_buffer("in0", 64, 0, false), global_buffer("out", 64, 1, true)};
  cpu.var_names = {"i", "j", "run"};
  const Stmt store = make_store(1, var(0) * 8 + var(1), load(0, DType::kF32, {var(0) * 8 + var(1)}));
  const Stmt first = make_if(lt(var(2), int_imm(1)), {store});
  const Stmt nest = make_parallel_for(0, int_imm(8), {make_for(1, int_imm(8), LoopKind::kSerial, {first})}, 2, 2);
  cpu.body = nest;
  EXPECT_EQ(verify_error(cpu), "");
  // Its bound is the nest's 64 iterations: out[run] stays inside out.
  cpu.body = make_parallel_for(0, int_imm(8), {make_for(1, int_imm(8), LoopKind::kSerial,
                                                        {make_store(1, var(2), float_imm(0))})}, 2, 2);
  EXPECT_EQ(verify_error(cpu), "");
  cpu.body = make_seq({nest, make_store(1, var(2), float_imm(0))});
  EXPECT_BREAKS(cpu, "every variable is bound by an enclosing For");
  StmtNode serial = *nest;
  serial.loop = LoopKind::kSerial;
  serial.collapse = 1;
  cpu.body = std::make_shared<const StmtNode>(serial);
  EXPECT_BREAKS(cpu, "only kParallel loops bind a run variable");
}

TEST(VerifyKernel, BufferIdOutOfRange) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_store(7, var(BlockKernel::kTid), float_imm(0))})});
  EXPECT_BREAKS(b.k, "buffers are ids into Kernel::buffers: a Store's buffer: buffer 7");
  b = BlockKernel();
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kOut, BlockKernel::flat(),
                                                      load(-1, DType::kF32, {int_imm(0)}))})});
  EXPECT_BREAKS(b.k, "buffers are ids into Kernel::buffers: a Load's buffer: buffer -1");
}

TEST(VerifyKernel, LoadOutOfBounds) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kShared, var(BlockKernel::kTid),
                                                      load(BlockKernel::kIn, DType::kF32, {BlockKernel::flat() + 1}))}),
                     make_barrier(), BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "every Load is in bounds whatever the branch taken");
  EXPECT_NE(verify_error(b.k).find("reads [1, 64] of in0[64]"), std::string::npos);
}

TEST(VerifyKernel, LoadOutOfBoundsInTheUntakenBranchOfASelectStillBreaks) {
  // Printers evaluate both branches of a Select.
  BlockKernel b;
  const Expr guarded = select(lt(var(BlockKernel::kTid), int_imm(15)),
                              load(BlockKernel::kShared, DType::kF32, {var(BlockKernel::kTid) + 1}), float_imm(0));
  b.k.body = b.grid({BlockKernel::load_phase(), make_barrier(),
                     BlockKernel::threads({make_store(BlockKernel::kOut, BlockKernel::flat(), guarded)})});
  EXPECT_BREAKS(b.k, "every Load is in bounds whatever the branch taken");
  // Behind an If the load never runs out of bounds: that is fine.
  b.k.body = b.grid({BlockKernel::load_phase(), make_barrier(),
                     BlockKernel::threads({make_if(lt(var(BlockKernel::kTid), int_imm(15)),
                                                   {make_store(BlockKernel::kOut, BlockKernel::flat(),
                                                               load(BlockKernel::kShared, DType::kF32,
                                                                    {var(BlockKernel::kTid) + 1}))})})});
  EXPECT_EQ(verify_error(b.k), "");
}

// A linear index over loops of constant extents takes every value of its
// interval, so past the buffer is an error however many points the loops
// have (100 x 100 here, beyond what the verifier evaluates one by one).
// Under an If on its variables (a short last group) the index may stay
// inside where it runs: not told, passes.
TEST(VerifyKernel, LinearLoadPastTheEndOverManyPointsBreaks) {
  Kernel cpu;
  cpu.name = "copy";
  cpu.buffers = {global_buffer("in0", 100 * 100, 0, false), global_buffer("out", 100 * 100, 1, true)};
  cpu.var_names = {"i", "j"};
  auto copy = [&](int64_t shift, const Expr& guard) {
    Stmt store = make_store(1, var(0) * 100 + var(1), load(0, DType::kF32, {var(0) * 100 + var(1) + shift}));
    if (guard) store = make_if(guard, {store});
    return make_for(0, int_imm(100), LoopKind::kParallel, {make_for(1, int_imm(100), LoopKind::kSerial, {store})});
  };
  cpu.body = copy(0, nullptr);
  EXPECT_EQ(verify_error(cpu), "");
  cpu.body = copy(1, nullptr);
  EXPECT_BREAKS(cpu, "every Load is in bounds whatever the branch taken");
  EXPECT_NE(verify_error(cpu).find("reads [1, 10000] of in0[10000]"), std::string::npos) << verify_error(cpu);
  cpu.body = copy(1, lt(var(0) * 100 + var(1), int_imm(100 * 100 - 1)));
  EXPECT_EQ(verify_error(cpu), "");
}

TEST(VerifyKernel, AGuardedSelectReadsItsTrueBranchOnlyWhereItsConditionHolds) {
  // guarded_select: printed as ?: (kernel_ir.h), so the load past the end
  // at tid 15 never runs; past the end where the condition holds breaks.
  BlockKernel b;
  auto store = [&](int64_t below) {
    const Expr guarded = guarded_select(lt(var(BlockKernel::kTid), int_imm(below)),
                                        load(BlockKernel::kShared, DType::kF32, {var(BlockKernel::kTid) + 1}),
                                        float_imm(0));
    return b.grid({BlockKernel::load_phase(), make_barrier(),
                   BlockKernel::threads({make_store(BlockKernel::kOut, BlockKernel::flat(), guarded)})});
  };
  b.k.body = store(15);
  EXPECT_EQ(verify_error(b.k), "");
  b.k.body = store(16);
  EXPECT_BREAKS(b.k, "every Load is in bounds whatever the branch taken");
}

TEST(VerifyKernel, StoreOutOfBounds) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kShared, var(BlockKernel::kTid) + 16, float_imm(0))}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a Store is inside its buffer");
}

TEST(VerifyKernel, StoreToAKernelInput) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kIn, BlockKernel::flat(), float_imm(0))}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a Store writes an output or a Local/Shared buffer, never a kernel input: in0");
}

TEST(VerifyKernel, OutputNeverWritten) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::load_phase()});
  EXPECT_BREAKS(b.k, "every output buffer is written (by a Store or a Call): out");
}

TEST(VerifyKernel, VariableUsedOutsideItsLoop) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kShared, var(BlockKernel::kI), float_imm(0))}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "every variable is bound by an enclosing For: i in a Store's index");
}

TEST(VerifyKernel, LoopRebindsAnEnclosingVariable) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_for(BlockKernel::kTid, int_imm(2), LoopKind::kSerial, {})}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a For does not rebind the variable of an enclosing For: tid");
}

TEST(VerifyKernel, LocalBufferUsedOutsideItsAllocate) {
  BlockKernel b;
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kLocal, int_imm(0), float_imm(0))}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a Local or Shared buffer is used only inside its Allocate: a Store's buffer acc");
}

TEST(VerifyKernel, BufferAllocatedTwice) {
  BlockKernel b;
  const Stmt alloc = make_allocate(BlockKernel::kLocal, {});
  b.k.body = b.grid({alloc, alloc, BlockKernel::load_phase(), make_barrier(), BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "a buffer is allocated once: acc");
}

TEST(VerifyKernel, SharedBufferOutsideTheArena) {
  BlockKernel b;
  b.k.buffers[BlockKernel::kShared].offset = 16;
  EXPECT_BREAKS(b.k, "a Shared buffer lies aligned inside the block's arena (Kernel::shared_bytes): s at bytes [16, 80) of 64");
}

TEST(VerifyKernel, GlobalsComeFirstAndNamesAreUnique) {
  BlockKernel b;
  b.k.buffers.push_back(global_buffer("in9", 4, 2, false));
  EXPECT_BREAKS(b.k, "global buffers (the parameters) come before Local and Shared ones: in9");
  b = BlockKernel();
  b.k.var_names[BlockKernel::kI] = "s";
  EXPECT_BREAKS(b.k, "buffer and variable names are unique: s");
  b = BlockKernel();
  b.k.buffers[BlockKernel::kLocal].name = "a-b";
  EXPECT_BREAKS(b.k, "buffer names are C identifiers: 'a-b'");
}

TEST(VerifyKernel, IntegerDivOfANegativeIndex) {
  BlockKernel b;
  const Expr index = binary(BinaryOp::kDiv, var(BlockKernel::kTid) - 8, int_imm(2)) + 4;
  b.k.body = b.grid({BlockKernel::threads({make_store(BlockKernel::kShared, index, float_imm(0))}),
                     BlockKernel::store_phase()});
  EXPECT_BREAKS(b.k, "integer Div/Rem of index arithmetic has non-negative operands");
}

// A tensor-core block: 32 threads, one WarpMma on Local fragments.
struct MmaKernel {
  Kernel k;
  MmaKernel() {
    k.name = "copy";
    k.buffers = {global_buffer("out", 4 * 64, 1, true)};
    for (auto [name, n] : {std::pair{"fa", 8}, std::pair{"fb", 4}, std::pair{"acc", 4}}) {
      Buffer f;
      f.name = name;
      f.elements = n;
      f.scope = MemoryScope::kLocal;
      k.buffers.push_back(f);
    }
    k.var_names = {"b", "tid", "v"};
    k.grid = 1;
    k.threads = 32;
    k.tensor_cores = true;
    k.body = body(make_warp_mma({1, int_imm(0)}, {2, int_imm(0)}, {3, int_imm(0)}));
  }
  Stmt body(const Stmt& mma) const {
    const Stmt zero = make_for(1, int_imm(k.threads), LoopKind::kThreads,
                               {make_for(2, int_imm(8), LoopKind::kUnrolled, {make_store(1, var(2), float_imm(1))}),
                                make_for(2, int_imm(4), LoopKind::kUnrolled,
                                         {make_store(2, var(2), float_imm(1)), make_store(3, var(2), float_imm(0))})});
    const Stmt write = make_for(1, int_imm(k.threads), LoopKind::kThreads,
                                {make_for(2, int_imm(4), LoopKind::kUnrolled,
                                          {make_store(0, var(1) * 4 + var(2), load(3, DType::kF32, {var(2)}))})});
    return make_for(0, int_imm(1), LoopKind::kBlocks,
                    {make_allocate(1, {make_allocate(2, {make_allocate(3, {zero, mma, write})})})});
  }
};

TEST(VerifyKernel, WarpMmaIsWellFormed) {
  MmaKernel m;
  EXPECT_EQ(verify_error(m.k), "");
  m.k.threads = 48;
  m.k.body = m.body(make_warp_mma({1, int_imm(0)}, {2, int_imm(0)}, {3, int_imm(0)}));
  EXPECT_BREAKS(m.k, "Kernel::threads a multiple of 32");
}

TEST(VerifyKernel, WarpMmaInsideAThreadsLoop) {
  MmaKernel m;
  m.k.body = m.body(make_for(1, int_imm(32), LoopKind::kThreads,
                             {make_warp_mma({1, int_imm(0)}, {2, int_imm(0)}, {3, int_imm(0)})}));
  EXPECT_BREAKS(m.k, "a WarpMma is at block level");
}

TEST(VerifyKernel, WarpMmaFragmentsFitTheirBuffers) {
  MmaKernel m;
  m.k.body = m.body(make_warp_mma({1, int_imm(0)}, {2, int_imm(1)}, {3, int_imm(0)}));
  EXPECT_BREAKS(m.k, "a pointer argument's values are inside its buffer: a WarpMma fragment in fb at [1, 1] + 4 of 4");
  m = MmaKernel();
  m.k.buffers[1].dtype = DType::kF16;
  EXPECT_BREAKS(m.k, "a WarpMma's fragments are per-thread float buffers: fa");
}

TEST(VerifyKernel, TensorCoresFlagMatchesTheSteps) {
  MmaKernel m;
  m.k.tensor_cores = false;
  EXPECT_BREAKS(m.k, "a kernel with WarpMma steps sets Kernel::tensor_cores");
  BlockKernel b;
  b.k.tensor_cores = true;
  EXPECT_BREAKS(b.k, "Kernel::tensor_cores is set only on a kernel with WarpMma steps");
}

// tg_gemm(A, B, C, batch, m, n, k, a..., b..., c..., bias, epilogue) on
// A 4x3, B 3x5, C 4x5 (row-major).
Kernel library_gemm(int64_t c_rows) {
  Kernel k;
  k.name = "copy";
  k.buffers = {global_buffer("in0", 12, 0, false), global_buffer("in1", 15, 1, false),
               global_buffer("out", 20, 2, true)};
  std::vector<CallArg> args{{0, int_imm(0)}, {1, int_imm(0)}, {2, int_imm(0)}};
  for (int64_t v : {int64_t{1}, c_rows, int64_t{5}, int64_t{3}, int64_t{1}, int64_t{3}, int64_t{12},
                    int64_t{1}, int64_t{5}, int64_t{15}, int64_t{1}, int64_t{5}, int64_t{20}})
    args.push_back({-1, int_imm(v)});
  args.push_back({2, int_imm(0)});
  args.push_back({-1, int_imm(0)});
  k.body = make_call(kLibraryGemmCallee, std::move(args));
  return k;
}

TEST(VerifyKernel, LibraryGemmStaysInsideItsMatrices) {
  EXPECT_EQ(verify_error(library_gemm(4)), "");
  // Rows past A's 12 elements (and C's 20).
  EXPECT_BREAKS(library_gemm(5), "tg_gemm reads and writes its matrices inside their buffers: A in in0 reaches element 14 of 12");
}

TEST(VerifyKernel, CallArgumentsAreBuffersOrScalars) {
  Kernel k = library_gemm(4);
  StmtNode call = *k.body;
  call.args[0].buffer = -2;
  k.body = std::make_shared<const StmtNode>(call);
  EXPECT_BREAKS(k, "a Call's argument is a buffer of the kernel (a pointer) or -1 (a scalar): tg_gemm: buffer -2");
  call.args[0] = {0, int_imm(12)};
  k.body = std::make_shared<const StmtNode>(call);
  EXPECT_BREAKS(k, "a pointer argument's values are inside its buffer");
}

}  // namespace
}  // namespace tilegraph
