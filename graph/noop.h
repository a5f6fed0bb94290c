#ifndef TESSERA_GRAPH_NOOP_H_
#define TESSERA_GRAPH_NOOP_H_

// Nodes that do nothing. Exporters emit them (an Identity for each weight
// equal to an earlier one: the exporter merges equal values; Identity for
// nn.Identity; Dropout nodes of an inference graph; casts to the type a
// tensor already has) and frameworks do no work for them, so every cost
// model treats them as free and their outputs as their inputs.

#include "graph/graph.h"

namespace tessera::graph {

// A node that passes its input 0 through unchanged: Identity, a Cast to the
// type its input already has, a Dropout in inference form (no training_mode
// input). nn.Identity returns its input, `.to()` to the same type returns
// self, eval-mode dropout returns its input.
bool IsNoOp(const OpGraph& g, NodeId n);

// A no-op node (IsNoOp) that reads a weight: its output is a weight too (of
// kind kConstant, as the ONNX importer declares it), which the framework
// holds as a parameter of its own (PyTorch keeps each module's weight; the
// exporter merged the equal ones behind Identity nodes).
bool IsWeightAlias(const OpGraph& g, NodeId n);

}  // namespace tessera::graph

#endif  // TESSERA_GRAPH_NOOP_H_
