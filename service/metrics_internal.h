#ifndef TESSERA_SERVICE_METRICS_INTERNAL_H_
#define TESSERA_SERVICE_METRICS_INTERNAL_H_

// The service's Prometheus metrics (text exposition format 0.0.4).

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "scheduler/topology.h"

namespace tessera::service {

// The cluster's state the gauges read (scheduler/).
using scheduler::ClusterState;

// A cumulative histogram with fixed bucket bounds in seconds.
class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 10, 60, 600};
  void Observe(double seconds);
  // "<name>_bucket{le=...} n" lines, _sum and _count.
  std::string Render(const std::string& name, const std::string& help) const;

 private:
  std::array<int64_t, kBounds.size()> counts_{};
  int64_t count_ = 0;
  double sum_ = 0;
};

struct Metrics {
  int64_t submitted = 0;
  int64_t finished = 0;
  int64_t store_errors = 0;
  int64_t launch_retries = 0;  // starts put off: the engine was unreachable
  Histogram queue_wait;        // submission -> start
  Histogram decision_latency;  // one pool's scheduling decision

  // Everything, with jobs by (state, pool) and the GPUs' reservations.
  std::string Render(
      const ClusterState& state,
      const std::map<std::pair<std::string, std::string>, int64_t>& jobs) const;
};

}  // namespace tessera::service

#endif  // TESSERA_SERVICE_METRICS_INTERNAL_H_
