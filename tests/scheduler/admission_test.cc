// FindAllocation and the scorers: which GPU a request goes to, whole-GPU
// placement, pools and drained nodes; CouldEverFit; MakeScorer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using ::testing::HasSubstr;

using testing::kGiB;

// testing::MakeTopology with node n in `pools[n]` and the cluster's pools
// "default" and "other".
Topology PooledTopology(const std::vector<std::vector<int>>& nodes,
                        const std::vector<std::string>& pools = {}) {
  return testing::MakeTopology(nodes, pools, {"default", "other"});
}

Resources Fraction(int milli, int64_t memory_mib) {
  return Resources{0, milli, memory_mib, 1000, kGiB};
}

Resources WholeGpus(int n) { return Resources{n, 0, 0, 1000, kGiB}; }

// Reserves a fraction of `gpu` for `job`.
void Use(ClusterState& s, JobId job, int gpu, int milli, int64_t memory_mib) {
  const int node = s.topology().gpus[gpu].node;
  ASSERT_TRUE(s.Reserve(
      job, Allocation{node, {{gpu, milli, memory_mib}}, 0, 0, false}));
}

int GpuChosen(const ClusterState& s, const Resources& demand,
              const std::string& scorer_name) {
  auto scorer = MakeScorer(scorer_name);
  EXPECT_TRUE(scorer) << scorer_name;
  auto a = FindAllocation(s, "default", demand, **scorer);
  if (!a) return -1;
  EXPECT_EQ(a->gpus.size(), 1u);
  EXPECT_TRUE(s.Fits(*a));
  return a->gpus[0].gpu;
}

TEST(FindAllocation, ScorersPackSpreadOrTakeTheFirst) {
  ClusterState s(PooledTopology({{40, 40, 40}}));
  Use(s, 1, 0, 300, 4 * kGiB);
  Use(s, 2, 1, 600, 4 * kGiB);
  const Resources demand = Fraction(200, 8 * kGiB);
  EXPECT_EQ(GpuChosen(s, demand, "best-fit"), 1);   // 200 left
  EXPECT_EQ(GpuChosen(s, demand, "worst-fit"), 2);  // 800 left
  EXPECT_EQ(GpuChosen(s, demand, "first-fit"), 0);
  // Too big for GPU 1: best-fit takes the next fullest.
  EXPECT_EQ(GpuChosen(s, Fraction(500, kGiB), "best-fit"), 0);
}

TEST(FindAllocation, BestFitBreaksMilliTiesByMemory) {
  ClusterState s(PooledTopology({{40, 40}}));
  Use(s, 1, 0, 500, 4 * kGiB);
  Use(s, 2, 1, 500, 20 * kGiB);
  EXPECT_EQ(GpuChosen(s, Fraction(100, kGiB), "best-fit"), 1);
  EXPECT_EQ(GpuChosen(s, Fraction(100, kGiB), "worst-fit"), 0);
}

TEST(FindAllocation, FgdKeepsSliversUsefulWhereBestFitDoesNot) {
  // GPUs with 800 and 500 milli free; a 150-milli task. Best-fit leaves 350
  // on GPU 1, too little for the trace's common 470- and 460-milli tasks;
  // FGD takes GPU 0, whose 650 left still takes the 470s and the 650s.
  ClusterState s(PooledTopology({{80, 80}}));
  Use(s, 1, 0, 200, 0);
  Use(s, 2, 1, 500, 0);
  const Resources demand = Fraction(150, kGiB);
  EXPECT_EQ(GpuChosen(s, demand, "best-fit"), 1);
  EXPECT_EQ(GpuChosen(s, demand, "fgd"), 0);
}

TEST(FindAllocation, FgdAvoidsBreakingAnEmptyGpu) {
  // An empty GPU serves the most common task, a whole GPU: FGD puts the
  // fraction on the partly used one even though worst-fit would not.
  ClusterState s(PooledTopology({{80, 80}}));
  Use(s, 1, 1, 400, 0);
  EXPECT_EQ(GpuChosen(s, Fraction(300, kGiB), "fgd"), 1);
  EXPECT_EQ(GpuChosen(s, Fraction(300, kGiB), "worst-fit"), 0);
}

