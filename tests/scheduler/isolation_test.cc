// Isolation (issue 31): a GPU whose fractions nothing keeps apart
// (isolation none, share_unisolated false) holds one job at a time; one
// under MPS, or any GPU when share_unisolated is true, is shared. The
// reservations, the invariants and FindAllocation agree on it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/start_decision.h"
#include "scheduler/topology.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using testing::kGiB;
using testing::MakeTopology;

Allocation Fraction(int node, int gpu, int milli, int64_t memory_mib) {
  return Allocation{node, {{gpu, milli, memory_mib}}, 1000, kGiB, false};
}

Resources FractionDemand(int milli, int64_t memory_mib) {
  return Resources{0, milli, memory_mib, 1000, kGiB};
}

// One node of two 40 GiB GPUs, of `isolation`, sharing unisolated GPUs
// or not.
Topology TwoGpus(Isolation isolation, bool share_unisolated) {
  Topology t = MakeTopology({{40, 40}});
  t.nodes[0].isolation = isolation;
  t.share_unisolated = share_unisolated;
  return t;
}

TEST(Isolation, NamesRoundTrip) {
  EXPECT_EQ(IsolationName(Isolation::kNone), "none");
  EXPECT_EQ(IsolationName(Isolation::kMps), "mps");
  EXPECT_EQ(ParseIsolation("none"), Isolation::kNone);
  EXPECT_EQ(ParseIsolation("mps"), Isolation::kMps);
  EXPECT_EQ(ParseIsolation("MPS"), std::nullopt);
  EXPECT_EQ(ParseIsolation(""), std::nullopt);
  EXPECT_EQ(ParseIsolation("mig"), std::nullopt);
}

TEST(Isolation, ShareableByNodeAndSetting) {
  // node0 isolation none, node1 mps.
  Topology t = MakeTopology({{40}, {40}});
  t.nodes[1].isolation = Isolation::kMps;
  EXPECT_EQ(NodeInfo{}.isolation, Isolation::kNone);  // the default
  EXPECT_TRUE(Topology{}.share_unisolated);           // the default
  EXPECT_TRUE(t.Shareable(0));  // shared anyway (the default)
  EXPECT_TRUE(t.Shareable(1));
  t.share_unisolated = false;
  EXPECT_FALSE(t.Shareable(0));
  EXPECT_TRUE(t.Shareable(1));  // MPS keeps the fractions apart
}

TEST(Isolation, AnUnisolatedGpuHoldsOneFractionAtATime) {
  ClusterState s(TwoGpus(Isolation::kNone, false));
  // A fraction alone fits an unshareable GPU.
  ASSERT_TRUE(s.Fits(Fraction(0, 0, 300, 4 * kGiB)));
  ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
  EXPECT_TRUE(s.exclusive(0));
  EXPECT_FALSE(s.exclusive(1));
  EXPECT_EQ(s.holders_on(0), 1);
  // What it has left is nobody's.
  EXPECT_EQ(s.free_milli(0), 0);
  EXPECT_EQ(s.free_memory_mib(0), 0);
  EXPECT_EQ(s.reserved_milli(0), 300);
  EXPECT_EQ(s.reserved_memory_mib(0), 4 * kGiB);
  EXPECT_EQ(s.free_milli(1), 1000);
  EXPECT_EQ(s.free_memory_mib(1), 40 * kGiB);
  EXPECT_EQ(s.CheckInvariants(), "");

  // A second fraction, however small, does not fit there; it fits the
  // other GPU.
  EXPECT_FALSE(s.Fits(Fraction(0, 0, 100, kGiB)));
  EXPECT_FALSE(s.Fits(Fraction(0, 0, 1, 1)));
  const Status refused = s.Reserve(2, Fraction(0, 0, 100, kGiB));
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(s.holders_on(0), 1);  // nothing changed
  EXPECT_EQ(s.reserved_milli(0), 300);
  ASSERT_TRUE(s.Fits(Fraction(0, 1, 100, kGiB)));
  ASSERT_TRUE(s.Reserve(2, Fraction(0, 1, 100, kGiB)).ok());
  EXPECT_TRUE(s.exclusive(1));
  EXPECT_EQ(s.free_milli(1), 0);
  EXPECT_EQ(s.free_memory_mib(1), 0);
  EXPECT_EQ(s.CheckInvariants(), "");
  // Nor does a whole GPU fit a GPU a fraction holds.
  Allocation whole{0, {{0, kFullGpuMilli, 40 * kGiB}}, 1000, kGiB, true};
  EXPECT_FALSE(s.Fits(whole));

  // Its holder leaves: the GPU is free for the next one.
  s.Release(1);
  EXPECT_FALSE(s.exclusive(0));
  EXPECT_EQ(s.holders_on(0), 0);
  EXPECT_EQ(s.free_milli(0), 1000);
  EXPECT_EQ(s.free_memory_mib(0), 40 * kGiB);
  EXPECT_TRUE(s.exclusive(1));  // job 2 still holds GPU 1
  EXPECT_EQ(s.CheckInvariants(), "");
  ASSERT_TRUE(s.Fits(Fraction(0, 0, 700, 30 * kGiB)));
  ASSERT_TRUE(s.Reserve(3, Fraction(0, 0, 700, 30 * kGiB)).ok());
  EXPECT_TRUE(s.exclusive(0));
  EXPECT_FALSE(s.Fits(Fraction(0, 0, 100, kGiB)));
  EXPECT_EQ(s.CheckInvariants(), "");

  s.Release(3);
  s.Release(2);
  EXPECT_FALSE(s.exclusive(0));
  EXPECT_FALSE(s.exclusive(1));
  // Released both: a whole GPU fits again.
  EXPECT_TRUE(s.Fits(whole));
  EXPECT_EQ(s.CheckInvariants(), "");
}

