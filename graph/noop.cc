// Nodes that pass their input through unchanged (graph.h, IsNoOp).
#include "graph/noop.h"

#include "graph/graph_internal.h"

namespace tessera::graph {
namespace internal {

bool PassesThrough(std::string_view domain, std::string_view op_type,
                   DataType input, std::optional<DataType> cast_to,
                   bool has_training_mode) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  if (op_type == "Identity") return true;
  if (op_type == "Dropout") return !has_training_mode;
  if (op_type == "Cast") {
    return cast_to && *cast_to == input && input != DataType::kUndefined;
  }
  return false;
}

}  // namespace internal

bool IsNoOp(const OpGraph& g, NodeId n) {
  const NodeView v = g.node(n);
  if (v.inputs.empty() || v.inputs[0] == kNoTensor || v.outputs.empty() ||
      v.outputs[0] == kNoTensor || !v.subgraphs.empty()) {
    return false;
  }
  const DataType in = g.tensor(v.inputs[0]).dtype;
  std::optional<DataType> to;
  if (v.op_type == "Cast") to = g.tensor(v.outputs[0]).dtype;
  const bool training_mode = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
  return internal::PassesThrough(v.domain, v.op_type, in, to, training_mode);
}

bool IsWeightAlias(const OpGraph& g, NodeId n) {
  if (!IsNoOp(g, n)) return false;
  const NodeView v = g.node(n);
  return IsWeight(g.tensor(v.inputs[0]).kind) &&
         g.tensor(v.outputs[0]).kind == TensorKind::kConstant;
}

}  // namespace tessera::graph
