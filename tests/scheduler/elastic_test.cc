// ElasticStartAllocation: an elastic job's guaranteed part goes to the node
// with the most room to grow up to max (ElasticRoomOnNode), the scorer
// breaking ties; FreeWorkerGpus; the invariants of every start.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/elastic.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using testing::kGiB;
using testing::MakeTopology;

// One whole GPU per worker, 1 CPU and 1 GiB each.
const Resources kWholeWorker{1, 0, 0, 1000, kGiB};

// Holds `count` whole GPUs of `node` (its first free ones) for `job`, with
// `per_gpu`'s CPU and memory for each; what it holds.
Allocation Hold(ClusterState& s, JobId job, int node, int count,
                const Resources& per_gpu = {}) {
  Allocation a;
  a.node = node;
  a.exclusive = true;
  for (const int g : s.topology().nodes[node].gpus) {
    if (static_cast<int>(a.gpus.size()) == count) break;
    if (s.holders_on(g) == 0) a.gpus.push_back({g, kFullGpuMilli, 0});
  }
  a.cpu_milli = per_gpu.cpu_milli * count;
  a.memory_mib = per_gpu.memory_mib * count;
  EXPECT_EQ(static_cast<int>(a.gpus.size()), count);
  EXPECT_TRUE(s.Reserve(job, a).ok());
  return a;
}

std::unique_ptr<GpuScorer> Scorer(const std::string& name) {
  auto scorer = MakeScorer(name);
  EXPECT_TRUE(scorer) << name;
  return std::move(*scorer);
}

TEST(ElasticStartAllocation, PrefersTheNodeWhereTheJobCanGrow) {
  // node0: 3 of 4 GPUs held; node1: all 4 free.
  ClusterState s(MakeTopology({{40, 40, 40, 40}, {40, 40, 40, 40}}));
  Hold(s, 1, 0, 3);
  const ElasticRequest e{1, 4};
  for (const std::string name : {"best-fit", "fgd", "first-fit"}) {
    auto scorer = Scorer(name);
    // The old rule, the scorer's best node for `min` workers: the full one
    // (best-fit and fgd pack; first-fit takes the first).
    auto old = FindAllocation(
        s, "default",
        PlacementRequest{ElasticGuaranteedDemand(kWholeWorker, e), {}},
        *scorer);
    ASSERT_TRUE(old);
    EXPECT_EQ(old->node, 0) << name;
    auto a = ElasticStartAllocation(s, "default", kWholeWorker, e, *scorer);
    ASSERT_TRUE(a) << name;
    EXPECT_EQ(a->node, 1) << name;
    ASSERT_EQ(a->gpus.size(), 1u);
    EXPECT_EQ(a->cpu_milli, 1000);
    EXPECT_EQ(a->memory_mib, kGiB);
    EXPECT_TRUE(s.Fits(*a));
    ClusterState after = s;
    ASSERT_TRUE(after.Reserve(2, *a).ok());
    EXPECT_EQ(FreeWorkerGpus(after, *a, kWholeWorker, 3).size(), 3u) << name;
  }
}

TEST(ElasticStartAllocation, RoomIsCappedAtMaxAndTheScorerBreaksTies) {
  // Room for up to 4 workers: node0 1, node1 4, node2 2.
  ClusterState s(
      MakeTopology({{40, 40, 40, 40}, {40, 40, 40, 40}, {40, 40, 40, 40}}));
  Hold(s, 1, 0, 3);
  Hold(s, 2, 2, 2);
  EXPECT_EQ(ElasticRoomOnNode(s, 0, kWholeWorker, 4), 1);
  EXPECT_EQ(ElasticRoomOnNode(s, 1, kWholeWorker, 4), 4);
  EXPECT_EQ(ElasticRoomOnNode(s, 2, kWholeWorker, 4), 2);
  EXPECT_EQ(ElasticRoomOnNode(s, 1, kWholeWorker, 2), 2);
  auto best_fit = Scorer("best-fit");
  auto worst_fit = Scorer("worst-fit");
  // max 4: only node1 has room for all.
  EXPECT_EQ(
      ElasticStartAllocation(s, "default", kWholeWorker, {1, 4}, *best_fit)
          ->node,
      1);
  // max 2: node1 and node2 both have room for 2; best-fit packs (node2),
  // worst-fit spreads (node1).
  EXPECT_EQ(
      ElasticStartAllocation(s, "default", kWholeWorker, {1, 2}, *best_fit)
          ->node,
      2);
  EXPECT_EQ(
      ElasticStartAllocation(s, "default", kWholeWorker, {1, 2}, *worst_fit)
          ->node,
      1);
  // min = max: the scorer's choice alone, as FindAllocation's.
  for (const ElasticRequest e : {ElasticRequest{1, 1}, ElasticRequest{2, 2}}) {
    auto a = ElasticStartAllocation(s, "default", kWholeWorker, e, *best_fit);
    auto f = FindAllocation(
        s, "default",
        PlacementRequest{ElasticGuaranteedDemand(kWholeWorker, e), {}},
        *best_fit);
    ASSERT_TRUE(a && f);
    EXPECT_EQ(a->node, f->node);
    EXPECT_EQ(a->gpus.size(), f->gpus.size());
  }
  // Nobody has room for min 5.
  EXPECT_FALSE(
      ElasticStartAllocation(s, "default", kWholeWorker, {5, 8}, *best_fit));
}

