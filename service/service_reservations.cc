// Reservations on behalf of outside systems (service.h): the same cluster
// state, scorer and store as the queue, under the same mutex. A reservation
// is a running job with no process, kept out of the queue's `running`.

#include <algorithm>
#include <limits>
#include <utility>

#include "service/service_internal.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::CouldEverFitOnNode;
using scheduler::FitOnNode;
using scheduler::JobStateName;
using scheduler::PlacementRequest;
using scheduler::ScoredAllocation;

namespace service_internal {

// Why `d` does not fit `node` now (it could when the node is empty).
std::string WhyNot(const ClusterState& s, int node, const Resources& d,
                   std::string_view subject) {
  const Topology& t = s.topology();
  const NodeInfo& info = t.nodes[node];
  const std::string asks = ", " + std::string(subject) + " asks ";
  if (s.free_cpu_milli(node) < d.cpu_milli) {
    return "only " + std::to_string(s.free_cpu_milli(node)) +
           " CPU milli free" + asks + std::to_string(d.cpu_milli);
  }
  if (s.free_memory_mib_on_node(node) < d.memory_mib) {
    return "only " + std::to_string(s.free_memory_mib_on_node(node)) +
           " MiB memory free" + asks + std::to_string(d.memory_mib);
  }
  if (d.gpus > 0) {
    int free = 0;
    for (const int g : info.gpus) {
      free += s.holders_on(g) == 0 && s.reserved_milli(g) == 0 &&
              s.reserved_memory_mib(g) == 0;
    }
    return "only " + std::to_string(free) + " of its " +
           std::to_string(info.gpus.size()) + " GPUs are free" + asks + "for " +
           std::to_string(d.gpus);
  }
  int best = -1;
  for (const int g : info.gpus) {
    if (s.exclusive(g)) continue;
    if (best < 0 || s.free_milli(g) > s.free_milli(best)) best = g;
  }
  std::string text = "no GPU has " + std::to_string(d.gpu_milli) +
                     " milli and " + std::to_string(d.gpu_memory_mib) +
                     " MiB free";
  if (best >= 0) {
    text += " (the most: " + t.gpus[best].id + " with " +
            std::to_string(s.free_milli(best)) + " milli and " +
            std::to_string(s.free_memory_mib(best)) + " MiB)";
  }
  return text;
}

}  // namespace service_internal

Result<Job> Service::Impl::EndReserved(std::map<JobId, Job>::iterator it,
                                       JobState end, const std::string& reason,
                                       const User* by) {
  Job job = it->second;
  job.state = end;
  job.reason = reason;
  job.allocation = {};
  job.finished_at = Now();
  // Stored first: if the store fails, the reservation stays held, in
  // memory as on disk, and the caller hears 503.
  JobEvent event = Event(job.id, by, std::string(JobStateName(end)), reason);
  if (!by) event.actor = job.origin;
  TESSERA_RETURN_IF_ERROR(Persist(job, &event));
  jobs.reserved.erase(it);
  state.Release(job.id);
  dirty = true;
  wake.notify_all();
  return job;
}

std::vector<NodeRoom> Service::EvaluateNodes(
    const Resources& demand, const std::vector<std::string>& nodes,
    const std::string& pool, std::string_view subject) {
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  MutexLock lock(m.mu);
  const Topology& t = m.state.topology();
  const PlacementRequest request{demand, {}};
  using Verdict = NodeRoom::Verdict;
  std::vector<NodeRoom> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeRoom& v = out[i];
    v.node = nodes[i];
    const int n = t.FindNode(nodes[i]);
    if (n < 0) {
      v.verdict = Verdict::kUnknownNode;
      continue;
    }
    v.node_pool = t.nodes[n].pool;
    if (!pool.empty() && t.nodes[n].pool != pool) {
      v.verdict = Verdict::kOtherPool;
    } else if (!CouldEverFitOnNode(t, n, request)) {
      v.verdict = Verdict::kNeverFits;
    } else if (t.nodes[n].drained) {
      v.verdict = Verdict::kDrained;
    } else if (const std::optional<ScoredAllocation> fit =
                   FitOnNode(m.state, n, request, *m.scorer)) {
      v.verdict = Verdict::kFits;
      v.score = fit->score;
    } else {
      v.verdict = Verdict::kNoRoomNow;
      v.reason = service_internal::WhyNot(m.state, n, demand, subject);
    }
  }
  return out;
}

Result<ReserveOutcome> Service::Reserve(Job job, const std::string& node,
                                        const std::string& pool,
                                        std::string_view subject) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  if (job.origin.empty()) {
    return BadInput("a reservation needs the origin that holds it");
  }
  Impl& m = *impl;
  MutexLock lock(m.mu);
  const Topology& t = m.state.topology();
  using Kind = ReserveOutcome::Kind;
  ReserveOutcome out;
  const int n = t.FindNode(node);
  if (n < 0) {
    out.kind = Kind::kUnknownNode;
    return out;
  }
  out.node_pool = t.nodes[n].pool;
  if (!pool.empty() && t.nodes[n].pool != pool) {
    out.kind = Kind::kOtherPool;
    return out;
  }
  const std::optional<ScoredAllocation> fit =
      FitOnNode(m.state, n, PlacementRequest{job.demand, {}}, *m.scorer);
  if (!fit) {
    out.kind = Kind::kNoRoom;
    out.reason = t.nodes[n].drained ? std::string("drained in tessera")
                                    : service_internal::WhyNot(
                                          m.state, n, job.demand, subject);
    return out;
  }
  job.request.pool = t.nodes[n].pool;
  job.state = JobState::kRunning;
  job.submitted_at = job.started_at = m.Now();
  job.allocation = fit->allocation;
  job.pid = 0;
  JobEvent event = m.Event(0, nullptr, "reserved",
                           "for " + std::string(subject) + " on " + node);
  event.actor = job.origin;
  auto id = m.store->Insert(job, &event);  // on disk before the caller hears
  if (!id) {
    m.metrics.store_errors++;
    return Unavailable("the job store failed, nothing was reserved: " +
                       id.error().message);
  }
  job.id = *id;
  TESSERA_RETURN_IF_ERROR(m.state.Reserve(job.id, job.allocation));
  m.jobs.reserved.emplace(job.id, job);
  out.kind = Kind::kReserved;
  out.job = std::move(job);
  return out;
}

Result<std::optional<Job>> Service::EndReservation(JobId id, JobState end,
                                                   const std::string& reason) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  Impl& m = *impl;
  MutexLock lock(m.mu);
  auto it = m.jobs.reserved.find(id);
  if (it == m.jobs.reserved.end()) return std::optional<Job>();
  Result<Job> job = m.EndReserved(it, end, reason);
  TESSERA_RETURN_IF_ERROR(job);
  return std::optional<Job>(std::move(*job));
}

std::vector<Job> Service::Reservations(const std::string& origin) {
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  MutexLock lock(m.mu);
  std::vector<Job> out;
  for (const auto& [id, job] : m.jobs.reserved) {
    if (job.origin == origin) out.push_back(job);
  }
  return out;
}

}  // namespace tessera::service
