#ifndef TESSERA_ESTIMATOR_OP_COST_H_
#define TESSERA_ESTIMATOR_OP_COST_H_

// Per-operator cost: MACs, FLOPs, bytes read and written, weight, output and
// workspace bytes, keyed by (domain, op type). Exact formulas for the
// compute-heavy operators, a memory-bound cost for every other operator of
// the standard domain, a flagged memory-bound fallback for anything else.
// Pure functions of an immutable OpGraph: safe to call concurrently.
//
// Conventions (each formula is documented at its function, op_cost_*.cc):
// - MACs count multiply-accumulates of matrix and convolution work, as
//   torchvision's published "GFLOPS" (really GMACs) do: Conv = output
//   elements x Cin/group x kernel size; Gemm/MatMul = M x N x K x batch.
//   FLOPs = 2 x MACs plus every other arithmetic operation (bias adds,
//   activations, normalizations, ...); bias adds are never MACs.
// - bytes_read sums each distinct input tensor of a node once (weights
//   included); weight_bytes is the part of it that comes from weights
//   (initializers and Constant values); bytes_written = output_bytes = the
//   bytes of the node's outputs.
// - Views (Reshape, Squeeze, Unsqueeze, Flatten, Identity) move no data:
//   bytes_read = bytes_written = 0, output_bytes still reports the tensor
//   they name. Constant nodes cost nothing; their value is counted as weight
//   bytes where it is read.
// - workspace_bytes is 0 unless stated: no im2col is assumed (implicit-GEMM
//   convolution needs none). Control-flow nodes report their body's
//   intermediate activations (an upper bound: all live at once).
// - If/Loop/Scan cost their subgraphs: If the more expensive branch, Loop
//   the body x trip count (a Constant `M` or a known scan-output length;
//   otherwise 1, flagged), Scan the body x sequence length.
// - Costs are never negative. An unknown extent counts as 1, so a formula
//   gives a lower bound, and the cost is flagged (exact = false) with a note
//   naming the tensor; so is an overflow (the value saturates at INT64_MAX).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace tessera::estimator {

// The kind of work an operator does; the time model keys efficiencies on it.
enum class OpClass : uint8_t {
  kMatrix,
  kConvolution,
  kElementwise,
  kReduction,
  kNormalization,
  kDataMovement,
  kControlFlow,
  // Convolutions with one input channel per group (group == input
  // channels > 1): a few MACs per weight and no reuse across channels, so
  // they behave nothing like dense convolutions.
  kDepthwiseConvolution,
  // Dense (group 1) convolutions with a kernel larger than 1 (3x3, 7x7...):
  // CPU libraries run them as im2col + GEMM, whose copy 1x1 convolutions
  // (plain GEMMs) skip. Grouped convolutions that are not depthwise stay
  // kConvolution: too rare to fit on their own.
  kSpatialConvolution,
};  // append only

struct OpCost {
  int64_t macs = 0;   // multiply-accumulates of matrix/convolution work
  int64_t flops = 0;  // 2 x macs plus all other arithmetic
  int64_t bytes_read = 0, bytes_written = 0;
  int64_t weight_bytes = 0;     // part of bytes_read from weight tensors
  int64_t output_bytes = 0;     // activation bytes the node produces
  int64_t workspace_bytes = 0;  // scratch the node needs while it runs
  OpClass op_class = OpClass::kElementwise;
  bool exact = true;  // false: a fallback, an unknown or an assumption
  std::string note;   // why not exact, e.g. "shape of 'x' unknown ..."
};

// Cost of node `n` of `g`; control-flow nodes include their subgraphs.
// REQUIRES: n < g.num_nodes().
OpCost CostOf(const graph::OpGraph& g, graph::NodeId n);

// True for operators whose output is a view of their first input (Reshape,
// Squeeze, Unsqueeze, Flatten, and the no-ops of graph::IsNoOp: Identity, a
// Cast to the same type, an inference-form Dropout): they move no data, and
// the memory model lets the output share the input's buffer.
bool IsView(const graph::OpGraph& g, graph::NodeId n);

// Costs of all nodes of `g`, indexed by NodeId.
std::vector<OpCost> CostAll(const graph::OpGraph& g);

// "matrix", "convolution", "elementwise", "reduction", "normalization",
// "data_movement", "control_flow", "depthwise_convolution",
// "spatial_convolution".
std::string_view OpClassName(OpClass op_class);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_OP_COST_H_
