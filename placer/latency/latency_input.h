#ifndef TESSERA_PLACER_LATENCY_LATENCY_INPUT_H_
#define TESSERA_PLACER_LATENCY_LATENCY_INPUT_H_

// Single-sample latency of the latency inputs of Tarnawski et al.,
// "Efficient Algorithms for Device Placement of DNN Graph Operators"
// (NeurIPS 2020; data/dnn-partitioning/latency-inputs, read with
// ParseTarnawski): the paper's time model, an evaluator of a split under
// it, a lower bound, the paper's greedy baseline, and the conversion that
// lets tessera's algorithms (m-TOPO, m-ETF, m-SCT, ILP) place these inputs
// (latency_place.cc). docs/placer_latency_benchmark.md.
//
// The model ("calls", the paper's latency IP): each accelerator runs its
// nodes as one call, a contiguous (convex) subgraph that starts when every
// node outside it with an edge into it has finished, and then takes
//   Σ cost(u) over those outside nodes u (each once)
//   + Σ accelerator time of its nodes
//   + Σ cost(v) over its nodes v with an edge leaving it (each once);
// all its nodes finish when the call ends (communication is not overlapped
// with compute). cost(u) is the time to move u's output between an
// accelerator and CPU memory, so accelerator-to-accelerator pays twice
// (out, then in) and nothing is charged to a CPU. A node on a CPU runs for
// its CPU time once all its predecessors have finished; CPU cores are
// unlimited (the paper's IP ignores maxCPUs). The latency is the last
// finish. Constraints: the sizes on an accelerator fit its memory; the
// nodes of a colour class share a device; unsupported nodes on a CPU.
//
// A non-contiguous accelerator set runs as several calls, cut as the
// paper's evaluator cuts it (a node's piece is 1 + the most times a path
// into it leaves the accelerator and comes back), then, only where calls
// of different accelerators would wait on each other in a cycle (where the
// paper's evaluator gives up), cut further until they do not. An
// accelerator runs one call at a time, ready calls in the order they
// became ready. For a split the paper's evaluator accepts, the latency is
// the one it computes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "placer/core/place.h"
#include "placer/maxload/max_load.h"

namespace tessera::placer {

struct LatencyNode {
  int64_t id = 0;  // the input's id, for messages
  double accelerator_time = 0;
  double cpu_time = 0;
  bool on_accelerator = true;  // may be placed on an accelerator
  int64_t size = 0;            // bytes on an accelerator
  int64_t color = -1;          // colour class; -1: none
};

// An edge between node indices.
struct LatencyEdge {
  int from = 0, to = 0;
};

struct LatencyProblem {
  std::string source;  // for messages
  int accelerators = 0;
  int64_t accelerator_memory = 0;
  std::vector<LatencyNode> nodes;
  std::vector<LatencyEdge> edges;  // a DAG
  // Per node: the time to move its output between an accelerator and CPU
  // memory (the largest cost of its out-edges; 0 without out-edges).
  std::vector<double> out_cost;
};

// The latency problem of a parsed input (the only code that reads
// MaxLoadNode's fields).
LatencyProblem LatencyProblemFrom(const MaxLoadProblem& p);

// Per node: an accelerator in [0, accelerators), or kOnCpu.
inline constexpr int kOnCpu = -1;
struct LatencySplit {
  std::vector<int> device;
};
// A split given as device indices numbered accelerators first, then CPUs
// (MaxLoadPlacement, the expert splits): every index >= accelerators is a
// CPU.
LatencySplit SplitFromDeviceIndices(const LatencyProblem& p,
                                    const std::vector<int>& device);

struct LatencyEvaluation {
  double latency = 0;          // the last finish
  std::vector<double> finish;  // per node
  int calls = 0;               // accelerator calls run
  int split_accelerators = 0;  // accelerators whose nodes took > 1 call
  // "" if feasible, else the first constraint broken and where. The
  // latency is still computed when the split is well formed (right size,
  // devices in range, the graph a DAG).
  std::string violation;
};
LatencyEvaluation EvaluateLatency(const LatencyProblem& p,
                                  const LatencySplit& x);

// What must share a device: the colour classes, merged while two can reach
// each other (a node without a class is a block of its own), so that the
// blocks contract the graph to a DAG. Blocks are numbered in a depth-first
// topological order of that DAG (of the ready blocks, the one readied last
// first; the smallest index first among those readied together).
struct LatencyBlocks {
  std::vector<int> of_node;  // per node
  int count = 0;
};
LatencyBlocks ColocatedBlocks(const LatencyProblem& p);

// No split's latency is below this: the longest path with each node at its
// fastest allowed time, communication free.
double LatencyLowerBound(const LatencyProblem& p);

// The greedy baseline of the paper (its appendix F), from its description:
// the blocks (ColocatedBlocks), in their order, fill accelerator 0 while
// they fit its memory, then accelerator 1, ...; a block that fits no
// accelerator (or has a node unsupported there), or comes after the last
// accelerator is used, goes to a CPU and ends the accelerator being filled.
// The paper does not fix its topological order, so its figures may differ.
LatencySplit GreedyLatencySplit(const LatencyProblem& p);

// tessera's placement problem for `p` (latency_place.cc): one op per
// block (ColocatedBlocks), profile 0 the
// accelerators' times and profile 1 the CPUs', one output tensor per node
// with an edge to another block, of cost x bytes_per_time_unit bytes; the
// block's sizes are memory it holds on its device (a block with a node
// unsupported on accelerators holds more than an accelerator has). The
// cluster: the accelerators (memory_usable = accelerator_memory), then
// `cpu_devices` CPUs that hold everything (twice the instance's bytes);
// a transfer costs `cost`
// between an accelerator and a CPU, twice that between accelerators, and
// nothing between CPUs. Time units are the input's.
struct LatencyPlacementOptions {
  // Transfer sizes are whole bytes: cost x this, rounded. Small enough that
  // the activations tessera keeps in memory are well under 1% of an
  // accelerator's memory in the published inputs.
  double bytes_per_time_unit = 1000.0;
  // One: the ILP's relaxed model charges a cross-device edge the cheapest
  // link of any pair, and CPU-to-CPU would make every edge free.
  int cpu_devices = 1;
};
struct LatencyPlacementInstance {
  Problem problem;
  Cluster cluster;
  std::vector<uint32_t> op_of_node;  // per node: its class's op
  int accelerators = 0;
};
Result<LatencyPlacementInstance> MakeLatencyPlacementInstance(
    const LatencyProblem& p, const LatencyPlacementOptions& o = {});
// The split a tessera placement of the instance gives (CPU devices ->
// kOnCpu).
LatencySplit SplitFromPlacement(const LatencyPlacementInstance& instance,
                                const Placement& placement);

// One of tessera's algorithms on `p`, its plan judged by EvaluateLatency.
struct LatencyRun {
  LatencySplit split;
  LatencyEvaluation evaluation;
  double seconds = 0;              // placement wall time
  double simulated_step = 0;       // tessera's simulator on its own model
  std::vector<std::string> notes;  // the plan's notes
  // ilp only: its objective, proven gap and status (Plan::ilp_status) in
  // its own relaxed model.
  std::optional<double> ilp_objective;
  std::optional<double> ilp_gap;
  std::optional<SolveStatus> ilp_status;
};
Result<LatencyRun> PlaceForLatency(const LatencyProblem& p, Algorithm a,
                                   const PlaceOptions& options,
                                   const LatencyPlacementOptions& lo = {});

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_LATENCY_LATENCY_INPUT_H_
