// GET /v1/queue (Service::QueueJson): each pool's queued and running jobs,
// and for each queued job why it waits, its position and when it could
// start. Read under the lock from the state the rounds keep; nothing here
// changes it.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/strings.h"
#include "service/job_json.h"
#include "service/service_internal.h"

namespace tessera::scheduler {
namespace {

using nlohmann::json;

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

}  // namespace

nlohmann::json Service::QueueJson(const std::string& pool_filter) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  const Topology& t = m.state.topology();
  const double now = m.Now();
  RoundSnapshot snap{m.state, {}, {}, {}, {}, 0, {}, {}, {}};
  m.FillDecisionInputs(snap, now);
  const double kInf = std::numeric_limits<double>::infinity();
  const auto ends_at = [&](JobId id) {
    auto it = snap.ends.find(id);
    return it == snap.ends.end() ? kInf : it->second;
  };
  json pools = json::array();
  for (const std::string& p : t.pools) {
    if (!pool_filter.empty() && p != pool_filter) continue;
    const QueuePolicy& policy = *m.policies.at(p);
    const std::string policy_name(policy.name());
    int pool_gpus = 0;
    std::vector<int> pool_nodes;
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      if (t.nodes[n].pool != p) continue;
      pool_nodes.push_back(static_cast<int>(n));
      pool_gpus += static_cast<int>(t.nodes[n].gpus.size());
    }
    // The order the policy considers them in: priority first under the
    // priority policy, else submission order (fair-share reorders by
    // usage each round; its position is the submission order).
    std::vector<const Job*> queued;
    for (const Job& j : m.queue) {
      if (j.request.pool == p) queued.push_back(&j);
    }
    if (policy_name == "priority") {
      std::stable_sort(queued.begin(), queued.end(),
                       [](const Job* a, const Job* b) {
                         return a->request.priority > b->request.priority;
                       });
    }
    json waiting = json::array();
    for (size_t i = 0; i < queued.size(); ++i) {
      const Job& j = *queued[i];
      json q = Summary(j, t);
      q["position"] = i + 1;
      q["waiting_s"] = std::max(0.0, now - j.submitted_at);
      std::string code, why;
      json decision = nullptr;
      bool fits_now = false;
      if (auto d = m.start_decisions.find(j.id); d != m.start_decisions.end()) {
        decision = d->second.json;
      }
      if (auto qw = m.quota_waits.find(j.id); qw != m.quota_waits.end()) {
        code = "quota";
        why = "held back by a quota: " + qw->second;
      } else if (decision.is_object() &&
                 decision.value("chosen", json()).is_string() &&
                 decision["chosen"].get<std::string>().rfind("wait", 0) == 0) {
        code = "decision";
        why = "the split-or-wait decision chose to wait: " +
              decision.value("summary", std::string());
      } else if (i >= kExplained) {
        code = "behind";
        why = std::to_string(i) + " jobs are ahead of it in pool " + p;
      } else if (FindAllocation(m.state, p, PlacementRequest{j.demand, {}},
                                *m.scorer)) {
        fits_now = true;
        if (i == 0) {
          code = "next_round";
          why = "it fits now and starts in the next scheduling round";
        } else {
          code = "behind";
          why = "it fits now, but the " + policy_name + " policy considers " +
                std::to_string(i) + (i == 1 ? " job" : " jobs") +
                " ahead of it first (job " + std::to_string(queued[0]->id) +
                " heads the queue)";
        }
      } else {
        // No node has room: drained, too small, or busy (say the closest).
        std::vector<std::string> drained;
        int busy = -1;
        int64_t busy_free = -1;
        const PlacementRequest request{j.demand, {}};
        for (const int n : pool_nodes) {
          if (!CouldEverFitOnNode(t, n, request)) continue;
          if (t.nodes[n].drained) {
            drained.push_back(t.nodes[n].name);
            continue;
          }
          int64_t free = 0;
          for (const int g : t.nodes[n].gpus) free += m.state.free_milli(g);
          if (free > busy_free) {
            busy_free = free;
            busy = n;
          }
        }
        const std::string asks = DemandText(j.demand);
        if (busy >= 0) {
          code = "no_room";
          why = "no node of pool " + p + " has room now for " + asks +
                "; the least busy, " + t.nodes[busy].name + ": " +
                service_internal::WhyNot(m.state, busy, j.demand, "the job");
        } else if (!drained.empty()) {
          code = "drained";
          std::string names;
          for (size_t k = 0; k < drained.size() && k < 5; ++k) {
            names += (k ? ", " : "") + drained[k];
          }
          if (drained.size() > 5) {
            names += " and " + std::to_string(drained.size() - 5) + " more";
          }
          why = "every node of pool " + p + " that could hold " + asks +
                " is drained (" + names + ")";
        } else {
          code = "never_fits";
          why = "no node of pool " + p + " could hold " + asks +
                " even when empty";
        }
      }
      q["why_code"] = code;
      q["why"] = why;
      q["decision"] = decision;
      // When room for it frees: now, or the running jobs' predicted ends.
      json start = nullptr;
      std::string estimate;
      if (fits_now) {
        start = IsoTime(now);
        estimate = "room for it is free now";
      } else if (code == "drained" || code == "never_fits") {
        estimate = "no estimate: no undrained node can hold it";
      } else if (j.demand.gpus == 0 && j.demand.gpu_milli == 0 &&
                 j.demand.gpu_memory_mib == 0) {
        estimate = "no estimate for a job without GPUs";
      } else {
        const int gpus = std::max(1, j.demand.gpus);
        const int milli =
            j.demand.gpus > 0 ? kFullGpuMilli : j.demand.gpu_milli;
        const int64_t mib = j.demand.gpus > 0 ? 0 : j.demand.gpu_memory_mib;
        const StartRequest::Opening o =
            CapacityFreesAt(m.state, p, gpus, milli, mib, now, ends_at);
        if (std::isfinite(o.at)) {
          start = IsoTime(std::max(now, o.at));
          estimate = "room frees in " +
                     HumanDuration(std::max(0.0, o.at - now)) +
                     " when running jobs end (by their time limits or "
                     "measured progress); jobs ahead of it may take it first";
        } else {
          estimate =
              "no estimate: the jobs holding the room have no time limit "
              "and report no progress";
        }
      }
      q["estimated_start"] = start;
      q["estimate"] = estimate;
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
    for (const auto& [id, j] : m.starting) add_running(j);
    for (const auto& [id, j] : m.running) add_running(j);
    for (const auto& [id, j] : m.reserved) add_running(j);
    pools.push_back({{"name", p},
                     {"policy", policy_name},
                     {"gpus", pool_gpus},
                     {"queued", std::move(waiting)},
                     {"running", std::move(running)}});
  }
  return {{"now", IsoTime(now)}, {"pools", std::move(pools)}};
}

}  // namespace tessera::scheduler
