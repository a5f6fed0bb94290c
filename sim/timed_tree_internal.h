#ifndef TESSERA_SIM_TIMED_TREE_INTERNAL_H_
#define TESSERA_SIM_TIMED_TREE_INTERNAL_H_

// The timed replay's queue tree (TimedOptions::queues, docs/quotas.md):
// what each running pod counts in it, whether a pod's next start is
// borrowed, the queued pods room was reclaimed for, and a round under the
// tree: the scheduler's own round (PlanRound). Every pod may borrow, and a
// reclaim's victims stop at once (the virtual clock has no grace period:
// RoundOptions::replan_after_reclaim). Internal to sim/ (timed_replay.cc).

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/queue_tree.h"
#include "scheduler/round.h"
#include "scheduler/topology.h"
#include "sim/timed_replay.h"

namespace tessera::sim {

// The queue tree and its rounds (scheduler/).
using scheduler::Allocation;
using scheduler::Allocator;
using scheduler::Decision;
using scheduler::JobId;
using scheduler::QueuePolicy;
using scheduler::QueueTree;
using scheduler::RoundTree;
using scheduler::RunningJob;
using scheduler::TreeJob;
using scheduler::TreePlan;

// What a round under the tree reads of the replay. The references are the
// replay's own state, which `reclaim` changes while the round runs.
struct TimedTreeRound {
  QueuePolicy& policy;
  const std::vector<QueuedJob>& queue;
  const std::vector<RunningJob>& running;
  const ClusterState& state;
  const Allocator& allocate;
  double now = 0;
  // Stops pod p, reclaimed (if it still runs), and queues it again.
  std::function<void(int p)> reclaim;
};

class TimedTree {
 public:
  // `pods` and `topology` must outlive it (pod p is job p + 1). A queued
  // pod counts what QueuedAmount says in `pool`.
  TimedTree(QueueTree tree, const std::vector<TimedPod>& pods,
            const Topology& topology, std::string_view pool);

  // Pod p started at `now` holding `a`: counted in its team's queue,
  // borrowed or guaranteed as the round that started it classed it.
  void Started(int p, const Allocation& a, double now);
  // Pod p no longer runs.
  void Stopped(int p);

  // A round under the tree (PlanRound): promotions, reclaims (their
  // victims stop now and go back to the queue, and the round plans again),
  // then the policy on the offered pods; each start marked guaranteed or
  // borrowed. A decision that preempts is returned as it is (the round
  // plans again after its victims).
  Decision Schedule(const TimedTreeRound& round);

 private:
  int QueueOf(int p) const;
  RoundTree Round(const TimedTreeRound& round, bool reclaiming) const;
  void Promote(const std::vector<JobId>& ids);
  Decision MarkStarts(Decision d, double now);

  QueueTree tree_;
  const std::vector<TimedPod>& pods_;
  const Topology& topology_;
  std::string pool_;
  // Each pod's run as the tree counts it, and whether its next start is
  // borrowed.
  std::vector<TreeJob> tree_job_;
  std::vector<char> borrow_;
  std::set<JobId> reclaimers_;  // queued pods room was reclaimed for
};

}  // namespace tessera::sim

#endif  // TESSERA_SIM_TIMED_TREE_INTERNAL_H_
