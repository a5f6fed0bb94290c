// The trace replay (snapshot mode): the same seed replays alike, the levels
// are read where arrival first reaches them, nothing allocates more than
// arrived or than the physical limit, and on Alibaba's openb trace the
// published policies land near the paper's figures while tessera's own
// allocates more than FGD.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/replay.h"
#include "sim/replay_bound_internal.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::GpuPackingBoundMilli;
using sim::LevelPoint;
using sim::LoadTraceNodes;
using sim::LoadTracePods;
using sim::PodWorkload;
using sim::RunSnapshot;
using sim::RunSnapshotSeed;
using sim::SnapshotOptions;
using sim::SnapshotRun;
using sim::TracePod;
using sim::TraceTopology;

namespace {

const std::string kOpenb = tessera::repo::OpenbDir();

TracePod NamedPod(const std::string& name, int num_gpu, int milli,
                  int64_t cpu = 1000) {
  TracePod p;
  p.name = name;
  p.cpu_milli = cpu;
  p.memory_mib = 1024;
  p.num_gpu = num_gpu;
  p.gpu_milli = milli;
  return p;
}

// Four nodes of two GPUs; a mix of fractions, whole GPUs and CPU-only pods.
std::vector<TracePod> SmallTrace() {
  return {NamedPod("a", 1, 300),     NamedPod("b", 1, 650),
          NamedPod("c", 1, 1000),    NamedPod("d", 2, 1000),
          NamedPod("e", 0, 0, 4000), NamedPod("f", 1, 810),
          NamedPod("g", 1, 160)};
}

SnapshotOptions Options(const std::string& scorer) {
  SnapshotOptions o;
  o.scorer = scorer;
  o.seeds = 3;
  o.bound = true;
  return o;
}

TEST(Snapshot, TheSameSeedReplaysAlike) {
  const Topology t =
      testing::MakeTopology({{40, 40}, {40, 40}, {40, 40}, {40, 40}});
  auto a = RunSnapshot(t, SmallTrace(), Options("best-fit"));
  auto b = RunSnapshot(t, SmallTrace(), Options("best-fit"));
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->size(), 3u);
  for (size_t s = 0; s < a->size(); ++s) {
    EXPECT_EQ((*a)[s].seed, 42 + s);
    EXPECT_EQ((*a)[s].curve, (*b)[s].curve);
    EXPECT_EQ((*a)[s].pods, (*b)[s].pods);
  }
  EXPECT_NE((*a)[0].curve, (*a)[1].curve);  // seeds differ
}

TEST(Snapshot, LevelsCurvesAndTheLimitAreConsistent) {
  const Topology t =
      testing::MakeTopology({{40, 40}, {40, 40}, {40, 40}, {40, 40}});
  for (const std::string& scorer : ScorerNames()) {
    auto runs = RunSnapshot(t, SmallTrace(), Options(scorer));
    ASSERT_TRUE(runs) << scorer;
    for (const SnapshotRun& r : *runs) {
      ASSERT_EQ(r.levels.size(), 5u);
      for (const LevelPoint& l : r.levels) {
        ASSERT_TRUE(l.reached) << scorer;
        EXPECT_GE(l.arrived_pct, l.level_pct);
        EXPECT_LE(l.alloc_pct, std::min(l.arrived_pct, 100.0) + 1e-9);
        EXPECT_LE(l.alloc_pct, l.bound_pct + 1e-9) << scorer;
        EXPECT_GE(l.frag_pct, 0);
        EXPECT_LE(l.frag_pct, 100 + 1e-9);
      }
      // Arrival stops once requests pass 130% of the 8 GPUs.
      ASSERT_FALSE(r.curve.empty());
      EXPECT_GE(r.curve.back().first, 130);
      for (size_t k = 1; k < r.curve.size(); ++k) {
        EXPECT_GE(r.curve[k].first, r.curve[k - 1].first);
        EXPECT_GE(r.curve[k].second, r.curve[k - 1].second);
      }
      EXPECT_GT(r.failed_pods, 0);  // 130% cannot all fit
    }
  }
}

