// Elastic jobs in the timed replay: hand-made traces on one 4-GPU node
// whose JCTs and makespans are worked out by hand (grow, take back, grow
// again; sub-linear scaling), the gang-only run equal to RunTimed's,
// invariants after every round (Σ reservations ≤ capacity, workers within
// [min, max]), work conserved, determinism, refused inputs, and the openb
// default trace on a small cluster.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sim/timed_elastic.h"
#include "sim/timed_replay.h"
#include "sim/trace.h"
#include "tests/sim/timed_pods.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::CompareElastic;
using sim::DeclaresModel;
using sim::ElasticTimedOptions;
using sim::ElasticTimedRun;
using sim::IsElasticPod;
using sim::LoadTraceNodes;
using sim::LoadTracePods;
using sim::RunTimed;
using sim::RunTimedElastic;
using sim::SampleCluster;
using sim::TimedOptions;
using sim::TraceTopology;

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeTopology;

ElasticTimedOptions RunOptions(const std::string& policy = "fifo",
                               int pct = 100, double efficiency = 1) {
  ElasticTimedOptions o;
  o.base.queue_policy = policy;
  o.base.scorer = "best-fit";
  o.elastic_pct = pct;
  o.scaling_efficiency = efficiency;
  return o;
}

ElasticTimedRun Replay(const Topology& t, const std::vector<TracePod>& pods,
                       const ElasticTimedOptions& o, bool elastic) {
  auto run = RunTimedElastic(t, pods, o, elastic);
  EXPECT_TRUE(run) << run.error().message;
  return run ? std::move(run.value()) : ElasticTimedRun{};
}

TEST(TimedElastic, OnlyMultiGpuWholeGpuPodsAreElastic) {
  EXPECT_TRUE(IsElasticPod(Pod(0, 1, 4), 100));
  EXPECT_TRUE(IsElasticPod(Pod(0, 1, 2), 100));
  EXPECT_FALSE(IsElasticPod(Pod(0, 1, 1), 100));
  EXPECT_FALSE(IsElasticPod(Pod(0, 1, 1, 500), 100));
  EXPECT_FALSE(IsElasticPod(Pod(0, 1, 0), 100));
  EXPECT_FALSE(IsElasticPod(Pod(0, 1, 4), 0));
  // The --model-pods rule on the name.
  TracePod p = Pod(0, 1, 8);
  for (int pct = 0; pct <= 100; pct += 10) {
    EXPECT_EQ(IsElasticPod(p, pct), DeclaresModel(p.name, pct));
  }
}

TEST(TimedElastic, AloneItStartsWithMinAndGrowsToMaxAtOnce) {
  // One 4-GPU node, one 4-GPU pod of 100 s: elastic, it starts with one
  // worker and grows to four in the same round, so it ends at 100 as the
  // gang does.
  const Topology t = MakeTopology({{32, 32, 32, 32}});
  const std::vector<TracePod> pods = {Pod(0, 100, 4)};
  const ElasticTimedRun gang = Replay(t, pods, RunOptions(), false);
  const ElasticTimedRun el = Replay(t, pods, RunOptions(), true);
  EXPECT_DOUBLE_EQ(gang.makespan_s, 100);
  EXPECT_DOUBLE_EQ(el.makespan_s, 100);
  EXPECT_EQ(el.elastic_pods, 1);
  EXPECT_EQ(gang.elastic_pods, 1);
  EXPECT_EQ(el.grows, 1);
  EXPECT_EQ(el.workers_grown, 3);
  EXPECT_EQ(el.shrinks, 0);
  EXPECT_EQ(gang.grows, 0);
  EXPECT_THAT(el.pod_gpu_seconds, ElementsAre(400));
  EXPECT_DOUBLE_EQ(el.mean_utilization_pct, 100);
}

