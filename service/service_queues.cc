// The queue tree in the service (docs/quotas.md): which queue a job is
// in, the round's plan (offer, reclaim, promote), each start's mark
// (guaranteed or borrowed, stored with the job), and the queues as
// GET /v1/cluster shows them. The decisions are scheduler/queue_tree.h's.
#include <algorithm>

#include "scheduler/elastic.h"
#include "service/service_internal.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::GuaranteedPart;
using scheduler::kNoLimit;
using scheduler::QueueAmount;
using scheduler::QueueReport;
using scheduler::TreeJob;

using service_internal::EstimateHeld;
using service_internal::HeldBy;

namespace {

QueueAmount AmountOf(const service_internal::QuotaUse& u) {
  return {u.gpu_milli, u.gpu_memory_mib};
}

}  // namespace

Status Service::Impl::SetUpQueues() {
  if (options.queues.empty()) return {};
  Result<QueueTree> t = QueueTree::Make(options.queues);
  if (!t) return t.error();
  tree = std::move(t).value();
  return {};
}

Status Service::Impl::CheckQueue(const JobRequest& request) const {
  if (request.queue.empty()) return {};
  if (tree.empty()) {
    return BadInput(
        "queue: the service has no queues (the serve config's "
        "'queues:')");
  }
  if (tree.Find(request.queue) <= 0) {
    return BadInput("queue: no queue '" + request.queue + "'");
  }
  return {};
}

namespace {

int QueueOf(const QueueTree& tree, const Job& j) {
  const int q = j.queue.empty() ? -1 : tree.Find(j.queue);
  return q >= 0 ? q : std::max(0, tree.Route(j.request.queue, j.user, j.team));
}

// A running (or starting) job as the tree counts it: an elastic job's
// guaranteed part only (its extras are ExtrasOf's), with the job's mark.
TreeJob TreeJobOf(const QueueTree& tree, const Job& j) {
  return {
      j.id,       QueueOf(tree, j),      AmountOf(HeldBy(GuaranteedPart(j))),
      j.borrowed, j.request.preemptible, j.started_at};
}

// An elastic job's extras (docs/elastic.md, "Fairness and quotas"): a
// second entry of the same id, always borrowed use of the job's queue
// (they are asked back before anybody is reclaimed); none without extras.
std::optional<TreeJob> ExtrasOf(const QueueTree& tree, const Job& j) {
  if (!j.request.elastic ||
      j.allocation.gpus.size() <= static_cast<size_t>(j.request.elastic->min)) {
    return std::nullopt;
  }
  const QueueAmount all = AmountOf(HeldBy(j.allocation));
  const QueueAmount guaranteed = AmountOf(HeldBy(GuaranteedPart(j)));
  return TreeJob{j.id,
                 QueueOf(tree, j),
                 {all.gpu_milli - guaranteed.gpu_milli,
                  all.gpu_memory_mib - guaranteed.gpu_memory_mib},
                 /*borrowed=*/true,
                 /*preemptible=*/true,
                 j.started_at};
}

}  // namespace

bool Service::Impl::ExtrasWithinLimits(const QueueTree& held, const Job& job,
                                       const Allocation& next) const {
  if (tree.empty()) return true;
  const QueueAmount now = AmountOf(HeldBy(job.allocation));
  const QueueAmount then = AmountOf(HeldBy(next));
  const QueueAmount more{then.gpu_milli - now.gpu_milli,
                         then.gpu_memory_mib - now.gpu_memory_mib};
  std::map<std::string, QueueReport> by_name;
  for (QueueReport& r : held.Report()) by_name[r.name] = std::move(r);
  const int q = QueueOf(tree, job);
  if (q <= 0) return true;  // the root has no limit
  for (auto it = by_name.find(tree.name(q)); it != by_name.end();
       it = by_name.find(it->second.parent)) {
    const QueueReport& r = it->second;
    QueueAmount used = r.used;
    used += more;
    if (!used.Within(r.limit)) return false;
    if (r.parent.empty()) break;
  }
  return true;
}

QueueTree Service::Impl::HeldTree() const {
  QueueTree held = tree;
  held.Clear();
  for (const auto& [id, j] : jobs.running) {
    held.Add(TreeJobOf(tree, j));
    if (auto extras = ExtrasOf(tree, j)) held.Add(*extras);
  }
  for (const auto& [id, j] : jobs.starting) held.Add(TreeJobOf(tree, j));
  return held;
}

