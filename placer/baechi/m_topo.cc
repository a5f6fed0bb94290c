// m-TOPO: Baechi's memory-constrained topological placement. Walks a
// topological order and fills the devices one after another, in cluster
// order (NVLink neighbours stay adjacent), each up to its share of the
// work and never beyond its budget. A device's share is proportional to
// its speed: 1 / (the whole model's time on it), so a faster GPU or a
// larger compute share gets more. When memory cuts a device short, the
// devices after it share the rest. If that walk runs out of devices, a
// second walk fills each device as far as its budget allows (Baechi's
// original rule).

#include <string>
#include <vector>

#include "placer/baechi/list_scheduler_internal.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"

namespace tessera::placer {
namespace {

// One walk; `balance` false fills devices by memory alone. Returns the
// number of ops placed (all of them on success).
size_t Walk(const Problem& p, const Cluster& c, const Budget& budget,
            const std::vector<double>& model_seconds, bool balance,
            std::vector<uint16_t>& device) {
  const int nd = static_cast<int>(c.size());
  std::vector<double> speed(nd, 1.0);
  double speed_left = 0.0;
  for (int d = 0; d < nd; ++d) {
    speed[d] = model_seconds[d] > 0.0 ? 1.0 / model_seconds[d] : 1.0;
    speed_left += speed[d];
  }
  MemoryLedger ledger(p, nd, Accounting::kLiveness);
  double remaining = 1.0;  // fraction of the work still to place
  int d = 0;
  double target = remaining * speed[0] / speed_left, taken = 0.0;
  bool empty = true;
  size_t placed = 0;
  for (OpId op : p.topo) {
    for (;;) {
      const double share = model_seconds[d] > 0.0
                               ? PlanSeconds(p, c, op, d) / model_seconds[d]
                               : 0.0;
      const bool last = d == nd - 1;
      const bool over =
          balance && !last && !empty && taken + share / 2 > target;
      if (!over && ledger.Fits(op, d, budget[d])) {
        ledger.Place(op, d);
        device[op] = static_cast<uint16_t>(d);
        taken += share;
        remaining -= share;
        empty = false;
        ++placed;
        break;
      }
      if (last) return placed;
      speed_left -= speed[d];
      ++d;
      target = std::max(remaining, 0.0) * speed[d] / speed_left;
      taken = 0.0;
      empty = true;
    }
  }
  return placed;
}

Result<AlgoOutput> MTopo(const Problem& p, const Cluster& c,
                         const Budget& budget) {
  const int nd = static_cast<int>(c.size());
  if (nd == 0) return BadInput("the cluster has no devices");
  std::vector<double> model_seconds(nd, 0.0);
  for (int d = 0; d < nd; ++d) {
    for (OpId op = 0; op < p.num_ops(); ++op) {
      model_seconds[d] += PlanSeconds(p, c, op, d);
    }
  }
  AlgoOutput out;
  out.placement.device.assign(p.num_ops(), 0);
  if (Walk(p, c, budget, model_seconds, true, out.placement.device) ==
      p.num_ops()) {
    return out;
  }
  const size_t placed =
      Walk(p, c, budget, model_seconds, false, out.placement.device);
  if (placed < p.num_ops()) {
    return Infeasible(
        "m-topo filled every device after " + std::to_string(placed) + " of " +
        std::to_string(p.num_ops()) + " ops in topological order");
  }
  out.notes.emplace_back(
      "m-topo: the work-balanced split ran out of memory; devices filled "
      "in order");
  return out;
}

}  // namespace

Result<AlgoOutput> PlaceMTopo(const Problem& p, const Cluster& c,
                              const Budget& budget, const PlaceOptions& o) {
  return PlaceReduced(p, o,
                      [&](const Problem& q) { return MTopo(q, c, budget); });
}

}  // namespace tessera::placer
