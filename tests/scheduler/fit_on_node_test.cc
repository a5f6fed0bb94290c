// FitOnNode and CouldEverFitOnNode: the per-node questions of the
// Kubernetes extender give the answers FindAllocation gives for the node.
#include <gtest/gtest.h>

#include "scheduler/admission.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using testing::kGiB;
using testing::MakeTopology;

std::unique_ptr<GpuScorer> ScorerNamed(const std::string& name) {
  auto s = MakeScorer(name);
  EXPECT_TRUE(s);
  return std::move(s).value();
}

TEST(FitOnNode, AgreesWithFindAllocationOnTheChosenNode) {
  // node0: two 80 GiB GPUs, one half used; node1: one free 80 GiB GPU.
  ClusterState state(MakeTopology({{80, 80}, {80}}));
  ASSERT_TRUE(
      state.Reserve(100, Allocation{0, {{1, 500, 40 * kGiB}}, 0, 0, false})
          .ok());
  const PlacementRequest request{Resources{0, 250, 8 * kGiB, 1000, 1024}, {}};
  for (const std::string name : {"best-fit", "tessera", "fgd", "worst-fit"}) {
    auto scorer = ScorerNamed(name);
    const std::optional<Allocation> best =
        FindAllocation(state, "", request, *scorer);
    ASSERT_TRUE(best) << name;
    double best_score = -1e300;
    int best_node = -1;
    for (int n = 0; n < 2; ++n) {
      const std::optional<ScoredAllocation> fit =
          FitOnNode(state, n, request, *scorer);
      ASSERT_TRUE(fit) << name;
      EXPECT_EQ(fit->allocation.node, n);
      ASSERT_EQ(fit->allocation.gpus.size(), 1u);
      EXPECT_EQ(fit->allocation.gpus[0].milli, 250);
      EXPECT_EQ(fit->allocation.cpu_milli, 1000);
      if (n == best->node) {
        EXPECT_EQ(fit->allocation.gpus, best->gpus) << name;
      }
      if (fit->score > best_score) {
        best_score = fit->score;
        best_node = n;
      }
    }
    EXPECT_EQ(best_node, best->node) << name;
  }
}

TEST(FitOnNode, IgnoresPoolsButNotDrainsOrFullGpus) {
  ClusterState state(MakeTopology({{16}, {16}}, {"a", "b"}, {"a", "b"}));
  auto scorer = ScorerNamed("best-fit");
  const PlacementRequest request{Resources{0, 600, 8 * kGiB, 0, 0}, {}};
  EXPECT_TRUE(FitOnNode(state, 1, request, *scorer));  // pool b
  state.SetDrained(1, true);
  EXPECT_FALSE(FitOnNode(state, 1, request, *scorer));
  ASSERT_TRUE(
      state.Reserve(1, Allocation{0, {{0, 600, 1 * kGiB}}, 0, 0, false}).ok());
  EXPECT_FALSE(FitOnNode(state, 0, request, *scorer));  // 400 milli left
  EXPECT_FALSE(FitOnNode(state, 7, request, *scorer));  // no such node
}

TEST(CouldEverFitOnNode, JudgesTheEmptyNode) {
  const Topology t = MakeTopology({{16, 16}, {80}});
  EXPECT_FALSE(
      CouldEverFitOnNode(t, 0, {Resources{0, 100, 20 * kGiB, 0, 0}, {}}));
  EXPECT_TRUE(
      CouldEverFitOnNode(t, 1, {Resources{0, 100, 20 * kGiB, 0, 0}, {}}));
  EXPECT_TRUE(CouldEverFitOnNode(t, 0, {Resources{2, 0, 0, 0, 0}, {}}));
  EXPECT_FALSE(CouldEverFitOnNode(t, 1, {Resources{2, 0, 0, 0, 0}, {}}));
  EXPECT_FALSE(
      CouldEverFitOnNode(t, 1, {Resources{0, 100, 1, 99999999, 0}, {}}));
  EXPECT_FALSE(CouldEverFitOnNode(t, 5, {Resources{0, 100, 1, 0, 0}, {}}));
  // CouldEverFit is the same question over a pool's nodes.
  EXPECT_TRUE(CouldEverFit(t, "", Resources{0, 100, 20 * kGiB, 0, 0}));
  EXPECT_FALSE(CouldEverFit(t, "", Resources{0, 100, 90 * kGiB, 0, 0}));
}

}  // namespace
}  // namespace tessera::scheduler
