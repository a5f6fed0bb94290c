// Per-operator costs of the memory-bound operators (element-wise,
// normalizations, reductions, Resize, data movement, views), control flow
// (If, Loop, Scan) and the flags for unknowns, fallbacks and overflow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "estimator/op_cost.h"
#include "tests/estimator/one_op_graph.h"

namespace tessera::estimator {
namespace {

using ::testing::HasSubstr;
using testing::OneOpGraph;
using DT = graph::DataType;
using graph::TensorKind;

const std::vector<int64_t> kScalar = {};

TEST(ElementwiseCost, CountsOneFlopPerOutputAndEveryByte) {
  OneOpGraph op;
  op.In("x", {{2, 3, 4}}).Weight("w", {{4}}).Out("y", {{2, 3, 4}});
  op.Node("Add");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 0);
  EXPECT_EQ(c.flops, 24);
  EXPECT_EQ(c.bytes_read, 24 * 4 + 16);
  EXPECT_EQ(c.weight_bytes, 16);
  EXPECT_EQ(c.bytes_written, 96);
  EXPECT_EQ(c.op_class, OpClass::kElementwise);
  EXPECT_TRUE(c.exact);
}

TEST(ElementwiseCost, ReadsARepeatedInputOnce) {
  OneOpGraph op;
  const auto x = op.Tensor("x", {{8}}, TensorKind::kInput);
  op.Use(x).Use(x).Out("y", {{8}}).Node("Mul");
  EXPECT_EQ(op.Cost().bytes_read, 32);
}

TEST(ElementwiseCost, VariadicSumCountsInputsMinusOnePerOutput) {
  OneOpGraph op;
  op.In("a", {{10}}).In("b", {{10}}).In("c", {{10}}).Out("y", {{10}});
  op.Node("Sum");
  EXPECT_EQ(op.Cost().flops, 20);
}

TEST(ElementwiseCost, BytesFollowDtype) {
  OneOpGraph op;
  op.In("x", {{100}}, DT::kFloat16).Out("y", {{100}}, DT::kFloat32);
  op.Node("Cast");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.bytes_read, 200);
  EXPECT_EQ(c.bytes_written, 400);
}

TEST(NormalizationCost, BatchNormInferenceCountsScaleShiftPerElement) {
  OneOpGraph op;
  op.In("x", {{2, 8, 4, 4}}).Weight("s", {{8}}).Weight("b", {{8}});
  op.Weight("m", {{8}}).Weight("v", {{8}}).Out("y", {{2, 8, 4, 4}});
  op.Node("BatchNormalization");
  const OpCost c = op.Cost();
  // 2 flops per element (x * scale' + shift') + 4 per channel.
  EXPECT_EQ(c.flops, 2 * 256 + 4 * 8);
  EXPECT_EQ(c.weight_bytes, 4 * 8 * 4);
  EXPECT_EQ(c.op_class, OpClass::kNormalization);
}

TEST(NormalizationCost, LayerInstanceAndGroupNormCountEightFlopsPerElement) {
  for (const char* type :
       {"LayerNormalization", "InstanceNormalization", "GroupNormalization"}) {
    OneOpGraph op;
    op.In("x", {{2, 10, 16}}).Weight("s", {{16}}).Weight("b", {{16}});
    op.Out("y", {{2, 10, 16}}).Node(type);
    const OpCost c = op.Cost();
    EXPECT_EQ(c.flops, 8 * 320) << type;
    EXPECT_EQ(c.op_class, OpClass::kNormalization) << type;
  }
}