// The limit is solved, not replaced by the GPUs' capacity: at a level
// below 100% it cannot pass what has arrived, and the seeds run on several
// threads get the limit one seed run alone gets. (Solved in a child forked
// from a worker thread, it once hung under AddressSanitizer until the
// child's deadline and silently became the capacity.)
TEST(Snapshot, TheLimitIsSolvedOnEverySeed) {
  const Topology t =
      testing::MakeTopology({{40, 40}, {40, 40}, {40, 40}, {40, 40}});
  SnapshotOptions o = Options("fgd");
  o.seeds = 4;
  o.threads = 4;
  o.levels_pct = {50, 80, 120};
  auto runs = RunSnapshot(t, SmallTrace(), o);
  ASSERT_TRUE(runs);
  const Workload workload = PodWorkload(SmallTrace());
  for (const SnapshotRun& r : *runs) {
    EXPECT_TRUE(r.notes.empty()) << r.notes.front();
    const SnapshotRun alone =
        RunSnapshotSeed(t, SmallTrace(), workload, o, r.seed);
    ASSERT_EQ(alone.levels.size(), r.levels.size());
    for (size_t l = 0; l < r.levels.size(); ++l) {
      const LevelPoint& p = r.levels[l];
      ASSERT_TRUE(p.reached);
      EXPECT_GT(p.arrived_pods, 0);
      EXPECT_GT(p.bound_pct, 0);
      EXPECT_LE(p.bound_pct, std::min(p.arrived_pct, 100.0) + 1e-9)
          << "seed " << r.seed << ", level " << p.level_pct;
      EXPECT_DOUBLE_EQ(p.bound_pct, alone.levels[l].bound_pct);
    }
  }
}

TEST(Snapshot, ARoundPlacesItsLargestPodsFirst) {
  // One node of two GPUs; two 600-milli and two 400-milli pods arrive
  // (100% of it). One at a time under first-fit, two 400s arriving first
  // share GPU 0 and one 600 then fits nowhere; decided as one round, the
  // 600s go first, one per GPU, and the 400s fill what they leave.
  const Topology t = testing::MakeTopology({{40, 40}});
  const std::vector<TracePod> pods = {
      NamedPod("a", 1, 600), NamedPod("b", 1, 600), NamedPod("c", 1, 400),
      NamedPod("d", 1, 400)};
  SnapshotOptions o;
  o.scorer = "first-fit";
  o.seeds = 30;
  o.inflation_pct = 100;
  o.levels_pct = {100};
  auto single = RunSnapshot(t, pods, o);
  o.round_pods = 4;
  auto joint = RunSnapshot(t, pods, o);
  ASSERT_TRUE(single && joint);
  int worse = 0;
  for (size_t s = 0; s < joint->size(); ++s) {
    const LevelPoint& j = (*joint)[s].levels[0];
    const LevelPoint& one = (*single)[s].levels[0];
    ASSERT_TRUE(j.reached && one.reached);
    EXPECT_DOUBLE_EQ(j.alloc_pct, 100.0);
    EXPECT_EQ(j.failed_pods, 0);
    EXPECT_EQ((*joint)[s].pods, 4);
    if (one.alloc_pct < 100.0) ++worse;
  }
  EXPECT_GT(worse, 0);  // two 400s came first on some seed
}

TEST(Snapshot, RepackingARoundNeverLosesAPod) {
  // Everything arrives in one round, so with and without the second pass
  // each seed starts that round from the same empty cluster and the same
  // first pass: the second pass only takes pods back to place them again
  // (each still fits where it was) and tries the failed ones again.
  const Topology t = testing::MakeTopology(
      {{24, 24}, {24, 24, 24, 24}, {48, 48}, {12, 12}, {96, 96, 96, 96}});
  const std::vector<TracePod> pods = {
      NamedPod("a", 1, 810),  NamedPod("b", 1, 470), NamedPod("c", 1, 650),
      NamedPod("d", 1, 320),  NamedPod("e", 1, 160), NamedPod("f", 1, 230),
      NamedPod("g", 1, 1000), NamedPod("h", 1, 460), NamedPod("i", 2, 1000)};
  for (const std::string scorer : {"tessera", "fgd", "best-fit", "random"}) {
    SnapshotOptions o;
    o.scorer = scorer;
    o.seeds = 40;
    o.inflation_pct = 100;
    o.levels_pct = {100};
    o.round_pods = 1000;
    o.repack_rounds = false;
    auto first = RunSnapshot(t, pods, o);
    o.repack_rounds = true;
    auto again = RunSnapshot(t, pods, o);
    ASSERT_TRUE(first && again) << scorer;
    for (size_t s = 0; s < first->size(); ++s) {
      const LevelPoint& a = (*first)[s].levels[0];
      const LevelPoint& b = (*again)[s].levels[0];
      ASSERT_TRUE(a.reached && b.reached);
      EXPECT_EQ((*first)[s].pods, (*again)[s].pods) << scorer;
      EXPECT_LE(b.failed_pods, a.failed_pods) << scorer << " seed " << s;
      EXPECT_GE(b.alloc_pct, a.alloc_pct - 1e-9) << scorer << " seed " << s;
    }
  }
}

