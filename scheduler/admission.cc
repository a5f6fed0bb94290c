// Admission: where a request can go now (FindAllocation) and whether it could
// ever go anywhere (CouldEverFit). Which node wins is the scorer's
// (scorers_*.cc); the feasibility of a node and its cached scores are here.

#include "scheduler/admission.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace tessera::scheduler {
namespace {

// A node's GPUs as a bit mask of their positions on the node: the cache
// keeps nodes of at most this many GPUs.
constexpr size_t kMaxCachedGpus = 64;

// "" names the default pool, pools[0].
std::string_view ResolvePool(const Topology& t, std::string_view pool) {
  if (pool.empty() && !t.pools.empty()) return t.pools.front();
  return pool;
}

bool IsValid(const Resources& d) {
  return d.gpus >= 0 && d.gpu_milli >= 0 && d.gpu_milli <= kFullGpuMilli &&
         d.gpu_memory_mib >= 0 && d.cpu_milli >= 0 && d.memory_mib >= 0 &&
         !(d.gpus > 0 && d.gpu_milli > 0);
}

bool CpuOnly(const Resources& d) {
  return d.gpus == 0 && d.gpu_milli == 0 && d.gpu_memory_mib == 0;
}

bool KindAllowed(const PlacementRequest& r, const std::string& kind) {
  return r.gpu_kinds.empty() ||
         std::find(r.gpu_kinds.begin(), r.gpu_kinds.end(), kind) !=
             r.gpu_kinds.end();
}

// Nobody holds anything on `gpu`.
bool Unreserved(const ClusterState& state, int gpu) {
  return state.holders_on(gpu) == 0 && state.reserved_milli(gpu) == 0 &&
         state.reserved_memory_mib(gpu) == 0;
}

// Whether `request` fits `node` now; if so its score and GPUs.
bool Evaluate(const ClusterState& state, std::string_view pool,
              const PlacementRequest& request, const GpuScorer& scorer,
              int node, std::vector<int>& fitting, double& score,
              std::vector<int>& gpus) {
  const Topology& t = state.topology();
  const NodeInfo& info = t.nodes[node];
  const Resources& d = request.demand;
  if (info.pool != pool || info.drained ||
      state.free_cpu_milli(node) < d.cpu_milli ||
      state.free_memory_mib_on_node(node) < d.memory_mib) {
    return false;
  }
  fitting.clear();
  if (!CpuOnly(d)) {
    for (const int g : info.gpus) {
      if (!KindAllowed(request, t.gpus[g].kind)) continue;
      const bool fits = d.gpus > 0
                            ? Unreserved(state, g)
                            : !state.exclusive(g) &&
                                  state.free_milli(g) >= d.gpu_milli &&
                                  state.free_memory_mib(g) >= d.gpu_memory_mib;
      if (fits) fitting.push_back(g);
    }
    const size_t needed = d.gpus > 0 ? static_cast<size_t>(d.gpus) : 1;
    if (fitting.size() < needed) return false;
  }
  gpus.clear();
  score = scorer.Score(state, request, NodeFit{node, fitting}, gpus);
  return true;
}

Allocation MakeAllocation(const ClusterState& state, int node,
                          const Resources& d, const std::vector<int>& gpus) {
  Allocation a{node, {}, d.cpu_milli, d.memory_mib, d.gpus > 0};
  for (const int g : gpus) {
    if (d.gpus > 0) {
      a.gpus.push_back({g, kFullGpuMilli, state.topology().gpus[g].memory_mib});
    } else {
      a.gpus.push_back({g, d.gpu_milli, d.gpu_memory_mib});
    }
  }
  return a;
}

std::string ClassKey(std::string_view pool, const PlacementRequest& r) {
  const Resources& d = r.demand;
  std::string key(pool);
  for (const int64_t v :
       {static_cast<int64_t>(d.gpus), static_cast<int64_t>(d.gpu_milli),
        d.gpu_memory_mib, d.cpu_milli, d.memory_mib}) {
    key += '|' + std::to_string(v);
  }
  for (const std::string& k : r.gpu_kinds) key += '|' + k;
  return key;
}

}  // namespace

struct AdmissionCache::Impl {
  struct Entry {
    uint64_t stamp = 0;  // 0: never computed (stamps start at 1)
    bool feasible = false;
    double score = 0;
    uint64_t gpu_mask = 0;  // positions on the node of the GPUs taken
  };
  std::unordered_map<std::string, size_t> classes;
  std::vector<std::vector<Entry>> entries;  // [class][node]
  std::vector<int> fitting, gpus;           // scratch

  std::vector<Entry>& For(std::string_view pool, const PlacementRequest& r,
                          size_t nodes) {
    auto [it, added] = classes.try_emplace(ClassKey(pool, r), entries.size());
    if (added) entries.emplace_back();
    std::vector<Entry>& e = entries[it->second];
    if (e.size() != nodes) e.assign(nodes, Entry{});
    return e;
  }
};

AdmissionCache::AdmissionCache() : impl_(std::make_unique<Impl>()) {}
AdmissionCache::~AdmissionCache() = default;