TEST(NormalizationCost, SoftmaxCountsFiveFlopsPerElement) {
  OneOpGraph op;
  op.In("x", {{4, 100}}).Out("y", {{4, 100}}).Node("Softmax");
  EXPECT_EQ(op.Cost().flops, 2'000);
}

TEST(ReductionCost, ReduceCountsInputElements) {
  OneOpGraph op;
  op.In("x", {{8, 1000}}).Out("y", {{8, 1}}).Node("ReduceMean");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.flops, 8'000);
  EXPECT_EQ(c.op_class, OpClass::kReduction);
}

TEST(ResizeCost, TapsPerOutputFollowMode) {
  for (const auto& [mode, taps] :
       {std::pair<const char*, int64_t>{"nearest", 1},
        {"linear", 4},
        {"cubic", 16}}) {
    OneOpGraph op;
    op.In("x", {{1, 3, 10, 10}}).Omitted().Weight("scales", {{4}});
    op.Out("y", {{1, 3, 20, 20}}).Node("Resize").String("mode", mode);
    EXPECT_EQ(op.Cost().flops, 1'200 * taps) << mode;
  }
}

TEST(ResizeCost, TrilinearResizeUsesEightTaps) {
  OneOpGraph op;
  op.In("x", {{1, 1, 4, 4, 4}}).Out("y", {{1, 1, 8, 8, 8}});
  op.Node("Resize").String("mode", "linear");
  EXPECT_EQ(op.Cost().flops, 512 * 8);
}

TEST(DataMovementCost, TransposeMovesBytesWithoutArithmetic) {
  OneOpGraph op;
  op.In("x", {{2, 3}}).Out("y", {{3, 2}}).Node("Transpose");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes_read, 24);
  EXPECT_EQ(c.bytes_written, 24);
  EXPECT_EQ(c.op_class, OpClass::kDataMovement);
  EXPECT_TRUE(c.exact);
}

TEST(DataMovementCost, ViewsMoveNoBytesButNameTheirOutput) {
  OneOpGraph op;
  op.In("x", {{2, 3}}).Weight("shape", {{1}}, DT::kInt64).Out("y", {{6}});
  op.Node("Reshape");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.bytes_read, 0);
  EXPECT_EQ(c.bytes_written, 0);
  EXPECT_EQ(c.weight_bytes, 0);
  EXPECT_EQ(c.output_bytes, 24);
  EXPECT_TRUE(c.exact);
}

TEST(DataMovementCost, ConstantCostsNothing) {
  OneOpGraph op;
  const auto k = op.Tensor("k", {{16}}, TensorKind::kConstant);
  op.builder().AddNode("c", "Constant", "", {}, std::vector{k});
  auto g = std::move(op.builder()).Build();
  ASSERT_TRUE(g) << g.error().message;
  const OpCost c = CostOf(**g, 0);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes_read + c.bytes_written + c.output_bytes, 0);
  EXPECT_EQ(c.op_class, OpClass::kDataMovement);
  EXPECT_TRUE(c.exact);
}

TEST(FallbackCost, UnknownDomainIsMemoryBoundAndFlagged) {
  OneOpGraph op;
  op.In("x", {{2, 3}}).Out("y", {{2, 3}}).Node("Foo", "com.example");
  const OpCost c = op.Cost();
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("unknown domain com.example"));
  EXPECT_THAT(c.note, HasSubstr("memory-bound fallback"));
  EXPECT_EQ(c.flops, 6);
  EXPECT_EQ(c.bytes_read, 24);
  EXPECT_EQ(c.bytes_written, 24);
}

TEST(FallbackCost, UnknownStandardOperatorIsFlagged) {
  OneOpGraph op;
  op.In("x", {{4}}).Out("y", {{4}}).Node("NotAnOperator");
  const OpCost c = op.Cost();
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("unknown operator NotAnOperator"));
  EXPECT_EQ(c.bytes_read, 16);
}

TEST(UnknownShapeCost, SymbolicDimCountsAsOneAndNamesTheTensor) {
  OneOpGraph op;
  const int64_t batch = op.builder().Symbol("batch");
  op.In("a", {{batch, 3}}).Weight("b", {{3, 4}}).Out("y", {{batch, 4}});
  op.Node("MatMul");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 12);  // a lower bound: batch read as 1
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("'a'"));
  EXPECT_EQ(c.weight_bytes, 48);
  EXPECT_EQ(c.bytes_read, 48 + 12);  // a counted at batch 1
}

TEST(UnknownShapeCost, UnknownRankIsFlaggedNeverNegative) {
  OneOpGraph op;
  op.In("x", std::nullopt).Out("y", std::nullopt).Node("Relu");
  const OpCost c = op.Cost();
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("'x'"));
  EXPECT_THAT(c.note, HasSubstr("'y'"));
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes_read, 0);
  EXPECT_EQ(c.bytes_written, 0);
}

TEST(UnknownShapeCost, ConvWithUnknownInputStillCountsWhatIsKnown) {
  OneOpGraph op;
  op.In("x", std::nullopt).Weight("w", {{8, 4, 3, 3}});
  op.Out("y", {{1, 8, 5, 5}}).Node("Conv");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 200 * 36);  // from the output and weight shapes
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("'x'"));
}

TEST(OverflowCost, SaturatesAndFlagsInsteadOfWrapping) {
  constexpr int64_t kHuge = int64_t{1} << 31;
  OneOpGraph op;
  op.In("a", {{kHuge, kHuge}}).In("b", {{kHuge, kHuge}});
  op.Out("y", {{kHuge, kHuge}}).Node("MatMul");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.flops, std::numeric_limits<int64_t>::max());
  EXPECT_GE(c.bytes_read, 0);
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("overflow"));
}

