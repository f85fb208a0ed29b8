// drop_unread_constants (codegen/lowering/drop_unread_constants.h): a
// constant parameter that nothing in the body names is removed and the
// buffers after it renumbered, in loads, stores and call arguments alike;
// a read constant, an unread activation and the output stay.
#include "codegen/lowering/drop_unread_constants.h"

#include <gtest/gtest.h>

#include "codegen/kernel_ir/verify_kernel.h"
#include "tests/unit/global_buffer.h"

namespace tilegraph {
namespace {

using namespace codegen;

constexpr int64_t kN = 8;

TensorId tensor(Graph& g, const std::string& name, TensorKind kind) {
  return g.add_tensor(Tensor{name, DType::kF32, {kN}, kind, nullptr});
}

// Buffers: 0 x (input), 1 w_original (constant, unread), 2 w_packed
// (constant), 3 skip (input, unread), 4 out. Body: out[i] = x[i] * w_packed[i],
// then callee(&w_packed[0], &out[0]).
struct Fixture {
  Graph g;
  Kernel k;
  Fixture() {
    const TensorId x = tensor(g, "x", TensorKind::kInput), original = tensor(g, "w", TensorKind::kConstant),
                   packed = tensor(g, "w_packed", TensorKind::kConstant),
                   skip = tensor(g, "skip", TensorKind::kInput), out = tensor(g, "out", TensorKind::kIntermediate);
    k.name = "scale";
    k.buffers = {testing::global_buffer("x", kN, x, false), testing::global_buffer("w", kN, original, false),
                 testing::global_buffer("w_packed", kN, packed, false), testing::global_buffer("skip", kN, skip, false),
                 testing::global_buffer("out", kN, out, true)};
    k.var_names = {"i"};
    k.body = make_seq({make_for(0, int_imm(kN), LoopKind::kVectorized,
                                {make_store(4, var(0), load(0, DType::kF32, {var(0)}) * load(2, DType::kF32, {var(0)}))}),
                       make_call("tg_test_callee", {CallArg{2, int_imm(0)}, CallArg{4, int_imm(0)}})});
  }
};

TEST(DropUnreadConstants, RemovesTheUnreadConstantAndRenumbersTheRest) {
  Fixture f;
  const Kernel k = drop_unread_constants(f.g, f.k);
  verify(k);
  ASSERT_EQ(k.buffers.size(), 4u);
  EXPECT_EQ(k.buffers[0].name, "x");
  EXPECT_EQ(k.buffers[1].name, "w_packed");
  EXPECT_EQ(k.buffers[2].name, "skip");  // an unread input is no constant: kept
  EXPECT_EQ(k.buffers[3].name, "out");
  const Stmt& store = k.body->body[0]->body[0];
  EXPECT_EQ(store->buffer, 3);
  EXPECT_TRUE(same_expr(store->value, load(0, DType::kF32, {var(0)}) * load(1, DType::kF32, {var(0)})));
  const Stmt& call = k.body->body[1];
  ASSERT_EQ(call->args.size(), 2u);
  EXPECT_EQ(call->args[0].buffer, 1);
  EXPECT_EQ(call->args[1].buffer, 3);
}

TEST(DropUnreadConstants, AKernelReadingAllItsConstantsIsUnchanged) {
  Fixture f;
  f.k.body = make_seq({f.k.body, make_call("tg_test_callee", {CallArg{1, int_imm(0)}})});
  const Kernel k = drop_unread_constants(f.g, f.k);
  EXPECT_EQ(k.buffers.size(), 5u);
  EXPECT_EQ(k.body, f.k.body);
}

}  // namespace
}  // namespace tilegraph