TEST(Isolation, MpsOrShareUnisolatedLetFractionsShare) {
  for (const auto& [isolation, share] :
       {std::pair{Isolation::kMps, false}, std::pair{Isolation::kNone, true},
        std::pair{Isolation::kMps, true}}) {
    SCOPED_TRACE(std::string(IsolationName(isolation)) +
                 (share ? ", shared anyway" : ""));
    ClusterState s(TwoGpus(isolation, share));
    ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
    EXPECT_FALSE(s.exclusive(0));
    EXPECT_EQ(s.free_milli(0), 700);
    EXPECT_EQ(s.free_memory_mib(0), 36 * kGiB);
    ASSERT_TRUE(s.Fits(Fraction(0, 0, 500, 16 * kGiB)));
    ASSERT_TRUE(s.Reserve(2, Fraction(0, 0, 500, 16 * kGiB)).ok());
    EXPECT_EQ(s.holders_on(0), 2);
    EXPECT_FALSE(s.exclusive(0));
    EXPECT_EQ(s.free_milli(0), 200);
    EXPECT_EQ(s.free_memory_mib(0), 20 * kGiB);
    // Still bounded by what is left.
    EXPECT_FALSE(s.Fits(Fraction(0, 0, 201, kGiB)));
    EXPECT_EQ(s.CheckInvariants(), "");
    s.Release(1);
    EXPECT_EQ(s.free_milli(0), 500);
    EXPECT_EQ(s.CheckInvariants(), "");
  }
}

TEST(Isolation, WholeGpusAreExclusiveEitherWay) {
  ClusterState s(TwoGpus(Isolation::kNone, false));
  Allocation whole{0, {{0, kFullGpuMilli, 40 * kGiB}}, 1000, kGiB, true};
  ASSERT_TRUE(s.Reserve(1, whole).ok());
  EXPECT_TRUE(s.exclusive(0));
  EXPECT_FALSE(s.Fits(Fraction(0, 0, 1, 1)));
  s.Release(1);
  EXPECT_FALSE(s.exclusive(0));
  EXPECT_TRUE(s.Fits(Fraction(0, 0, 1, 1)));
  EXPECT_EQ(s.CheckInvariants(), "");
}

TEST(Isolation, CopiesKeepTheSettingThroughADrain) {
  ClusterState s(TwoGpus(Isolation::kNone, false));
  ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
  ClusterState copy = s;
  copy.SetDrained(0, true);  // the topology is copied on write
  EXPECT_FALSE(copy.topology().share_unisolated);
  EXPECT_FALSE(copy.topology().Shareable(0));
  copy.SetDrained(0, false);
  EXPECT_FALSE(copy.Fits(Fraction(0, 0, 100, kGiB)));
  EXPECT_EQ(copy.CheckInvariants(), "");
}

// A mixed cluster: node0 isolation none, node1 mps; unisolated GPUs are
// not shared.
TEST(Isolation, InvariantsHoldOnAMixedCluster) {
  Topology t = MakeTopology({{40, 40}, {40, 40}});
  t.nodes[1].isolation = Isolation::kMps;
  t.share_unisolated = false;
  ClusterState s(t);
  JobId next = 1;
  int refused = 0;
  // Fractions of 250 milli onto every GPU until nothing fits: node0's GPUs
  // take one each, node1's four each.
  for (int round = 0; round < 5; ++round) {
    for (int g = 0; g < 4; ++g) {
      const int node = t.gpus[g].node;
      const Allocation a = Fraction(node, g, 250, 2 * kGiB);
      if (!s.Fits(a)) {
        ++refused;
        continue;
      }
      ASSERT_TRUE(s.Reserve(next++, a).ok());
      ASSERT_EQ(s.CheckInvariants(), "");
    }
  }
  EXPECT_EQ(s.holders_on(0), 1);
  EXPECT_EQ(s.holders_on(1), 1);
  EXPECT_EQ(s.holders_on(2), 4);
  EXPECT_EQ(s.holders_on(3), 4);
  EXPECT_EQ(refused, 20 - 10);
  EXPECT_EQ(s.free_milli(0), 0);
  EXPECT_EQ(s.free_milli(2), 0);  // 4 x 250
  EXPECT_EQ(s.free_memory_mib(2), 32 * kGiB);
  EXPECT_FALSE(s.exclusive(2));
  for (JobId id = 1; id < next; ++id) {
    s.Release(id);
    ASSERT_EQ(s.CheckInvariants(), "");
  }
  for (int g = 0; g < 4; ++g) {
    EXPECT_FALSE(s.exclusive(g)) << g;
    EXPECT_EQ(s.free_milli(g), 1000) << g;
  }
}

