// Control flow: If, Loop, Scan (and any other node with subgraphs) cost
// their bodies on top of their own inputs and outputs. The body's compute,
// traffic and weight reads count once per iteration; the node's workspace
// is the body's intermediate activations (all assumed live at once, an
// upper bound) plus the body's largest workspace.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "estimator/op_cost_internal.h"

namespace tessera::estimator::internal {

using graph::NodeId;
using graph::OpGraph;
using graph::TensorView;

namespace {

// The summed cost of all nodes of `body`; output_bytes holds the sum of
// their outputs (the body's intermediates).
OpCost BodyCost(const OpGraph& body) {
  OpCost total;
  total.op_class = OpClass::kControlFlow;
  bool overflow = false;
  for (NodeId n = 0; n < body.num_nodes(); ++n) {
    const OpCost c = CostOf(body, n);
    total.macs = SaturatingAdd(total.macs, c.macs, &overflow);
    total.flops = SaturatingAdd(total.flops, c.flops, &overflow);
    total.bytes_read = SaturatingAdd(total.bytes_read, c.bytes_read, &overflow);
    total.bytes_written =
        SaturatingAdd(total.bytes_written, c.bytes_written, &overflow);
    total.weight_bytes =
        SaturatingAdd(total.weight_bytes, c.weight_bytes, &overflow);
    total.output_bytes =
        SaturatingAdd(total.output_bytes, c.output_bytes, &overflow);
    total.workspace_bytes = std::max(total.workspace_bytes, c.workspace_bytes);
    if (!c.exact) {
      Flag(total, "in '" + std::string(body.name()) + "', " +
                      graph::DescribeNode(body, n) + ": " + c.note);
    }
  }
  if (overflow) Flag(total, "overflow: count saturated at INT64_MAX");
  return total;
}

// Adds `body` run `trips` times to the node's cost.
void AddBody(const Op& op, const OpCost& body, int64_t trips) {
  OpCost& c = op.cost();
  c.macs = op.Add(c.macs, op.Mul(body.macs, trips));
  c.flops = op.Add(c.flops, op.Mul(body.flops, trips));
  c.bytes_read = op.Add(c.bytes_read, op.Mul(body.bytes_read, trips));
  c.bytes_written = op.Add(c.bytes_written, op.Mul(body.bytes_written, trips));
  c.weight_bytes = op.Add(c.weight_bytes, op.Mul(body.weight_bytes, trips));
  c.workspace_bytes = std::max(c.workspace_bytes,
                               op.Add(body.output_bytes, body.workspace_bytes));
  if (!body.exact) op.Flag(body.note);
}

// Loop's M when a Constant node gives it as value_int or value_ints (the
// values of initializers and tensor-valued Constants are not loaded).
std::optional<int64_t> ConstantTripCount(const Op& op) {
  if (!op.has_input(0)) return std::nullopt;
  const TensorView m = op.input(0);
  if (m.producer == graph::kNoNode) return std::nullopt;
  const OpGraph& g = op.graph();
  if (g.node(m.producer).op_type != "Constant") return std::nullopt;
  if (const auto v = g.GetInt(m.producer, "value_int")) return *v;
  const auto values = g.GetInts(m.producer, "value_ints");
  if (values.size() == 1) return values[0];
  return std::nullopt;
}

// The leading extent of a Loop scan output (one row per iteration).
std::optional<int64_t> ScanOutputTripCount(const Op& op) {
  const size_t carried =
      op.node().inputs.size() - std::min<size_t>(op.node().inputs.size(), 2);
  for (size_t i = carried; i < op.node().outputs.size(); ++i) {
    if (!op.has_output(i)) continue;
    const TensorView y = op.output(i);
    if (y.dims && !y.dims->empty() && graph::IsKnownDim((*y.dims)[0])) {
      return (*y.dims)[0];
    }
  }
  return std::nullopt;
}

// Scan's iteration count: the scan axis of its first scan input (opset 9+),
// or batch x sequence (opset 8, recognized by its extra sequence_lens
// input, scanning axis 1 of [batch, seq, ...]).
std::optional<int64_t> ScanTripCount(const Op& op, const OpGraph& body) {
  const auto& inputs = op.node().inputs;
  const int64_t scans = op.Int("num_scan_inputs", 0);
  if (scans <= 0 || static_cast<size_t>(scans) > inputs.size()) {
    return std::nullopt;
  }
  const size_t first = inputs.size() - static_cast<size_t>(scans);
  if (!op.has_input(first)) return std::nullopt;
  const TensorView x = op.input(first);
  if (!x.dims) return std::nullopt;
  const auto dims = *x.dims;
  const int rank = static_cast<int>(dims.size());
  const bool opset8 = body.inputs().size() + 1 == inputs.size();
  const auto axes = op.Ints("scan_input_axes");
  int axis = opset8 ? 1 : (axes.empty() ? 0 : static_cast<int>(axes[0]));
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || !graph::IsKnownDim(dims[axis])) {
    return std::nullopt;
  }
  if (!opset8) return dims[axis];
  return graph::IsKnownDim(dims[0]) ? std::optional(op.Mul(dims[0], dims[1]))
                                    : std::nullopt;
}

const OpGraph* FirstSubgraph(const Op& op) {
  if (op.node().subgraphs.empty()) {
    op.Flag(std::string(op.node().op_type) + " has no body: not counted");
    return nullptr;
  }
  return &op.graph().subgraph(op.node().subgraphs[0]);
}

// Flops, then traffic: which of two costs is the more expensive.
bool MoreExpensive(const OpCost& a, const OpCost& b) {
  if (a.flops != b.flops) return a.flops > b.flops;
  return a.bytes_read + a.bytes_written > b.bytes_read + b.bytes_written;
}

}  // namespace