std::optional<Allocation> FindAllocation(const ClusterState& state,
                                         std::string_view pool,
                                         const PlacementRequest& request,
                                         const GpuScorer& scorer,
                                         const AdmissionOptions& options) {
  if (!IsValid(request.demand)) return std::nullopt;
  const Topology& t = state.topology();
  pool = ResolvePool(t, pool);
  const size_t nodes = t.nodes.size();
  std::vector<int> identity;
  std::span<const int> order = options.node_order;
  if (order.empty()) {
    identity.resize(nodes);
    std::iota(identity.begin(), identity.end(), 0);
    order = identity;
  }
  AdmissionCache::Impl* cache =
      options.cache != nullptr && scorer.deterministic()
          ? &options.cache->impl()
          : nullptr;
  std::vector<AdmissionCache::Impl::Entry>* entries =
      cache != nullptr ? &cache->For(pool, request, nodes) : nullptr;
  std::vector<int> local_fitting, local_gpus;
  std::vector<int>& fitting = cache ? cache->fitting : local_fitting;
  std::vector<int>& gpus = cache ? cache->gpus : local_gpus;

  int best_node = -1;
  double best_score = -std::numeric_limits<double>::infinity();
  std::vector<int> best_gpus;
  for (const int n : order) {
    const std::vector<int>& node_gpus = t.nodes[n].gpus;
    if (entries != nullptr && node_gpus.size() <= kMaxCachedGpus) {
      AdmissionCache::Impl::Entry& e = (*entries)[n];
      if (e.stamp != state.node_stamp(n)) {
        e.stamp = state.node_stamp(n);
        e.feasible =
            Evaluate(state, pool, request, scorer, n, fitting, e.score, gpus);
        e.gpu_mask = 0;
        for (const int g : gpus) {
          const auto pos = std::find(node_gpus.begin(), node_gpus.end(), g) -
                           node_gpus.begin();
          e.gpu_mask |= uint64_t{1} << pos;
        }
      }
      if (!e.feasible || !(e.score > best_score)) continue;
      best_node = n;
      best_score = e.score;
      best_gpus.clear();
      for (size_t i = 0; i < node_gpus.size(); ++i) {
        if (e.gpu_mask >> i & 1) best_gpus.push_back(node_gpus[i]);
      }
      continue;
    }
    double score = 0;
    if (!Evaluate(state, pool, request, scorer, n, fitting, score, gpus) ||
        !(score > best_score)) {
      continue;
    }
    best_node = n;
    best_score = score;
    best_gpus = gpus;
  }
  if (best_node < 0) return std::nullopt;
  return MakeAllocation(state, best_node, request.demand, best_gpus);
}

std::optional<Allocation> FindAllocation(const ClusterState& state,
                                         std::string_view pool,
                                         const Resources& demand,
                                         const GpuScorer& scorer) {
  return FindAllocation(state, pool, PlacementRequest{demand, {}}, scorer);
}

std::optional<ScoredAllocation> FitOnNode(const ClusterState& state, int node,
                                          const PlacementRequest& request,
                                          const GpuScorer& scorer) {
  const Topology& t = state.topology();
  if (!IsValid(request.demand) || node < 0 ||
      node >= static_cast<int>(t.nodes.size())) {
    return std::nullopt;
  }
  std::vector<int> fitting, gpus;
  double score = 0;
  if (!Evaluate(state, t.nodes[node].pool, request, scorer, node, fitting,
                score, gpus)) {
    return std::nullopt;
  }
  return ScoredAllocation{MakeAllocation(state, node, request.demand, gpus),
                          score};
}

bool CouldEverFitOnNode(const Topology& topology, int node,
                        const PlacementRequest& request) {
  const Resources& d = request.demand;
  if (!IsValid(d) || node < 0 ||
      node >= static_cast<int>(topology.nodes.size())) {
    return false;
  }
  const NodeInfo& info = topology.nodes[node];
  if (info.cpu_milli < d.cpu_milli || info.memory_mib < d.memory_mib) {
    return false;
  }
  if (CpuOnly(d)) return true;
  int usable = 0;
  for (const int g : info.gpus) {
    const GpuInfo& gpu = topology.gpus[g];
    if (KindAllowed(request, gpu.kind) &&
        (d.gpus > 0 || gpu.memory_mib >= d.gpu_memory_mib)) {
      ++usable;
    }
  }
  return usable >= std::max(1, d.gpus);
}

bool CouldEverFit(const Topology& topology, std::string_view pool,
                  const PlacementRequest& request) {
  pool = ResolvePool(topology, pool);
  // Drained nodes count: a drain is temporary, the request is not wrong.
  for (size_t n = 0; n < topology.nodes.size(); ++n) {
    if (topology.nodes[n].pool == pool &&
        CouldEverFitOnNode(topology, static_cast<int>(n), request)) {
      return true;
    }
  }
  return false;
}

bool CouldEverFit(const Topology& topology, std::string_view pool,
                  const Resources& demand) {
  return CouldEverFit(topology, pool, PlacementRequest{demand, {}});
}

}  // namespace tessera::scheduler
