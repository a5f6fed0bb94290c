// One scheduling round (scheduler/round.h): each pool's policy sees its
// own queue; a flat quota holds jobs back in queue order, counting the
// ones it offers; under the queue tree, a reclaim either runs the pools
// beside it (the service) or asks the caller to plan again (a replay); the
// amounts a job counts in the tree.
#include "scheduler/round.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kGiB;

// A node of 4 GPUs of `gib` GiB per pool.
Topology Pools(const std::vector<std::string>& pools, int64_t gib = 40) {
  Topology t;
  t.pools = pools;
  for (const std::string& pool : pools) {
    NodeInfo node;
    node.name = pool + "-node";
    node.pool = pool;
    node.cpu_milli = 64000;
    node.memory_mib = 256 * kGiB;
    const int n = static_cast<int>(t.nodes.size());
    for (int i = 0; i < 4; ++i) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back(
          {node.name + "/gpu" + std::to_string(i), n, i, "test", gib * kGiB});
    }
    t.nodes.push_back(node);
  }
  return t;
}

QueuedJob Job(JobId id, int gpus, std::string user = "u") {
  QueuedJob q;
  q.id = id;
  q.user = std::move(user);
  q.submitted_at = static_cast<double>(id);
  q.demand = Resources{gpus, 0, 0, 100, kGiB};
  return q;
}

std::unique_ptr<QueuePolicy> Fifo() {
  return std::move(MakePolicy(PolicyConfig{}).value());
}

struct Round {
  explicit Round(Topology t)
      : state(std::move(t)),
        scorer(std::move(MakeScorer("best-fit").value())) {}
  // Best-fit in `pool`.
  Allocator Allocate(const std::string& pool) {
    return [this, pool](const ClusterState& s, const QueuedJob& q) {
      return FindAllocation(s, pool, q.demand, *scorer);
    };
  }
  ClusterState state;
  std::unique_ptr<GpuScorer> scorer;
};

TEST(PlanRound, EachPoolsPolicySeesItsOwnQueue) {
  Round r(Pools({"a", "b"}));
  auto fifo_a = Fifo(), fifo_b = Fifo();
  const std::vector<QueuedJob> qa = {Job(1, 2), Job(2, 4)};
  const std::vector<QueuedJob> qb = {Job(3, 3)};
  const std::vector<RunningJob> none;
  RoundInput in;
  in.state = &r.state;
  in.pools = {{"a", fifo_a.get(), &qa, &none}, {"b", fifo_b.get(), &qb, &none}};
  // Job 3 is b's; the others a's.
  in.allocate = [&](const ClusterState& s, const QueuedJob& q) {
    return FindAllocation(s, q.id == 3 ? "b" : "a", q.demand, *r.scorer);
  };
  const RoundPlan plan = PlanRound(in);
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[0].pool, "a");
  // fifo: job 2 (four GPUs) does not fit beside job 1, and waits.
  ASSERT_EQ(plan.pools[0].decision.start.size(), 1u);
  EXPECT_EQ(plan.pools[0].decision.start[0].first, 1);
  ASSERT_EQ(plan.pools[1].decision.start.size(), 1u);
  EXPECT_EQ(plan.pools[1].decision.start[0].first, 3);
  EXPECT_FALSE(plan.tree);
  EXPECT_THAT(plan.held, IsEmpty());
  // A pool with nothing queued, or without a policy, is left out.
  in.pools[1].policy = nullptr;
  EXPECT_EQ(PlanRound(in).pools.size(), 1u);
}

TEST(PlanRound, FlatQuotaHoldsBackInQueueOrder) {
  Round r(Pools({"a"}));
  auto fifo = Fifo();
  const std::vector<QueuedJob> q = {Job(1, 1, "ann"), Job(2, 1, "ann"),
                                    Job(3, 1, "bob")};
  const std::vector<RunningJob> none;
  RoundInput in;
  in.state = &r.state;
  in.pools = {{"a", fifo.get(), &q, &none}};
  in.allocate = r.Allocate("a");
  // At most one GPU per user: ann's second job waits, bob's does not.
  std::map<std::string, int> counted;
  std::vector<JobId> asked;
  in.hold_back = [&](const QueuedJob& j) -> std::string {
    asked.push_back(j.id);
    if (counted[j.user] >= 1) return "user '" + j.user + "' at its quota";
    ++counted[j.user];
    return "";
  };
  const RoundPlan plan = PlanRound(in);
  EXPECT_THAT(asked, ElementsAre(1, 2, 3));
  EXPECT_THAT(plan.held.at(2), HasSubstr("ann"));
  ASSERT_EQ(plan.pools.size(), 1u);
  std::vector<JobId> started;
  for (const auto& [id, a] : plan.pools[0].decision.start)
    started.push_back(id);
  EXPECT_THAT(started, ElementsAre(1, 3));
}

