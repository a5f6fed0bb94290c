#include "scheduler/elastic.h"

#include <algorithm>
#include <utility>

namespace tessera::scheduler {

Resources ElasticGuaranteedDemand(const Resources& worker,
                                  const ElasticRequest& e) {
  Resources d = worker;
  if (worker.gpus > 0) d.gpus = e.min;
  d.cpu_milli = worker.cpu_milli * e.min;
  d.memory_mib = worker.memory_mib * e.min;
  return d;
}

GpuShare WorkerShare(const Resources& worker, int gpu) {
  if (worker.gpus > 0) return {gpu, kFullGpuMilli, 0};
  return {gpu, worker.gpu_milli, worker.gpu_memory_mib};
}

std::vector<int> FreeWorkerGpus(const ClusterState& s, const Allocation& a,
                                const Resources& worker, int count) {
  std::vector<int> out;
  if (a.node < 0 || count <= 0) return out;
  const Topology& t = s.topology();
  const NodeInfo& node = t.nodes[a.node];
  if (node.drained) return out;
  int room = count;
  if (worker.cpu_milli > 0) {
    room = std::min<int64_t>(room, s.free_cpu_milli(a.node) / worker.cpu_milli);
  }
  if (worker.memory_mib > 0) {
    room = std::min<int64_t>(
        room, s.free_memory_mib_on_node(a.node) / worker.memory_mib);
  }
  for (const int g : node.gpus) {
    if (static_cast<int>(out.size()) >= room) break;
    const bool mine =
        std::any_of(a.gpus.begin(), a.gpus.end(),
                    [g](const GpuShare& sh) { return sh.gpu == g; });
    if (mine) continue;
    const bool fits = worker.gpus > 0
                          ? s.holders_on(g) == 0
                          : !s.exclusive(g) &&
                                s.free_milli(g) >= worker.gpu_milli &&
                                s.free_memory_mib(g) >= worker.gpu_memory_mib;
    if (fits) out.push_back(g);
  }
  return out;
}

namespace {

// The guaranteed part's placement on node `n` alone and the scorer's score
// for it: `min` whole GPUs, or `min` fractional workers on `min` GPUs (the
// first where the scorer puts one worker, the others where they fit).
std::optional<ScoredAllocation> GuaranteedOnNode(
    const ClusterState& s, int n, const Resources& worker,
    const ElasticRequest& e, const GpuScorer& scorer,
    const std::vector<std::string>& gpu_kinds) {
  if (worker.gpus > 0 || e.min == 1) {
    return FitOnNode(
        s, n, PlacementRequest{ElasticGuaranteedDemand(worker, e), gpu_kinds},
        scorer);
  }
  auto first = FitOnNode(s, n, PlacementRequest{worker, gpu_kinds}, scorer);
  if (!first) return std::nullopt;
  ClusterState trial = s;
  if (!trial.Reserve(-1, first->allocation).ok()) return std::nullopt;
  const std::vector<int> more =
      FreeWorkerGpus(trial, first->allocation, worker, e.min - 1);
  if (static_cast<int>(more.size()) < e.min - 1) return std::nullopt;
  Allocation a = first->allocation;
  for (const int g : more) a.gpus.push_back(WorkerShare(worker, g));
  a.cpu_milli = worker.cpu_milli * e.min;
  a.memory_mib = worker.memory_mib * e.min;
  return ScoredAllocation{std::move(a), first->score};
}

}  // namespace

int ElasticRoomOnNode(const ClusterState& s, int node, const Resources& worker,
                      int max) {
  Allocation none;
  none.node = node;
  return static_cast<int>(FreeWorkerGpus(s, none, worker, max).size());
}

std::optional<Allocation> ElasticStartAllocation(
    const ClusterState& s, std::string_view pool, const Resources& worker,
    const ElasticRequest& e, const GpuScorer& scorer,
    const AdmissionOptions& options,
    const std::vector<std::string>& gpu_kinds) {
  const Topology& t = s.topology();
  if (pool.empty() && !t.pools.empty()) pool = t.pools.front();
  std::vector<int> order(options.node_order.begin(), options.node_order.end());
  if (order.empty()) {
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      order.push_back(static_cast<int>(n));
    }
  }
  // Room for workers up to max on each node of the pool, as now.
  std::vector<std::pair<int, int>> by_room;  // (room, node), room >= min
  for (const int n : order) {
    if (t.nodes[n].pool != pool) continue;
    const int room = ElasticRoomOnNode(s, n, worker, e.max);
    if (room >= e.min) by_room.emplace_back(room, n);
  }
  // The most room first; the node order among equals (stable).
  std::stable_sort(
      by_room.begin(), by_room.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < by_room.size();) {
    const int room = by_room[i].first;
    std::optional<ScoredAllocation> best;
    for (; i < by_room.size() && by_room[i].first == room; ++i) {
      auto fit =
          GuaranteedOnNode(s, by_room[i].second, worker, e, scorer, gpu_kinds);
      if (fit && (!best || fit->score > best->score)) best = std::move(fit);
    }
    if (best) return best->allocation;
  }
  return std::nullopt;
}