TEST(ElasticStartAllocation, RoomCountsTheNodesCpuPoolAndDrain) {
  Topology t = MakeTopology(
      {{40, 40, 40, 40}, {40, 40, 40, 40}, {40, 40}, {40, 40, 40, 40}},
      {"default", "default", "default", "other"});
  t.pools = {"default", "other"};
  t.nodes[1].drained = true;
  ClusterState s(t);
  // node0: 4 GPUs free but CPU for 2 workers of 6 CPUs (16 on the node).
  const Resources heavy{1, 0, 0, 6000, kGiB};
  EXPECT_EQ(ElasticRoomOnNode(s, 0, heavy, 4), 2);
  EXPECT_EQ(ElasticRoomOnNode(s, 1, heavy, 4), 0);  // drained
  EXPECT_EQ(ElasticRoomOnNode(s, 2, heavy, 4), 2);
  auto scorer = Scorer("worst-fit");
  // A tie at 2 (node0 by CPU, node2 by GPUs); node3 is in another pool.
  auto a = ElasticStartAllocation(s, "", heavy, {1, 4}, *scorer);
  ASSERT_TRUE(a);
  EXPECT_NE(a->node, 1);
  EXPECT_NE(a->node, 3);
  auto other = ElasticStartAllocation(s, "other", heavy, {1, 4}, *scorer);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->node, 3);
}

TEST(ElasticStartAllocation, FractionalWorkersGoWhereMostGpusHaveTheirShare) {
  // A worker is 300 milli and 8 GiB of one GPU; one per GPU.
  const Resources worker{0, 300, 8 * kGiB, 500, kGiB};
  ClusterState s(MakeTopology({{40, 40, 40}, {40, 40, 40}}));
  // node0: two GPUs almost full; node1: one GPU half used.
  for (const int g : {0, 1}) {
    ASSERT_TRUE(
        s.Reserve(10 + g, Allocation{0, {{g, 900, 4 * kGiB}}, 0, 0, false})
            .ok());
  }
  ASSERT_TRUE(
      s.Reserve(20, Allocation{1, {{3, 500, 4 * kGiB}}, 0, 0, false}).ok());
  EXPECT_EQ(ElasticRoomOnNode(s, 0, worker, 3), 1);
  EXPECT_EQ(ElasticRoomOnNode(s, 1, worker, 3), 3);
  auto scorer = Scorer("best-fit");
  auto a = ElasticStartAllocation(s, "default", worker, {2, 3}, *scorer);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 1);
  ASSERT_EQ(a->gpus.size(), 2u);
  EXPECT_NE(a->gpus[0].gpu, a->gpus[1].gpu);
  EXPECT_EQ(a->cpu_milli, 1000);
  EXPECT_TRUE(s.Fits(*a));
  // min = max = 2 fits node1 alone (node0 has one GPU with 300 free).
  auto two = ElasticStartAllocation(s, "default", worker, {2, 2}, *scorer);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->node, 1);
}

// On random states: a start exists exactly when some node has room for
// min; it fits, holds min workers on distinct GPUs of one node of the pool,
// and no other node has more room (capped at max).
TEST(ElasticStartAllocation, InvariantsOnRandomStates) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::vector<int>> nodes;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      nodes.push_back(std::vector<int>(1 + rng() % 8, 40));
    }
    ClusterState s(MakeTopology(nodes));
    JobId job = 1;
    for (int i = 0; i < n; ++i) {
      const int held = static_cast<int>(rng() % (nodes[i].size() + 1));
      if (held > 0) Hold(s, job++, i, held);
    }
    const int max = 1 + static_cast<int>(rng() % 8);
    const int min = 1 + static_cast<int>(rng() % max);
    const ElasticRequest e{min, max};
    for (const std::string name : {"best-fit", "worst-fit", "fgd"}) {
      auto scorer = Scorer(name);
      auto a = ElasticStartAllocation(s, "default", kWholeWorker, e, *scorer);
      int best_room = 0;
      for (int i = 0; i < n; ++i) {
        best_room =
            std::max(best_room, ElasticRoomOnNode(s, i, kWholeWorker, max));
      }
      ASSERT_EQ(a.has_value(), best_room >= min) << trial << " " << name;
      if (!a) continue;
      EXPECT_TRUE(s.Fits(*a));
      ASSERT_EQ(static_cast<int>(a->gpus.size()), min);
      for (const GpuShare& g : a->gpus) {
        EXPECT_EQ(s.topology().gpus[g.gpu].node, a->node);
      }
      EXPECT_EQ(ElasticRoomOnNode(s, a->node, kWholeWorker, max), best_room);
      ClusterState after = s;
      ASSERT_TRUE(after.Reserve(job, *a).ok());
      EXPECT_EQ(static_cast<int>(
                    FreeWorkerGpus(after, *a, kWholeWorker, max - min).size()),
                best_room - min);
    }
  }
}