TEST(TimedElastic, ItStartsBesideRunningPodsAndGrowsWhenTheyLeave) {
  // Three 1-GPU pods hold 3 of 4 GPUs for 0-100; a 4-GPU pod of 100 s
  // (400 GPU-seconds) arrives at 0. Gang: it waits until 100 and ends at
  // 200. Elastic: one worker 0-100 (100 GPU-s, a quarter), then four:
  // 300 / 4 = 75 s more, it ends at 175.
  const Topology t = MakeTopology({{32, 32, 32, 32}});
  const std::vector<TracePod> pods = {Pod(0, 100, 1), Pod(0, 100, 1),
                                      Pod(0, 100, 1), Pod(0, 100, 4)};
  const ElasticTimedRun gang = Replay(t, pods, RunOptions(), false);
  const ElasticTimedRun el = Replay(t, pods, RunOptions(), true);
  EXPECT_THAT(gang.pod_jct_s, ElementsAre(100, 100, 100, 200));
  EXPECT_THAT(gang.pod_delay_s, ElementsAre(0, 0, 0, 100));
  EXPECT_THAT(el.pod_jct_s, ElementsAre(100, 100, 100, 175));
  EXPECT_THAT(el.pod_delay_s, ElementsAre(0, 0, 0, 0));
  EXPECT_DOUBLE_EQ(gang.makespan_s, 200);
  EXPECT_DOUBLE_EQ(el.makespan_s, 175);
  EXPECT_DOUBLE_EQ(gang.mean_elastic_jct_s, 200);
  EXPECT_DOUBLE_EQ(el.mean_elastic_jct_s, 175);
  EXPECT_DOUBLE_EQ(gang.mean_jct_s, 125);
  EXPECT_DOUBLE_EQ(el.mean_jct_s, 118.75);
  EXPECT_EQ(el.grows, 1);
  EXPECT_EQ(el.workers_grown, 3);
  EXPECT_NEAR(el.pod_gpu_seconds[3], 400, 1e-9);
}

TEST(TimedElastic, SubLinearScalingStretchesTheRunOnFewWorkers) {
  // As above at efficiency 0.5: speedup(1) = 1, speedup(4) = 2.5. One
  // worker 0-100 does 100 x 1/2.5 = 40 s of the 100 s at max; the other
  // 60 s at four workers end at 160.
  const Topology t = MakeTopology({{32, 32, 32, 32}});
  const std::vector<TracePod> pods = {Pod(0, 100, 1), Pod(0, 100, 1),
                                      Pod(0, 100, 1), Pod(0, 100, 4)};
  const ElasticTimedRun el =
      Replay(t, pods, RunOptions("fifo", 100, 0.5), true);
  EXPECT_NEAR(el.pod_jct_s[3], 160, 1e-9);
  EXPECT_NEAR(el.makespan_s, 160, 1e-9);
}

TEST(TimedElastic, ExtrasAreTakenBackForAGangPodAndGrownAgain) {
  // The 4-GPU pod (100 s) runs alone on four workers from 0. A 1-GPU pod
  // of 50 s arrives at 20: the policy sees three GPUs free (extras count
  // as free), starts it, and the extra on its GPU is taken back. Elastic
  // pod: 0-20 at 4/4 (20 s of work), 20-70 at 3/4 (37.5 s), then four
  // again: 42.5 s more, ends at 112.5. Gang: the 1-GPU pod waits until
  // 100 and ends at 150.
  const Topology t = MakeTopology({{32, 32, 32, 32}});
  const std::vector<TracePod> pods = {Pod(0, 100, 4), Pod(20, 50, 1)};
  const ElasticTimedRun gang = Replay(t, pods, RunOptions(), false);
  const ElasticTimedRun el = Replay(t, pods, RunOptions(), true);
  EXPECT_THAT(gang.pod_jct_s, ElementsAre(100, 130));
  EXPECT_THAT(el.pod_jct_s, ElementsAre(112.5, 50));
  EXPECT_DOUBLE_EQ(gang.makespan_s, 150);
  EXPECT_DOUBLE_EQ(el.makespan_s, 112.5);
  EXPECT_DOUBLE_EQ(gang.mean_jct_s, 115);
  EXPECT_DOUBLE_EQ(el.mean_jct_s, 81.25);
  EXPECT_EQ(el.shrinks, 1);
  EXPECT_EQ(el.workers_taken_back, 1);
  EXPECT_EQ(el.grows, 2);
  EXPECT_EQ(el.workers_grown, 4);
  // 20 x 4 + 50 x 3 + 42.5 x 4 GPU-seconds: its work, nothing lost.
  EXPECT_NEAR(el.pod_gpu_seconds[0], 400, 1e-9);
  EXPECT_NEAR(el.pod_gpu_seconds[1], 50, 1e-9);
}