Allocation WithoutWorkers(const Allocation& a, const Resources& worker,
                          std::vector<int>& workers,
                          const std::set<int>& drop) {
  Allocation out = a;
  out.gpus.clear();
  std::vector<int> kept;
  for (size_t i = 0; i < a.gpus.size() && i < workers.size(); ++i) {
    if (drop.count(workers[i])) continue;
    out.gpus.push_back(a.gpus[i]);
    kept.push_back(workers[i]);
  }
  const int64_t n = static_cast<int64_t>(kept.size());
  out.cpu_milli = worker.cpu_milli * n;
  out.memory_mib = worker.memory_mib * n;
  workers = std::move(kept);
  return out;
}

Allocation WithWorkers(const Allocation& a, const Resources& worker,
                       std::vector<int>& workers,
                       const std::vector<int>& gpus) {
  Allocation out = a;
  for (const int g : gpus) {
    int id = 0;
    while (std::find(workers.begin(), workers.end(), id) != workers.end()) {
      ++id;
    }
    workers.push_back(id);
    out.gpus.push_back(WorkerShare(worker, g));
  }
  const int64_t n = static_cast<int64_t>(workers.size());
  out.cpu_milli = worker.cpu_milli * n;
  out.memory_mib = worker.memory_mib * n;
  return out;
}

namespace {

// `held` without its extras: the workers from `min` up (`workers` are the
// ids parallel to held's GPUs).
Allocation WithoutExtras(const Allocation& held, const Resources& worker,
                         const std::vector<int>& workers, int min) {
  std::set<int> extras;
  for (const int w : workers) {
    if (w >= min) extras.insert(w);
  }
  std::vector<int> kept = workers;
  return WithoutWorkers(held, worker, kept, extras);
}

}  // namespace

Allocation GuaranteedPart(const Job& job) {
  if (!job.request.elastic || !job.request.resources ||
      job.elastic.workers.size() != job.allocation.gpus.size()) {
    return job.allocation;
  }
  return WithoutExtras(job.allocation, *job.request.resources,
                       job.elastic.workers, job.request.elastic->min);
}

ClusterState PlanOnGuaranteed(const ClusterState& s,
                              const std::vector<ElasticHolding>& jobs) {
  ClusterState out = s;
  for (const ElasticHolding& j : jobs) {
    if (j.workers->size() != j.allocation->gpus.size()) continue;
    const Allocation guaranteed =
        WithoutExtras(*j.allocation, j.worker, *j.workers, j.request.min);
    if (guaranteed.gpus.size() == j.allocation->gpus.size()) continue;
    out.Release(j.id);
    (void)out.Reserve(j.id, guaranteed);
  }
  return out;
}

bool SharesNode(const Topology& t, const Allocation& held,
                const Allocation& a) {
  return held.node == a.node ||
         std::any_of(a.gpus.begin(), a.gpus.end(), [&](const GpuShare& g) {
           return t.gpus[g.gpu].node == held.node;
         });
}

std::vector<ExtrasBack> ExtrasInTheWay(
    const ClusterState& s, const Allocation& a,
    const std::vector<ElasticHolding>& jobs) {
  std::vector<ExtrasBack> out;
  const Topology& t = s.topology();
  const bool node_short =
      a.node >= 0 && (a.cpu_milli > s.free_cpu_milli(a.node) ||
                      a.memory_mib > s.free_memory_mib_on_node(a.node));
  const auto takes = [&](int gpu) {
    return std::any_of(a.gpus.begin(), a.gpus.end(),
                       [gpu](const GpuShare& g) { return g.gpu == gpu; });
  };
  for (const ElasticHolding& j : jobs) {
    const Allocation& held = *j.allocation;
    if (!SharesNode(t, held, a) || j.workers->size() != held.gpus.size()) {
      continue;
    }
    ExtrasBack back{j.id, {}};
    for (size_t i = 0; i < held.gpus.size(); ++i) {
      const int w = (*j.workers)[i];
      if (w < j.request.min) continue;
      if (j.releasing != nullptr &&
          std::find(j.releasing->begin(), j.releasing->end(), w) !=
              j.releasing->end()) {
        continue;
      }
      if (node_short || takes(held.gpus[i].gpu)) back.workers.push_back(w);
    }
    if (back.workers.empty()) continue;
    std::sort(back.workers.begin(), back.workers.end());
    out.push_back(std::move(back));
  }
  return out;
}

std::optional<Allocation> StartBesideExtras(const ClusterState& s,
                                            const Allocation& planned,
                                            const Replacer& replace,
                                            const std::set<int>& waited_for) {
  if (s.Fits(planned)) return planned;
  if (!replace) return std::nullopt;
  std::optional<Allocation> now = replace(s);
  if (!now || !s.Fits(*now)) return std::nullopt;
  for (const GpuShare& g : now->gpus) {
    if (waited_for.count(g.gpu)) return std::nullopt;
  }
  return now;
}

std::vector<size_t> GrowOrder(const std::vector<ElasticHolding>& jobs) {
  std::vector<size_t> order;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (static_cast<int>(jobs[i].allocation->gpus.size()) <
        jobs[i].request.max) {
      order.push_back(i);
    }
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(jobs[a].started_at, jobs[a].id) <
           std::pair(jobs[b].started_at, jobs[b].id);
  });
  return order;
}

}  // namespace tessera::scheduler
