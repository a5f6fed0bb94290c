#ifndef TESSERA_PLACER_MAXLOAD_MAX_LOAD_H_
#define TESSERA_PLACER_MAXLOAD_MAX_LOAD_H_

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
#include "placer/solver/solve_status.h"

namespace tessera::placer {

// A kind of device: `count` identical devices named name + index ("acc0",
// "cpu0", "h100_0" when the name ends in a digit).
struct MaxLoadKind {
  std::string name;
  int count = 0;
  int64_t memory = -1;  // bytes per device; -1: not limited
  // Whether a device of this kind pays for sending and receiving (the
  // published inputs charge accelerators, not the CPU).
  bool charges_communication = true;
  // With charges_communication: whether sends are charged too. tessera's
  // pipeline stages pay only for what they receive (pipeline_exact.cc).
  bool charges_sends = true;
};

// A node's time on a kind it cannot run on.
inline constexpr double kUnsupported = -1;

struct MaxLoadNode {
  int64_t id = 0;    // the input's id
  std::string name;  // "" when the input gives none
  // Time per kind (index into MaxLoadProblem::kinds); kUnsupported (< 0)
  // where the node cannot run.
  std::vector<double> time;
  bool backward = false;  // isBackwardNode
  int64_t color = -1;     // colorClass: nodes sharing one share a device; -1
  int64_t size = 0;       // bytes on a device of a kind with memory
  bool RunsOn(int kind) const { return time[kind] >= 0; }
};

// An edge between node indices (not ids). `cost`: what sending the
// source's output to another device costs.
struct MaxLoadEdge {
  int from = 0, to = 0;
  double cost = 0;
};

struct MaxLoadProblem {
  std::string source;  // the file, for messages
  std::vector<MaxLoadKind> kinds;
  std::vector<MaxLoadNode> nodes;
  std::vector<MaxLoadEdge> edges;

