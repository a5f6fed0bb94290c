// TimedTree: the timed replay's round under the queue tree
// (timed_tree_internal.h).
#include "sim/timed_tree_internal.h"

#include <map>
#include <utility>

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::HeldAmount;
using scheduler::QueueAmount;
using scheduler::QueuedAmount;
using scheduler::RoundInput;
using scheduler::RoundPlan;
using scheduler::TreePending;

TimedTree::TimedTree(QueueTree tree, const std::vector<TimedPod>& pods,
                     const Topology& topology, std::string_view pool)
    : tree_(std::move(tree)),
      pods_(pods),
      topology_(topology),
      pool_(pool),
      tree_job_(pods.size(), TreeJob{}),
      borrow_(pods.size(), 0) {}

int TimedTree::QueueOf(int p) const {
  return tree_.Route("", "", pods_[p].job.team);
}

void TimedTree::Started(int p, const Allocation& a, double now) {
  tree_job_[p] = {pods_[p].job.id, QueueOf(p), HeldAmount(a),
                  borrow_[p] != 0, true,       now};
  tree_.Add(tree_job_[p]);
}

void TimedTree::Stopped(int p) { tree_.Remove(tree_job_[p]); }

Decision TimedTree::Schedule(const TimedTreeRound& round) {
  RoundInput in;
  in.state = &round.state;
  in.now = round.now;
  in.pools = {{pool_, &round.policy, &round.queue, &round.running}};
  in.allocate = round.allocate;
  in.options.replan_after_reclaim = true;
  in.tree = Round(round, false);
  RoundPlan plan = PlanRound(in);
  Promote(plan.tree->promote);
  if (plan.replan) {
    for (const auto& [v, owner] : plan.tree->reclaimed_for) {
      reclaimers_.insert(owner);
    }
    for (const JobId v : plan.tree->reclaim) {
      round.reclaim(static_cast<int>(v - 1));
    }
    in.tree = Round(round, true);  // what they freed goes to the owners
    plan = PlanRound(in);
  }
  Decision d = std::move(plan).OnlyDecision();
  if (!d.preempt.empty()) return d;  // Round plans again after them
  return MarkStarts(std::move(d), round.now);
}

// The tree's part of the round on the replay now: the queued pods with
// what they would hold, the running ones as the tree counts them.
RoundTree TimedTree::Round(const TimedTreeRound& round, bool reclaiming) const {
  RoundTree out{tree_, {}, {}, reclaiming, reclaimers_};
  for (const QueuedJob& q : round.queue) {
    out.pending.push_back({q.id, QueueOf(static_cast<int>(q.id - 1)),
                           QueuedAmount(q.demand, topology_, pool_), true});
  }
  for (const RunningJob& r : round.running) {
    out.victims.push_back(tree_job_[r.id - 1]);
  }
  return out;
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
    const QueueAmount amount = HeldAmount(a);
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
