// m-ETF: Baechi's memory-constrained earliest-task-first placement, the
// list-scheduling engine without favourites (list_scheduler_internal.h), on the
// problem reduced as PlaceOptions asks.

#include "placer/baechi/list_scheduler_internal.h"
#include "placer/core/algorithms_internal.h"

namespace tessera::placer {

Result<AlgoOutput> PlaceMEtf(const Problem& p, const Cluster& c,
                             const Budget& budget, const PlaceOptions& o) {
  return PlaceReduced(p, o, [&](const Problem& q) {
    return ListSchedule(q, c, budget, ListScheduleOptions{});
  });
}

}  // namespace tessera::placer
