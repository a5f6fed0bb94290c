// Bounds on a step's time: LowerBound (no placement beats it) and
// RelaxedStepTime (the ILP's time model of one placement; never above the
// simulator's step for that placement). Definitions in simulator.h.

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "placer/core/simulator.h"

namespace tessera::placer {
namespace {

double OpTime(const Problem& p, const Cluster& c, OpId op, int d) {
  const double share = c.devices[d].compute_share;
  return p.Forward(op, d, share) + p.Backward(op, d, share);
}

// The cheapest transfer of `bytes` over `links` (DistinctLinks).
double CheapestTransfer(const std::vector<std::pair<double, double>>& links,
                        int64_t bytes) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [latency, bandwidth] : links) {
    best = std::min(best, latency + static_cast<double>(bytes) / bandwidth);
  }
  return best;
}

}  // namespace

double LowerBound(const Problem& p, const Cluster& c, int microbatches) {
  const size_t n = p.num_ops();
  const int nd = static_cast<int>(c.size());
  if (n == 0 || nd == 0) return 0.0;
  // best[op]: the op's time on its fastest device.
  std::vector<double> best(n, std::numeric_limits<double>::infinity());
  for (size_t op = 0; op < n; ++op) {
    for (int d = 0; d < nd; ++d) {
      best[op] = std::min(best[op], OpTime(p, c, static_cast<OpId>(op), d));
    }
  }
  // Critical path on the fastest devices (training: forward and backward
  // both run along it).
  std::vector<double> finish(n, 0.0);
  double path = 0.0;
  for (OpId op : p.topo) {
    double start = 0.0;
    for (uint32_t q : p.predecessors(op)) start = std::max(start, finish[q]);
    finish[op] = start + best[op];
    path = std::max(path, finish[op]);
  }
  // Work: device d does at most speed[d] x T of "fastest-device seconds"
  // in T, where speed[d] = max over ops of best / time on d (<= 1).
  std::vector<double> speed(nd, 0.0);
  double work = 0.0;
  for (size_t op = 0; op < n; ++op) {
    work += best[op];
    if (best[op] <= 0.0) continue;
    for (int d = 0; d < nd; ++d) {
      const double t = OpTime(p, c, static_cast<OpId>(op), d);
      speed[d] = std::max(speed[d], t > 0.0 ? best[op] / t : 1.0);
    }
  }
  double total_speed = 0.0;
  for (double s : speed) total_speed += s;
  const double spread = total_speed > 0.0 ? work / total_speed : 0.0;
  return std::max(path / std::max(1, microbatches), spread);
}

double RelaxedStepTime(const Problem& p, const Cluster& c,
                       const Placement& placement) {
  const size_t n = p.num_ops();
  const int nd = static_cast<int>(c.size());
  std::vector<double> load(nd, 0.0), finish(n, 0.0), dur(n, 0.0);
  for (size_t op = 0; op < n; ++op) {
    dur[op] = OpTime(p, c, static_cast<OpId>(op), placement.device[op]);
    load[placement.device[op]] += dur[op];
  }
  const auto links = DistinctLinks(c);
  const double passes = p.training ? 2.0 : 1.0;
  // Bytes each op receives from each remote predecessor.
  std::vector<int64_t> edge_bytes(n, 0);
  std::vector<char> crossing(n, 0);
  std::vector<OpId> touched;
  double path = 0.0;
  for (OpId op : p.topo) {
    touched.clear();
    for (uint32_t t : p.inputs(op)) {
      const ProblemTensor& tensor = p.tensors[t];
      if (tensor.role != TensorRole::kActivation || tensor.producer == kNoOp) {
        continue;
      }
      if (placement.device[tensor.producer] == placement.device[op]) continue;
      if (!crossing[tensor.producer]) {
        crossing[tensor.producer] = 1;
        touched.push_back(tensor.producer);
      }
      edge_bytes[tensor.producer] += tensor.bytes;
    }
    double start = 0.0;
    for (uint32_t q : p.predecessors(op)) start = std::max(start, finish[q]);
    for (OpId q : touched) {
      start = std::max(
          start, finish[q] + passes * CheapestTransfer(links, edge_bytes[q]));
      edge_bytes[q] = 0;
      crossing[q] = 0;
    }
    finish[op] = start + dur[op];
    path = std::max(path, finish[op]);
  }
  return std::max(path, *std::max_element(load.begin(), load.end()));
}

}  // namespace tessera::placer
