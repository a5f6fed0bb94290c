// SplitCache: the splits SplitAcrossSlivers finds for model jobs and the
// speed they run at, cached by what the placer reads (model_workload.h).
#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "scheduler/model_jobs.h"
#include "sim/model_workload.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::Gang;
using scheduler::GpuShare;
using scheduler::JobId;
using scheduler::kFullGpuMilli;
using scheduler::kMinSliverMilli;
using scheduler::NodeInfo;
using scheduler::SplitAcrossSlivers;
using scheduler::UsableBytes;

namespace {

// What SplitAcrossSlivers (model_jobs.h) takes as a sliver: a GPU nobody
// holds exclusively with memory and at least kMinSliverMilli compute free.
bool IsSliver(const ClusterState& state, int gpu) {
  return !state.exclusive(gpu) && state.free_milli(gpu) >= kMinSliverMilli &&
         state.free_memory_mib(gpu) > 0;
}

// The key of what SplitAcrossSlivers reads: the kind, and the free compute
// and memory of the slivers of every node of the pool that has two or
// more (the other GPUs and nodes play no part).
std::string SplitKey(const ClusterState& state, std::string_view pool,
                     int kind) {
  const Topology& t = state.topology();
  std::string key = std::to_string(kind);
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const NodeInfo& node = t.nodes[n];
    if (node.pool != pool || node.drained) continue;
    std::string part = "|" + std::to_string(n);
    int slivers = 0;
    for (const int g : node.gpus) {
      if (!IsSliver(state, g)) {
        part += ":x";
        continue;
      }
      ++slivers;
      part += ':' + std::to_string(state.free_milli(g)) + ',' +
              std::to_string(state.free_memory_mib(g));
    }
    if (slivers >= 2) key += part;
  }
  return key;
}

// Whether some node of `pool` has two or more slivers whose usable memory
// (UsableBytes of the free memory) adds up to the job's single-GPU peak. A
// split's parts each hold their ops' weights, gradients, optimizer state and
// live activations, which add up to at least that peak; without it
// SplitAcrossSlivers cannot succeed and the placer call is skipped.
bool EnoughSliverMemory(const ClusterState& state, std::string_view pool,
                        const ModelJobKind& kind, double headroom) {
  const Topology& t = state.topology();
  for (const NodeInfo& node : t.nodes) {
    if (node.pool != pool || node.drained) continue;
    double usable = 0;
    int slivers = 0;
    for (const int g : node.gpus) {
      if (!IsSliver(state, g)) continue;
      ++slivers;
      usable += UsableBytes(state.free_memory_mib(g), headroom);
    }
    if (slivers >= 2 && usable >= static_cast<double>(kind.sized.peak_bytes)) {
      return true;
    }
  }
  return false;
}

double PlanStepSeconds(const Gang& gang) {
  return gang.plan.value("step_time_ms", 0.0) / 1e3;
}

// The same GPUs as `a` with the memory others hold on them but all their
// compute: every other GPU of the node taken, the other nodes drained.
ClusterState FullSpeedState(const ClusterState& state, const Allocation& a) {
  ClusterState what_if(state.topology());
  const Topology& t = state.topology();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (static_cast<int>(n) != a.node) {
      what_if.SetDrained(static_cast<int>(n), true);
    }
  }
  JobId id = 0;
  for (const int g : t.nodes[a.node].gpus) {
    const bool used =
        std::any_of(a.gpus.begin(), a.gpus.end(),
                    [g](const GpuShare& s) { return s.gpu == g; });
    Allocation hold{a.node, {}, 0, 0, !used};
    if (used) {
      hold.gpus.push_back({g, 0, state.reserved_memory_mib(g)});
    } else {
      hold.gpus.push_back({g, kFullGpuMilli, t.gpus[g].memory_mib});
    }
    (void)what_if.Reserve(++id, hold);
  }
  return what_if;
}

}  // namespace

SplitCache::Entry SplitCache::Find(const ClusterState& state,
                                   std::string_view pool, int kind_index,
                                   const ModelJobKind& kind, double headroom) {
  const std::string key = SplitKey(state, pool, kind_index);
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      ++hits_;
      return it->second;
    }
  }
  // Computed unlocked: two threads may place the same key at once; the
  // first to finish is kept (both find the same plan: the placer is a
  // function of its inputs, short of an ILP cut off by its time limit).
  Entry entry;
  int calls = 0;
  bool filtered = false;
  if (!kind.sized.model) {
    // Nothing to split (a hand-made kind).
  } else if (!EnoughSliverMemory(state, pool, kind, headroom)) {
    filtered = true;
  } else if (auto gang =
                 SplitAcrossSlivers(state, pool, kind.sized, headroom)) {
    ++calls;
    entry.allocation = std::move(gang->allocation);
    entry.shared_step_s = PlanStepSeconds(*gang);
    entry.step_s = kind.step_s;  // one GPU: the job as it is
    if (entry.allocation->gpus.size() > 1) {
      entry.step_s = FullSpeedStep(state, pool, kind_index, kind, headroom,
                                   *entry.allocation, calls);
      if (entry.step_s <= 0) entry.step_s = entry.shared_step_s;
    }
    entry.speed = entry.step_s > 0 && kind.step_s > 0
                      ? std::min(1.0, kind.step_s / entry.step_s)
                      : 1.0;
  } else {
    ++calls;
  }
  std::lock_guard lock(mu_);
  placer_calls_ += calls;
  filtered_ += filtered ? 1 : 0;
  return entries_.try_emplace(key, std::move(entry)).first->second;
}

double SplitCache::FullSpeedStep(const ClusterState& state,
                                 std::string_view pool, int kind_index,
                                 const ModelJobKind& kind, double headroom,
                                 const Allocation& a, int& calls) {
  // What the what-if plan reads: the kind, and the GPUs with the memory
  // others hold on them.
  std::string key = std::to_string(kind_index) + '|' + std::to_string(a.node);
  for (const GpuShare& s : a.gpus) {
    key += ':' + std::to_string(s.gpu) + ',' +
           std::to_string(state.reserved_memory_mib(s.gpu));
  }
  {
    std::lock_guard lock(mu_);
    if (auto it = full_speed_.find(key); it != full_speed_.end()) {
      return it->second;
    }
  }
  ++calls;
  const ClusterState full = FullSpeedState(state, a);
  const auto fast = SplitAcrossSlivers(full, pool, kind.sized, headroom);
  // 0 when there is no plan at full speed (the caller keeps the planned
  // step then).
  const double step = fast ? PlanStepSeconds(*fast) : 0;
  std::lock_guard lock(mu_);
  return full_speed_.try_emplace(key, step).first->second;
}

int64_t SplitCache::placer_calls() const {
  std::lock_guard lock(mu_);
  return placer_calls_;
}

int64_t SplitCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

int64_t SplitCache::filtered() const {
  std::lock_guard lock(mu_);
  return filtered_;
}

}  // namespace tessera::sim
