// The costs the list schedulers plan with (list_scheduler_internal.h):
// mean times and transfers, bottom levels, the bytes on an edge.

#include <algorithm>
#include <vector>

#include "placer/baechi/list_scheduler_internal.h"

namespace tessera::placer {

MeanCosts ComputeMeanCosts(const Problem& p, const Cluster& c) {
  MeanCosts m;
  const int nd = static_cast<int>(c.size());
  m.seconds.assign(p.num_ops(), 0.0);
  // Devices of one profile and share plan an op with the same time: it is
  // found once per such kind and summed over the devices in order (the
  // same sums as device by device, with a division per kind, not device).
  std::vector<int> kind(nd), first_of_kind;
  for (int d = 0; d < nd; ++d) {
    kind[d] = static_cast<int>(first_of_kind.size());
    for (size_t k = 0; k < first_of_kind.size(); ++k) {
      const int e = first_of_kind[k];
      if (p.device_profile[e] == p.device_profile[d] &&
          c.devices[e].compute_share == c.devices[d].compute_share) {
        kind[d] = static_cast<int>(k);
        break;
      }
    }
    if (kind[d] == static_cast<int>(first_of_kind.size())) {
      first_of_kind.push_back(d);
    }
  }
  std::vector<double> of_kind(first_of_kind.size());
  for (OpId op = 0; op < p.num_ops(); ++op) {
    for (size_t k = 0; k < first_of_kind.size(); ++k) {
      of_kind[k] = PlanSeconds(p, c, op, first_of_kind[k]);
    }
    double sum = 0.0;
    for (int d = 0; d < nd; ++d) sum += of_kind[kind[d]];
    m.seconds[op] = sum / std::max(nd, 1);
  }
  int pairs = 0;
  for (int a = 0; a < nd; ++a) {
    for (int b = 0; b < nd; ++b) {
      if (a == b) continue;
      const Link& l = c.link(a, b);
      m.latency += l.latency;
      m.inverse_bandwidth += l.bandwidth > 0.0 ? 1.0 / l.bandwidth : 0.0;
      ++pairs;
    }
  }
  if (pairs > 0) {
    m.latency /= pairs;
    m.inverse_bandwidth /= pairs;
  }
  return m;
}

std::vector<double> BottomLevels(const Problem& p, const MeanCosts& costs) {
  std::vector<double> level(p.num_ops(), 0.0);
  for (auto it = p.topo.rbegin(); it != p.topo.rend(); ++it) {
    const OpId op = *it;
    double tail = 0.0;
    for (uint32_t t : p.outputs(op)) {
      const ProblemTensor& tensor = p.tensors[t];
      const double comm = tensor.role == TensorRole::kWeight
                              ? 0.0
                              : costs.Transfer(tensor.bytes);
      for (uint32_t v : p.consumers(t)) {
        tail = std::max(tail, comm + level[v]);
      }
    }
    level[op] = costs.seconds[op] + tail;
  }
  return level;
}

}  // namespace tessera::placer