TEST(Snapshot, OneAtATimeIsTheSameWithOrWithoutRepacking) {
  const Topology t =
      testing::MakeTopology({{40, 40}, {40, 40}, {40, 40}, {40, 40}});
  SnapshotOptions o = Options("tessera");
  o.repack_rounds = false;
  auto a = RunSnapshot(t, SmallTrace(), o);
  o.repack_rounds = true;
  auto b = RunSnapshot(t, SmallTrace(), o);
  ASSERT_TRUE(a && b);
  for (size_t s = 0; s < a->size(); ++s) {
    for (size_t l = 0; l < (*a)[s].levels.size(); ++l) {
      EXPECT_EQ((*a)[s].levels[l].alloc_pct, (*b)[s].levels[l].alloc_pct);
      EXPECT_EQ((*a)[s].levels[l].failed_pods, (*b)[s].levels[l].failed_pods);
    }
  }
}

TEST(Snapshot, RoundsKeepTheLevelsConsistent) {
  const Topology t =
      testing::MakeTopology({{40, 40}, {40, 40}, {40, 40}, {40, 40}});
  for (const std::string scorer : {"fgd", "tessera", "best-fit"}) {
    SnapshotOptions o = Options(scorer);
    o.round_pods = 4;
    auto runs = RunSnapshot(t, SmallTrace(), o);
    ASSERT_TRUE(runs) << scorer;
    for (const SnapshotRun& r : *runs) {
      int64_t failed = 0;
      for (const LevelPoint& l : r.levels) {
        ASSERT_TRUE(l.reached) << scorer;
        EXPECT_GE(l.arrived_pct, l.level_pct);
        EXPECT_LE(l.alloc_pct, std::min(l.arrived_pct, 100.0) + 1e-9);
        EXPECT_LE(l.alloc_pct, l.bound_pct + 1e-9) << scorer;
        EXPECT_GE(l.failed_pods, failed);
        failed = l.failed_pods;
      }
      EXPECT_GT(r.failed_pods, 0);
    }
  }
}

TEST(Snapshot, RefusesWhatItCannotRun) {
  const Topology t = testing::MakeTopology({{40}});
  EXPECT_FALSE(RunSnapshot(t, {}, Options("fgd")));
  EXPECT_FALSE(RunSnapshot(t, SmallTrace(), Options("tightest")));
  EXPECT_FALSE(
      RunSnapshot(testing::MakeTopology({{}}), SmallTrace(), Options("fgd")));
}

TEST(GpuPackingBound, PacksFractionsIntoGpus) {
  const std::vector<TracePod> pods = {
      NamedPod("a", 1, 600), NamedPod("b", 1, 600), NamedPod("c", 1, 400),
      NamedPod("d", 1, 1000)};
  std::vector<const TracePod*> all;
  for (const TracePod& p : pods) all.push_back(&p);
  // One GPU: the best single pattern is 600 + 400 or the whole GPU.
  EXPECT_NEAR(GpuPackingBoundMilli(all, 1).value(), 1000, 1e-6);
  // Two GPUs: 1000 + (600 + 400).
  EXPECT_NEAR(GpuPackingBoundMilli(all, 2).value(), 2000, 1e-6);
  // Three: everything but one 600 cannot share: 1000 + 1000 + 600.
  EXPECT_NEAR(GpuPackingBoundMilli(all, 3).value(), 2600, 1e-6);
  EXPECT_NEAR(GpuPackingBoundMilli(all, 9).value(), 2600, 1e-6);
  // Two 600s cannot share one GPU, even fractionally in the LP.
  EXPECT_NEAR(GpuPackingBoundMilli({&pods[0], &pods[1]}, 1).value(), 600, 1e-6);
  EXPECT_NEAR(GpuPackingBoundMilli({}, 4).value(), 0, 1e-6);
}

bool HaveOpenb() {
  return std::filesystem::exists(kOpenb + "/openb_pod_list_default.csv");
}

