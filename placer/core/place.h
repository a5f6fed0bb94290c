#ifndef TESSERA_PLACER_CORE_PLACE_H_
#define TESSERA_PLACER_CORE_PLACE_H_

// Placement algorithms and the driver that runs them. Every algorithm plans
// against per-device memory budgets (memory_usable, conservatively
// accounted: see docs/placer.md "Memory accounting"); the driver simulates
// the result and, if the simulator shows a device over its memory, shrinks
// that device's budget by the overflow and runs the algorithm again (a few
// times at most), so a returned plan never exceeds any device's memory in
// the simulator.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "placer/core/cluster.h"
#include "placer/core/problem.h"
#include "placer/core/simulator.h"
#include "placer/solver/solve_status.h"

namespace tessera::placer {

enum class Algorithm {
  kSingle,
  kMTopo,
  kMEtf,
  kMSct,
  kPipeline,
  kIlp,
  kAuto,
};
// "single", "m-topo", "m-etf", "m-sct", "pipeline", "ilp", "auto".
std::string_view AlgorithmName(Algorithm a);
// Frees the LP solver's memory (GLPK keeps an environment per thread) on
// the calling thread. Worker threads that placed models call it before they
// end; none of this thread's solver objects may be alive.
void ReleaseThreadSolverMemory();
// Parses those names; kBadInput listing them otherwise. "all" is the CLI's.
Result<Algorithm> ParseAlgorithm(std::string_view text);
// The concrete algorithms, in the order `--algo all` lists them.
std::vector<Algorithm> ConcreteAlgorithms();

struct PlaceOptions {
  // Baechi's graph reductions before m-topo, m-etf and m-sct: co-place an
  // op with its only successor; fuse ops that read the same large weight (a
  // co-location group). Neither ever creates a cycle. Co-placement is off by
  // default: it pulls every branch of a block into the op that joins them
  // (inception's concat), which serializes the branches and made m-etf's
  // inception_v3 step 1.61x the lower bound instead of 1.22x. The m-sct LP
  // and the ILP always start from the co-placed graph (they coarsen anyway).
  bool coplace = false;
  bool fuse = true;
  // pipeline: microbatches simulated as a pipelined schedule.
  int microbatches = 1;
  // pipeline, with microbatches > 1 (or when no split of the topological
  // order fits) on at most 5,000 ops: the exact contiguous DP's time limit
  // (0: not run) and the most ideals it enumerates (fewer on graphs over
  // 1,000 ops); past either it keeps its best split found.
  // Past max_blocks (pairs of ideals tried) it stops too: a limit that,
  // unlike the time limit, gives the same split on every machine.
  double pipeline_exact_time_limit_s = 10.0;
  int64_t pipeline_exact_max_ideals = 200'000;
  int64_t pipeline_exact_max_blocks = 50'000'000;
  // ilp: CBC's time limit and the size of the coarsened graph.
  double ilp_time_limit_s = 10.0;
  int ilp_max_groups = 64;
  // auto: run `ilp` too when the coarsened graph has at most this many
  // groups (it uses ilp_time_limit_s).
  int auto_ilp_max_groups = 40;
  // m-sct: the LP runs on the co-placed graph coarsened to at most this
  // many groups (and further, to at most 512 edges: GLPK's time grows with
  // the square of the rows).
  int sct_max_groups = 256;
};

struct Plan {
  Algorithm algorithm = Algorithm::kSingle;
  Placement placement;
  SimResult sim;
  double lower_bound_s = 0.0;
  double placement_s = 0.0;  // wall time of the algorithm (and its retries)
  int microbatches = 1;
  // Free-form facts about the run: "ilp: optimal" / "ilp: gap 3.2% after
  // 10 s", "reduced 327 ops to 94 groups", "budget retries: 1".
  std::vector<std::string> notes;
  // ilp only: the objective (the relaxed step time), its proven gap and
  // what CBC found (kOptimal or kFeasible: a placement either way).
  std::optional<double> ilp_objective_s;
  std::optional<double> ilp_gap;
  std::optional<SolveStatus> ilp_status;
};

// Runs `algorithm` (kAuto included). kInfeasible when the model cannot fit
// the cluster's capacity: the message gives how many bytes are missing and
// the largest op that must fit on one device (InfeasibleError).
Result<Plan> Place(const Problem& problem, const Cluster& cluster,
                   Algorithm algorithm, const PlaceOptions& options);

// The error Place returns when nothing fits, with the numbers a user needs.
Error InfeasibleError(const Problem& problem, const Cluster& cluster);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_CORE_PLACE_H_
