#ifndef TESSERA_PLACER_MAX_LOAD_H_
#define TESSERA_PLACER_MAX_LOAD_H_

// Graphs given by their costs in the pipeline-throughput (max-load) model
// of Tarnawski et al., "Efficient Algorithms for Device Placement of DNN
// Graph Operators" (NeurIPS 2020), whose inputs are published with
// msr-fiddle/dnn-partitioning (data/dnn-partitioning/, MIT licence):
// reading their JSON, evaluating a placement, and placing exactly over
// contiguous splits (max_load_dp.cc). docs/placer_max_load.md.
//
// The model: k accelerators and some CPUs. An accelerator's load is the
// sum of its nodes' accelerator times plus its communication; a CPU's is
// the sum of its nodes' CPU times (no communication charged). For each
// node u with an edge to a node on another device, u's device pays u's
// outgoing cost once however many devices receive it, and each distinct
// other device receiving u pays it once. Constraints: the sizes on an
// accelerator fit its memory; nodes of one color class share a device;
// nodes unsupported on accelerators go to a CPU. The objective is the
// largest load over all devices (time per sample in a pipeline).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace tessera::placer {

struct MaxLoadNode {
  int64_t id = 0;               // the input's id
  bool on_accelerator = true;   // supportedOnFpga
  double cpu_time = 0;          // cpuLatency
  double accelerator_time = 0;  // fpgaLatency
  bool backward = false;        // isBackwardNode
  int64_t color = -1;           // colorClass; -1: none
  int64_t size = 0;             // bytes on an accelerator
};

// An edge between node indices (not ids). `cost`: what sending the
// source's output to another device costs.
struct MaxLoadEdge {
  int from = 0, to = 0;
  double cost = 0;
};

struct MaxLoadProblem {
  std::string source;              // the file, for messages
  int64_t accelerator_memory = 0;  // maxSizePerFPGA (bytes)
  int accelerators = 0;            // maxFPGAs
  int cpus = 0;                    // maxCPUs
  std::vector<MaxLoadNode> nodes;
  std::vector<MaxLoadEdge> edges;
  // A node's outgoing cost: the largest cost of its out-edges (the
  // published inputs give all of a node's out-edges the same cost).
  double OutCost(int node) const;
};

// Devices are numbered accelerators first (0 .. accelerators - 1, named
// acc0 ...), then CPUs (named cpu0 ...).
std::string MaxLoadDeviceName(const MaxLoadProblem& p, int device);

// A device per node (by node index).
struct MaxLoadPlacement {
  std::vector<int> device;
};

struct MaxLoadEvaluation {
  std::vector<double> loads;  // per device
  double max_load = 0;
  std::string violation;  // "" if feasible, else which constraint and where
};
MaxLoadEvaluation EvaluateMaxLoad(const MaxLoadProblem& p,
                                  const MaxLoadPlacement& x);

// Whether `j` has the published format's keys (maxSizePerFPGA, nodes,
// edges).
bool IsTarnawskiFormat(const nlohmann::json& j);
// kBadInput naming the field ("nodes[3].fpgaLatency: ...") for a missing
// or mistyped field, an edge naming an unknown node, a cycle.
Result<MaxLoadProblem> ParseTarnawski(const nlohmann::json& j,
                                      const std::string& source);
// A human-expert split as published (human-experts/*_expert.json):
// `fpgas[i].nodes` = the ids on accelerator i, `cpus[i].nodes` on CPU i.
// kBadInput for an unknown id, a node listed twice, more devices than `p`
// has, or a node of `p` left on no device.
Result<MaxLoadPlacement> ParseExpertSplit(const nlohmann::json& j,
                                          const MaxLoadProblem& p);

// The exact optimum over contiguous splits (max_load_dp.cc): every
// device's nodes are an ideal of the DAG minus an ideal (a set closed
// under "between"), the devices taken in a chain order; memory and color
// classes respected. kInfeasible when no contiguous split is feasible, or
// when the DAG has more than `max_states` ideals (the search would not
// end in reasonable time: the message says so), or when it would try more
// than `max_blocks` blocks.
struct MaxLoadDpOptions {
  int64_t max_states = 200'000;  // ideals enumerated at most
  // Blocks (pairs of ideals I ⊂ J) tried at most: the search is quadratic
  // in the ideals.
  int64_t max_blocks = 5'000'000;
};
struct MaxLoadDpResult {
  MaxLoadPlacement placement;
  double max_load = 0;
  bool optimal = false;  // proven optimal among contiguous splits
  int64_t ideals = 0;    // states explored
  double seconds = 0;
};
Result<MaxLoadDpResult> SolveContiguousMaxLoad(const MaxLoadProblem& p,
                                               const MaxLoadDpOptions& o = {});

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_MAX_LOAD_H_
