#ifndef TESSERA_PLACER_CORE_ALGORITHMS_INTERNAL_H_
#define TESSERA_PLACER_CORE_ALGORITHMS_INTERNAL_H_

// Internal: the algorithms behind place.h, each planning against per-device
// memory budgets. The driver (place.cc) simulates and verifies what they
// return. Each returns kInfeasible when it finds no placement within the
// budgets.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "placer/core/cluster.h"
#include "placer/core/place.h"
#include "placer/core/problem.h"
#include "placer/core/simulator.h"
#include "placer/solver/solve_status.h"

namespace tessera::placer {

struct AlgoOutput {
  Placement placement;
  std::vector<std::string> notes;
  int microbatches = 1;
  std::optional<double> ilp_objective_s;
  std::optional<double> ilp_gap;
  std::optional<SolveStatus> ilp_status;
};

// Per-device byte budgets, indexed like Cluster::devices.
using Budget = std::vector<int64_t>;

// Everything on the one device that fits and gives the shortest simulated
// step (single.cc).
Result<AlgoOutput> PlaceSingle(const Problem& p, const Cluster& c,
                               const Budget& budget, const PlaceOptions& o);
// Baechi's memory-constrained topological placement (m_topo.cc).
Result<AlgoOutput> PlaceMTopo(const Problem& p, const Cluster& c,
                              const Budget& budget, const PlaceOptions& o);
// Baechi's memory-constrained earliest-task-first (m_etf.cc).
Result<AlgoOutput> PlaceMEtf(const Problem& p, const Cluster& c,
                             const Budget& budget, const PlaceOptions& o);
// Baechi's memory-constrained small-communication-time placement, the
// favourite-child LP solved with GLPK (m_sct.cc).
Result<AlgoOutput> PlaceMSct(const Problem& p, const Cluster& c,
                             const Budget& budget, const PlaceOptions& o);
// Contiguous stages: the better simulated of a split of a topological order
// balanced by dynamic programming (pipeline.cc) and the exact split over
// chains of ideals (pipeline_exact.cc).
Result<AlgoOutput> PlacePipeline(const Problem& p, const Cluster& c,
                                 const Budget& budget, const PlaceOptions& o);
// The exact MIP over a coarsened graph, solved with CBC (ilp.cc).
Result<AlgoOutput> PlaceIlp(const Problem& p, const Cluster& c,
                            const Budget& budget, const PlaceOptions& o);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_CORE_ALGORITHMS_INTERNAL_H_
