#ifndef TESSERA_GRAPH_EXPORT_H_
#define TESSERA_GRAPH_EXPORT_H_

// Machine-readable and visual exports of a loaded model.

#include <ostream>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

// The `tessera inspect --json` object. Keys are a stable contract: add, never
// rename (docs/formats.md, "inspect --json").
std::string ModelSummaryJson(const Model& model);

// Graphviz DOT of the main graph: a box per node, an edge per DAG edge
// labelled with the tensor's shape; graph inputs and outputs as ellipses.
void WriteDot(const OpGraph& graph, std::ostream& out);

}  // namespace tessera::graph

#endif  // TESSERA_GRAPH_EXPORT_H_
