#ifndef TESSERA_PLACER_BAECHI_LIST_SCHEDULER_INTERNAL_H_
#define TESSERA_PLACER_BAECHI_LIST_SCHEDULER_INTERNAL_H_

// Internal: what Baechi's algorithms (m_topo.cc, m_etf.cc, m_sct.cc)
// share: the memory-constrained list-scheduling engine of m-ETF and m-SCT,
// the mean costs they plan with, and the wrapper that runs an algorithm on
// the problem reduced by PlaceOptions::coplace / fuse. Design and rules:
// docs/placer_baechi.md.

#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/cluster.h"
#include "placer/core/problem.h"

namespace tessera::placer {

// An op's time on a device as the list schedulers plan with it: forward,
// plus backward when training (the backward runs on the same device).
inline double PlanSeconds(const Problem& p, const Cluster& c, OpId op, int d) {
  const double share = c.devices[d].compute_share;
  return p.Forward(op, d, share) + p.Backward(op, d, share);
}

// Device-independent costs: each op's mean PlanSeconds over the devices,
// and a transfer's mean cost over the ordered pairs of distinct devices.
struct MeanCosts {
  std::vector<double> seconds;  // per op
  double latency = 0.0;         // mean over pairs
  double inverse_bandwidth = 0.0;
  double Transfer(int64_t bytes) const {
    return bytes > 0 ? latency + static_cast<double>(bytes) * inverse_bandwidth
                     : 0.0;
  }
};
MeanCosts ComputeMeanCosts(const Problem& p, const Cluster& c);

// Per op: its mean time plus the longest path (mean times and mean
// transfers of activation tensors) from it to a sink: HEFT's upward rank,
// the list schedulers' priority.
std::vector<double> BottomLevels(const Problem& p, const MeanCosts& costs);

struct ListScheduleOptions {
  // m-SCT: per op, its favourite child and favourite parent (kNoOp for
  // none; a favourite relation is mutual). Empty for plain m-ETF.
  std::vector<OpId> favourite_child, favourite_parent;
  // m-SCT: when set, fills the favourites (as favourite_child and
  // favourite_parent above, which it replaces) while the engine builds its
  // own tables, which do not depend on them: on a second thread from
  // second_thread_from_ops ops. Plans are the same as with the favourites
  // given.
  std::function<void(std::vector<OpId>& child, std::vector<OpId>& parent)>
      favourites;
  // m-SCT: called once, when `favourites` is set, on the engine's thread:
  // when it has built its largest tables and before it waits for
  // `favourites` on the second thread; or, when `favourites` runs on the
  // engine's thread, just before it. From then on the favourites may fork
  // (the engine's thread fills little new memory). It may do work of the
  // favourites' own that the engine's thread would otherwise wait for.
  std::function<void()> tables_built;
  // m-SCT: called once, when `favourites` runs on the second thread, on
  // the engine's thread just before it waits for them: from then on that
  // thread allocates nothing until they return.
  std::function<void()> joining;
  // From this many ops, the ops' growth bounds (or the favourites) and the
  // memory ledger's bookkeeping run on a second thread (when the machine
  // has two cores); below it, a thread costs more than it saves. Plans are
  // the same.
  size_t second_thread_from_ops = 50000;
};

// Memory-constrained list scheduling (m-ETF; with favourites, m-SCT):
// repeatedly takes the ready op that can start earliest on some device
// where it fits its budget (ties: larger bottom level), and puts it on the
// device where it finishes earliest. Output: placement.device and
// placement.priority (the order ops were scheduled). kInfeasible when a
// ready op fits no device.
Result<AlgoOutput> ListSchedule(const Problem& p, const Cluster& c,
                                const Budget& budget,
                                const ListScheduleOptions& options);

// Runs `algorithm` on `p` reduced as `o` asks (co-placement, then fusion;
// Contract), and expands its placement back to p's ops, noting the
// reduction. When the groups fit no budget, runs it on `p` itself.
Result<AlgoOutput> PlaceReduced(
    const Problem& p, const PlaceOptions& o,
    const std::function<Result<AlgoOutput>(const Problem&)>& algorithm);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_BAECHI_LIST_SCHEDULER_INTERNAL_H_
