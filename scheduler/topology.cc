// Topology look-ups and ClusterState: the reservations on the cluster, kept
// as per-GPU and per-node sums plus the allocation of every holder, so that
// a release is exact and CheckInvariants can recompute the sums.

#include "scheduler/topology.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>

namespace tessera::scheduler {
namespace {

std::string JobName(JobId job) { return "job " + std::to_string(job); }

// Node stamps come from one counter for the whole process, so that a stamp
// names one state of one node of one ClusterState lineage.
uint64_t NextStamp() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

int HolderTag(const Allocation& a) {
  if (a.gpus.empty()) return -1;
  const int n = static_cast<int>(a.gpus.size());
  if (a.exclusive) return n < kOtherTag ? n : kOtherTag;
  if (n == 1) {
    return a.gpus[0].milli >= kFullGpuMilli ? 1 : kShareTag;
  }
  return kOtherTag;  // a gang of shares
}

std::string_view IsolationName(Isolation i) {
  return i == Isolation::kMps ? "mps" : "none";
}

std::optional<Isolation> ParseIsolation(std::string_view text) {
  if (text == "mps") return Isolation::kMps;
  if (text == "none") return Isolation::kNone;
  return std::nullopt;
}

bool Topology::Shareable(int gpu) const {
  return share_unisolated ||
         nodes[gpus[gpu].node].isolation != Isolation::kNone;
}

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
    : topology_(std::make_shared<Topology>(std::move(topology))),
      gpus_(topology_->gpus.size()),
      nodes_(topology_->nodes.size()) {
  for (NodeUse& n : nodes_) n.stamp = NextStamp();
  stamp_ = NextStamp();
}

void ClusterState::TouchAll(const Allocation& a) {
  Touch(a.node);
  for (const GpuShare& share : a.gpus) {
    const int n = topology_->gpus[share.gpu].node;
    if (n != a.node) Touch(n);
  }
}

void ClusterState::Touch(int node) {
  nodes_[node].stamp = NextStamp();
  stamp_ = nodes_[node].stamp;
}

int64_t ClusterState::free_memory_mib(int gpu) const {
  if (gpus_[gpu].exclusive) return 0;
  return std::max<int64_t>(
      0, topology_->gpus[gpu].memory_mib - gpus_[gpu].memory_mib);
}

int ClusterState::free_milli(int gpu) const {
  if (gpus_[gpu].exclusive) return 0;
  return std::max(0, kFullGpuMilli - gpus_[gpu].milli);
}

int64_t ClusterState::free_cpu_milli(int node) const {
  return topology_->nodes[node].cpu_milli - nodes_[node].cpu_milli;
}

int64_t ClusterState::free_memory_mib_on_node(int node) const {
  return topology_->nodes[node].memory_mib - nodes_[node].memory_mib;
}

std::vector<JobId> ClusterState::JobsOn(int gpu) const {
  std::vector<JobId> jobs;
  for (const auto& [job, a] : holders_) {
    for (const GpuShare& share : a.gpus) {
      if (share.gpu == gpu) jobs.push_back(job);
    }
  }
  return jobs;
}

std::vector<std::vector<JobId>> ClusterState::JobsByGpu() const {
  std::vector<std::vector<JobId>> jobs(gpus_.size());
  for (const auto& [job, a] : holders_) {
    for (const GpuShare& share : a.gpus) jobs[share.gpu].push_back(job);
  }
  return jobs;
}

bool ClusterState::Fits(const Allocation& a) const {
  const Topology& t = *topology_;
  if (a.node < 0 || a.node >= static_cast<int>(t.nodes.size())) return false;
  if (a.cpu_milli < 0 || a.memory_mib < 0 ||
      a.cpu_milli > free_cpu_milli(a.node) ||
      a.memory_mib > free_memory_mib_on_node(a.node)) {
    return false;
  }
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuShare& share = a.gpus[i];
    const int g = share.gpu;
    if (g < 0 || g >= static_cast<int>(t.gpus.size()) ||
        (t.gpus[g].node != a.node && !a.spans_nodes)) {
      return false;  // unknown, or on another node
    }
    for (size_t j = 0; j < i; ++j) {
      if (a.gpus[j].gpu == g) return false;  // listed twice
    }
    if (share.milli < 0 || share.memory_mib < 0) return false;
    if (gpus_[g].exclusive || (a.exclusive && gpus_[g].holders > 0)) {
      return false;  // an exclusive GPU is shared with nobody
    }
    if (share.milli > free_milli(g) || share.memory_mib > free_memory_mib(g)) {
      return false;
    }
  }
  return true;
}

std::vector<std::pair<JobId, Allocation>>::const_iterator ClusterState::Find(
    JobId job) const {
  return std::lower_bound(
      holders_.begin(), holders_.end(), job,
      [](const auto& holder, JobId id) { return holder.first < id; });
}

Status ClusterState::Reserve(JobId job, const Allocation& a) {
  auto it = Find(job);
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
    use.exclusive =
        use.exclusive || a.exclusive || !topology_->Shareable(share.gpu);
    ++use.holders;
  }
  NodeUse& node = nodes_[a.node];
  node.cpu_milli += a.cpu_milli;
  node.memory_mib += a.memory_mib;
  if (const int tag = HolderTag(a); tag >= 0) ++node.tags[tag];
  TouchAll(a);
  holders_.insert(it, {job, a});
  return {};
}