// A Loop body: v_out = v_in x w ([1, 4] x [4, 4], 16 MACs), cond passed
// through; with `scan_output`, v_out is also emitted per iteration.
std::unique_ptr<graph::OpGraph> MatMulLoopBody(bool scan_output) {
  OneOpGraph body("body");
  auto& b = body.builder();
  const std::vector<int64_t> row = {1, 4};
  const auto iter = body.Tensor("i", kScalar, TensorKind::kInput, DT::kInt64);
  const auto cond = body.Tensor("c_in", kScalar, TensorKind::kInput, DT::kBool);
  const auto v_in = body.Tensor("v_in", row, TensorKind::kInput);
  const auto w = body.Tensor("w", {{4, 4}}, TensorKind::kInitializer);
  const auto v_out = body.Tensor("v_out", row, TensorKind::kActivation);
  const auto c_out =
      body.Tensor("c_out", kScalar, TensorKind::kActivation, DT::kBool);
  for (const auto t : {iter, cond, v_in}) b.MarkInput(t);
  b.AddNode("mm", "MatMul", "", std::vector{v_in, w}, std::vector{v_out});
  b.AddNode("id", "Identity", "", std::vector{cond}, std::vector{c_out});
  b.MarkOutput(c_out);
  b.MarkOutput(v_out);
  if (scan_output) {
    const auto s = body.Tensor("s", row, TensorKind::kActivation);
    b.AddNode("copy", "Identity", "", std::vector{v_out}, std::vector{s});
    b.MarkOutput(s);
  }
  auto g = std::move(b).Build();
  EXPECT_TRUE(g) << g.error().message;
  return std::move(g).value();
}

TEST(LoopCost, ConstantTripCountMultipliesTheBody) {
  OneOpGraph op;
  auto& b = op.builder();
  const auto m = op.Tensor("m", kScalar, TensorKind::kConstant, DT::kInt64);
  b.AddNode("trips", "Constant", "", {}, std::vector{m});
  b.AddInt("value_int", 5);
  op.Use(m).In("cond", kScalar, DT::kBool).In("v0", {{1, 4}});
  op.Out("v", {{1, 4}}).Node("Loop").Subgraph(MatMulLoopBody(false));
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 5 * 16);
  EXPECT_TRUE(c.exact) << c.note;
  // Own inputs (8 + 1 + 16) plus 5 x the body's reads (16 + 64).
  EXPECT_EQ(c.bytes_read, 25 + 5 * 80);
  EXPECT_EQ(c.weight_bytes, 8 + 5 * 64);
  EXPECT_EQ(c.output_bytes, 16);
  EXPECT_EQ(c.workspace_bytes, 16 + 1);  // the body's intermediates
  EXPECT_EQ(c.op_class, OpClass::kControlFlow);
}

TEST(LoopCost, UnknownTripCountIsCostedOnceAndFlagged) {
  OneOpGraph op;
  op.In("m", kScalar, DT::kInt64).In("cond", kScalar, DT::kBool);
  op.In("v0", {{1, 4}}).Out("v", {{1, 4}});
  op.Node("Loop").Subgraph(MatMulLoopBody(false));
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 16);
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("Loop trip count unknown: costed once"));
}

TEST(LoopCost, ScanOutputLengthGivesTripCount) {
  OneOpGraph op;
  op.Omitted().In("cond", kScalar, DT::kBool).In("v0", {{1, 4}});
  op.Out("v", {{1, 4}}).Out("rows", {{7, 1, 4}});
  op.Node("Loop").Subgraph(MatMulLoopBody(true));
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 7 * 16);
  EXPECT_TRUE(c.exact) << c.note;
}

// An If branch: `out` = MatMul(x, w) (16 MACs) or Identity(x).
std::unique_ptr<graph::OpGraph> Branch(std::string_view name, bool matmul) {
  OneOpGraph branch(name);
  auto& b = branch.builder();
  const auto x = branch.Tensor("x", {{1, 4}}, TensorKind::kOuterScope);
  const auto out = branch.Tensor(std::string(name) + "_out", {{1, 4}},
                                 TensorKind::kActivation);
  if (matmul) {
    const auto w = branch.Tensor("w", {{4, 4}}, TensorKind::kInitializer);
    b.AddNode("mm", "MatMul", "", std::vector{x, w}, std::vector{out});
  } else {
    b.AddNode("id", "Identity", "", std::vector{x}, std::vector{out});
  }
  b.MarkOutput(out);
  auto g = std::move(b).Build();
  EXPECT_TRUE(g) << g.error().message;
  return std::move(g).value();
}