// ---- The round's elastic rules (PlanOnGuaranteed, ExtrasInTheWay,
// GrowOrder): one implementation for the service and the replays.

// A running elastic job holding `count` whole GPUs of `node` (workers
// 0..count-1), min..max workers.
struct Running {
  JobId id;
  Allocation allocation;
  std::vector<int> workers;
  std::vector<int> releasing;
  ElasticHolding View(int min, int max, double started_at) const {
    return {id,         &allocation, &workers,  kWholeWorker,
            {min, max}, started_at,  &releasing};
  }
};

Running StartElastic(ClusterState& s, JobId id, int node, int count) {
  Running r{id, Hold(s, id, node, count, kWholeWorker), {}, {}};
  for (int w = 0; w < count; ++w) r.workers.push_back(w);
  return r;
}

TEST(ElasticRound, PoliciesPlanOnTheGuaranteedPartOnly) {
  ClusterState s(MakeTopology({{40, 40, 40, 40}, {40, 40, 40, 40}}));
  const Running a = StartElastic(s, 1, 0, 3);  // min 1: 2 extras
  const Running b = StartElastic(s, 2, 1, 2);  // min 2: no extra
  const ClusterState plan =
      PlanOnGuaranteed(s, {a.View(1, 4, 0), b.View(2, 2, 0)});
  ASSERT_NE(plan.AllocationOf(1), nullptr);
  EXPECT_EQ(plan.AllocationOf(1)->gpus.size(), 1u);
  EXPECT_EQ(plan.AllocationOf(1)->cpu_milli, 1000);
  EXPECT_EQ(plan.AllocationOf(2)->gpus.size(), 2u);
  EXPECT_EQ(plan.holders_on(0), 1);  // worker 0 stays
  EXPECT_EQ(plan.holders_on(1), 0);
  EXPECT_EQ(plan.holders_on(2), 0);
  // The state itself is untouched.
  EXPECT_EQ(s.AllocationOf(1)->gpus.size(), 3u);
}

TEST(ElasticRound, ExtrasOnTheStartsGpusAreTakenBackAndNoOthers) {
  ClusterState s(MakeTopology({{40, 40, 40, 40}, {40, 40, 40, 40}}));
  const Running a = StartElastic(s, 1, 0, 4);  // workers 0..3 on GPUs 0..3
  const Running far = StartElastic(s, 2, 1, 3);
  Allocation start;
  start.node = 0;
  start.exclusive = true;
  start.gpus = {{2, kFullGpuMilli, 0}, {3, kFullGpuMilli, 0}};
  start.cpu_milli = 1000;
  const auto back =
      ExtrasInTheWay(s, start, {a.View(1, 4, 0), far.View(1, 3, 0)});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id, 1);
  EXPECT_EQ(back[0].workers, (std::vector<int>{2, 3}));
  // A guaranteed worker is never in the way: with min 4, nothing to take.
  EXPECT_TRUE(ExtrasInTheWay(s, start, {a.View(4, 4, 0)}).empty());
  // Workers asked back already are not asked again.
  Running asked = a;
  asked.releasing = {3};
  const auto again = ExtrasInTheWay(s, start, {asked.View(1, 4, 0)});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].workers, (std::vector<int>{2}));
}

TEST(ElasticRound, WhenTheNodeIsShortOfCpuEveryExtraThereIsInTheWay) {
  ClusterState s(MakeTopology({{40, 40, 40, 40}}));
  const Running a = StartElastic(s, 1, 0, 3);  // 3 CPUs of the node's 16
  Allocation start;
  start.node = 0;
  start.exclusive = true;
  start.gpus = {{3, kFullGpuMilli, 0}};  // a free GPU
  start.cpu_milli = 14000;               // but 13 CPUs are free
  const auto back = ExtrasInTheWay(s, start, {a.View(1, 3, 0)});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].workers, (std::vector<int>{1, 2}));
  start.cpu_milli = 13000;  // fits: no extra is in the way
  EXPECT_TRUE(ExtrasInTheWay(s, start, {a.View(1, 3, 0)}).empty());
}

TEST(ElasticRound, JobsGrowOldestFirstByStartThenId) {
  ClusterState s(MakeTopology({{40, 40, 40, 40}, {40, 40, 40, 40}}));
  const Running a = StartElastic(s, 1, 0, 1);
  const Running b = StartElastic(s, 2, 0, 1);
  const Running c = StartElastic(s, 3, 1, 1);
  const Running full = StartElastic(s, 4, 1, 2);
  // Job 2 started first; 1 and 3 together (id breaks the tie); 4 is at max.
  const std::vector<ElasticHolding> jobs = {
      a.View(1, 4, 20), b.View(1, 4, 10), c.View(1, 4, 20), full.View(1, 2, 0)};
  EXPECT_EQ(GrowOrder(jobs), (std::vector<size_t>{1, 0, 2}));
}

}  // namespace
}  // namespace tessera::scheduler
