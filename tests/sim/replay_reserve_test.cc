// Idle GPUs kept for whole-GPU pods (SnapshotOptions::reserve_share): the
// reserve counts the idle GPUs a node could still feed, refuses only
// fractions that would open one of the last ones, never costs a round's
// second pass a placed pod, and on the trace it was chosen on (openb
// default) lets more be allocated on every seed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/replay.h"
#include "sim/replay_reserve_internal.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

using sim::IdleReserve;
using sim::LevelPoint;
using sim::ReserveGpus;
using sim::RunSnapshot;
using sim::SnapshotOptions;
using sim::SnapshotRun;
using sim::TracePod;

namespace {

TracePod Pod(int num_gpu, int milli, int64_t cpu = 1000) {
  TracePod p;
  p.name = "p" + std::to_string(num_gpu) + "x" + std::to_string(milli);
  p.cpu_milli = cpu;
  p.memory_mib = 1024;
  p.num_gpu = num_gpu;
  p.gpu_milli = milli;
  return p;
}

// `milli` of GPU `gpu` (on `node`) with `cpu` CPU milli.
Allocation On(int node, int gpu, int milli, int64_t cpu) {
  Allocation a;
  a.node = node;
  a.gpus = {GpuShare{gpu, milli, 0}};
  a.cpu_milli = cpu;
  a.exclusive = milli >= kFullGpuMilli;
  return a;
}

// `seeds` runs of `scorer`, read once, where arrival reaches 100%.
SnapshotOptions AtFull(const std::string& scorer, int seeds) {
  SnapshotOptions o;
  o.scorer = scorer;
  o.seeds = seeds;
  o.inflation_pct = 100;
  o.levels_pct = {100};
  return o;
}

TEST(IdleReserve, CountsTheIdleGpusANodeCouldStillFeed) {
  // Two nodes of two GPUs, 16 CPUs each; a GPU counts where 8 are free.
  ClusterState state(testing::MakeTopology({{40, 40}, {40, 40}}));
  IdleReserve reserve(state, {8000, 0}, 0);
  EXPECT_EQ(reserve.idle(), 4);
  // A fraction taking 10 CPUs on node 0 leaves its other GPU idle but
  // without the CPU a whole GPU pod asks: neither counts now.
  const Allocation a = On(0, 0, 500, 10000);
  ASSERT_TRUE(state.Reserve(1, a).ok());
  reserve.Update(state, a);
  EXPECT_EQ(reserve.idle(), 2);
  // One taking 2 CPUs on node 1 leaves 14: its other GPU still counts.
  const Allocation b = On(1, 2, 300, 2000);
  ASSERT_TRUE(state.Reserve(2, b).ok());
  reserve.Update(state, b);
  EXPECT_EQ(reserve.idle(), 1);
  state.Release(1);
  reserve.Update(state, a);
  EXPECT_EQ(reserve.idle(), 3);
  // Host memory counts as CPU does: 64 GiB per node, 40 asked per GPU.
  IdleReserve by_memory(state, {0, 40.0 * 1024}, 0);
  EXPECT_EQ(by_memory.idle(), 3);
}

TEST(IdleReserve, RefusesOnlyAFractionOpeningOneOfTheLastKeptGpus) {
  ClusterState state(testing::MakeTopology({{40, 40}, {40, 40}}));
  IdleReserve reserve(state, {8000, 0}, 3.5);  // refuse while <= 3 are idle
  const TracePod fraction = Pod(1, 600), whole = Pod(1, 1000);
  // Four idle: a fraction may open one.
  EXPECT_FALSE(reserve.Refuses(state, fraction, On(0, 0, 600, 1000)));
  const Allocation first = On(0, 0, 600, 1000);
  ASSERT_TRUE(state.Reserve(1, first).ok());
  reserve.Update(state, first);
  ASSERT_EQ(reserve.idle(), 3);
  // Three left: no fraction opens another; joining a GPU in use is fine,
  // and a whole-GPU pod is never refused.
  EXPECT_TRUE(reserve.Refuses(state, fraction, On(1, 2, 600, 1000)));
  EXPECT_TRUE(reserve.Refuses(state, fraction, On(0, 1, 600, 1000)));
  EXPECT_FALSE(reserve.Refuses(state, Pod(1, 400), On(0, 0, 400, 1000)));
  EXPECT_FALSE(reserve.Refuses(state, whole, On(1, 2, 1000, 1000)));
  // An idle GPU on a node without the CPU for a whole GPU is not kept.
  const Allocation hungry = On(1, 2, 1000, 12000);
  ASSERT_TRUE(state.Reserve(2, hungry).ok());
  reserve.Update(state, hungry);
  EXPECT_EQ(reserve.idle(), 1);  // node 1's other GPU no longer counts
  EXPECT_FALSE(reserve.Refuses(state, fraction, On(1, 3, 600, 1000)));
  EXPECT_TRUE(reserve.Refuses(state, fraction, On(0, 1, 600, 1000)));
}

TEST(IdleReserve, ItsSizeFollowsTheWholeOneGpuPodsShare) {
  // 2000 of 4500 milli are asked by whole one-GPU pods; the two-GPU pod
  // and the fraction count in the total only.
  const std::vector<TracePod> pods = {Pod(1, 1000), Pod(1, 1000), Pod(2, 1000),
                                      Pod(1, 500), Pod(0, 0)};
  EXPECT_DOUBLE_EQ(ReserveGpus(pods, 0.5, 90), 0.5 * 2000.0 / 4500.0 * 90);
  EXPECT_DOUBLE_EQ(ReserveGpus(pods, 0, 90), 0);
  // Nothing to keep GPUs for.
  EXPECT_DOUBLE_EQ(ReserveGpus({Pod(1, 500), Pod(2, 1000)}, 1, 90), 0);
  EXPECT_DOUBLE_EQ(ReserveGpus({Pod(0, 0)}, 1, 90), 0);
}

// The allocated milli of a run of 1000- and 810-milli pods as (whole pods,
// fractions): 810 f mod 1000 differs for f = 0..7.
std::pair<int, int> WholeAndFractions(double alloc_pct, int gpus) {
  const auto milli = std::lround(alloc_pct / 100.0 * gpus * kFullGpuMilli);
  for (int f = 0; f <= 7; ++f) {
    const long rest = milli - 810L * f;
    if (rest >= 0 && rest % 1000 == 0)
      return {static_cast<int>(rest / 1000), f};
  }
  ADD_FAILURE() << "allocated " << milli << " milli";
  return {-1, -1};
}

TEST(Snapshot, TheReserveKeepsTheLastIdleGpusFromFractions) {
  // One node of six GPUs; 1000- and 810-milli pods (an 810 leaves 190 that
  // nothing here fills). Whole one-GPU pods ask 1000 / 1810 of the GPU
  // milli, so a reserve of the whole share keeps 6 x 0.55 = 3.3 GPUs: a
  // fraction opens a GPU only while four or more are idle.
  const Topology t = testing::MakeTopology({{40, 40, 40, 40, 40, 40}});
  const std::vector<TracePod> pods = {Pod(1, 1000), Pod(1, 810)};
  SnapshotOptions o = AtFull("tessera", 40);
  auto open = RunSnapshot(t, pods, o);
  o.reserve_share = 1;
  auto kept = RunSnapshot(t, pods, o);
  ASSERT_TRUE(open && kept);
  int many_fractions = 0, more_whole = 0;
  for (size_t s = 0; s < kept->size(); ++s) {
    const LevelPoint& a = (*open)[s].levels[0];
    const LevelPoint& b = (*kept)[s].levels[0];
    ASSERT_TRUE(a.reached && b.reached);
    const auto [wa, fa] = WholeAndFractions(a.alloc_pct, 6);
    const auto [wb, fb] = WholeAndFractions(b.alloc_pct, 6);
    EXPECT_LE(fb, 3) << "seed " << s;
    EXPECT_LE(wb + fb, 6);
    if (fa > 3) ++many_fractions;
    if (wb > wa) ++more_whole;
  }
  EXPECT_GT(many_fractions, 0);  // without it, 810s took more on some seed
  EXPECT_GT(more_whole, 0);      // and whole pods got what they kept
}

TEST(Snapshot, TheReserveNeverCostsARoundsSecondPassAPod) {
  const Topology t = testing::MakeTopology(
      {{24, 24}, {24, 24, 24, 24}, {48, 48}, {12, 12}, {96, 96, 96, 96}});
  const std::vector<TracePod> pods = {Pod(1, 810),  Pod(1, 470),  Pod(1, 650),
                                      Pod(1, 320),  Pod(1, 160),  Pod(1, 230),
                                      Pod(1, 1000), Pod(1, 1000), Pod(2, 1000)};
  for (const double share : {0.3, 0.6, 1.0}) {
    for (const std::string scorer : {"tessera", "random", "best-fit"}) {
      SnapshotOptions o = AtFull(scorer, 40);
      o.round_pods = 1000;
      o.reserve_share = share;
      o.repack_rounds = false;
      auto first = RunSnapshot(t, pods, o);
      o.repack_rounds = true;
      auto again = RunSnapshot(t, pods, o);
      ASSERT_TRUE(first && again);
      for (size_t s = 0; s < first->size(); ++s) {
        const LevelPoint& a = (*first)[s].levels[0];
        const LevelPoint& b = (*again)[s].levels[0];
        EXPECT_LE(b.failed_pods, a.failed_pods)
            << scorer << ", share " << share << ", seed " << s;
        EXPECT_GE(b.alloc_pct, a.alloc_pct - 1e-9)
            << scorer << ", share " << share << ", seed " << s;
      }
    }
  }
}

TEST(Snapshot, TheReserveMustBeAShareOfTheGpus) {
  const Topology t = testing::MakeTopology({{40, 40}});
  SnapshotOptions o;
  o.seeds = 1;
  for (const double bad : {-0.1, 1.5, std::nan("")}) {
    o.reserve_share = bad;
    auto runs = RunSnapshot(t, {Pod(1, 500)}, o);
    ASSERT_FALSE(runs) << bad;
    EXPECT_NE(runs.error().message.find("reserve_share"), std::string::npos);
  }
}

// On openb's default trace, the one the reserve's share (0.0625) was
// chosen on, in rounds of 128: more is allocated on every seed (10 seeds:
// 96.17 -> 96.32, docs/simulate.md).
TEST(SnapshotOpenb, TheReserveAllocatesMoreOnEverySeedOfTheDefaultTrace) {
  const std::string dir = tessera::repo::OpenbDir();
  auto nodes = sim::LoadTraceNodes(dir + "/openb_node_list_gpu_node.csv");
  auto pods = sim::LoadTracePods(dir + "/openb_pod_list_default.csv");
  ASSERT_TRUE(nodes && pods) << dir;
  const Topology t = sim::TraceTopology(nodes->rows, "openb", 0);
  SnapshotOptions o = AtFull("tessera", 3);
  o.round_pods = 128;
  auto open = RunSnapshot(t, pods->rows, o);
  o.reserve_share = 0.0625;
  auto kept = RunSnapshot(t, pods->rows, o);
  ASSERT_TRUE(open && kept);
  for (size_t s = 0; s < open->size(); ++s) {
    EXPECT_GT((*kept)[s].levels[0].alloc_pct, (*open)[s].levels[0].alloc_pct)
        << "seed " << (*open)[s].seed;
  }
}

}  // namespace
}  // namespace tessera::scheduler