TEST(FindAllocation, FractionNeedsMilliMemoryAndHostRoom) {
  ClusterState s(PooledTopology({{40, 40}}));
  Use(s, 1, 0, 100, 35 * kGiB);
  EXPECT_EQ(GpuChosen(s, Fraction(100, 10 * kGiB), "first-fit"), 1);
  Use(s, 2, 1, 950, 0);
  EXPECT_EQ(GpuChosen(s, Fraction(100, 10 * kGiB), "first-fit"), -1);
  // Compute is there but the node's CPUs are not.
  ClusterState busy(PooledTopology({{40}}));
  ASSERT_TRUE(busy.Reserve(9, Allocation{0, {}, 15500, 0, false}));
  EXPECT_EQ(GpuChosen(busy, Fraction(100, kGiB), "first-fit"), -1);
}

TEST(FindAllocation, WholeGpusAreFreeOnOneNodeAndExclusive) {
  ClusterState s(PooledTopology({{40, 40}, {80, 80, 80}}));
  Use(s, 1, 0, 100, kGiB);  // node0 has one free GPU left
  auto scorer = MakeScorer("best-fit");
  ASSERT_TRUE(scorer);
  auto a = FindAllocation(s, "default", WholeGpus(2), **scorer);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 1);
  EXPECT_TRUE(a->exclusive);
  ASSERT_EQ(a->gpus.size(), 2u);
  EXPECT_EQ(a->gpus[0], (GpuShare{2, 1000, 80 * kGiB}));
  EXPECT_EQ(a->gpus[1], (GpuShare{3, 1000, 80 * kGiB}));
  // One whole GPU: best-fit packs it onto node0's last free GPU.
  auto one = FindAllocation(s, "default", WholeGpus(1), **scorer);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->node, 0);
  EXPECT_EQ(one->gpus[0].gpu, 1);
  EXPECT_FALSE(FindAllocation(s, "default", WholeGpus(4), **scorer));
  // A fraction on a GPU makes it unavailable to whole-GPU jobs.
  Use(s, 2, 2, 1, 0);
  Use(s, 3, 3, 1, 0);
  EXPECT_FALSE(FindAllocation(s, "default", WholeGpus(2), **scorer));
}

TEST(FindAllocation, KeepsToThePoolAndSkipsDrainedNodes) {
  ClusterState s(
      PooledTopology({{40}, {40}, {40}}, {"default", "other", "default"}));
  auto scorer = MakeScorer("first-fit");
  ASSERT_TRUE(scorer);
  auto a = FindAllocation(s, "other", Fraction(100, kGiB), **scorer);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 1);
  s.SetDrained(0, true);
  a = FindAllocation(s, "", Fraction(100, kGiB), **scorer);  // the default
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 2);
  s.SetDrained(1, true);
  EXPECT_FALSE(FindAllocation(s, "other", Fraction(100, kGiB), **scorer));
  EXPECT_FALSE(FindAllocation(s, "none", Fraction(100, kGiB), **scorer));
}

TEST(CouldEverFit, ComparesWithTheLargestGpuAndNode) {
  Topology t = PooledTopology({{16, 24}, {80}}, {"default", "other"});
  EXPECT_TRUE(CouldEverFit(t, "default", Fraction(1000, 24 * kGiB)));
  EXPECT_FALSE(CouldEverFit(t, "default", Fraction(100, 25 * kGiB)));
  EXPECT_TRUE(CouldEverFit(t, "other", Fraction(100, 80 * kGiB)));
  EXPECT_FALSE(CouldEverFit(t, "default", Fraction(1001, kGiB)));
  EXPECT_FALSE(CouldEverFit(t, "default", Fraction(-1, kGiB)));
  EXPECT_TRUE(CouldEverFit(t, "", WholeGpus(2)));
  EXPECT_FALSE(CouldEverFit(t, "other", WholeGpus(2)));
  Resources cpu_heavy = Fraction(100, kGiB);
  cpu_heavy.cpu_milli = 17000;
  EXPECT_FALSE(CouldEverFit(t, "default", cpu_heavy));
  EXPECT_FALSE(CouldEverFit(t, "missing", Fraction(100, kGiB)));
  // A drained node still counts: the drain ends, the request is fine.
  t.nodes[1].drained = true;
  EXPECT_TRUE(CouldEverFit(t, "other", Fraction(100, kGiB)));
}

TEST(MakeScorer, NamesTheKnownScorersForAnUnknownOne) {
  for (const std::string& name : ScorerNames()) {
    auto scorer = MakeScorer(name);
    ASSERT_TRUE(scorer) << name;
    EXPECT_EQ((*scorer)->name(), name);
  }
  auto bad = MakeScorer("tightest");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(bad.error().message, HasSubstr("'tightest'"));
  EXPECT_THAT(bad.error().message, HasSubstr("best-fit, worst-fit"));
  EXPECT_THAT(bad.error().message, HasSubstr("fgd"));
}

}  // namespace
}  // namespace tessera::scheduler
