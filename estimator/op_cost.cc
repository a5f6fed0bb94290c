// Dispatch of per-operator costs: a table keyed by (domain, op type) picks
// the formula and the operator class; the bytes every operator reads and
// writes are filled in here once for all of them.
#include "estimator/op_cost.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "estimator/op_cost_internal.h"
#include "graph/noop.h"

namespace tessera::estimator {

using graph::NodeId;
using graph::OpGraph;
using graph::TensorId;
using graph::TensorView;
using internal::CostFn;
using internal::Op;

namespace {

// How an operator is costed: its class, its formula and, for the generic
// per-element formulas, the flops per element.
struct Entry {
  OpClass op_class;
  CostFn cost;
  int64_t per_element = 0;
};
using Table = std::unordered_map<std::string_view, Entry>;

constexpr auto kMatrix = OpClass::kMatrix;
constexpr auto kConv = OpClass::kConvolution;
constexpr auto kElementwise = OpClass::kElementwise;
constexpr auto kReduction = OpClass::kReduction;
constexpr auto kNorm = OpClass::kNormalization;
constexpr auto kMove = OpClass::kDataMovement;
constexpr auto kControl = OpClass::kControlFlow;

// Per-element flop counts of the generic formulas, one reason each:
// one operation per output element (add, compare, convert, activation).
constexpr int64_t kOneFlop = 1;
// LpPool / GlobalLpPool: a power and an add per input element.
constexpr int64_t kLpPoolFlops = 2;
// Softmax / LogSoftmax: max, subtract, exp, sum, divide (or log) = 5.
constexpr int64_t kSoftmaxFlops = 5;
// Hardmax: a compare per element, a write of 0/1 per element.
constexpr int64_t kHardmaxFlops = 2;
// Layer/Instance/Group norm: mean (1), variance (sub, square, add = 3),
// normalize (sub, multiply by rsqrt = 2), scale and shift (2) = 8.
constexpr int64_t kNormFlops = 8;
// MeanVarianceNormalization: as above without scale and shift = 6.
constexpr int64_t kMvnFlops = 6;
// LpNormalization: square, add, divide = 3.
constexpr int64_t kLpNormFlops = 3;
// SkipLayerNormalization: the residual add plus a layer norm.
constexpr int64_t kSkipNormFlops = kNormFlops + 1;
// RMSNormalization: square, add, multiply by rsqrt, scale = 4.
constexpr int64_t kRmsNormFlops = 4;
// SoftmaxCrossEntropyLoss: a softmax (5) and a log (1) per score.
constexpr int64_t kSoftmaxCrossEntropyFlops = kSoftmaxFlops + 1;
// RotaryEmbedding: x * cos + rotate(x) * sin = 3 per element.
constexpr int64_t kRotaryFlops = 3;
// RoiAlign: a bilinear sample (4 taps) per output element, by default one
// sample per bin (sampling_ratio varies; this is a lower bound).
constexpr int64_t kRoiAlignFlops = 4;

// Operators with their own formula or per-element figure.
Table FormulaOps() {
  return Table{
      // Matrix and convolution work: exact MAC formulas.
      {"Gemm", {kMatrix, internal::CostGemm}},
      {"MatMul", {kMatrix, internal::CostMatMul}},
      {"MatMulInteger", {kMatrix, internal::CostMatMulInteger}},
      {"QLinearMatMul", {kMatrix, internal::CostQLinearMatMul}},
      {"Einsum", {kMatrix, internal::CostEinsum}},
      {"Det", {kMatrix, internal::CostDet}},
      {"Attention", {kMatrix, internal::CostScaledDotProductAttention}},
      {"Conv", {kConv, internal::CostConv}},
      {"ConvInteger", {kConv, internal::CostConvInteger}},
      {"QLinearConv", {kConv, internal::CostQLinearConv}},
      {"DeformConv", {kConv, internal::CostDeformConv}},
      {"ConvTranspose", {kConv, internal::CostConvTranspose}},
      {"LSTM", {kMatrix, internal::CostLstm}},
      {"GRU", {kMatrix, internal::CostGru}},
      {"RNN", {kMatrix, internal::CostRnn}},
      // Pooling: windowed reductions.
      {"MaxPool", {kReduction, internal::CostPool, kOneFlop}},
      {"AveragePool", {kReduction, internal::CostPool, kOneFlop}},
      {"LpPool", {kReduction, internal::CostPool, kLpPoolFlops}},
      {"GlobalMaxPool", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"GlobalAveragePool",
       {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"GlobalLpPool",
       {kReduction, internal::CostPerInputElement, kLpPoolFlops}},
      {"MaxRoiPool", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"RoiAlign",
       {kReduction, internal::CostPerOutputElement, kRoiAlignFlops}},
      // Normalizations and softmax.
      {"BatchNormalization", {kNorm, internal::CostBatchNorm}},
      {"LayerNormalization",
       {kNorm, internal::CostPerInputElement, kNormFlops}},
      {"InstanceNormalization",
       {kNorm, internal::CostPerInputElement, kNormFlops}},
      {"GroupNormalization",
       {kNorm, internal::CostPerInputElement, kNormFlops}},
      {"MeanVarianceNormalization",
       {kNorm, internal::CostPerInputElement, kMvnFlops}},
      {"LpNormalization", {kNorm, internal::CostPerInputElement, kLpNormFlops}},
      {"LRN", {kNorm, internal::CostLrn}},
      {"Softmax", {kNorm, internal::CostPerInputElement, kSoftmaxFlops}},
      {"LogSoftmax", {kNorm, internal::CostPerInputElement, kSoftmaxFlops}},
      {"Hardmax", {kNorm, internal::CostPerInputElement, kHardmaxFlops}},
      {"RMSNormalization",
       {kNorm, internal::CostPerInputElement, kRmsNormFlops}},
      {"RotaryEmbedding",
       {kElementwise, internal::CostPerOutputElement, kRotaryFlops}},
      // Losses: a reduction over the scores.
      {"NegativeLogLikelihoodLoss",
       {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"SoftmaxCrossEntropyLoss",
       {kReduction, internal::CostPerInputElement, kSoftmaxCrossEntropyFlops}},
      // Reductions: one accumulation or comparison per input element.
      {"ReduceSum", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceMean", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceMax", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceMin", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceProd", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceL1", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceL2", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceLogSum", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceLogSumExp",
       {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ReduceSumSquare",
       {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ArgMax", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"ArgMin", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"CumSum", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"TopK", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"Unique", {kReduction, internal::CostPerInputElement, kOneFlop}},
      {"NonMaxSuppression",
       {kReduction, internal::CostPerInputElement, kOneFlop}},
      // Interpolation.
      {"Resize", {kElementwise, internal::CostResize}},
      {"Upsample", {kElementwise, internal::CostResize}},
      {"GridSample", {kElementwise, internal::CostGridSample}},
      // Variadic element-wise: (inputs - 1) operations per output element.
      {"Sum", {kElementwise, internal::CostVariadic}},
      {"Mean", {kElementwise, internal::CostVariadic}},
      {"Max", {kElementwise, internal::CostVariadic}},
      {"Min", {kElementwise, internal::CostVariadic}},
      // Views: no data moves (see op_cost.h).
      {"Reshape", {kMove, internal::CostView}},
      {"Squeeze", {kMove, internal::CostView}},
      {"Unsqueeze", {kMove, internal::CostView}},
      {"Flatten", {kMove, internal::CostView}},
      {"Identity", {kMove, internal::CostView}},
      {"Constant", {kMove, internal::CostConstant}},
      // Control flow: the cost of the subgraphs.
      {"If", {kControl, internal::CostIf}},
      {"Loop", {kControl, internal::CostLoop}},
      {"Scan", {kControl, internal::CostScan}},
      {"SequenceMap", {kControl, internal::CostOtherSubgraphs}},
  };
}

// Element-wise math: one operation per output element.
constexpr std::string_view kElementwiseOps =
    "Abs Acos Acosh Add AffineGrid And Asin Asinh Atan Atanh Bernoulli "
    "BitShift "
    "BitwiseAnd BitwiseNot BitwiseOr BitwiseXor BlackmanWindow Cast "
    "CastLike Ceil Celu Clip Col2Im Cos Cosh DFT DequantizeLinear Div "
    "Dropout DynamicQuantizeLinear Elu Equal Erf Exp Floor Gelu Greater "
    "GreaterOrEqual HammingWindow HannWindow HardSigmoid HardSwish IsInf "
    "IsNaN LeakyRelu Less LessOrEqual Log MelWeightMatrix Mish Mod Mul "
    "Multinomial Neg Not Or PRelu Pow QuantizeLinear RandomNormal "
    "RandomNormalLike RandomUniform RandomUniformLike Reciprocal Relu Round "
    "STFT Selu Shrink Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Sub Tan "
    "Swish Tanh ThresholdedRelu Where Xor ImageDecoder";

// Pure data movement: bytes only, no arithmetic.
constexpr std::string_view kDataMovementOps =
    "CenterCropPad Compress Concat ConcatFromSequence ConstantOfShape "
    "DepthToSpace Expand EyeLike Gather GatherElements GatherND MaxUnpool "
    "NonZero OneHot Optional OptionalGetElement OptionalHasElement Pad "
    "Range ReverseSequence Scatter ScatterElements ScatterND SequenceAt "
    "SequenceConstruct SequenceEmpty SequenceErase SequenceInsert "
    "SequenceLength Shape Size Slice SpaceToDepth Split SplitToSequence "
    "StringNormalizer TfIdfVectorizer Tile Transpose Trilu RegexFullMatch "
    "StringConcat StringSplit TensorScatter";

// The space-separated words of `text`.
std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  while (!text.empty()) {
    const size_t end = std::min(text.find(' '), text.size());
    if (end > 0) words.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return words;
}

// Every operator of the standard domain.
Table MakeStandardOps() {
  Table table = FormulaOps();
  for (const std::string_view op : Words(kElementwiseOps)) {
    table.emplace(
        op, Entry{kElementwise, internal::CostPerOutputElement, kOneFlop});
  }
  for (const std::string_view op : Words(kDataMovementOps)) {
    table.emplace(op, Entry{kMove, internal::CostDataMovement});
  }
  return table;
}

const Table& StandardOps() {
  static const Table* table = new Table(MakeStandardOps());
  return *table;
}

// com.microsoft contrib operators that have a known formula; the rest of
// that domain takes the flagged fallback.
const Table& MicrosoftOps() {
  static const Table* table = new Table{
      {"Attention", {kMatrix, internal::CostFusedAttention}},
      {"MultiHeadAttention",
       {kMatrix, internal::CostScaledDotProductAttention}},
      {"FusedMatMul", {kMatrix, internal::CostFusedMatMul}},
      {"FusedGemm", {kMatrix, internal::CostGemm}},
      {"FusedConv", {kConv, internal::CostConv}},
      {"Gelu", {kElementwise, internal::CostPerOutputElement, kOneFlop}},
      {"FastGelu", {kElementwise, internal::CostPerOutputElement, kOneFlop}},
      {"BiasGelu", {kElementwise, internal::CostPerOutputElement, kOneFlop}},
      {"QuickGelu", {kElementwise, internal::CostPerOutputElement, kOneFlop}},
      {"SkipLayerNormalization",
       {kNorm, internal::CostPerInputElement, kSkipNormFlops}},
  };
  return *table;
}

// Anything without a formula: read the inputs, write the outputs, one
// operation per output element.
constexpr Entry kFallback = {kElementwise, internal::CostPerOutputElement,
                             kOneFlop};

// The table entry of `node`, or the fallback with the reason in `why`.
const Entry& Lookup(const graph::NodeView& node, std::string* why) {
  const bool standard = node.domain.empty() || node.domain == "ai.onnx";
  const Table* table = standard                         ? &StandardOps()
                       : node.domain == "com.microsoft" ? &MicrosoftOps()
                                                        : nullptr;
  if (table == nullptr) {
    *why = "unknown domain " + std::string(node.domain) +
           ": memory-bound fallback";
    return kFallback;
  }
  const auto it = table->find(node.op_type);
  if (it != table->end()) return it->second;
  *why = "unknown operator " + std::string(standard ? "" : node.domain) +
         (standard ? "" : ":") + std::string(node.op_type) +
         ": memory-bound fallback";
  return kFallback;
}

// Bytes of `t`; a lower bound (flagged) when its size is not fully known.
int64_t TensorBytes(const Op& op, const TensorView& t) {
  if (t.bytes >= 0) return t.bytes;
  const int bits = graph::DataTypeBits(t.dtype);
  if (bits == 0) {
    op.Flag("size of '" + std::string(t.name) + "' unknown (dtype " +
            std::string(graph::DataTypeName(t.dtype)) + "): not counted");
    return 0;
  }
  const int64_t total_bits = op.Mul(op.Elements(t), bits);
  return total_bits / 8 + (total_bits % 8 != 0 ? 1 : 0);
}

// Bytes of the node's distinct inputs (weights apart) and of its outputs.
void AccountIo(const Op& op) {
  OpCost& c = op.cost();
  const auto inputs = op.node().inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorId t = inputs[i];
    if (t == graph::kNoTensor) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = inputs[j] == t;
    if (seen) continue;
    const TensorView v = op.graph().tensor(t);
    const int64_t bytes = TensorBytes(op, v);
    c.bytes_read = op.Add(c.bytes_read, bytes);
    if (graph::IsWeight(v.kind)) c.weight_bytes = op.Add(c.weight_bytes, bytes);
  }
  for (const TensorId t : op.node().outputs) {
    if (t == graph::kNoTensor) continue;
    c.output_bytes =
        op.Add(c.output_bytes, TensorBytes(op, op.graph().tensor(t)));
  }
  c.bytes_written = c.output_bytes;
}

}  // namespace

bool IsView(const OpGraph& g, NodeId n) {
  std::string why;
  return Lookup(g.node(n), &why).cost == internal::CostView ||
         graph::IsNoOp(g, n);
}

OpCost CostOf(const OpGraph& g, NodeId n) {
  OpCost cost;
  std::string why;
  const Entry& entry = graph::IsNoOp(g, n) ? StandardOps().at("Identity")
                                           : Lookup(g.node(n), &why);
  cost.op_class = entry.op_class;
  if (!why.empty()) internal::Flag(cost, why);
  const Op op(g, n, &cost, entry.per_element);
  AccountIo(op);
  entry.cost(op);
  return cost;
}

std::vector<OpCost> CostAll(const OpGraph& g) {
  std::vector<OpCost> costs;
  costs.reserve(g.num_nodes());
  for (NodeId n = 0; n < g.num_nodes(); ++n) costs.push_back(CostOf(g, n));
  return costs;
}

std::string_view OpClassName(OpClass op_class) {
  switch (op_class) {
    case OpClass::kMatrix:
      return "matrix";
    case OpClass::kConvolution:
      return "convolution";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kNormalization:
      return "normalization";
    case OpClass::kDataMovement:
      return "data_movement";
    case OpClass::kControlFlow:
      return "control_flow";
    case OpClass::kDepthwiseConvolution:
      return "depthwise_convolution";
    case OpClass::kSpatialConvolution:
      return "spatial_convolution";
  }
  return "unknown";
}

}  // namespace tessera::estimator
