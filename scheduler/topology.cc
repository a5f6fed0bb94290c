// Topology look-ups and ClusterState: the reservations on the cluster, kept
// as per-GPU and per-node sums plus the allocation of every holder, so that
// a release is exact and CheckInvariants can recompute the sums.

#include "scheduler/topology.h"

#include <algorithm>
#include <string>
#include <utility>

namespace tessera::scheduler {
namespace {

std::string JobName(JobId job) { return "job " + std::to_string(job); }

}  // namespace

int Topology::FindNode(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int Topology::FindGpu(std::string_view id) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

bool Topology::HasPool(std::string_view pool) const {
  return std::find(pools.begin(), pools.end(), pool) != pools.end();
}

ClusterState::ClusterState(Topology topology)
    : topology_(std::move(topology)),
      gpus_(topology_.gpus.size()),
      nodes_(topology_.nodes.size()) {}

int64_t ClusterState::free_memory_mib(int gpu) const {
  if (gpus_[gpu].exclusive) return 0;
  return std::max<int64_t>(
      0, topology_.gpus[gpu].memory_mib - gpus_[gpu].memory_mib);
}

int ClusterState::free_milli(int gpu) const {
  if (gpus_[gpu].exclusive) return 0;
  return std::max(0, kFullGpuMilli - gpus_[gpu].milli);
}

int64_t ClusterState::free_cpu_milli(int node) const {
  return topology_.nodes[node].cpu_milli - nodes_[node].cpu_milli;
}

int64_t ClusterState::free_memory_mib_on_node(int node) const {
  return topology_.nodes[node].memory_mib - nodes_[node].memory_mib;
}

bool ClusterState::Fits(const Allocation& a) const {
  if (a.node < 0 || a.node >= static_cast<int>(topology_.nodes.size())) {
    return false;
  }
  if (a.cpu_milli < 0 || a.memory_mib < 0 ||
      a.cpu_milli > free_cpu_milli(a.node) ||
      a.memory_mib > free_memory_mib_on_node(a.node)) {
    return false;
  }
  std::set<int> seen;
  for (const GpuShare& share : a.gpus) {
    const int g = share.gpu;
    if (g < 0 || g >= static_cast<int>(topology_.gpus.size()) ||
        topology_.gpus[g].node != a.node || !seen.insert(g).second) {
      return false;  // unknown, on another node, or listed twice
    }
    if (share.milli < 0 || share.memory_mib < 0) return false;
    if (gpus_[g].exclusive || (a.exclusive && !gpus_[g].jobs.empty())) {
      return false;  // an exclusive GPU is shared with nobody
    }
    if (share.milli > free_milli(g) || share.memory_mib > free_memory_mib(g)) {
      return false;
    }
  }
  return true;
}

Status ClusterState::Reserve(JobId job, const Allocation& a) {
  auto it = std::lower_bound(
      holders_.begin(), holders_.end(), job,
      [](const auto& holder, JobId id) { return holder.first < id; });
  if (it != holders_.end() && it->first == job) {
    return Internal(JobName(job) + " already holds a reservation");
  }
  if (!Fits(a)) {
    return Internal("the allocation of " + JobName(job) +
                    " does not fit the free capacity of node " +
                    std::to_string(a.node));
  }
  for (const GpuShare& share : a.gpus) {
    GpuUse& use = gpus_[share.gpu];
    use.milli += share.milli;
    use.memory_mib += share.memory_mib;
    use.exclusive = use.exclusive || a.exclusive;
    use.jobs.insert(job);
  }
  nodes_[a.node].cpu_milli += a.cpu_milli;
  nodes_[a.node].memory_mib += a.memory_mib;
  holders_.insert(it, {job, a});
  return {};
}

void ClusterState::Release(JobId job) {
  auto it = std::lower_bound(
      holders_.begin(), holders_.end(), job,
      [](const auto& holder, JobId id) { return holder.first < id; });
  if (it == holders_.end() || it->first != job) return;
  const Allocation& a = it->second;
  for (const GpuShare& share : a.gpus) {
    GpuUse& use = gpus_[share.gpu];
    use.milli -= share.milli;
    use.memory_mib -= share.memory_mib;
    use.jobs.erase(job);
    if (a.exclusive) use.exclusive = false;
  }
  nodes_[a.node].cpu_milli -= a.cpu_milli;
  nodes_[a.node].memory_mib -= a.memory_mib;
  holders_.erase(it);
}

const Allocation* ClusterState::AllocationOf(JobId job) const {
  auto it = std::lower_bound(
      holders_.begin(), holders_.end(), job,
      [](const auto& holder, JobId id) { return holder.first < id; });
  if (it == holders_.end() || it->first != job) return nullptr;
  return &it->second;
}

std::vector<JobId> ClusterState::Holders() const {
  std::vector<JobId> ids;
  ids.reserve(holders_.size());
  for (const auto& holder : holders_) ids.push_back(holder.first);
  return ids;
}

void ClusterState::SetDrained(int node, bool drained) {
  topology_.nodes[node].drained = drained;
}

std::string ClusterState::CheckInvariants() const {
  // Recompute every sum from the holders: the incremental sums must agree.
  std::vector<GpuUse> gpus(gpus_.size());
  std::vector<NodeUse> nodes(nodes_.size());
  for (const auto& [job, a] : holders_) {
    for (const GpuShare& share : a.gpus) {
      gpus[share.gpu].milli += share.milli;
      gpus[share.gpu].memory_mib += share.memory_mib;
      gpus[share.gpu].exclusive = gpus[share.gpu].exclusive || a.exclusive;
      gpus[share.gpu].jobs.insert(job);
    }
    nodes[a.node].cpu_milli += a.cpu_milli;
    nodes[a.node].memory_mib += a.memory_mib;
  }
  std::string problems;
  auto fail = [&problems](const std::string& what) {
    problems += (problems.empty() ? "" : "; ") + what;
  };
  for (size_t g = 0; g < gpus_.size(); ++g) {
    const std::string& id = topology_.gpus[g].id;
    const GpuUse& use = gpus_[g];
    if (use.milli != gpus[g].milli || use.memory_mib != gpus[g].memory_mib ||
        use.exclusive != gpus[g].exclusive || use.jobs != gpus[g].jobs) {
      fail(id + ": reserved sums disagree with the holders' allocations");
    }
    if (use.milli > kFullGpuMilli) {
      fail(id + ": " + std::to_string(use.milli) + " milli reserved");
    }
    if (use.memory_mib > topology_.gpus[g].memory_mib) {
      fail(id + ": " + std::to_string(use.memory_mib) + " MiB reserved of " +
           std::to_string(topology_.gpus[g].memory_mib));
    }
    if (use.exclusive && use.jobs.size() > 1) {
      fail(id + ": exclusive but held by " + std::to_string(use.jobs.size()) +
           " jobs");
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const NodeInfo& info = topology_.nodes[n];
    if (nodes_[n].cpu_milli != nodes[n].cpu_milli ||
        nodes_[n].memory_mib != nodes[n].memory_mib) {
      fail(info.name + ": reserved sums disagree with the holders");
    }
    if (nodes_[n].cpu_milli > info.cpu_milli ||
        nodes_[n].memory_mib > info.memory_mib) {
      fail(info.name + ": CPU or memory over capacity");
    }
  }
  return problems;
}

}  // namespace tessera::scheduler