  int Devices() const;
  // The kind of device `device` (devices are numbered kind by kind).
  int KindOf(int device) const;
  // The first device of `kind`.
  int FirstDevice(int kind) const;
  // Each node's outgoing cost: the largest cost of its out-edges, 0 with
  // none (the published inputs give all of a node's out-edges the same
  // cost). Indexed like `nodes`.
  std::vector<double> OutCosts() const;
};

// The published inputs' two kinds: `accelerators` named acc with `memory`
// bytes each, charged for communication; `cpus` named cpu, not limited,
// not charged. A node's time is {fpgaLatency or kUnsupported, cpuLatency}.
std::vector<MaxLoadKind> TarnawskiKinds(int64_t memory, int accelerators,
                                        int cpus);

// Devices are numbered kind by kind: for the published inputs the
// accelerators first (acc0 ...), then the CPUs (cpu0 ...).
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
// has, or a node of `p` left on no device. `follow_colors`: a node not
// listed goes where a listed node of its color class is (a training graph
// placed by its inference split: each backward node with its forward
// twin).
Result<MaxLoadPlacement> ParseExpertSplit(const nlohmann::json& j,
                                          const MaxLoadProblem& p,
                                          bool follow_colors = false);

// The exact optimum over contiguous splits (max_load_dp.cc): devices take
// J \ I for a chain of ideals I ⊂ J of the units' order
// (max_load_units.h: color classes and free nodes joined; forward order,
// backward nodes with their forward twins), memory and kinds respected.
// Branch and bound: a first split from one topological order bounds the
// search. Its status (solver/solve_status.h): kOptimal; kFeasible, the
// best split found, when a cap or the time limit stopped it; kInfeasible
// when no contiguous split fits; kNoSolution when a cap or the time limit
// stopped it before its first split. `why` says why when not kOptimal.
// An Error only for a problem without devices.
struct MaxLoadDpOptions {
  int64_t max_states = 1'000'000;  // ideals enumerated at most
  // Blocks (pairs of ideals I ⊂ J) tried at most.
  int64_t max_blocks = 4'000'000'000;
  double time_limit_s = 0;  // 0: none
};
struct MaxLoadDpResult {
  MaxLoadPlacement placement;
  double max_load = 0;
  SolveStatus status = SolveStatus::kNoSolution;  // among contiguous splits
  // "" when kOptimal; else what stopped the search, or why nothing fits.
  std::string why;
  int64_t units = 0;  // what the DP moves as one
  int64_t free_nodes_joined = 0;
  int64_t ideals = 0;        // states explored
  int64_t blocks = 0;        // pairs of ideals tried
  double seed_max_load = 0;  // the first bound (one topological order)
  double seconds = 0;
};
Result<MaxLoadDpResult> SolveContiguousMaxLoad(const MaxLoadProblem& p,
                                               const MaxLoadDpOptions& o = {});

// The best placement of all, contiguous or not (max_load_ilp.cc): a MIP
// over the units a placement must keep together (color classes, free
// nodes), solved by CBC within `time_limit_s`, started from `warm` (the
// DP's split) when given. Reports the best placement found and CBC's proven
// lower bound: status kOptimal when they meet, else kFeasible (so too when
// CBC crashed or was killed and `warm` stands); kInfeasible when nothing
// fits; kNoSolution when CBC found no placement in time and none was given
// (`why` says which). An Error when CBC failed and no `warm` was given.
// Before CBC, the branch and bound (SolveMaxLoadBnb) runs for `bnb_share`
// of the limit from `warm`; when it proves its placement optimal CBC does
// not run, else CBC starts from the better placement and the lower bound
// is the higher of the two.
struct MaxLoadIlpOptions {
  double time_limit_s = 60;
  const MaxLoadPlacement* warm = nullptr;
  double bnb_share = 0.25;  // 0: CBC only
};
struct MaxLoadIlpResult {
  MaxLoadPlacement placement;
  double max_load = 0;
  double lower_bound = 0;  // no placement has a smaller max load
  SolveStatus status = SolveStatus::kNoSolution;
  std::string why;             // kInfeasible, kNoSolution: why no placement
  bool improved_warm = false;  // better than `warm`
  int64_t units = 0, columns = 0, rows = 0;
  double seconds = 0;
  // Non-empty when CBC crashed or ran past its deadline (Mip::Solve): the
  // placement is then CBC's start (the branch and bound's or `warm`) and
  // lower_bound the branch and bound's (0 without it).
  std::string solver_failure;
  double bnb_lower_bound = 0;  // the branch and bound's part
  double bnb_seconds = 0;
  double Gap() const {
    return max_load > 0 ? (max_load - lower_bound) / max_load : 0;
  }
};
Result<MaxLoadIlpResult> SolveMaxLoadIlp(const MaxLoadProblem& p,
                                         const MaxLoadIlpOptions& o = {});

// A lower bound on the max load of every placement (max_load_bound.cc):
// for each unit u and kind k, star_k(u) = the least load of a device of
// kind k holding u, whatever else it holds (a minimum cut: its time plus
// the communication its set must pay); a max load T needs a kind with
// star_k(u) ≤ T for every unit, and room in kind k's devices (count × T)
// for the time of the units left with k alone. Returns the least such T
// (0 when nothing fits anywhere). Past `time_limit_s` the units left count
// with their time alone (a weaker, still true bound).
double MaxLoadStarBound(const MaxLoadProblem& p, double time_limit_s = 10);

// The best placement of all by branch and bound (max_load_bnb.cc): units
// assigned the largest first, cut by the loads already decided and by the
// room the devices have left for the units left; a unit opens only the
// first empty device of its kind. First it settles whether any placement
// beats (1 - gap) × the incumbent (`start` improved by local search, then
// what it finds), then, with the time left, the same for the gap halved
// six times (to gap / 64) and at last whether any beats the incumbent. A
// finished question gives `lower_bound`: no placement has a smaller max load.
// Status kOptimal when the bound meets the placement; kFeasible when time
// ran out first (`lower_bound` then comes from the questions settled and
// the star bound); kInfeasible when nothing fits; kNoSolution when time ran out
// before a first placement. The star bound (MaxLoadStarBound, computed first)
// raises `lower_bound` and answers any question below it. An Error only
// for a problem without devices.
struct MaxLoadBnbOptions {
  double time_limit_s = 10;
  double gap = 0.01;  // the coarse question's relative gap; 0: exact only
  bool exact = true;  // ask the finer and exact questions after the coarse
  const MaxLoadPlacement* start = nullptr;  // ignored when infeasible
};
struct MaxLoadBnbResult {
  MaxLoadPlacement placement;  // never worse than `start`
  double max_load = 0;
  double lower_bound = 0;
  SolveStatus status = SolveStatus::kNoSolution;
  double finished_gap = -1;  // the last question settled (-1: none)
  double star_bound = 0;     // MaxLoadStarBound's part
  int64_t units = 0, nodes = 0;
  double seconds = 0;
};
Result<MaxLoadBnbResult> SolveMaxLoadBnb(const MaxLoadProblem& p,
                                         const MaxLoadBnbOptions& o = {});

// Local search from a feasible placement (max_load_local.cc): moves one
// unit (max_load_units.h) at a time to another device while that lowers
// the largest load, or keeps it and lowers the sum of squared loads (to
// leave plateaus), and when no move does, exchanges a unit on a most-loaded
// device with one elsewhere, respecting memory, kinds and color classes;
// then the same from 10 random placements (a fixed seed), while
// `time_limit_s` lasts. Returns the best placement (`start` when nothing beats
// it), the moves that led to it and how many restarts beat what came before.
struct MaxLoadLocalResult {
  MaxLoadPlacement placement;
  double max_load = 0;
  // kFeasible (local search proves nothing), or kNoSolution when neither
  // `start` nor any restart was feasible (`placement` is then `start`'s
  // descent).
  SolveStatus status = SolveStatus::kFeasible;
  int64_t moves = 0;
  int restarts_won = 0;
  double seconds = 0;
};
MaxLoadLocalResult ImproveMaxLoadLocally(const MaxLoadProblem& p,
                                         const MaxLoadPlacement& start,
                                         double time_limit_s = 10);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_MAXLOAD_MAX_LOAD_H_
