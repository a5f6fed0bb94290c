// PlanRound (round.h): the tree's plan, then each pool's policy on what
// it offers.
#include "scheduler/round.h"

#include <chrono>
#include <utility>

namespace tessera::scheduler {

QueueAmount QueuedAmount(const Resources& demand, const Topology& t,
                         const std::string& pool) {
  if (demand.gpus <= 0) return {demand.gpu_milli, demand.gpu_memory_mib};
  int64_t memory = 0;
  for (const NodeInfo& n : t.nodes) {
    if (n.pool != pool || n.gpus.empty()) continue;
    memory = t.gpus[n.gpus[0]].memory_mib;
    break;
  }
  return {int64_t{1000} * demand.gpus, memory * demand.gpus};
}

QueueAmount HeldAmount(const Allocation& a) {
  QueueAmount out;
  for (const GpuShare& g : a.gpus) {
    out.gpu_milli += g.milli;
    out.gpu_memory_mib += g.memory_mib;
  }
  return out;
}

namespace {

// A queued job and its pool.
struct Queued {
  const QueuedJob* job = nullptr;
  const RoundPool* pool = nullptr;
};

// The tree's plan. Its reclaim asks each pool's policy which job it would
// start next (TreeTrial), among the jobs it is given, in their order.
TreePlan PlanTree(const RoundInput& in, const std::map<JobId, Queued>& by_id) {
  const RoundTree& tree = *in.tree;
  const TreeTrial trial = [&](const ClusterState& s,
                              const std::vector<JobId>& ids) {
    Decision out;
    for (const RoundPool& pool : in.pools) {
      std::vector<QueuedJob> waiting;
      for (const JobId id : ids) {
        const Queued& q = by_id.at(id);
        if (q.pool == &pool) waiting.push_back(*q.job);
      }
      if (waiting.empty() || pool.policy == nullptr) continue;
      Decision d =
          pool.policy->Schedule(waiting, *pool.running, s, in.allocate, in.now);
      out.start.insert(out.start.end(), d.start.begin(), d.start.end());
      out.preempt.insert(out.preempt.end(), d.preempt.begin(), d.preempt.end());
    }
    return out;
  };
  return PlanTreeRound(
      tree.held, tree.pending, tree.victims, *in.state,
      [&](const ClusterState& s, JobId id) {
        return in.allocate(s, *by_id.at(id).job);
      },
      tree.reclaiming, tree.reclaimers, trial);
}

// The jobs of `pool` the tree offers (all, without a tree), less those a
// flat quota holds back (`held` says why), in queue order.
std::vector<QueuedJob> Offered(const RoundInput& in, const RoundPool& pool,
                               const std::set<JobId>& tree_offer,
                               std::map<JobId, std::string>& held) {
  std::vector<QueuedJob> out;
  for (const QueuedJob& q : *pool.queue) {
    if (in.tree && !tree_offer.count(q.id)) continue;
    if (in.hold_back) {
      if (std::string why = in.hold_back(q); !why.empty()) {
        held[q.id] = std::move(why);
        continue;
      }
    }
    out.push_back(q);
  }
  return out;
}

}  // namespace

RoundPlan PlanRound(const RoundInput& in) {
  RoundPlan out;
  std::map<JobId, Queued> by_id;
  for (const RoundPool& pool : in.pools) {
    for (const QueuedJob& q : *pool.queue) by_id[q.id] = {&q, &pool};
  }
  std::set<JobId> offered;
  if (in.tree) {
    out.tree = PlanTree(in, by_id);
    offered.insert(out.tree->offer.begin(), out.tree->offer.end());
    out.held = out.tree->held;
    if (in.options.replan_after_reclaim && !out.tree->reclaim.empty()) {
      out.replan = true;
      return out;
    }
  }
  for (const RoundPool& pool : in.pools) {
    if (pool.policy == nullptr || pool.queue->empty()) continue;
    // With neither a tree nor a flat quota, every queued job is offered.
    const bool filtered = in.tree || in.hold_back;
    std::vector<QueuedJob> offered_jobs;
    if (filtered) offered_jobs = Offered(in, pool, offered, out.held);
    const std::vector<QueuedJob>& waiting =
        filtered ? offered_jobs : *pool.queue;
    if (waiting.empty()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    Decision d =
        in.tree
            ? ScheduleWithTree(*pool.policy, *out.tree, waiting, *pool.running,
                               *in.state, in.allocate, in.now)
            : pool.policy->Schedule(waiting, *pool.running, *in.state,
                                    in.allocate, in.now);
    out.pools.push_back(
        {pool.name, std::move(d),
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
             .count()});
  }
  return out;
}

Decision PlanPoolRound(const ClusterState& state, double now,
                       const RoundPool& pool, const Allocator& allocate) {
  RoundInput in;
  in.state = &state;
  in.now = now;
  in.pools = {pool};
  in.allocate = allocate;
  return PlanRound(in).OnlyDecision();
}

}  // namespace tessera::scheduler
