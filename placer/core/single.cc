// `single`: the whole model on one device, the baseline every split is
// compared with. Among the devices whose budget holds the model (as the
// ledger counts it), the one with the shortest simulated step wins.

#include <limits>

#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"

namespace tessera::placer {

Result<AlgoOutput> PlaceSingle(const Problem& p, const Cluster& c,
                               const Budget& budget, const PlaceOptions&) {
  const int64_t need = WholeModelBytes(p);
  double best_step = std::numeric_limits<double>::infinity();
  AlgoOutput out;
  int best = -1;
  for (size_t d = 0; d < c.size(); ++d) {
    if (need > budget[d]) continue;
    Placement pl;
    pl.device.assign(p.num_ops(), static_cast<uint16_t>(d));
    const double step = Simulate(p, c, pl).step_s;
    if (step < best_step) {
      best_step = step;
      best = static_cast<int>(d);
      out.placement = std::move(pl);
    }
  }
  if (best < 0) {
    return Infeasible("no single device holds the whole model");
  }
  out.notes.push_back("everything on " + c.devices[best].id);
  return out;
}

}  // namespace tessera::placer
