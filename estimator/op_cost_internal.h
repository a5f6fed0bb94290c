#ifndef TESSERA_ESTIMATOR_OP_COST_INTERNAL_H_
#define TESSERA_ESTIMATOR_OP_COST_INTERNAL_H_

// Helpers shared by the op_cost_*.cc files only; nothing outside estimator/
// includes this. Each formula family lives in its own file:
//   op_cost.cc             dispatch table, I/O bytes, CostOf/CostAll
//   op_cost_op.cc          Op: shape and attribute reads for a formula
//   op_cost_matrix.cc      Gemm, MatMul (+Integer/QLinear), Einsum, Attention
//   op_cost_conv.cc        Conv (+Integer/QLinear), ConvTranspose, pooling
//   op_cost_rnn.cc         LSTM, GRU, RNN
//   op_cost_pointwise.cc   element-wise, normalizations, reductions, Resize
//   op_cost_control.cc     If, Loop, Scan

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "estimator/op_cost.h"
#include "graph/graph.h"

namespace tessera::estimator::internal {

// Saturating arithmetic on non-negative counts: on overflow the result is
// INT64_MAX and *overflow is set (never wraps).
int64_t SaturatingMul(int64_t a, int64_t b, bool* overflow);
int64_t SaturatingAdd(int64_t a, int64_t b, bool* overflow);

// Marks `cost` inexact and records `why` (each reason once; after a few,
// only "..."). `first` puts the reason ahead of those already recorded, for
// the one a reader must see (a control-flow assumption).
void Flag(OpCost& cost, std::string_view why, bool first = false);

// One node being costed: the graph, the node and the cost being filled in.
// Shape reads never fail: an extent that is not known reads as 1 and flags
// the cost with the tensor's name, so a formula yields a lower bound.
class Op {
 public:
  Op(const graph::OpGraph& g, graph::NodeId id, OpCost* cost,
     int64_t per_element);

  const graph::OpGraph& graph() const { return g_; }
  graph::NodeId id() const { return id_; }
  const graph::NodeView& node() const { return node_; }
  OpCost& cost() const { return *cost_; }
  // The flops-per-element figure of the operator's table entry.
  int64_t per_element() const { return per_element_; }

  // Input/output `i` exists and is not omitted.
  bool has_input(size_t i) const;
  bool has_output(size_t i) const;
  // REQUIRES: has_input(i) / has_output(i).
  graph::TensorView input(size_t i) const;
  graph::TensorView output(size_t i) const;

  // Rank of `t`; -1 (flagged) when unknown.
  int Rank(const graph::TensorView& t) const;
  // Extent of `axis` (negative counts from the end); 1, flagged, when the
  // extent or the rank is unknown or `axis` is out of range.
  int64_t Dim(const graph::TensorView& t, int axis) const;
  // Product of the extents of axes [from, rank); unknown ones read as 1.
  int64_t DimProduct(const graph::TensorView& t, int from) const;
  // Elements of `t`; unknown extents read as 1; 0 (flagged) if the rank is
  // unknown.
  int64_t Elements(const graph::TensorView& t) const;
  // Elements of input/output `i`; 0 when it is absent.
  int64_t InputElements(size_t i) const;
  int64_t OutputElements(size_t i) const;

  int64_t Int(std::string_view attr, int64_t fallback) const;
  std::span<const int64_t> Ints(std::string_view attr) const;
  std::string_view String(std::string_view attr,
                          std::string_view fallback) const;

  // Saturating arithmetic that flags the cost on overflow.
  int64_t Mul(int64_t a, int64_t b) const;
  int64_t Add(int64_t a, int64_t b) const;
  void Flag(std::string_view why, bool first = false) const;

  // Adds multiply-accumulates (2 flops each) / other arithmetic.
  void AddMacs(int64_t macs) const;
  void AddFlops(int64_t flops) const;

 private:
  void FlagUnknown(const graph::TensorView& t) const;

  const graph::OpGraph& g_;
  graph::NodeId id_;
  graph::NodeView node_;
  OpCost* cost_;
  int64_t per_element_;
};

// A cost formula: adds compute (and any override of the I/O bytes the
// dispatcher filled in) to op.cost().
using CostFn = void (*)(const Op& op);

// op_cost_matrix.cc
void CostGemm(const Op& op);
void CostMatMul(const Op& op);
void CostMatMulInteger(const Op& op);
void CostQLinearMatMul(const Op& op);
void CostFusedMatMul(const Op& op);
void CostEinsum(const Op& op);
void CostDet(const Op& op);
void CostFusedAttention(const Op& op);
void CostScaledDotProductAttention(const Op& op);

// op_cost_conv.cc
void CostConv(const Op& op);
void CostConvInteger(const Op& op);
void CostQLinearConv(const Op& op);
void CostDeformConv(const Op& op);
void CostConvTranspose(const Op& op);
void CostPool(const Op& op);

// op_cost_rnn.cc
void CostLstm(const Op& op);
void CostGru(const Op& op);
void CostRnn(const Op& op);

// op_cost_pointwise.cc
void CostPerOutputElement(const Op& op);
void CostPerInputElement(const Op& op);
void CostVariadic(const Op& op);
void CostBatchNorm(const Op& op);
void CostLrn(const Op& op);
void CostResize(const Op& op);
void CostGridSample(const Op& op);
void CostDataMovement(const Op& op);
void CostView(const Op& op);
void CostConstant(const Op& op);

// op_cost_control.cc
void CostIf(const Op& op);
void CostLoop(const Op& op);
void CostScan(const Op& op);
void CostOtherSubgraphs(const Op& op);

}  // namespace tessera::estimator::internal

#endif  // TESSERA_ESTIMATOR_OP_COST_INTERNAL_H_
