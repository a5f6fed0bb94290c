#ifndef TESSERA_PLACER_MAXLOAD_MAX_LOAD_UNITS_H_
#define TESSERA_PLACER_MAXLOAD_MAX_LOAD_UNITS_H_

// The groups of nodes that the max-load DP and ILP move as one, and the
// order a contiguous split follows (docs/placer_max_load.md, "Units").
//
// - A color class is one unit: its nodes share a device anyway.
// - A free node joins its one neighbour: a node with no time on any kind
//   that (a) sends nothing (out-cost 0) and has one predecessor, (b) has
//   no predecessor and one successor, or (c) has no predecessor and sends
//   nothing (it joins a successor, and its edges order nothing: where it
//   sits changes no load). Moving it to that neighbour's device raises no
//   device's load, so some optimal placement keeps them together; only
//   memory could tell them apart, so a free node of nonzero size joins
//   only when the whole graph fits in the smallest limited device (memory
//   never binds).
// - The order: edges between forward nodes, and edges between backward
//   nodes in the direction the backward pass runs relative to its forward
//   twins (the published layer graphs copy the forward direction, the
//   operator graphs mirror it; which one is read off the edges). Edges
//   from a forward to a backward node do not order. Units on a cycle of
//   this order are merged (strongly connected components), so the units'
//   order is a DAG.
// The DP places chains of ideals of that DAG; the ILP places the units
// freely (it uses `units`, not the order).

#include <vector>

#include "placer/maxload/max_load.h"

namespace tessera::placer {

struct MaxLoadUnits {
  std::vector<int> unit_of;               // per node
  std::vector<std::vector<int>> members;  // per unit, node indices
  // Per unit, its predecessors in the order DAG (units, deduplicated).
  std::vector<std::vector<int>> preds;
  std::vector<int> topological;  // the units in a topological order
  int free_nodes_joined = 0;
  bool backward_mirrored = false;
};

// `order`: false gives only the units a placement must keep together
// (color classes and free nodes), with no order and no merging along
// cycles (for the ILP).
MaxLoadUnits BuildMaxLoadUnits(const MaxLoadProblem& p, bool order);

// Per unit u and kind k, at [u * kinds + k]: the sum of its nodes' times
// on k, or infinity when one of them cannot run there.
std::vector<double> UnitTimes(const MaxLoadProblem& p,
                              const MaxLoadUnits& units);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_MAXLOAD_MAX_LOAD_UNITS_H_
