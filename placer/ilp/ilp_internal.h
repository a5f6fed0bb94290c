#ifndef TESSERA_PLACER_ILP_ILP_INTERNAL_H_
#define TESSERA_PLACER_ILP_ILP_INTERNAL_H_

// Internal to ilp.cc and ilp_data.cc: the data of the ILP's formulation
// (docs/placer_pipeline_ilp.md "ilp"), read off the problem it places, and
// the same model evaluated for one assignment (warm starts, priorities).
// Times in seconds, memory in bytes.

#include <cstdint>
#include <vector>

#include "placer/baechi/reductions_internal.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/cluster.h"
#include "placer/core/problem.h"

namespace tessera::placer {

// Memory rows are tightened by this fraction of the budget so that CBC's
// primal feasibility tolerance (1e-7 on rows scaled to the largest budget)
// never lets a plan exceed a budget.
inline constexpr double kIlpMemorySlack = 1e-6;

// A dependency g -> h of the group graph and what crossing it costs in the
// relaxed model: the cheapest link for the activations g sends h (twice in
// training), 0 when only a Constant's weight flows.
struct IlpEdge {
  uint32_t from = 0, to = 0;
  int64_t bytes = 0;
  double cost_s = 0.0;
};

struct IlpData {
  size_t groups = 0, devices = 0;
  std::vector<double> time;  // [g * devices + d]: forward (+ backward)
  std::vector<IlpEdge> edges;
  std::vector<bool> sink;     // no successor
  std::vector<int64_t> base;  // activation outputs + extra + sole weights
  std::vector<int64_t> workspace, largest;  // per group
  bool training = false;
  // Tensors counted once per device that has a consumer (shared weights,
  // graph inputs) or that receives them (activations, producer >= 0).
  struct Shared {
    int64_t bytes = 0;
    std::vector<uint32_t> consumers;
    int64_t producer = -1;
  };
  std::vector<Shared> shared;
};

// The formulation's data for `q`, the problem the MIP places (the original
// `p` or its contraction by `grouping`; with a grouping, a group's largest
// tensor also looks at the activations inside it).
IlpData MakeIlpData(const Problem& q, const Cluster& c, const Problem& p,
                    const Grouping* grouping);

// The formulation's memory count on device `d` for the groups assigned so
// far (assign[g] < 0: not yet placed). Equal to MemoryLedger's count in
// inference; in training its largest tensor may be larger.
int64_t IlpBytes(const IlpData& data, const std::vector<int>& assign, int d);
// Every device within its budget, less kIlpMemorySlack.
bool IlpFits(const IlpData& data, const std::vector<int>& assign,
             const Budget& budget);

// The relaxed step time of `assign` (RelaxedStepTime of `q`) and each
// group's earliest start under it.
double IlpRelaxedTimes(const IlpData& data, const Problem& q,
                       const std::vector<int>& assign,
                       std::vector<double>* start);

// A feasible start for CBC: the best under the relaxed model of the fast
// heuristics' placements of `q` that fit the formulation's memory, all
// groups on the fastest device, and a first-fit in topological order.
// Empty when none fits.
std::vector<int> IlpWarmStart(const IlpData& data, const Problem& q,
                              const Cluster& c, const Budget& budget);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_ILP_ILP_INTERNAL_H_