// The openb cluster and one of its pod lists (`pod_list`, a file name);
// nullopt, with a test failure naming the list, when either is unreadable.
struct OpenbCase {
  Topology topology;
  std::vector<TracePod> pods;
};
std::optional<OpenbCase> LoadOpenb(const std::string& pod_list) {
  auto nodes = LoadTraceNodes(kOpenb + "/openb_node_list_gpu_node.csv");
  auto pods = LoadTracePods(kOpenb + "/" + pod_list);
  EXPECT_TRUE(nodes && pods) << pod_list;
  if (!nodes || !pods) return std::nullopt;
  return OpenbCase{TraceTopology(nodes->rows, "openb", 0),
                   std::move(pods->rows)};
}

// One openb pod list at arrived = 100%, fgd then tessera over the same
// `seeds`: each scorer's mean allocation, and the physical limit's mean
// (0 without `bound`).
struct AtFull {
  double fgd = 0, tessera = 0, limit = 0;
};
AtFull FgdAndTesseraAtFull(const std::string& pod_list, int seeds, bool bound) {
  AtFull out;
  const std::optional<OpenbCase> openb = LoadOpenb(pod_list);
  if (!openb) return out;
  for (const char* scorer : {"fgd", "tessera"}) {
    SnapshotOptions o = Options(scorer);
    o.seeds = seeds;
    o.bound = bound;
    o.levels_pct = {100};
    auto runs = RunSnapshot(openb->topology, openb->pods, o);
    EXPECT_TRUE(runs) << scorer;
    if (!runs) return out;
    double& mean = std::string(scorer) == "fgd" ? out.fgd : out.tessera;
    for (const SnapshotRun& r : *runs) {
      mean += r.levels[0].alloc_pct / seeds;
      out.limit += r.levels[0].bound_pct / (2 * seeds);
    }
  }
  return out;
}

// The published ATC'23 figure at arrived = 100% (FGD_RESULTS.md) within
// half a point over 3 seeds, and tessera above FGD on the same seeds.
TEST(SnapshotOpenb, ReproducesFgdAndTesseraAllocatesMore) {
  ASSERT_TRUE(HaveOpenb()) << kOpenb << ": the openb trace is missing";
  const AtFull a = FgdAndTesseraAtFull("openb_pod_list_default.csv", 3, true);
  EXPECT_NEAR(a.fgd, 95.23, 0.5);
  EXPECT_GT(a.tessera, a.fgd + 0.2);
  EXPECT_LT(a.tessera, a.limit);
}

// Rounds of 64 on gpushare100 (one of the two traces the rounds were
// chosen on): the second pass lets a round's large fractions join the
// GPUs its small ones took, and the cluster the next rounds find is
// packed better (10 seeds: 87.78 largest first only, 87.91 with it).
TEST(SnapshotOpenb, RepackingRoundsPlacesMoreOnEverySeed) {
  ASSERT_TRUE(HaveOpenb()) << kOpenb << ": the openb trace is missing";
  const std::optional<OpenbCase> openb =
      LoadOpenb("openb_pod_list_gpushare100.csv");
  ASSERT_TRUE(openb);
  SnapshotOptions o = Options("tessera");
  o.bound = false;
  o.levels_pct = {100};
  o.round_pods = 64;
  o.repack_rounds = false;
  auto first = RunSnapshot(openb->topology, openb->pods, o);
  o.repack_rounds = true;
  auto again = RunSnapshot(openb->topology, openb->pods, o);
  ASSERT_TRUE(first && again);
  double gain = 0;
  for (size_t s = 0; s < first->size(); ++s) {
    const double a = (*first)[s].levels[0].alloc_pct;
    const double b = (*again)[s].levels[0].alloc_pct;
    EXPECT_GT(b, a) << "seed " << s;
    gain += (b - a) / static_cast<double>(first->size());
  }
  EXPECT_GT(gain, 0.05);
}

// Where pods name GPU models (gpuspec20), tessera once fell below FGD: its
// stranding term sent unbound pods to the CPU-rich T4 nodes that the
// T4-bound pods need. The kind reserve keeps them (docs/simulate.md).
TEST(SnapshotOpenb, TesseraKeepsBoundKindsOnGpuspec) {
  ASSERT_TRUE(HaveOpenb()) << kOpenb << ": the openb trace is missing";
  const AtFull a =
      FgdAndTesseraAtFull("openb_pod_list_gpuspec20.csv", 2, false);
  EXPECT_NEAR(a.fgd, 94.66, 0.5);     // the published FGD
  EXPECT_GT(a.tessera, a.fgd + 0.5);  // 95.70 against 94.64 over 10 seeds
}

}  // namespace
}  // namespace tessera::scheduler