// A name DeclaresModel puts among (or outside) the picked pods at `pct`.
std::string NameWhere(bool picked, int pct) {
  for (int i = 0;; ++i) {
    std::string name = "pod-e" + std::to_string(i);
    if (DeclaresModel(name, pct) == picked) return name;
  }
}

TEST(TimedElastic, AGuaranteedPartIsNeverTakenBack) {
  // min 2 of 4: a 4-GPU gang pod arriving at 10 needs all four GPUs, which
  // the planning state never shows free (two are guaranteed), so it waits
  // for the elastic pod's end at 100 and nothing is taken back.
  const Topology t = MakeTopology({{32, 32, 32, 32}});
  std::vector<TracePod> pods = {Pod(0, 100, 4), Pod(10, 50, 4)};
  pods[0].name = NameWhere(true, 50);
  pods[1].name = NameWhere(false, 50);
  ElasticTimedOptions o = RunOptions("fifo", 50);
  o.min_workers = 2;
  const ElasticTimedRun el = Replay(t, pods, o, true);
  EXPECT_EQ(el.elastic_pods, 1);
  EXPECT_THAT(el.pod_min, ElementsAre(2, 0));
  EXPECT_THAT(el.pod_max, ElementsAre(4, 0));
  EXPECT_THAT(el.pod_jct_s, ElementsAre(100, 140));
  EXPECT_EQ(el.shrinks, 0);
}

TEST(TimedElastic, TheGuaranteedPartAndTheExtrasKeepThePodsGpuKinds) {
  // Node 0: four GPUs of kind A (best-fit's tighter node for one worker);
  // node 1: eight of kind B. A 4-GPU pod asking B runs on node 1 only.
  Topology t =
      MakeTopology({{32, 32, 32, 32}, {32, 32, 32, 32, 32, 32, 32, 32}});
  for (GpuInfo& g : t.gpus) g.kind = g.node == 0 ? "A" : "B";
  std::vector<TracePod> pods = {Pod(0, 100, 4)};
  pods[0].gpu_spec = {"B"};
  ElasticTimedOptions o = RunOptions();
  std::string wrong;
  o.base.on_round = [&](double, const ClusterState& s) {
    const Allocation* a = s.AllocationOf(1);
    if (a != nullptr && a->node != 1)
      wrong = "on node " + std::to_string(a->node);
  };
  const ElasticTimedRun el = Replay(t, pods, o, true);
  EXPECT_EQ(wrong, "");
  EXPECT_DOUBLE_EQ(el.makespan_s, 100);
  EXPECT_EQ(el.workers_grown, 3);
}

// A mixed trace on two 4-GPU nodes: 1-, 2- and 4-GPU pods and fractions,
// best-effort ones among them (preemptible under priority).
std::vector<TracePod> MixedTrace(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::vector<TracePod> pods;
  double at = 0;
  for (int i = 0; i < count; ++i) {
    at += static_cast<double>(rng() % 40);
    const int kind = static_cast<int>(rng() % 6);
    const int gpus = kind == 0 ? 4 : kind == 1 ? 2 : 1;
    const int milli = kind == 5 ? 500 : 1000;
    const double duration = 10 + static_cast<double>(rng() % 300);
    pods.push_back(
        Pod(at, duration, gpus, milli, rng() % 3 == 0 ? "BE" : "LS"));
  }
  return pods;
}

