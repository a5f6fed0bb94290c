// TimedTree: the timed replay's round under the queue tree
// (timed_tree_internal.h).
#include "sim/timed_tree_internal.h"

#include <map>
#include <utility>

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::GpuShare;
using scheduler::NodeInfo;
using scheduler::PlanTreeRound;
using scheduler::QueueAmount;
using scheduler::ScheduleWithTree;
using scheduler::TreePending;
using scheduler::TreeTrial;

namespace {

// What an allocation holds, as a quota counts it.
QueueAmount AmountOf(const Allocation& a) {
  QueueAmount out;
  for (const GpuShare& g : a.gpus) {
    out.gpu_milli += g.milli;
    out.gpu_memory_mib += g.memory_mib;
  }
  return out;
}

}  // namespace

TimedTree::TimedTree(QueueTree tree, const std::vector<TimedPod>& pods,
                     const Topology& topology, std::string_view pool)
    : tree_(std::move(tree)),
      pods_(pods),
      tree_job_(pods.size(), TreeJob{}),
      borrow_(pods.size(), 0) {
  for (const NodeInfo& n : topology.nodes) {
    if (n.pool == pool && !n.gpus.empty()) {
      gpu_memory_mib_ = topology.gpus[n.gpus[0]].memory_mib;
      break;
    }
  }
}

int TimedTree::QueueOf(int p) const {
  return tree_.Route("", "", pods_[p].job.team);
}

void TimedTree::Started(int p, const Allocation& a, double now) {
  tree_job_[p] = {pods_[p].job.id, QueueOf(p), AmountOf(a),
                  borrow_[p] != 0, true,       now};
  tree_.Add(tree_job_[p]);
}

void TimedTree::Stopped(int p) { tree_.Remove(tree_job_[p]); }

Decision TimedTree::Schedule(const TimedTreeRound& round) {
  TreePlan plan = Plan(round, false);
  Promote(plan.promote);
  if (!plan.reclaim.empty()) {
    for (const auto& [v, owner] : plan.reclaimed_for) {
      reclaimers_.insert(owner);
    }
    for (const JobId v : plan.reclaim) round.reclaim(static_cast<int>(v - 1));
    plan = Plan(round, true);  // what they freed goes to the owners
  }
  Decision d = ScheduleWithTree(round.policy, plan, round.queue, round.running,
                                round.state, round.allocate, round.now);
  if (!d.preempt.empty()) return d;  // Round plans again after them
  return MarkStarts(std::move(d), round.now);
}

// PlanTreeRound on the replay now: the queued pods with what they would
// hold, the running ones as the tree counts them.
TreePlan TimedTree::Plan(const TimedTreeRound& round, bool reclaiming) const {
  std::vector<TreePending> pending;
  for (const QueuedJob& q : round.queue) {
    const auto p = static_cast<int>(q.id - 1);
    const Resources& d = q.demand;
    const QueueAmount amount =
        d.gpus > 0
            ? QueueAmount{int64_t{1000} * d.gpus, gpu_memory_mib_ * d.gpus}
            : QueueAmount{d.gpu_milli, d.gpu_memory_mib};
    pending.push_back({q.id, QueueOf(p), amount, true});
  }
  std::vector<TreeJob> running;
  for (const RunningJob& r : round.running) {
    running.push_back(tree_job_[r.id - 1]);
  }
  // The reclaim asks the policy which pod it would start next.
  std::map<JobId, const QueuedJob*> queued;
  for (const QueuedJob& q : round.queue) queued[q.id] = &q;
  const TreeTrial trial = [&](const ClusterState& s,
                              const std::vector<JobId>& ids) {
    std::vector<QueuedJob> jobs;
    for (const JobId id : ids) jobs.push_back(*queued.at(id));
    return round.policy.Schedule(jobs, round.running, s, round.allocate,
                                 round.now);
  };
  return PlanTreeRound(
      tree_, pending, running, round.state,
      [&](const ClusterState& s, JobId id) {
        return round.allocate(s, pods_[id - 1].job);
      },
      reclaiming, reclaimers_, trial);
}

// The running borrowed pods that now fit their queue's guarantee are
// counted guaranteed from now on.
void TimedTree::Promote(const std::vector<JobId>& ids) {
  for (const JobId id : ids) {
    TreeJob& t = tree_job_[id - 1];
    tree_.Remove(t);
    t.borrowed = false;
    tree_.Add(t);
  }
}

// The starts of `d` in order, each marked guaranteed or borrowed as the
// tree, with the starts before it, classes it; one it has no room for
// does not start.
Decision TimedTree::MarkStarts(Decision d, double now) {
  QueueTree held = tree_;
  Decision out;
  for (auto& [id, a] : d.start) {
    const auto p = static_cast<int>(id - 1);
    const QueueAmount amount = AmountOf(a);
    const QueueTree::Fit fit = held.Classify(QueueOf(p), amount, true);
    if (fit == QueueTree::Fit::kNo) continue;
    borrow_[p] = fit == QueueTree::Fit::kBorrowed;
    held.Add({id, QueueOf(p), amount, borrow_[p] != 0, true, now});
    reclaimers_.erase(id);  // its room is used
    out.start.emplace_back(id, std::move(a));
  }
  return out;
}

}  // namespace tessera::sim