// Extras count as their queue's borrowed use, but are no victims: the
// policies plan with them free, and they are asked back (MakeRoom) before
// anybody is reclaimed. Starting jobs are no victims either (they have no
// process to stop yet).
RoundTree Service::Impl::TreeRound(const RoundSnapshot& snap, bool reclaiming,
                                   const std::set<JobId>& owners) const {
  RoundTree out{tree, {}, {}, reclaiming, owners};
  out.held.Clear();
  for (const Job& j : snap.held) {
    const TreeJob t = TreeJobOf(tree, j);
    out.held.Add(t);
    if (auto extras = ExtrasOf(tree, j)) out.held.Add(*extras);
    if (j.state == JobState::kRunning) out.victims.push_back(t);
  }
  for (const Job& j : snap.queue) {
    out.pending.push_back({j.id, tree.Route(j.request.queue, j.user, j.team),
                           AmountOf(EstimateHeld(j, snap.state.topology())),
                           j.request.preemptible});
  }
  return out;
}

void Service::Impl::ApplyQueuePlan(const TreePlan& plan) {
  for (const JobId id : plan.promote) {
    auto it = jobs.running.find(id);
    if (it == jobs.running.end() || !it->second.borrowed) continue;
    Job job = it->second;
    job.borrowed = false;
    const JobEvent event =
        Event(id, nullptr, "guaranteed",
              "now within queue '" + job.queue + "''s guarantee");
    if (Persist(job, &event).ok()) it->second = std::move(job);
  }
  for (const JobId v : plan.reclaim) {
    auto it = jobs.running.find(v);
    if (it == jobs.running.end() || !preempt_requested.insert(v).second)
      continue;
    stop_requests.push_back(v);
    reclaim_victims.insert(v);
    const JobId owner = plan.reclaimed_for.at(v);
    reclaimers.insert(owner);
    std::string queue_name = "?";
    for (const Job& j : jobs.queue) {
      if (j.id != owner) continue;
      const int q = tree.Route(j.request.queue, j.user, j.team);
      if (q >= 0) queue_name = tree.name(q);
    }
    preempt_reasons[v] = "reclaimed by queue '" + queue_name + "' (job " +
                         std::to_string(owner) + ")";
    (void)Record(Event(v, nullptr, "preemption requested",
                       "borrowed capacity " + preempt_reasons[v]));
  }
}

bool Service::Impl::MarkStart(QueueTree& held, Job& job, const Allocation& a,
                              std::string* why) const {
  const int q = tree.Route(job.request.queue, job.user, job.team);
  if (q < 0) {
    *why = "no queue '" + job.request.queue + "'";
    return false;
  }
  const QueueAmount amount = AmountOf(HeldBy(a));
  const QueueTree::Fit fit = held.Classify(q, amount, job.request.preemptible);
  if (fit == QueueTree::Fit::kNo) {
    *why = "queue '" + tree.name(q) + "': beyond its guarantee and " +
           (job.request.preemptible ? "its borrowing limit"
                                    : "only preemptible jobs borrow");
    return false;
  }
  job.queue = q == 0 ? "(root)" : tree.name(q);
  job.borrowed = fit == QueueTree::Fit::kBorrowed;
  held.Add({job.id, q, amount, job.borrowed, job.request.preemptible, 0});
  return true;
}

nlohmann::json Service::Impl::QueuesJson() const {
  nlohmann::json out = nlohmann::json::array();
  if (tree.empty()) return out;
  std::map<std::string, int64_t> queued;
  for (const Job& j : jobs.queue) {
    const int q = tree.Route(j.request.queue, j.user, j.team);
    if (q > 0) ++queued[tree.name(q)];
  }
  const auto amount = [](const QueueAmount& a) {
    const auto v = [](int64_t x) {
      return x >= kNoLimit ? nlohmann::json() : nlohmann::json(x);
    };
    return nlohmann::json{{"gpu_milli", v(a.gpu_milli)},
                          {"gpu_memory_mib", v(a.gpu_memory_mib)}};
  };
  for (const QueueReport& r : HeldTree().Report()) {
    out.push_back({{"name", r.name},
                   {"parent", r.parent.empty() ? nlohmann::json()
                                               : nlohmann::json(r.parent)},
                   {"depth", r.depth},
                   {"weight", r.weight},
                   {"guaranteed", amount(r.guaranteed)},
                   {"limit", amount(r.limit)},
                   {"used", amount(r.used)},
                   {"borrowed", amount(r.borrowed)},
                   {"idle", amount(r.idle)},
                   {"lent", amount(r.lent)},
                   {"running", r.running},
                   {"borrowing_jobs", r.borrowing_jobs},
                   {"queued", queued[r.name]}});
  }
  return out;
}

}  // namespace tessera::service