QueueSpec Q(std::string name, int64_t milli) {
  QueueSpec s;
  s.name = std::move(name);
  s.guaranteed = {milli, milli * 40};
  return s;
}

// Queue b borrows all four GPUs; a's job of two reclaims the two youngest.
struct Reclaim {
  Reclaim() : r(Pools({"default"})) {
    tree = std::move(QueueTree::Make({Q("a", 2000), Q("b", 2000)}).value());
    const int a = tree.Find("a"), b = tree.Find("b");
    QueueTree held = tree;
    for (JobId id = 1; id <= 4; ++id) {
      auto at =
          FindAllocation(r.state, "default", Job(id, 1).demand, *r.scorer);
      EXPECT_TRUE(at && r.state.Reserve(id, *at).ok());
      const TreeJob t{id, b, {1000, 40000}, id > 2, true, double(id)};
      held.Add(t);
      victims.push_back(t);
      running.push_back({id, "b", "", 0, true, double(id), 0});
    }
    queue = {Job(10, 2, "a")};
    in.state = &r.state;
    in.now = 10;
    in.pools = {{"default", fifo.get(), &queue, &running}};
    in.allocate = r.Allocate("default");
    in.tree =
        RoundTree{held, {{10, a, {2000, 80000}, false}}, victims, false, {}};
  }
  Round r;
  QueueTree tree;
  std::unique_ptr<QueuePolicy> fifo = Fifo();
  std::vector<TreeJob> victims;
  std::vector<RunningJob> running;
  std::vector<QueuedJob> queue;
  RoundInput in;
};

TEST(PlanRound, ServicePlansPoolsBesideAReclaim) {
  Reclaim f;
  const RoundPlan plan = PlanRound(f.in);
  ASSERT_TRUE(plan.tree);
  EXPECT_THAT(plan.tree->reclaim, ElementsAre(4, 3));
  EXPECT_FALSE(plan.replan);
  // The pool was planned: nothing fits until the victims stop.
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_THAT(plan.pools[0].decision.start, IsEmpty());
}

TEST(PlanRound, ReplayPlansAgainAfterItsVictimsStop) {
  Reclaim f;
  f.in.options.replan_after_reclaim = true;
  RoundPlan plan = PlanRound(f.in);
  EXPECT_TRUE(plan.replan);
  EXPECT_THAT(plan.pools, IsEmpty());
  // The victims stop at once; the round plans again, reclaiming.
  for (const JobId v : plan.tree->reclaim) {
    f.r.state.Release(v);
    std::erase_if(f.running, [v](const RunningJob& j) { return j.id == v; });
    std::erase_if(f.in.tree->victims,
                  [v](const TreeJob& j) { return j.id == v; });
    f.in.tree->held.Remove(
        {v, f.tree.Find("b"), {1000, 40000}, true, true, double(v)});
  }
  f.in.tree->reclaiming = true;
  f.in.tree->reclaimers = {10};
  plan = PlanRound(f.in);
  EXPECT_FALSE(plan.replan);
  ASSERT_EQ(plan.pools.size(), 1u);
  ASSERT_EQ(plan.pools[0].decision.start.size(), 1u);
  EXPECT_EQ(plan.pools[0].decision.start[0].first, 10);
}

TEST(QueuedAmount, WholeGpusCountTheirPoolsMemory) {
  Topology t = Pools({"small", "big"}, 24);
  for (GpuInfo& g : t.gpus) {
    if (t.nodes[g.node].pool == "big") g.memory_mib = 80 * kGiB;
  }
  const Resources two{2, 0, 0, 100, kGiB};
  EXPECT_EQ(QueuedAmount(two, t, "small"), (QueueAmount{2000, 48 * kGiB}));
  EXPECT_EQ(QueuedAmount(two, t, "big"), (QueueAmount{2000, 160 * kGiB}));
  // A fraction counts what it asks.
  const Resources part{0, 300, 5 * kGiB, 100, kGiB};
  EXPECT_EQ(QueuedAmount(part, t, "big"), (QueueAmount{300, 5 * kGiB}));
  // What an allocation holds.
  Allocation a;
  a.gpus = {{0, 1000, 24 * kGiB}, {1, 250, 3 * kGiB}};
  EXPECT_EQ(HeldAmount(a), (QueueAmount{1250, 27 * kGiB}));
}

}  // namespace
}  // namespace tessera::scheduler
