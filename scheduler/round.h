// One scheduling round: what the service and every replay plan on, in one
// function (PlanRound), and the amounts the queue tree counts a job by.
//
// A round offers each pool's queued jobs to its policy: all of them with
// no queue tree, else those the tree's plan offers (PlanTreeRound), less
// those a flat quota holds back (`hold_back`). The result is a plan, not
// an action: the caller stops the victims, reserves the starts and takes
// back the extras in their way (scheduler/elastic.h) by its own clock.
// Where the service and a replay differ on purpose, the difference is a
// named option (RoundOptions).
#ifndef TESSERA_SCHEDULER_ROUND_H_
#define TESSERA_SCHEDULER_ROUND_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/queue_tree.h"

namespace tessera::scheduler {

// What a queued job would hold, as the tree and the quotas count it: its
// whole GPUs at the memory of its pool's GPUs (the first node of the pool
// with GPUs), or its fraction.
QueueAmount QueuedAmount(const Resources& demand, const Topology& t,
                         const std::string& pool);
// What an allocation holds.
QueueAmount HeldAmount(const Allocation& a);

// One pool's part of a round. A view: what it points to must outlive the
// call.
struct RoundPool {
  std::string name;
  QueuePolicy* policy = nullptr;  // none: the pool starts nothing
  const std::vector<QueuedJob>* queue = nullptr;     // in queue order
  const std::vector<RunningJob>* running = nullptr;  // preemption victims
};

// The queue tree's part of a round (PlanTreeRound's inputs).
struct RoundTree {
  QueueTree held;                    // with what runs and starts now
  std::vector<TreePending> pending;  // every pool's queued jobs, in order
  std::vector<TreeJob> victims;      // running jobs it may reclaim
  bool reclaiming = false;           // an earlier reclaim's victims still stop
  std::set<JobId> reclaimers;        // queued jobs room was reclaimed for
};

// Where the service and a replay differ on purpose.
struct RoundOptions {
  // A replay's victims stop at once: a round whose tree reclaims runs no
  // policy, and the caller plans again at the same instant with the
  // victims stopped (`reclaiming`). The service's stop over a grace
  // period, so its pools are planned beside the reclaim.
  bool replan_after_reclaim = false;
};

struct RoundInput {
  // The cluster as the policies plan on it: elastic jobs' extras free
  // (PlanOnGuaranteed). Must outlive the call.
  const ClusterState* state = nullptr;
  double now = 0;
  std::vector<RoundPool> pools;
  std::optional<RoundTree> tree;
  // Where a queued job would start in a state, or nullopt (it waits).
  Allocator allocate;
  // A flat quota: asked for each job the tree offers, pool by pool in
  // queue order; a reason holds the job back, "" offers it (and the quota
  // counts it). Empty: no flat quota.
  std::function<std::string(const QueuedJob&)> hold_back;
  RoundOptions options;
};

// One pool's policy's decision and how long it took.
struct PoolPlan {
  std::string pool;
  Decision decision;
  double seconds = 0;
};

struct RoundPlan {
  std::optional<TreePlan> tree;  // with a tree: offers, promotions, reclaims
  std::vector<PoolPlan> pools;   // pools offered nothing are left out
  // Jobs the tree or a flat quota held back from the policies, and why.
  std::map<JobId, std::string> held;
  // The tree reclaims under RoundOptions::replan_after_reclaim: no pool
  // was planned; the caller stops the victims and plans again.
  bool replan = false;

  // The decision of the round's one pool (a replay's), or none.
  Decision OnlyDecision() && {
    return pools.empty() ? Decision{} : std::move(pools.front().decision);
  }
};

RoundPlan PlanRound(const RoundInput& in);

// The round of one pool with neither a tree nor a flat quota (a replay's
// without `queues`): its policy's decision.
Decision PlanPoolRound(const ClusterState& state, double now,
                       const RoundPool& pool, const Allocator& allocate);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_ROUND_H_