void ClusterState::Release(JobId job) {
  auto it = Find(job);
  if (it == holders_.end() || it->first != job) return;
  const Allocation& a = it->second;
  for (const GpuShare& share : a.gpus) {
    GpuUse& use = gpus_[share.gpu];
    use.milli -= share.milli;
    use.memory_mib -= share.memory_mib;
    --use.holders;
    if (a.exclusive || use.holders == 0) use.exclusive = false;
  }
  NodeUse& node = nodes_[a.node];
  node.cpu_milli -= a.cpu_milli;
  node.memory_mib -= a.memory_mib;
  if (const int tag = HolderTag(a); tag >= 0) --node.tags[tag];
  TouchAll(a);
  holders_.erase(it);
}

const Allocation* ClusterState::AllocationOf(JobId job) const {
  auto it = Find(job);
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
  if (topology_.use_count() > 1) {
    topology_ = std::make_shared<Topology>(*topology_);
  }
  topology_->nodes[node].drained = drained;
  Touch(node);
}

std::string ClusterState::CheckInvariants() const {
  // Recompute every sum from the holders: the incremental sums must agree.
  std::vector<GpuUse> gpus(gpus_.size());
  std::vector<NodeUse> nodes(nodes_.size());
  const Topology& t = *topology_;
  for (const auto& [job, a] : holders_) {
    for (const GpuShare& share : a.gpus) {
      gpus[share.gpu].milli += share.milli;
      gpus[share.gpu].memory_mib += share.memory_mib;
      gpus[share.gpu].exclusive =
          gpus[share.gpu].exclusive || a.exclusive || !t.Shareable(share.gpu);
      ++gpus[share.gpu].holders;
    }
    nodes[a.node].cpu_milli += a.cpu_milli;
    nodes[a.node].memory_mib += a.memory_mib;
    if (const int tag = HolderTag(a); tag >= 0) ++nodes[a.node].tags[tag];
  }
  std::string problems;
  auto fail = [&problems](const std::string& what) {
    problems += (problems.empty() ? "" : "; ") + what;
  };
  for (size_t g = 0; g < gpus_.size(); ++g) {
    const std::string& id = t.gpus[g].id;
    const GpuUse& use = gpus_[g];
    if (!(use == gpus[g])) {
      fail(id + ": reserved sums disagree with the holders' allocations");
    }
    if (use.milli > kFullGpuMilli) {
      fail(id + ": " + std::to_string(use.milli) + " milli reserved");
    }
    if (use.memory_mib > t.gpus[g].memory_mib) {
      fail(id + ": " + std::to_string(use.memory_mib) + " MiB reserved of " +
           std::to_string(t.gpus[g].memory_mib));
    }
    if (use.exclusive && use.holders > 1) {
      fail(id + ": exclusive but held by " + std::to_string(use.holders) +
           " jobs");
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const NodeInfo& info = t.nodes[n];
    if (nodes_[n].cpu_milli != nodes[n].cpu_milli ||
        nodes_[n].memory_mib != nodes[n].memory_mib ||
        nodes_[n].tags != nodes[n].tags) {
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