TEST(IfCost, PicksTheMoreExpensiveBranch) {
  for (const bool then_is_matmul : {true, false}) {
    OneOpGraph op;
    op.In("cond", kScalar, DT::kBool).Out("y", {{1, 4}}).Node("If");
    op.Subgraph(Branch("then_branch", then_is_matmul));
    op.Subgraph(Branch("else_branch", !then_is_matmul));
    const OpCost c = op.Cost();
    EXPECT_EQ(c.macs, 16);
    EXPECT_FALSE(c.exact);
    EXPECT_THAT(c.note,
                HasSubstr(then_is_matmul ? "then_branch" : "else_branch"));
  }
}

TEST(IfCost, EqualBranchesStayExact) {
  OneOpGraph op;
  op.In("cond", kScalar, DT::kBool).Out("y", {{1, 4}}).Node("If");
  op.Subgraph(Branch("then_branch", true))
      .Subgraph(Branch("else_branch", true));
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 16);
  EXPECT_TRUE(c.exact) << c.note;
}

// A Scan body adding each scanned [4] row into the state.
std::unique_ptr<graph::OpGraph> AccumulateBody() {
  OneOpGraph body("scan_body");
  auto& b = body.builder();
  const auto s_in = body.Tensor("s_in", {{4}}, TensorKind::kInput);
  const auto x_in = body.Tensor("x_in", {{4}}, TensorKind::kInput);
  const auto s_out = body.Tensor("s_out", {{4}}, TensorKind::kActivation);
  b.MarkInput(s_in);
  b.MarkInput(x_in);
  b.AddNode("add", "Add", "", std::vector{s_in, x_in}, std::vector{s_out});
  b.MarkOutput(s_out);
  auto g = std::move(b).Build();
  EXPECT_TRUE(g) << g.error().message;
  return std::move(g).value();
}

TEST(ScanCost, BodyRunsOncePerSequenceStep) {
  OneOpGraph op;
  op.In("s0", {{4}}).In("x", {{10, 4}}).Out("s", {{4}});
  op.Node("Scan").Int("num_scan_inputs", 1).Subgraph(AccumulateBody());
  const OpCost c = op.Cost();
  EXPECT_EQ(c.flops, 10 * 4);
  EXPECT_TRUE(c.exact) << c.note;
}

TEST(ScanCost, Opset8ScanRunsPerBatchAndStep) {
  OneOpGraph op;
  op.Omitted().In("s0", {{2, 4}}).In("x", {{2, 10, 4}}).Out("s", {{2, 4}});
  op.Node("Scan").Int("num_scan_inputs", 1).Subgraph(AccumulateBody());
  EXPECT_EQ(op.Cost().flops, 2 * 10 * 4);
}

TEST(CostAll, IndexesCostsByNodeId) {
  OneOpGraph op;
  auto& b = op.builder();
  const auto x = op.Tensor("x", {{2, 2}}, TensorKind::kInput);
  const auto h = op.Tensor("h", {{2, 2}}, TensorKind::kActivation);
  b.AddNode("relu", "Relu", "", std::vector{x}, std::vector{h});
  op.Use(h).Use(h).Out("y", {{2, 2}}).Node("MatMul");
  op.Cost();
  const std::vector<OpCost> costs = CostAll(op.graph());
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].op_class, OpClass::kElementwise);
  EXPECT_EQ(costs[1].macs, 8);
}

TEST(OpClassName, NamesEveryClass) {
  EXPECT_EQ(OpClassName(OpClass::kMatrix), "matrix");
  EXPECT_EQ(OpClassName(OpClass::kConvolution), "convolution");
  EXPECT_EQ(OpClassName(OpClass::kElementwise), "elementwise");
  EXPECT_EQ(OpClassName(OpClass::kReduction), "reduction");
  EXPECT_EQ(OpClassName(OpClass::kNormalization), "normalization");
  EXPECT_EQ(OpClassName(OpClass::kDataMovement), "data_movement");
  EXPECT_EQ(OpClassName(OpClass::kControlFlow), "control_flow");
  EXPECT_EQ(OpClassName(OpClass::kDepthwiseConvolution),
            "depthwise_convolution");
  EXPECT_EQ(OpClassName(OpClass::kSpatialConvolution), "spatial_convolution");
}

}  // namespace
}  // namespace tessera::estimator
