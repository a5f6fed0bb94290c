// ClusterState: reservations add up, exclusive GPUs are shared with nobody,
// and the invariants hold under any sequence of reserves and releases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "scheduler/job.h"
#include "scheduler/topology.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::kGiB;

using testing::MakeTopology;

Allocation Fraction(int node, int gpu, int milli, int64_t memory_mib) {
  return Allocation{node, {{gpu, milli, memory_mib}}, 1000, kGiB, false};
}

Allocation Whole(const Topology& t, int node, std::vector<int> gpus) {
  Allocation a{node, {}, 1000, kGiB, true};
  for (int g : gpus) a.gpus.push_back({g, kFullGpuMilli, t.gpus[g].memory_mib});
  return a;
}

TEST(Topology, FindsNodesGpusAndPools) {
  const Topology t = MakeTopology({{16}, {40, 80}});
  EXPECT_EQ(t.FindNode("node1"), 1);
  EXPECT_EQ(t.FindNode("node9"), -1);
  EXPECT_EQ(t.FindGpu("node1/gpu1"), 2);
  EXPECT_EQ(t.FindGpu("node1/gpu2"), -1);
  EXPECT_TRUE(t.HasPool("default"));
  EXPECT_FALSE(t.HasPool("a100"));
}

TEST(JobState, NamesRoundTrip) {
  for (JobState s :
       {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kCancelled, JobState::kPreempted}) {
    EXPECT_EQ(ParseJobState(JobStateName(s)), s);
  }
  EXPECT_EQ(JobStateName(JobState::kPreempted), "preempted");
  EXPECT_EQ(ParseJobState("done"), std::nullopt);
  EXPECT_TRUE(IsTerminal(JobState::kCancelled));
  EXPECT_TRUE(IsTerminal(JobState::kSucceeded));
  EXPECT_FALSE(IsTerminal(JobState::kPreempted));
  EXPECT_FALSE(IsTerminal(JobState::kRunning));
}

TEST(ClusterState, FractionsAddUpAndReleaseRestores) {
  ClusterState s(MakeTopology({{40, 80}}));
  ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 300, 10 * kGiB)));
  ASSERT_TRUE(s.Reserve(2, Fraction(0, 0, 500, 20 * kGiB)));
  EXPECT_EQ(s.reserved_milli(0), 800);
  EXPECT_EQ(s.free_milli(0), 200);
  EXPECT_EQ(s.free_memory_mib(0), 10 * kGiB);
  EXPECT_EQ(s.free_cpu_milli(0), 14000);
  EXPECT_EQ(s.free_memory_mib_on_node(0), 62 * kGiB);
  EXPECT_THAT(s.JobsOn(0), ElementsAre(1, 2));
  EXPECT_THAT(s.Holders(), ElementsAre(1, 2));
  EXPECT_EQ(s.CheckInvariants(), "");

  s.Release(1);
  s.Release(7);  // holds nothing: a no-op
  EXPECT_EQ(s.reserved_milli(0), 500);
  EXPECT_EQ(s.AllocationOf(1), nullptr);
  ASSERT_NE(s.AllocationOf(2), nullptr);
  EXPECT_EQ(s.AllocationOf(2)->gpus[0].milli, 500);
  s.Release(2);
  EXPECT_EQ(s.reserved_milli(0), 0);
  EXPECT_EQ(s.reserved_memory_mib(0), 0);
  EXPECT_EQ(s.free_cpu_milli(0), 16000);
  EXPECT_TRUE(s.Holders().empty());
  EXPECT_EQ(s.CheckInvariants(), "");
}

TEST(ClusterState, RefusesWhatDoesNotFitAndChangesNothing) {
  ClusterState s(MakeTopology({{40}, {40}}));
  ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 700, 10 * kGiB)));
  const Allocation too_much_milli = Fraction(0, 0, 400, kGiB);
  const Allocation too_much_memory = Fraction(0, 0, 100, 31 * kGiB);
  Allocation too_much_cpu = Fraction(0, 0, 100, kGiB);
  too_much_cpu.cpu_milli = 15500;
  const Allocation wrong_node = Fraction(1, 0, 100, kGiB);
  Allocation twice = Fraction(0, 0, 100, kGiB);
  twice.gpus.push_back(twice.gpus[0]);
  for (const Allocation& a :
       {too_much_milli, too_much_memory, too_much_cpu, wrong_node, twice}) {
    EXPECT_FALSE(s.Fits(a));
    Status st = s.Reserve(2, a);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, ErrorCode::kInternal);
  }
  EXPECT_EQ(s.reserved_milli(0), 700);
  EXPECT_THAT(s.Holders(), ElementsAre(1));
  // A job holds one reservation at a time.
  Status again = s.Reserve(1, Fraction(1, 1, 100, kGiB));
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().message, HasSubstr("already holds"));
  EXPECT_EQ(s.CheckInvariants(), "");
}

TEST(ClusterState, ExclusiveGpusAreSharedWithNobody) {
  const Topology t = MakeTopology({{40, 40}});
  ClusterState s(t);
  ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 100, kGiB)));
  // GPU 0 holds a fraction: no exclusive job there, but GPU 1 is free.
  EXPECT_FALSE(s.Fits(Whole(t, 0, {0})));
  ASSERT_TRUE(s.Reserve(2, Whole(t, 0, {1})));
  EXPECT_TRUE(s.exclusive(1));
  EXPECT_EQ(s.free_milli(1), 0);
  EXPECT_EQ(s.free_memory_mib(1), 0);
  // Not even an empty share fits on an exclusive GPU.
  EXPECT_FALSE(s.Fits(Fraction(0, 1, 0, 0)));
  EXPECT_FALSE(s.Fits(Whole(t, 0, {1})));
  EXPECT_EQ(s.CheckInvariants(), "");
  s.Release(2);
  EXPECT_FALSE(s.exclusive(1));
  EXPECT_TRUE(s.Fits(Fraction(0, 1, 1000, 40 * kGiB)));
}

TEST(ClusterState, InvariantsHoldUnderRandomReservesAndReleases) {
  const Topology t = MakeTopology({{16, 24}, {80, 40, 40}});
  ClusterState s(t);
  std::mt19937 rng(7);
  std::vector<JobId> holding;
  for (JobId id = 1; id <= 2000; ++id) {
    if (!holding.empty() && rng() % 3 == 0) {
      const size_t k = rng() % holding.size();
      s.Release(holding[k]);
      holding.erase(holding.begin() + static_cast<std::ptrdiff_t>(k));
    }
    const int g = static_cast<int>(rng() % t.gpus.size());
    const int node = t.gpus[g].node;
    Allocation a = rng() % 4 == 0
                       ? Whole(t, node, {g})
                       : Fraction(node, g, static_cast<int>(rng() % 1000) + 1,
                                  static_cast<int64_t>(rng() % (20 * kGiB)));
    a.cpu_milli = rng() % 4000;
    const bool fits = s.Fits(a);
    const Status st = s.Reserve(id, a);
    ASSERT_EQ(static_cast<bool>(st), fits);
    if (fits) holding.push_back(id);
    ASSERT_EQ(s.CheckInvariants(), "") << "after job " << id;
  }
  for (JobId id : holding) s.Release(id);
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    EXPECT_EQ(s.reserved_milli(static_cast<int>(g)), 0);
    EXPECT_EQ(s.reserved_memory_mib(static_cast<int>(g)), 0);
    EXPECT_FALSE(s.exclusive(static_cast<int>(g)));
  }
  EXPECT_EQ(s.free_cpu_milli(1), 16000);
}

}  // namespace
}  // namespace tessera::scheduler
