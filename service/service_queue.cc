// GET /v1/queue (Service::QueueJson): each pool's queued and running jobs,
// and for each queued job why it waits, its position and when it could
// start. Read under the lock from the state the rounds keep; nothing here
// changes it.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/strings.h"
#include "service/service_internal.h"
#include "service/wire/job_json.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::CapacityFreesAt;
using scheduler::CouldEverFitOnNode;
using scheduler::FindAllocation;
using scheduler::JobStateName;
using scheduler::kFullGpuMilli;
using scheduler::PlacementRequest;
using scheduler::StartRequest;

namespace {

using nlohmann::json;
using service_internal::DecisionRecord;
using service_internal::DecisionRecordJson;

// Queued jobs of one pool explained node by node; the ones after these get
// only their position (the node scan is O(nodes) per job).
constexpr size_t kExplained = 200;

json Summary(const Job& j, const Topology& t) {
  const int node = j.allocation.node;
  const bool node_known = node >= 0 && node < static_cast<int>(t.nodes.size());
  return {{"id", j.id},
          {"name", j.request.name},
          {"user", j.user},
          {"team", j.team},
          {"state", JobStateName(j.state)},
          {"priority", j.request.priority},
          {"demand", ResourcesJson(j.demand)},
          {"submitted_at", IsoTime(j.submitted_at)},
          {"started_at", IsoTime(j.started_at)},
          {"node", node_known ? json(t.nodes[node].name) : json()},
          {"gpus", AllocationJson(j.allocation, t)},
          {"model", j.request.model.has_value()},
          {"split", !j.plan.is_null()}};
}

// "2 GPUs", "250 milli and 8192 MiB of one GPU", "no GPU".
std::string DemandText(const Resources& d) {
  if (d.gpus > 0) {
    return std::to_string(d.gpus) +
           (d.gpus == 1 ? " whole GPU" : " whole GPUs");
  }
  if (d.gpu_milli > 0 || d.gpu_memory_mib > 0) {
    return std::to_string(d.gpu_milli) + " milli and " +
           std::to_string(d.gpu_memory_mib) + " MiB of one GPU";
  }
  return "no GPU";
}

// One pool as the queue view explains it.
struct PoolView {
  const ClusterState& state;
  const GpuScorer& scorer;
  std::string pool, policy;
  std::vector<int> nodes;  // the pool's nodes
  int gpus = 0;
  std::vector<const Job*> queued;  // in the order the policy considers them
};

// Why a queued job waits: a code for scripts, a sentence for people.
struct Wait {
  std::string code, why;
  bool fits_now = false;
};

// A job no node of the pool has room for now: drained, too small, or busy
// (the closest named).
Wait NoRoom(const PoolView& v, const Job& j) {
  const Topology& t = v.state.topology();
  std::vector<std::string> drained;
  int busy = -1;
  int64_t busy_free = -1;
  const PlacementRequest request{j.demand, {}};
  for (const int n : v.nodes) {
    if (!CouldEverFitOnNode(t, n, request)) continue;
    if (t.nodes[n].drained) {
      drained.push_back(t.nodes[n].name);
      continue;
    }
    int64_t free = 0;
    for (const int g : t.nodes[n].gpus) free += v.state.free_milli(g);
    if (free > busy_free) {
      busy_free = free;
      busy = n;
    }
  }
  const std::string asks = DemandText(j.demand);
  if (busy >= 0) {
    return {"no_room",
            "no node of pool " + v.pool + " has room now for " + asks +
                "; the least busy, " + t.nodes[busy].name + ": " +
                service_internal::WhyNot(v.state, busy, j.demand, "the job")};
  }
  if (!drained.empty()) {
    std::string names;
    for (size_t k = 0; k < drained.size() && k < 5; ++k) {
      names += (k ? ", " : "") + drained[k];
    }
    if (drained.size() > 5) {
      names += " and " + std::to_string(drained.size() - 5) + " more";
    }
    return {"drained", "every node of pool " + v.pool + " that could hold " +
                           asks + " is drained (" + names + ")"};
  }
  return {"never_fits", "no node of pool " + v.pool + " could hold " + asks +
                            " even when empty"};
}

// Why the `i`th queued job of the pool waits: a quota (`quota_wait`, or
// null), the split-or-wait `decision`, the jobs ahead of it, or room.
Wait ExplainWait(const PoolView& v, size_t i, const DecisionRecord* decision,
                 const std::string* quota_wait) {
  const Job& j = *v.queued[i];
  if (quota_wait) return {"quota", "held back by a quota: " + *quota_wait};
  if (decision && decision->decision.waits()) {
    return {"decision",
            "the split-or-wait decision chose to wait: " + decision->summary};
  }
  if (i >= kExplained) {
    return {"behind",
            std::to_string(i) + " jobs are ahead of it in pool " + v.pool};
  }
  if (!FindAllocation(v.state, v.pool, PlacementRequest{j.demand, {}},
                      v.scorer)) {
    return NoRoom(v, j);
  }
  if (i == 0) {
    return {"next_round", "it fits now and starts in the next scheduling round",
            true};
  }
  return {"behind",
          "it fits now, but the " + v.policy + " policy considers " +
              std::to_string(i) + (i == 1 ? " job" : " jobs") +
              " ahead of it first (job " + std::to_string(v.queued[0]->id) +
              " heads the queue)",
          true};
}

// When room for a waiting job frees: now, or at the running jobs'
// predicted ends (`ends_at`); null with the reason when nobody can say.
std::pair<json, std::string> EstimateStart(
    const PoolView& v, const Job& j, const Wait& wait, double now,
    const std::function<double(JobId)>& ends_at) {
  if (wait.fits_now) return {IsoTime(now), "room for it is free now"};
  if (wait.code == "drained" || wait.code == "never_fits") {
    return {nullptr, "no estimate: no undrained node can hold it"};
  }
  if (j.demand.gpus == 0 && j.demand.gpu_milli == 0 &&
      j.demand.gpu_memory_mib == 0) {
    return {nullptr, "no estimate for a job without GPUs"};
  }
  const int gpus = std::max(1, j.demand.gpus);
  const int milli = j.demand.gpus > 0 ? kFullGpuMilli : j.demand.gpu_milli;
  const int64_t mib = j.demand.gpus > 0 ? 0 : j.demand.gpu_memory_mib;
  const StartRequest::Opening o =
      CapacityFreesAt(v.state, v.pool, gpus, milli, mib, now, ends_at);
  if (!std::isfinite(o.at)) {
    return {nullptr,
            "no estimate: the jobs holding the room have no time limit "
            "and report no progress"};
  }
  return {IsoTime(std::max(now, o.at)),
          "room frees in " + HumanDuration(std::max(0.0, o.at - now)) +
              " when running jobs end (by their time limits or measured "
              "progress); jobs ahead of it may take it first"};
}

}  // namespace

