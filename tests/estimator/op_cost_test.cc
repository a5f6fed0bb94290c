// Per-operator costs of the compute-heavy operators against hand counts:
// convolutions, matrix products, Einsum, recurrent layers and attention.
// The arithmetic behind each expected figure is written next to it.
#include "estimator/op_cost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/estimator/one_op_graph.h"

namespace tessera::estimator {
namespace {

using ::testing::HasSubstr;
using testing::OneOpGraph;
using DT = graph::DataType;

const std::vector<int64_t> kNoDims = {};

TEST(ConvCost, GroupedDilatedStridedConvMatchesHandCount) {
  // Out spatial: (15 + 2 + 2 - 2 * (3 - 1) - 1) / 2 + 1 = 8.
  OneOpGraph op;
  op.In("x", {{2, 8, 15, 15}})
      .Weight("w", {{16, 4, 3, 3}})
      .Weight("b", {{16}})
      .Out("y", {{2, 16, 8, 8}});
  op.Node("Conv")
      .Int("group", 2)
      .Ints("dilations", {2, 2})
      .Ints("strides", {2, 2})
      .Ints("pads", {2, 2, 2, 2});
  const OpCost c = op.Cost();
  // N * Cout * out spatial * Cin/group * kernel = 2 * 16 * 64 * 4 * 9.
  EXPECT_EQ(c.macs, 73'728);
  // 2 * MACs + one bias add per output element (2 * 16 * 64).
  EXPECT_EQ(c.flops, 147'456 + 2'048);
  EXPECT_EQ(c.bytes_read, 2 * 8 * 225 * 4 + 16 * 4 * 9 * 4 + 16 * 4);
  EXPECT_EQ(c.weight_bytes, 16 * 4 * 9 * 4 + 16 * 4);
  EXPECT_EQ(c.output_bytes, 2 * 16 * 64 * 4);
  EXPECT_EQ(c.bytes_written, c.output_bytes);
  EXPECT_EQ(c.workspace_bytes, 0);
  EXPECT_EQ(c.op_class, OpClass::kConvolution);
  EXPECT_TRUE(c.exact) << c.note;
}

TEST(ConvCost, OutputShapeFollowsAttributesWhenNotInferred) {
  OneOpGraph op;
  op.In("x", {{2, 8, 15, 15}})
      .Weight("w", {{16, 4, 3, 3}})
      .Out("y", std::nullopt);
  op.Node("Conv")
      .Int("group", 2)
      .Ints("dilations", {2, 2})
      .Ints("strides", {2, 2})
      .Ints("pads", {2, 2, 2, 2});
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 73'728);
  EXPECT_FALSE(c.exact);  // the output's bytes are not known
  EXPECT_THAT(c.note, HasSubstr("'y'"));
}

TEST(ConvCost, DepthwiseConvCountsOneInputChannelPerOutput) {
  OneOpGraph op;
  op.In("x", {{1, 32, 112, 112}})
      .Weight("w", {{32, 1, 3, 3}})
      .Out("y", {{1, 32, 112, 112}});
  op.Node("Conv").Int("group", 32).Ints("pads", {1, 1, 1, 1});
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 32 * 112 * 112 * 9);
  EXPECT_EQ(c.flops, 2 * c.macs);  // no bias
  // One input channel per group: its own class, unlike the grouped 3x3 conv
  // above (4 input channels per group), which stays kConvolution.
  EXPECT_EQ(c.op_class, OpClass::kDepthwiseConvolution);
}

TEST(ConvCost, DenseConvIsNotDepthwise) {
  // A 1x1 conv of one input channel (group 1) is dense despite W's shape.
  OneOpGraph op;
  op.In("x", {{1, 1, 8, 8}})
      .Weight("w", {{4, 1, 1, 1}})
      .Out("y", {{1, 4, 8, 8}});
  op.Node("Conv");
  EXPECT_EQ(op.Cost().op_class, OpClass::kConvolution);
}

TEST(ConvCost, DenseConvWithAKernelLargerThanOneIsSpatial) {
  OneOpGraph op;
  op.In("x", {{1, 8, 16, 16}})
      .Weight("w", {{16, 8, 3, 3}})
      .Out("y", {{1, 16, 16, 16}});
  op.Node("Conv").Ints("pads", {1, 1, 1, 1});
  EXPECT_EQ(op.Cost().op_class, OpClass::kSpatialConvolution);
}

TEST(ConvCost, ThreeDimensionalConvMatchesHandCount) {
  OneOpGraph op;
  op.In("x", {{1, 3, 16, 112, 112}})
      .Weight("w", {{64, 3, 3, 7, 7}})
      .Out("y", std::nullopt);
  op.Node("Conv").Ints("strides", {1, 2, 2}).Ints("pads", {1, 3, 3, 1, 3, 3});
  // Out: 16 x 56 x 56; MACs = 64 * 16 * 56 * 56 * (3 * 3 * 7 * 7).
  EXPECT_EQ(op.Cost().macs, 1'416'167'424);
}

TEST(ConvCost, AutoPadSameUpperKeepsCeilOfInputOverStride) {
  OneOpGraph op;
  op.In("x", {{1, 3, 224, 224}})
      .Weight("w", {{64, 3, 7, 7}})
      .Out("y", std::nullopt);
  op.Node("Conv").Ints("strides", {2, 2}).String("auto_pad", "SAME_UPPER");
  // Out 112 x 112 (ResNet's stem): 64 * 112 * 112 * 3 * 49.
  EXPECT_EQ(op.Cost().macs, 118'013'952);
}

TEST(ConvCost, AutoPadValidUsesNoPadding) {
  OneOpGraph op;
  op.In("x", {{1, 1, 10, 10}})
      .Weight("w", {{1, 1, 3, 3}})
      .Out("y", std::nullopt);
  op.Node("Conv").String("auto_pad", "VALID").Ints("pads", {5, 5, 5, 5});
  EXPECT_EQ(op.Cost().macs, 8 * 8 * 9);
}

TEST(ConvCost, OneDimensionalConvMatchesHandCount) {
  OneOpGraph op;
  op.In("x", {{4, 16, 100}}).Weight("w", {{32, 16, 5}}).Out("y", std::nullopt);
  op.Node("Conv");
  // Out length 96: 4 * 32 * 96 * 16 * 5.
  EXPECT_EQ(op.Cost().macs, 983'040);
}

TEST(ConvCost, ConvTransposeCountsEachInputTimesOutputChannelsAndKernel) {
  OneOpGraph op;
  op.In("x", {{1, 16, 8, 8}})
      .Weight("w", {{16, 8, 4, 4}})
      .Weight("b", {{8}})
      .Out("y", {{1, 8, 16, 16}});
  op.Node("ConvTranspose").Ints("strides", {2, 2}).Ints("pads", {1, 1, 1, 1});
  const OpCost c = op.Cost();
  // X elements * Cout/group * kernel = 1024 * 8 * 16.
  EXPECT_EQ(c.macs, 131'072);
  EXPECT_EQ(c.flops, 2 * 131'072 + 8 * 16 * 16);
  EXPECT_EQ(c.op_class, OpClass::kConvolution);
}

TEST(ConvCost, GroupedConvTransposeUsesOutputChannelsPerGroup) {
  OneOpGraph op;
  op.In("x", {{1, 16, 8, 8}})
      .Weight("w", {{16, 4, 4, 4}})
      .Out("y", {{1, 8, 16, 16}});
  op.Node("ConvTranspose").Int("group", 2).Ints("strides", {2, 2});
  EXPECT_EQ(op.Cost().macs, 1024 * 4 * 16);
}

TEST(ConvCost, ConvIntegerCountsInt8Macs) {
  OneOpGraph op;
  op.In("x", {{1, 4, 6, 6}}, DT::kUint8)
      .Weight("w", {{8, 4, 3, 3}}, DT::kInt8)
      .Out("y", {{1, 8, 4, 4}}, DT::kInt32);
  op.Node("ConvInteger");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 8 * 16 * 4 * 9);
  EXPECT_EQ(c.bytes_read, 144 + 288);
  EXPECT_EQ(c.output_bytes, 128 * 4);
}

TEST(ConvCost, QLinearConvReadsWeightAtInputThreeAndBiasAtEight) {
  OneOpGraph op;
  op.In("x", {{1, 4, 6, 6}}, DT::kUint8)
      .Weight("xs", kNoDims)
      .Weight("xz", kNoDims, DT::kUint8)
      .Weight("w", {{8, 4, 3, 3}}, DT::kInt8)
      .Weight("ws", kNoDims)
      .Weight("wz", kNoDims, DT::kInt8)
      .Weight("ys", kNoDims)
      .Weight("yz", kNoDims, DT::kUint8)
      .Weight("b", {{8}}, DT::kInt32)
      .Out("y", {{1, 8, 4, 4}}, DT::kUint8);
  op.Node("QLinearConv");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 4'608);
  // MACs, bias add and requantization per output element.
  EXPECT_EQ(c.flops, 2 * 4'608 + 128 + 128);
}

TEST(PoolCost, MaxPoolCountsKernelReadsPerOutput) {
  OneOpGraph op;
  op.In("x", {{1, 64, 112, 112}}).Out("y", {{1, 64, 56, 56}});
  op.Node("MaxPool")
      .Ints("kernel_shape", {3, 3})
      .Ints("strides", {2, 2})
      .Ints("pads", {1, 1, 1, 1});
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 0);
  EXPECT_EQ(c.flops, 64 * 56 * 56 * 9);
  EXPECT_EQ(c.op_class, OpClass::kReduction);
}

TEST(PoolCost, CeilModeRoundsOutputUp) {
  for (const auto& [ceil_mode, outputs] :
       {std::pair<int64_t, int64_t>{0, 4}, {1, 9}}) {
    OneOpGraph op;
    op.In("x", {{1, 1, 5, 5}}).Out("y", std::nullopt);
    op.Node("AveragePool")
        .Ints("kernel_shape", {2, 2})
        .Ints("strides", {2, 2})
        .Int("ceil_mode", ceil_mode);
    EXPECT_EQ(op.Cost().flops, outputs * 4) << "ceil_mode " << ceil_mode;
  }
}

TEST(PoolCost, GlobalAveragePoolCountsInputElements) {
  OneOpGraph op;
  op.In("x", {{1, 2048, 7, 7}}).Out("y", {{1, 2048, 1, 1}});
  op.Node("GlobalAveragePool");
  EXPECT_EQ(op.Cost().flops, 2048 * 49);
}

TEST(GemmCost, TransposedGemmWithBiasMatchesHandCount) {
  OneOpGraph op;
  op.In("a", {{64, 32}})
      .Weight("b", {{128, 64}})
      .Weight("c", {{128}})
      .Out("y", {{32, 128}});
  op.Node("Gemm").Int("transA", 1).Int("transB", 1);
  const OpCost c = op.Cost();
  // M = 32, K = 64 (A transposed), N = 128 (B transposed).
  EXPECT_EQ(c.macs, 32 * 128 * 64);
  EXPECT_EQ(c.flops, 2 * 262'144 + 32 * 128);  // bias add per output
  EXPECT_EQ(c.weight_bytes, (128 * 64 + 128) * 4);
  EXPECT_EQ(c.bytes_read, c.weight_bytes + 64 * 32 * 4);
  EXPECT_EQ(c.op_class, OpClass::kMatrix);
}

TEST(GemmCost, AlphaAndBetaScalingAddOneFlopPerOutputEach) {
  OneOpGraph op;
  op.In("a", {{32, 64}}).In("b", {{64, 128}}).In("c", {{32, 128}});
  op.Out("y", {{32, 128}});
  op.Node("Gemm").Float("alpha", 0.5).Float("beta", 2.0);
  EXPECT_EQ(op.Cost().flops, 2 * 262'144 + 3 * 4'096);
}

TEST(MatMulCost, BroadcastBatchedMatMulMatchesHandCount) {
  OneOpGraph op;
  op.In("a", {{2, 1, 5, 3}}).In("b", {{4, 3, 6}}).Out("y", {{2, 4, 5, 6}});
  op.Node("MatMul");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 2 * 4 * 5 * 6 * 3);
  EXPECT_EQ(c.flops, 2 * c.macs);
  EXPECT_TRUE(c.exact) << c.note;
}

TEST(MatMulCost, BroadcastFromOperandsWhenOutputShapeUnknown) {
  OneOpGraph op;
  op.In("a", {{2, 1, 5, 3}}).In("b", {{4, 3, 6}}).Out("y", std::nullopt);
  op.Node("MatMul");
  EXPECT_EQ(op.Cost().macs, 720);
}

TEST(MatMulCost, OneDimensionalOperandsDropTheirMatrixDim) {
  struct Case {
    std::vector<int64_t> a, b;
    int64_t macs;
  };
  for (const Case& k : {Case{{3}, {2, 3, 4}, 2 * 4 * 3},
                        Case{{2, 5, 3}, {3}, 2 * 5 * 3}, Case{{3}, {3}, 3}}) {
    for (const bool output_known : {true, false}) {
      OneOpGraph op;
      op.In("a", k.a).In("b", k.b);
      std::vector<int64_t> y;
      if (k.a.size() > 1) y.assign(k.a.begin(), k.a.end() - 1);
      if (k.b.size() > 1) {
        y.insert(y.begin(), k.b.begin(), k.b.end() - 2);
        y.push_back(k.b.back());
      }
      op.Out("y", output_known ? testing::Dims(y) : std::nullopt);
      op.Node("MatMul");
      EXPECT_EQ(op.Cost().macs, k.macs) << k.a.size() << "-D x " << k.b.size()
                                        << "-D, output known " << output_known;
    }
  }
}

TEST(MatMulCost, QuantizedMatMulsCountInt8Macs) {
  OneOpGraph integer;
  integer.In("a", {{4, 8}}, DT::kUint8).Weight("b", {{8, 16}}, DT::kInt8);
  integer.Out("y", {{4, 16}}, DT::kInt32).Node("MatMulInteger");
  EXPECT_EQ(integer.Cost().macs, 4 * 16 * 8);

  OneOpGraph qlinear;
  qlinear.In("a", {{4, 8}}, DT::kUint8)
      .Weight("as", kNoDims)
      .Weight("az", kNoDims);
  qlinear.Weight("b", {{8, 16}}, DT::kInt8).Weight("bs", kNoDims);
  qlinear.Weight("bz", kNoDims).Weight("ys", kNoDims).Weight("yz", kNoDims);
  qlinear.Out("y", {{4, 16}}, DT::kUint8).Node("QLinearMatMul");
  const OpCost c = qlinear.Cost();
  EXPECT_EQ(c.macs, 512);
  EXPECT_EQ(c.flops, 2 * 512 + 64);  // plus requantizing each output
}

TEST(MatMulCost, FusedMatMulHonoursTransposes) {
  OneOpGraph op;
  op.In("a", {{2, 3, 5}}).In("b", {{2, 7, 3}}).Out("y", std::nullopt);
  op.Node("FusedMatMul", "com.microsoft").Int("transA", 1).Int("transB", 1);
  // A^T is [2, 5, 3], B^T is [2, 3, 7]: 2 * 5 * 7 * 3.
  EXPECT_EQ(op.Cost().macs, 210);
}

TEST(EinsumCost, BatchedMatMulEquationIsProductOfIndexExtents) {
  OneOpGraph op;
  op.In("a", {{2, 3, 4}}).In("b", {{2, 4, 5}}).Out("y", {{2, 3, 5}});
  op.Node("Einsum").String("equation", "bij,bjk->bik");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 2 * 3 * 4 * 5);
  EXPECT_TRUE(c.exact) << c.note;
  EXPECT_EQ(c.op_class, OpClass::kMatrix);
}

TEST(EinsumCost, AttentionScoresEquationMatchesHandCount) {
  OneOpGraph op;
  op.In("q", {{2, 12, 128, 64}}).In("k", {{2, 12, 128, 64}});
  op.Out("s", {{2, 12, 128, 128}});
  op.Node("Einsum").String("equation", "bhqd, bhkd -> bhqk");
  EXPECT_EQ(op.Cost().macs, 2 * 12 * 128 * 64 * 128);
}

TEST(EinsumCost, EllipsisDimsBroadcast) {
  OneOpGraph op;
  op.In("a", {{7, 2, 3}}).In("b", {{1, 3, 4}}).Out("y", {{7, 2, 4}});
  op.Node("Einsum").String("equation", "...ij,...jk->...ik");
  EXPECT_EQ(op.Cost().macs, 7 * 2 * 3 * 4);
}

TEST(EinsumCost, SingleOperandHasNoMacs) {
  OneOpGraph op;
  op.In("a", {{3, 4}}).Out("y", {{4, 3}});
  op.Node("Einsum").String("equation", "ij->ji");
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 0);
  EXPECT_EQ(c.flops, 12);
}

TEST(EinsumCost, EquationNotMatchingOperandsIsFlagged) {
  OneOpGraph op;
  op.In("a", {{3, 4}}).In("b", {{4, 5}}).Out("y", {{3, 5}});
  op.Node("Einsum").String("equation", "ijk,kl->il");
  const OpCost c = op.Cost();
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.note, HasSubstr("ijk,kl->il"));
  EXPECT_EQ(c.flops, 15);  // memory-bound: one per output element
}

TEST(RecurrentCost, BidirectionalLstmMatchesHandCount) {
  OneOpGraph op;
  op.In("x", {{10, 4, 32}})
      .Weight("w", {{2, 64, 32}})
      .Weight("r", {{2, 64, 16}})
      .Weight("b", {{2, 128}})
      .Out("y", {{10, 2, 4, 16}});
  op.Node("LSTM").Int("hidden_size", 16).String("direction", "bidirectional");
  const OpCost c = op.Cost();
  // 2 directions * 10 steps * 4 rows * 4 gates * 16 hidden * (32 + 16).
  EXPECT_EQ(c.macs, 245'760);
  // Plus per unit (1,280 of them): 13 point-wise + 8 bias adds.
  EXPECT_EQ(c.flops, 2 * 245'760 + 1'280 * 21);
  EXPECT_EQ(c.op_class, OpClass::kMatrix);
}

TEST(RecurrentCost, GruTakesHiddenSizeFromRecurrenceWeights) {
  OneOpGraph op;
  op.In("x", {{5, 2, 10}})
      .Weight("w", {{1, 60, 10}})
      .Weight("r", {{1, 60, 20}})
      .Out("y", {{5, 1, 2, 20}});
  op.Node("GRU");
  const OpCost c = op.Cost();
  // 5 steps * 2 rows * 3 gates * 20 hidden * (10 + 20); no bias.
  EXPECT_EQ(c.macs, 18'000);
  EXPECT_EQ(c.flops, 36'000 + 200 * 11);
}

TEST(RecurrentCost, BatchFirstRnnMatchesHandCount) {
  OneOpGraph op;
  op.In("x", {{3, 7, 8}})
      .Weight("w", {{1, 5, 8}})
      .Weight("r", {{1, 5, 5}})
      .Out("y", {{3, 7, 1, 5}});
  op.Node("RNN").Int("hidden_size", 5).Int("layout", 1);
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 21 * 5 * 13);  // 21 rows * 5 hidden * (8 + 5)
  EXPECT_EQ(c.flops, 2 * 1'365 + 105 * 2);
}

TEST(AttentionCost, MicrosoftAttentionCountsProjectionScoresAndValues) {
  OneOpGraph op;
  op.In("x", {{2, 16, 64}})
      .Weight("w", {{64, 192}})
      .Weight("b", {{192}})
      .Out("y", {{2, 16, 64}});
  op.Node("Attention", "com.microsoft").Int("num_heads", 4);
  const OpCost c = op.Cost();
  // QKV: 32 tokens * 64 * 192; QK^T: 2,048 * 16; AV: 2,048 * 16.
  EXPECT_EQ(c.macs, 393'216 + 32'768 + 32'768);
  // Bias adds 32 * 192; softmax 5 flops * (2 * 4 heads * 16 * 16) scores.
  EXPECT_EQ(c.flops, 2 * 458'752 + 6'144 + 10'240);
  EXPECT_TRUE(c.exact) << c.note;
}

TEST(AttentionCost, MultiHeadAttentionUsesKeyLength) {
  OneOpGraph op;
  op.In("q", {{2, 16, 64}}).In("k", {{2, 24, 64}}).In("v", {{2, 24, 64}});
  op.Out("y", {{2, 16, 64}});
  op.Node("MultiHeadAttention", "com.microsoft").Int("num_heads", 4);
  const OpCost c = op.Cost();
  EXPECT_EQ(c.macs, 24 * (2'048 + 2'048));
  EXPECT_EQ(c.flops, 2 * c.macs + 5 * 2 * 4 * 16 * 24);
}

TEST(DetCost, LuFactorizationPerMatrix) {
  OneOpGraph op;
  op.In("x", {{2, 3, 3}}).Out("y", {{2}});
  op.Node("Det");
  EXPECT_EQ(op.Cost().macs, 2 * 27 / 3);
}

}  // namespace
}  // namespace tessera::estimator
