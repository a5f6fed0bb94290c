#ifndef TESSERA_PLACER_PIPELINE_PIPELINE_INTERNAL_H_
#define TESSERA_PLACER_PIPELINE_PIPELINE_INTERNAL_H_

// Internal to the `pipeline` algorithm (docs/placer_pipeline_ilp.md
// "pipeline"): its two sources of splits and the estimate that picks
// between them.
// - The block DP (pipeline.cc): stages are runs of one topological order,
//   balanced by a DP that knows only the previous stage's device.
// - The exact split (pipeline_exact.cc): the problem restated in the
//   max-load model (placer/maxload/max_load.h) and solved by the exact DP over
//   chains of ideals, SolveContiguousMaxLoad; each stage is an ideal minus
//   an ideal, which the block DP cannot produce on branching graphs.
// PipelineStageTimes gives both the GPipe estimate's terms; PlacePipeline
// keeps the one that simulates faster.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "placer/core/algorithms_internal.h"
#include "placer/maxload/max_load.h"
#include "placer/solver/solve_status.h"

namespace tessera::placer {

// The two terms of the GPipe estimate of a stage placement.
struct StageTimes {
  double max_stage = 0.0;   // the bottleneck stage
  double sum_stages = 0.0;  // one microbatch through every stage
  // A step of `microbatches` microbatches (fill, then one bottleneck stage
  // per further microbatch): sum + (M - 1) max.
  double Estimate(int microbatches) const {
    return sum_stages + (microbatches - 1) * max_stage;
  }
};

// The stage time of every device that holds ops: their time on it
// (Forward + Backward, divided by its share) plus receiving, once each,
// the activations produced on another device and read there: latency +
// bytes / bandwidth of the link from the producer's device, twice in
// training (the gradient goes back).
StageTimes PipelineStageTimes(const Problem& p, const Cluster& c,
                              const Placement& placement);

// A pipeline split: a device per op, priority = topological position.
struct PipelineSplit {
  Placement placement;
  StageTimes times;  // PipelineStageTimes of the placement
  // The devices that hold ops, in pipeline order (a topological order of
  // the stages' quotient graph, ties by their first op's position).
  std::vector<int> stages;
};

// The best split of the block DP by its own estimate with `microbatches`;
// `blocks` gets how many blocks the order was cut into. kInfeasible when
// no split of the topological order fits the budgets.
Result<PipelineSplit> BlockPipelineSplit(const Problem& p, const Cluster& c,
                                         const Budget& budget, int microbatches,
                                         size_t* blocks);

// The max-load problem whose objective is the pipeline's bottleneck stage
// time (PipelineStageTimes' max_stage) and what is approximate about it:
// docs/placer_pipeline_ilp.md "The exact split". The model has one cost
// per edge, not per pair of devices: a crossing costs what it costs over
// the cheapest link between two devices, or with `dearest_links` over the
// dearest (the same when all links are alike).
struct PipelineMaxLoad {
  MaxLoadProblem problem;   // node i = op i
  std::vector<int> device;  // per max-load device: its cluster device
};
PipelineMaxLoad PipelineAsMaxLoad(const Problem& p, const Cluster& c,
                                  const Budget& budget,
                                  bool dearest_links = false);

struct ExactPipelineOptions {
  double time_limit_s = 10.0;       // all DP runs together
  int64_t max_ideals = 200'000;     // MaxLoadDpOptions::max_states
  int64_t max_blocks = 50'000'000;  // MaxLoadDpOptions::max_blocks
  // DP reruns with a kind's memory lowered by the ledger's overflow when
  // its split does not fit the budgets.
  int memory_retries = 2;
  // Where the links differ, the splits under the cheapest and under the
  // dearest link are compared by their simulated step with this many
  // microbatches.
  int microbatches = 1;
};

struct ExactPipeline {
  std::optional<PipelineSplit> split;  // absent: none found, or none fit
  std::string why_not;                 // when split is absent
  double max_load = 0.0;               // the DP's objective for `split`
  // The last DP run's (kOptimal: proven over contiguous splits); a split
  // it found may still be dropped for not fitting the budgets.
  SolveStatus status = SolveStatus::kNoSolution;
  std::string stopped;         // why not proven, when a split was found
  int64_t ideals = 0;          // of the last DP run
  int runs = 0;                // DP runs (memory retries and link models too)
  bool dearest_links = false;  // `split` is the dearest link's
  double seconds = 0.0;
};

// The exact contiguous split, checked against the budgets with
// MemoryLedger (dropped when it does not fit); where the links differ, the
// better of the cheapest link's and the dearest link's.
ExactPipeline ExactPipelineSplit(const Problem& p, const Cluster& c,
                                 const Budget& budget,
                                 const ExactPipelineOptions& o);

// The devices holding ops of `placement`, in pipeline order.
std::vector<int> PipelineStageOrder(const Problem& p,
                                    const Placement& placement);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_PIPELINE_PIPELINE_INTERNAL_H_
