#ifndef TESSERA_PLACER_LATENCY_LATENCY_INTERNAL_H_
#define TESSERA_PLACER_LATENCY_LATENCY_INTERNAL_H_

// Internal to latency_input.cc and latency_place.cc: the graph helpers
// both use.

#include <vector>

#include "placer/latency/latency_input.h"

namespace tessera::placer::latency_internal {

// The input's DAG as adjacency lists (duplicate edges dropped) and a
// topological order (Kahn's, smallest index first). `acyclic` false: the
// order holds only the nodes outside a cycle.
struct Dag {
  std::vector<std::vector<int>> succ, pred;
  std::vector<int> topo;
  bool acyclic = true;
};
Dag MakeDag(const LatencyProblem& p);

// Per vertex of the directed graph `adj`: its strongly connected
// component, numbered so that every edge between components goes from a
// higher number to a lower one (Tarjan's order). `count`: components.
std::vector<int> StrongComponents(const std::vector<std::vector<int>>& adj,
                                  int* count);

}  // namespace tessera::placer::latency_internal

#endif  // TESSERA_PLACER_LATENCY_LATENCY_INTERNAL_H_