TEST(TimedElastic, InvariantsHoldAfterEveryRound) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32, 32, 32}});
  const std::vector<TracePod> pods = MixedTrace(7, 120);
  for (const std::string policy : {"fifo", "backfill", "priority"}) {
    SCOPED_TRACE(policy);
    ElasticTimedOptions o = RunOptions(policy, 100);
    o.min_workers = 1;
    std::string broken;
    int64_t rounds = 0, beside = 0;
    o.base.on_round = [&](double, const ClusterState& s) {
      ++rounds;
      if (broken.empty()) broken = s.CheckInvariants();
      for (size_t p = 0; p < pods.size(); ++p) {
        const Allocation* a = s.AllocationOf(static_cast<JobId>(p + 1));
        if (a == nullptr || !IsElasticPod(pods[p], 100)) continue;
        const auto k = static_cast<int>(a->gpus.size());
        if ((k < 1 || k > pods[p].num_gpu) && broken.empty()) {
          broken = "pod " + std::to_string(p) + " holds " + std::to_string(k);
        }
        beside += k < pods[p].num_gpu ? 1 : 0;
      }
    };
    const ElasticTimedRun el = Replay(t, pods, o, true);
    EXPECT_EQ(broken, "");
    EXPECT_GT(rounds, 0);
    EXPECT_GT(beside, 0);  // some ran narrower than their request
    EXPECT_EQ(el.started, 120);
    EXPECT_EQ(el.stuck, 0);
    EXPECT_GT(el.grows, 0);
    EXPECT_GT(el.shrinks, 0);
    if (policy != "priority") {
      // Linear scaling and nobody preempted: every pod held exactly its
      // work in GPU-seconds (an elastic pod whatever its widths).
      EXPECT_EQ(el.preemptions, 0);
      for (size_t p = 0; p < pods.size(); ++p) {
        const double duration = pods[p].deletion_time - pods[p].creation_time;
        EXPECT_NEAR(el.pod_gpu_seconds[p], duration * pods[p].num_gpu,
                    1e-6 * duration)
            << "pod " << p;
      }
    }
  }
}

TEST(TimedElastic, TheGangRunIsRunTimedsReplay) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32, 32, 32}});
  const std::vector<TracePod> pods = MixedTrace(11, 150);
  for (const std::string policy : {"fifo", "backfill", "priority"}) {
    SCOPED_TRACE(policy);
    TimedOptions base;
    base.queue_policy = policy;
    base.scorer = "fgd";
    auto plain = RunTimed(t, pods, base);
    ASSERT_TRUE(plain) << plain.error().message;
    ElasticTimedOptions o;
    o.base = base;
    o.elastic_pct = 100;
    const ElasticTimedRun gang = Replay(t, pods, o, false);
    EXPECT_EQ(gang.pod_jct_s, plain->pod_jct_s);
    EXPECT_EQ(gang.pod_delay_s, plain->pod_delay_s);
    EXPECT_DOUBLE_EQ(gang.makespan_s, plain->makespan_s);
    EXPECT_EQ(gang.preemptions, plain->preemptions);
    EXPECT_NEAR(gang.mean_utilization_pct, plain->mean_utilization_pct, 1e-9);
    // No elastic pod picked: the elastic run is the same replay.
    o.elastic_pct = 0;
    const ElasticTimedRun none = Replay(t, pods, o, true);
    EXPECT_EQ(none.pod_jct_s, plain->pod_jct_s);
  }
}

TEST(TimedElastic, SameSeedSameResult) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32, 32, 32}});
  const std::vector<TracePod> pods = MixedTrace(3, 100);
  ElasticTimedOptions o = RunOptions("backfill", 60);
  o.base.scorer = "random";
  auto a = CompareElastic(t, pods, o, 2);
  auto b = CompareElastic(t, pods, o, 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->elastic.pod_jct_s, b->elastic.pod_jct_s);
  EXPECT_EQ(a->gang.pod_jct_s, b->gang.pod_jct_s);
  EXPECT_EQ(a->elastic.grows, b->elastic.grows);
  EXPECT_TRUE(a->elastic.elastic);
  EXPECT_FALSE(a->gang.elastic);
  EXPECT_EQ(a->gang.elastic_pods, a->elastic.elastic_pods);
}