nlohmann::json Service::QueueJson(const std::string& pool_filter) {
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  MutexLock lock(m.mu);
  const Topology& t = m.state.topology();
  const double now = m.Now();
  RoundSnapshot snap{m.state, {}, {}, {}, {}, 0, {}, {}, {}};
  m.FillDecisionInputs(snap, now);
  const double kNoEnd = std::numeric_limits<double>::infinity();
  const std::function<double(JobId)> ends_at = [&](JobId id) {
    auto it = snap.ends.find(id);
    return it == snap.ends.end() ? kNoEnd : it->second;
  };
  json pools = json::array();
  for (const std::string& p : t.pools) {
    if (!pool_filter.empty() && p != pool_filter) continue;
    PoolView v{m.state, *m.scorer, p, std::string(m.policies.at(p)->name()),
               {},      0,         {}};
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      if (t.nodes[n].pool != p) continue;
      v.nodes.push_back(static_cast<int>(n));
      v.gpus += static_cast<int>(t.nodes[n].gpus.size());
    }
    // In the order the pool's policy considers them (QueuePolicy::Order).
    std::vector<const Job*> in_pool;
    std::vector<QueuedJob> queued;
    for (const Job& j : m.jobs.queue) {
      if (j.request.pool != p) continue;
      in_pool.push_back(&j);
      queued.push_back(service_internal::AsQueued(j));
    }
    std::vector<RunningJob> running_jobs;
    for (const auto& [id, j] : m.jobs.running) {
      if (j.request.pool == p) {
        running_jobs.push_back(service_internal::AsRunning(j));
      }
    }
    for (const size_t k :
         m.policies.at(p)->Order(queued, running_jobs, m.state, now)) {
      v.queued.push_back(in_pool[k]);
    }
    json waiting = json::array();
    for (size_t i = 0; i < v.queued.size(); ++i) {
      const Job& j = *v.queued[i];
      json q = Summary(j, t);
      q["position"] = i + 1;
      q["waiting_s"] = std::max(0.0, now - j.submitted_at);
      const DecisionRecord* decision = nullptr;
      if (auto d = m.start_decisions.find(j.id); d != m.start_decisions.end()) {
        decision = &d->second;
      }
      const Wait wait = ExplainWait(v, i, decision, m.quotas.WaitOf(j.id));
      q["why_code"] = wait.code;
      q["why"] = wait.why;
      q["decision"] =
          decision ? DecisionRecordJson(*decision, t) : json(nullptr);
      auto [start, estimate] = EstimateStart(v, j, wait, now, ends_at);
      q["estimated_start"] = std::move(start);
      q["estimate"] = std::move(estimate);
      waiting.push_back(std::move(q));
    }
    json running = json::array();
    auto add_running = [&](const Job& j) {
      if (j.request.pool != p) return;
      json r = Summary(j, t);
      r["running_s"] =
          j.started_at > 0 ? std::max(0.0, now - j.started_at) : 0.0;
      const double end = ends_at(j.id);
      r["ends_at"] = std::isfinite(end) ? IsoTime(end) : json();
      running.push_back(std::move(r));
    };
    for (const auto& [id, j] : m.jobs.starting) add_running(j);
    for (const auto& [id, j] : m.jobs.running) add_running(j);
    for (const auto& [id, j] : m.jobs.reserved) add_running(j);
    pools.push_back({{"name", p},
                     {"policy", v.policy},
                     {"gpus", v.gpus},
                     {"queued", std::move(waiting)},
                     {"running", std::move(running)}});
  }
  return {{"now", IsoTime(now)}, {"pools", std::move(pools)}};
}

}  // namespace tessera::service
