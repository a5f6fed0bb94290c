#ifndef TESSERA_PLACER_MAXLOAD_COST_GRAPH_H_
#define TESSERA_PLACER_MAXLOAD_COST_GRAPH_H_

// tessera's own format for a graph given by its costs ("tessera-cost-graph",
// version 1; docs/cost_graph.md): device kinds with a count and memory,
// operators with a time per kind, memory, co-location groups and
// forward/backward pairs, edges with bytes over one link or a transfer
// time. It reads into the max-load model of placer/maxload/max_load.h, which
// `tessera plan --cost-graph` places; `tessera profile --cost-graph` writes
// it from the estimator (CostGraphFromProblem) so that measured times can
// be patched in and the graph placed again.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "placer/core/cluster.h"
#include "placer/core/problem.h"
#include "placer/maxload/max_load.h"

namespace tessera::placer {

inline constexpr std::string_view kCostGraphFormat = "tessera-cost-graph";
// The version this tessera reads and writes.
inline constexpr int kCostGraphVersion = 1;
// Device kinds a cost graph may list (every operator holds a time per
// kind).
inline constexpr size_t kMaxCostGraphKinds = 1024;

// Whether `j` says it is one: an object with "format": "tessera-cost-graph".
bool IsTesseraCostGraph(const nlohmann::json& j);

// The max-load problem of a cost graph. kBadInput naming the field and its
// index ("<source>: operators[3].time_s.H100: must be a number >= 0") for
// a missing, mistyped or unknown key, another version, a duplicate kind or
// operator id, an unknown kind in time_s, an edge naming an unknown
// operator, a self-loop, a cycle, a backward_of naming no operator or a
// backward one, more than 1,000,000 operators or edges. Co-location
// (colocate groups and backward_of pairs) becomes color classes numbered 0,
// 1, ... in the order of their first operator; an operator in none has
// color -1.
Result<MaxLoadProblem> ParseCostGraph(const nlohmann::json& j,
                                      const std::string& source);

// What a cost graph can say beyond its MaxLoadProblem. Each vector is
// either empty (not said) or holds one entry per node (per edge).
struct CostGraphExtras {
  std::string model;                  // "model"; "" leaves it out
  std::vector<std::string> op_types;  // "op_type"; "" leaves it out
  // The node index of a backward node's forward node ("backward_of"), or
  // -1. A node given one is written without "backward" (implied).
  std::vector<int> forward_of;
  // Per edge its bytes ("bytes"), or -1 to write its cost ("time_s"). The
  // cost of an edge given in bytes must be CostOfBytes(bytes, link...).
  std::vector<int64_t> edge_bytes;
  double link_bytes_per_s = 0;  // "link", when some edge has bytes
  double link_latency_s = 0;
};

// An edge's cost from its bytes over the cost graph's link.
double CostOfBytes(int64_t bytes, double bytes_per_s, double latency_s);

// `p` as a cost graph (ordered keys, for people to read and diff): devices
// named by kind, operators by id, a node's color written as "colocate" (its
// integer) unless its backward_of pairs alone say the same, edges by ids.
// ParseCostGraph of the result gives `p` again, colors renumbered.
nlohmann::ordered_json CostGraphJson(const MaxLoadProblem& p,
                                     const CostGraphExtras& extras = {});

struct CostGraph {
  MaxLoadProblem problem;
  CostGraphExtras extras;
};

// The cost graph of a placement Problem on `cluster` (BuildProblem's, so
// the estimator's times): one kind per distinct (catalog kind, usable
// memory, compute share) in the cluster, named after the catalog kind; an
// operator per op, and in training a backward operator per op paired with
// it; edges carrying the activations between ops in bytes over the
// cluster's slowest link. What each field holds: docs/cost_graph.md,
// "Written by tessera profile".
Result<CostGraph> CostGraphFromProblem(const Problem& problem,
                                       const Cluster& cluster,
                                       const std::string& model);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_MAXLOAD_COST_GRAPH_H_