// The errors name ElasticTimedOptions' fields (the CLI maps them to its
// flags).
TEST(TimedElastic, RefusesBadOptionsNamingTheField) {
  const Topology t = MakeTopology({{32}});
  const std::vector<TracePod> pods = {Pod(0, 10, 1)};
  auto message = [&](ElasticTimedOptions o) {
    auto r = RunTimedElastic(t, pods, o, true);
    return r ? std::string() : r.error().message;
  };
  ElasticTimedOptions o = RunOptions();
  o.elastic_pct = 101;
  EXPECT_EQ(message(o), "elastic_pct: a percentage in 0..100, got 101");
  o = RunOptions();
  o.min_workers = 0;
  EXPECT_EQ(message(o), "min_workers: at least 1, got 0");
  o = RunOptions();
  o.scaling_efficiency = 0;
  EXPECT_THAT(message(o), HasSubstr("scaling_efficiency: in (0, 1], got 0"));
  o = RunOptions();
  o.base.model_pods_pct = 10;
  EXPECT_EQ(message(o), "elastic_pct: not combined with base.model_pods_pct");
  o = RunOptions();
  o.base.queues.push_back(QueueSpec{});
  EXPECT_EQ(message(o), "elastic_pct: not combined with base.queues");
}

// The openb default trace on 1% of its cluster at 2x the load, all
// multi-GPU pods elastic: every pod starts, the cluster holds after every
// round, and the elastic pods grew and gave back. (On 2% every start
// finds room beside the extras: none is taken back.)
TEST(TimedElastic, TheOpenbDefaultTraceOnASmallerCluster) {
  const std::string dir = tessera::repo::OpenbDir();
  const std::string pods_file = dir + "/openb_pod_list_default.csv";
  ASSERT_TRUE(std::filesystem::exists(pods_file))
      << dir << ": the openb trace is missing";
  auto nodes = LoadTraceNodes(dir + "/openb_node_list_gpu_node.csv");
  auto pods = LoadTracePods(pods_file);
  ASSERT_TRUE(nodes && pods);
  const Topology t =
      SampleCluster(TraceTopology(nodes->rows, "openb", 0), 0.01, 42);
  ElasticTimedOptions o;
  o.base.scorer = "fgd";
  o.base.queue_policy = "fifo";
  o.base.load_factor = 2;
  o.elastic_pct = 100;
  std::string broken;
  o.base.on_round = [&](double, const ClusterState& s) {
    if (broken.empty()) broken = s.CheckInvariants();
  };
  auto el = RunTimedElastic(t, pods->rows, o, true);
  ASSERT_TRUE(el) << el.error().message;
  EXPECT_EQ(broken, "");
  EXPECT_EQ(el->elastic_pods, 75);
  EXPECT_EQ(el->started + el->unplaceable + el->stuck, 8152);
  EXPECT_EQ(el->stuck, 0);
  EXPECT_GT(el->grows, 0);
  EXPECT_GT(el->shrinks, 0);
  // min = max (8 caps every pod at its GPUs): nothing grows or shrinks and
  // the elastic run is the gang run, pod by pod.
  o.base.on_round = nullptr;
  o.min_workers = 8;
  auto fixed = RunTimedElastic(t, pods->rows, o, true);
  auto gang = RunTimedElastic(t, pods->rows, o, false);
  ASSERT_TRUE(fixed && gang);
  EXPECT_EQ(fixed->grows + fixed->shrinks, 0);
  EXPECT_EQ(fixed->pod_jct_s, gang->pod_jct_s);
  EXPECT_DOUBLE_EQ(fixed->makespan_s, gang->makespan_s);
}

}  // namespace
}  // namespace tessera::scheduler
