// What a timed replay is given: the trace's pods as queue jobs
// (MakeTimedPods), the pods that declare a model and the teams, both
// picked by a hash of the pod's name, and a smaller sample of the cluster
// (SampleCluster).
#include "sim/timed_replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>

#include "common/strings.h"
#include "sim/replay.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::GpuInfo;
using scheduler::JobId;
using scheduler::NodeInfo;

namespace {

// The trace's QoS classes as queue priorities: latency-sensitive (and
// Kubernetes' Guaranteed) above Burstable above best-effort.
int QosPriority(const std::string& qos) {
  if (qos == "LS" || qos == "Guaranteed") return 2;
  if (qos == "Burstable") return 1;
  return 0;
}

std::string PodName(const TracePod& pod, size_t index) {
  return "pod '" + pod.name + "' (number " + std::to_string(index + 1) +
         " in the list)";
}

}  // namespace

bool DeclaresModel(std::string_view name, int pct) {
  if (pct <= 0) return false;
  return static_cast<int>(Fnv1a64(name) % 100) < pct;
}

int TeamOfPod(std::string_view name, int teams) {
  return static_cast<int>(Fnv1a64(name) % static_cast<uint64_t>(teams));
}

std::string_view TeamSplitName(TeamSplit s) {
  return s == TeamSplit::kSkewed ? "skewed" : "hash";
}

int TeamOf(const TracePod& pod, int teams, TeamSplit split) {
  if (split == TeamSplit::kHash || teams < 2) return TeamOfPod(pod.name, teams);
  const int small = (teams + 1) / 2;
  const bool whole =
      pod.num_gpu > 1 || (pod.num_gpu == 1 && pod.gpu_milli >= 1000);
  return whole ? small + TeamOfPod(pod.name, teams - small)
               : TeamOfPod(pod.name, small);
}

Result<std::vector<TimedPod>> MakeTimedPods(const std::vector<TracePod>& pods) {
  std::vector<TimedPod> out;
  out.reserve(pods.size());
  const bool any_times = std::any_of(pods.begin(), pods.end(), [](auto& p) {
    return p.creation_time >= 0 || p.deletion_time >= 0;
  });
  if (!pods.empty() && !any_times) {
    return BadInput(
        "no pod has a creation_time or deletion_time: timed mode needs "
        "them (the openb multigpu* samples have only the five request "
        "columns; use --mode snapshot for those)");
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    const TracePod& p = pods[i];
    if (p.creation_time < 0 || p.deletion_time < 0) {
      return BadInput(
          PodName(p, i) + " has no " +
          (p.creation_time < 0 ? "creation_time" : "deletion_time") +
          ": timed mode needs both");
    }
    const double start =
        p.scheduled_time >= 0 ? p.scheduled_time : p.creation_time;
    if (start < p.creation_time || p.deletion_time < start) {
      return BadInput(PodName(p, i) + ": times out of order (creation_time " +
                      std::to_string(static_cast<int64_t>(p.creation_time)) +
                      ", scheduled_time " +
                      std::to_string(static_cast<int64_t>(p.scheduled_time)) +
                      ", deletion_time " +
                      std::to_string(static_cast<int64_t>(p.deletion_time)) +
                      ")");
    }
    TimedPod t;
    t.arrival = p.creation_time;
    t.duration = p.deletion_time - start;
    t.request = PodRequest(p);
    QueuedJob& job = t.job;
    job.id = static_cast<JobId>(i + 1);
    job.user = p.qos.empty() ? "none" : p.qos;
    job.priority = QosPriority(p.qos);
    job.preemptible = job.priority == 0;
    job.submitted_at = t.arrival;
    // 0 would mean "unknown" to backfill; a pod that ends at once gets 1 s.
    job.time_limit_s = std::max(t.duration, 1.0);
    job.demand = t.request.demand;
    out.push_back(std::move(t));
  }
  return out;
}

Topology SampleCluster(const Topology& topology, double fraction,
                       uint64_t seed) {
  std::map<std::string, std::vector<int>> by_kind;  // "" = CPU-only
  for (size_t n = 0; n < topology.nodes.size(); ++n) {
    const NodeInfo& node = topology.nodes[n];
    by_kind[node.gpus.empty() ? "" : topology.gpus[node.gpus[0]].kind]
        .push_back(static_cast<int>(n));
  }
  std::mt19937_64 rng(seed);
  std::vector<int> keep;
  for (auto& [kind, nodes] : by_kind) {
    const auto count = std::max<size_t>(
        1, static_cast<size_t>(std::lround(fraction * nodes.size())));
    std::shuffle(nodes.begin(), nodes.end(), rng);
    keep.insert(keep.end(), nodes.begin(),
                nodes.begin() + std::min(count, nodes.size()));
  }
  std::sort(keep.begin(), keep.end());
  Topology out;
  out.pools = topology.pools;
  for (const int n : keep) {
    NodeInfo node = topology.nodes[n];
    node.gpus.clear();
    for (const int g : topology.nodes[n].gpus) {
      GpuInfo gpu = topology.gpus[g];
      gpu.node = static_cast<int>(out.nodes.size());
      node.gpus.push_back(static_cast<int>(out.gpus.size()));
      out.gpus.push_back(std::move(gpu));
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

}  // namespace tessera::sim