// If: the more expensive branch (an upper bound); flagged when the branches
// differ, since which one runs is decided at run time.
void CostIf(const Op& op) {
  std::optional<OpCost> best;
  std::string best_name;
  bool differ = false;
  for (const uint32_t s : op.node().subgraphs) {
    const OpGraph& branch = op.graph().subgraph(s);
    OpCost c = BodyCost(branch);
    if (best) {
      differ = differ || c.flops != best->flops ||
               c.bytes_read != best->bytes_read ||
               c.bytes_written != best->bytes_written;
    }
    if (!best || MoreExpensive(c, *best)) {
      best = std::move(c);
      best_name = branch.name();
    }
  }
  if (!best) {
    op.Flag("If has no branches: not counted");
    return;
  }
  AddBody(op, *best, 1);
  if (differ) {
    op.Flag(
        "If: branches differ; the more expensive ('" + best_name + "') costed",
        true);
  }
}

// Loop: the body x trip count (M from a Constant, or the length of a scan
// output); 1 and flagged when neither is known.
void CostLoop(const Op& op) {
  const OpGraph* body = FirstSubgraph(op);
  if (body == nullptr) return;
  std::optional<int64_t> trips = ConstantTripCount(op);
  if (!trips) trips = ScanOutputTripCount(op);
  if (!trips) op.Flag("Loop trip count unknown: costed once", true);
  AddBody(op, BodyCost(*body), std::max<int64_t>(trips.value_or(1), 0));
}

// Scan: the body x sequence length; 1 and flagged when unknown.
void CostScan(const Op& op) {
  const OpGraph* body = FirstSubgraph(op);
  if (body == nullptr) return;
  const std::optional<int64_t> trips = ScanTripCount(op, *body);
  if (!trips) op.Flag("Scan sequence length unknown: costed once", true);
  AddBody(op, BodyCost(*body), trips.value_or(1));
}

// Any other operator with subgraphs (SequenceMap): each body once, flagged
// (the number of iterations is a run-time sequence length).
void CostOtherSubgraphs(const Op& op) {
  for (const uint32_t s : op.node().subgraphs) {
    AddBody(op, BodyCost(op.graph().subgraph(s)), 1);
  }
  op.Flag(std::string(op.node().op_type) +
              ": iteration count unknown: body costed once",
          true);
}

}  // namespace tessera::estimator::internal
