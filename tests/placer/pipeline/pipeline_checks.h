#ifndef TESSERA_TESTS_PLACER_PIPELINE_PIPELINE_CHECKS_H_
#define TESSERA_TESTS_PLACER_PIPELINE_PIPELINE_CHECKS_H_

// What the pipeline tests check of a split: the budgets it must fit, the
// ledger's count of it, and whether its stages are contiguous.

#include <set>
#include <vector>

#include "placer/core/ledger_internal.h"
#include "placer/pipeline/pipeline_internal.h"

namespace tessera::placer::testing {

// Every device's memory_usable.
inline Budget Budgets(const Cluster& c) {
  Budget b;
  for (const ClusterDevice& d : c.devices) b.push_back(d.memory_usable);
  return b;
}

// MemoryLedger's count of `x` within `budget` on every device.
inline bool FitsLedger(const Problem& p, const Placement& x,
                       const Budget& budget) {
  MemoryLedger ledger(p, static_cast<int>(budget.size()));
  for (OpId op : p.topo) ledger.Place(op, x.device[op]);
  for (size_t d = 0; d < budget.size(); ++d) {
    if (ledger.used(static_cast<int>(d)) > budget[d]) return false;
  }
  return true;
}

// Whether the devices' quotient graph is acyclic (PipelineStageOrder then
// lists every device holding ops): each device holds one stage, an ideal
// minus an ideal, and no path leaves a device and comes back to it.
inline bool IsContiguousSplit(const Problem& p, const Placement& x) {
  const std::set<uint16_t> used(x.device.begin(), x.device.end());
  return PipelineStageOrder(p, x).size() == used.size();
}

}  // namespace tessera::placer::testing

#endif  // TESSERA_TESTS_PLACER_PIPELINE_PIPELINE_CHECKS_H_
