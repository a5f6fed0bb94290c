// Admission: where a request can go now (FindAllocation) and whether it could
// ever go anywhere (CouldEverFit). The ranking of candidates is the scorer's
// (scorers.cc).

#include "scheduler/admission.h"

#include <limits>
#include <vector>

namespace tessera::scheduler {
namespace {

// "" names the default pool, pools[0].
std::string_view ResolvePool(const Topology& t, std::string_view pool) {
  if (pool.empty() && !t.pools.empty()) return t.pools.front();
  return pool;
}

bool IsValid(const Resources& d) {
  return d.gpus >= 0 && d.gpu_milli >= 0 && d.gpu_milli <= kFullGpuMilli &&
         d.gpu_memory_mib >= 0 && d.cpu_milli >= 0 && d.memory_mib >= 0;
}

bool HostRoomNow(const ClusterState& state, int node, const Resources& d) {
  return state.free_cpu_milli(node) >= d.cpu_milli &&
         state.free_memory_mib_on_node(node) >= d.memory_mib;
}

// Nobody holds anything on `gpu`.
bool Unreserved(const ClusterState& state, int gpu) {
  return state.jobs_on(gpu).empty() && state.reserved_milli(gpu) == 0 &&
         state.reserved_memory_mib(gpu) == 0;
}

// The best GPU for a fraction, over the usable nodes of `pool`.
std::optional<Allocation> FindFraction(const ClusterState& state,
                                       std::string_view pool,
                                       const Resources& d,
                                       const GpuScorer& scorer) {
  const Topology& t = state.topology();
  std::optional<Allocation> best;
  double best_score = std::numeric_limits<double>::infinity();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const NodeInfo& node = t.nodes[n];
    const int ni = static_cast<int>(n);
    if (node.pool != pool || node.drained || !HostRoomNow(state, ni, d)) {
      continue;
    }
    for (int g : node.gpus) {
      if (state.exclusive(g) || state.free_milli(g) < d.gpu_milli ||
          state.free_memory_mib(g) < d.gpu_memory_mib) {
        continue;
      }
      const double score = scorer.ScoreGpu(state, g, d);
      if (!best || score < best_score) {
        best_score = score;
        best = Allocation{ni,
                          {{g, d.gpu_milli, d.gpu_memory_mib}},
                          d.cpu_milli,
                          d.memory_mib,
                          false};
      }
    }
  }
  return best;
}

// The best node for `d.gpus` whole GPUs: on each node, its lowest-index
// unreserved GPUs.
std::optional<Allocation> FindWholeGpus(const ClusterState& state,
                                        std::string_view pool,
                                        const Resources& d,
                                        const GpuScorer& scorer) {
  const Topology& t = state.topology();
  std::optional<Allocation> best;
  double best_score = std::numeric_limits<double>::infinity();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const NodeInfo& node = t.nodes[n];
    const int ni = static_cast<int>(n);
    if (node.pool != pool || node.drained ||
        static_cast<int>(node.gpus.size()) < d.gpus ||
        !HostRoomNow(state, ni, d)) {
      continue;
    }
    std::vector<int> gpus;
    for (int g : node.gpus) {
      if (static_cast<int>(gpus.size()) < d.gpus && Unreserved(state, g)) {
        gpus.push_back(g);
      }
    }
    if (static_cast<int>(gpus.size()) < d.gpus) continue;
    const double score = scorer.ScoreNode(state, ni, gpus, d);
    if (best && score >= best_score) continue;
    best_score = score;
    best = Allocation{ni, {}, d.cpu_milli, d.memory_mib, true};
    for (int g : gpus) {
      best->gpus.push_back({g, kFullGpuMilli, t.gpus[g].memory_mib});
    }
  }
  return best;
}

}  // namespace

std::optional<Allocation> FindAllocation(const ClusterState& state,
                                         std::string_view pool,
                                         const Resources& demand,
                                         const GpuScorer& scorer) {
  if (!IsValid(demand)) return std::nullopt;
  pool = ResolvePool(state.topology(), pool);
  if (demand.gpus == 0) return FindFraction(state, pool, demand, scorer);
  return FindWholeGpus(state, pool, demand, scorer);
}

bool CouldEverFit(const Topology& topology, std::string_view pool,
                  const Resources& demand) {
  if (!IsValid(demand)) return false;
  pool = ResolvePool(topology, pool);
  // Drained nodes count: a drain is temporary, the request is not wrong.
  for (const NodeInfo& node : topology.nodes) {
    if (node.pool != pool || node.cpu_milli < demand.cpu_milli ||
        node.memory_mib < demand.memory_mib) {
      continue;
    }
    if (demand.gpus > 0) {
      if (static_cast<int>(node.gpus.size()) >= demand.gpus) return true;
      continue;
    }
    for (int g : node.gpus) {
      if (topology.gpus[g].memory_mib >= demand.gpu_memory_mib) return true;
    }
  }
  return false;
}

}  // namespace tessera::scheduler