// Where a scorer would pack the second fraction onto the first's GPU,
// FindAllocation puts it on another when the first is unshareable, and
// finds nothing when every GPU is held.
TEST(Isolation, FindAllocationPlacesTheSecondFractionElsewhere) {
  const Resources demand = FractionDemand(200, 4 * kGiB);
  for (const std::string& name : ScorerNames()) {
    SCOPED_TRACE(name);
    auto scorer = MakeScorer(name);
    ASSERT_TRUE(scorer) << scorer.error().message;
    ClusterState s(TwoGpus(Isolation::kNone, false));
    ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
    auto a = FindAllocation(s, "default", demand, **scorer);
    ASSERT_TRUE(a);
    ASSERT_EQ(a->gpus.size(), 1u);
    EXPECT_EQ(a->gpus[0].gpu, 1);
    EXPECT_FALSE(a->exclusive);
    ASSERT_TRUE(s.Fits(*a));
    ASSERT_TRUE(s.Reserve(2, *a).ok());
    EXPECT_FALSE(FindAllocation(s, "default", demand, **scorer));
    EXPECT_FALSE(FitOnNode(s, 0, PlacementRequest{demand, {}}, **scorer));
    EXPECT_EQ(s.CheckInvariants(), "");
    // One leaves: its GPU takes the next.
    s.Release(1);
    auto again = FindAllocation(s, "default", demand, **scorer);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->gpus[0].gpu, 0);
  }
  // The same cluster sharing anyway: best-fit packs onto GPU 0.
  auto best_fit = MakeScorer("best-fit");
  ASSERT_TRUE(best_fit);
  for (const Isolation isolation : {Isolation::kNone, Isolation::kMps}) {
    ClusterState shared(TwoGpus(isolation, isolation == Isolation::kNone));
    ASSERT_TRUE(shared.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
    auto a = FindAllocation(shared, "default", demand, **best_fit);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->gpus[0].gpu, 0) << IsolationName(isolation);
  }
}

// The split-or-wait decision's forecast of when capacity frees: a GPU that
// one fraction holds alone (unshareable) is wholly free when that fraction
// leaves, not just by the fraction's share.
TEST(Isolation, CapacityFreesWhenTheOnlyHolderOfAnUnshareableGpuLeaves) {
  ClusterState s(MakeTopology({{40}}));
  Topology t = MakeTopology({{40}});
  t.share_unisolated = false;
  ClusterState alone(t);
  const auto ends = [](JobId) { return 500.0; };
  // Empty: a whole GPU, or a fraction, now.
  EXPECT_EQ(CapacityFreesAt(alone, "default", 1, kFullGpuMilli, 0, 10, ends).at,
            10);
  ASSERT_TRUE(alone.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
  // Held by job 1 until 500: a whole GPU then, with nobody left on it.
  const auto whole =
      CapacityFreesAt(alone, "default", 1, kFullGpuMilli, 0, 10, ends);
  EXPECT_EQ(whole.at, 500);
  EXPECT_EQ(whole.sharing_with, 0);
  // A fraction of it too: not now (nobody shares it), at 500.
  const auto part =
      CapacityFreesAt(alone, "default", 1, 500, 10 * kGiB, 10, ends);
  EXPECT_EQ(part.at, 500);
  EXPECT_EQ(part.sharing_with, 0);
  // Shared anyway: the fraction fits now beside job 1.
  ASSERT_TRUE(s.Reserve(1, Fraction(0, 0, 300, 4 * kGiB)).ok());
  const auto shared =
      CapacityFreesAt(s, "default", 1, 500, 10 * kGiB, 10, ends);
  EXPECT_EQ(shared.at, 10);
  EXPECT_EQ(shared.sharing_with, 1);
  EXPECT_EQ(CapacityFreesAt(s, "default", 1, kFullGpuMilli, 0, 10, ends).at,
            500);
  // Unknown ends: never.
  EXPECT_TRUE(std::isinf(
      CapacityFreesAt(alone, "default", 1, kFullGpuMilli, 0, 10, [](JobId) {
        return std::numeric_limits<double>::infinity();
      }).at));
}

}  // namespace
}  // namespace tessera::scheduler
