// Timed trace replay: hand-made traces with delays and makespans worked out
// by hand under each queue policy, the field mapping, refused inputs,
// invariants after every policy round, and the real openb default trace.
// Model pods (co-location, the split-or-wait admission) are in
// timed_model_pods_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sim/timed_replay.h"
#include "sim/trace.h"
#include "tests/sim/timed_pods.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::DelayStats;
using sim::LoadTraceNodes;
using sim::LoadTracePods;
using sim::MakeTimedPods;
using sim::RunTimed;
using sim::RunTimedAll;
using sim::SampleCluster;
using sim::SummarizeDelays;
using sim::TimedOptions;
using sim::TimedPod;
using sim::TimedRun;
using sim::TraceTopology;

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeTopology;

const std::string kOpenbTraces = tessera::repo::OpenbDir();

TimedRun ReplayTrace(const Topology& t, const std::vector<TracePod>& pods,
                     const std::string& policy,
                     const std::string& scorer = "best-fit",
                     bool preemption = true) {
  TimedOptions o;
  o.queue_policy = policy;
  o.scorer = scorer;
  o.preemption = preemption;
  o.utilization_points = 4;
  auto run = RunTimed(t, pods, o);
  EXPECT_TRUE(run) << run.error().message;
  return run ? std::move(run.value()) : TimedRun{};
}

TEST(TimedReplay, FifoQueuesBehindTheRunningPodByHand) {
  // One GPU. A runs 0-100; B (arrives 10) starts when A leaves, 100-150;
  // C (arrives 20) after B, 150-180.
  const Topology t = MakeTopology({{32}});
  const std::vector<TracePod> pods = {Pod(0, 100, 1), Pod(10, 50, 1),
                                      Pod(20, 30, 1)};
  const TimedRun run = ReplayTrace(t, pods, "fifo");
  EXPECT_THAT(run.pod_delay_s, ElementsAre(0, 90, 130));
  EXPECT_EQ(run.started, 3);
  EXPECT_EQ(run.never_started(), 0);
  EXPECT_DOUBLE_EQ(run.makespan_s, 180);
  EXPECT_NEAR(run.delay_s.mean, 220.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(run.delay_s.p50, 90);
  EXPECT_DOUBLE_EQ(run.delay_s.p99, 130);
  EXPECT_DOUBLE_EQ(run.mean_utilization_pct, 100);
  EXPECT_EQ(run.peak_queue, 2);
}

TEST(TimedReplay, UtilizationFollowsArrivalsAndDepartures) {
  // One GPU busy 0-100 and 300-400: half the makespan, and the four
  // buckets of the curve see 100, 0, 0, 100.
  const Topology t = MakeTopology({{32}});
  const TimedRun run =
      ReplayTrace(t, {Pod(0, 100, 1), Pod(300, 100, 1)}, "fifo");
  EXPECT_DOUBLE_EQ(run.makespan_s, 400);
  EXPECT_DOUBLE_EQ(run.mean_utilization_pct, 50);
  EXPECT_DOUBLE_EQ(run.peak_utilization_pct, 100);
  ASSERT_EQ(run.utilization.size(), 4u);
  EXPECT_EQ(run.utilization[0], std::make_pair(0.0, 100.0));
  EXPECT_EQ(run.utilization[1], std::make_pair(100.0, 0.0));
  EXPECT_EQ(run.utilization[2], std::make_pair(200.0, 0.0));
  EXPECT_EQ(run.utilization[3], std::make_pair(300.0, 100.0));
}

TEST(TimedReplay, FractionsShareAGpuUntilADepartureFreesRoom) {
  // 500 + 400 milli share the GPU at once; 600 milli waits until the 500
  // leaves at 50, then runs 50-110 next to the 400 (which leaves at 80).
  const Topology t = MakeTopology({{32}});
  const std::vector<TracePod> pods = {Pod(0, 50, 1, 500), Pod(0, 80, 1, 400),
                                      Pod(5, 60, 1, 600)};
  const TimedRun run = ReplayTrace(t, pods, "fifo");
  EXPECT_THAT(run.pod_delay_s, ElementsAre(0, 0, 45));
  EXPECT_DOUBLE_EQ(run.makespan_s, 110);
  EXPECT_DOUBLE_EQ(run.peak_utilization_pct, 100);
  // 900 milli for 50 s, 1000 for 30 s, 600 for 30 s, over 110 s.
  EXPECT_NEAR(run.mean_utilization_pct,
              (900 * 50 + 1000 * 30 + 600 * 30) / 110.0 / 10, 1e-9);
}

// Two GPUs. A holds one 0-100; B wants both (blocked until 100); C fits the
// free GPU and ends (52) before B's reservation; D (arrives 60, ends long
// after 100) would take the GPU B is waiting for.
std::vector<TracePod> BackfillTrace() {
  return {Pod(0, 100, 1), Pod(1, 10, 2), Pod(2, 50, 1), Pod(60, 200, 1)};
}

TEST(TimedReplay, BackfillLetsASmallPodPassTheBlockedHead) {
  const Topology t = MakeTopology({{32, 32}});
  const TimedRun backfill = ReplayTrace(t, BackfillTrace(), "backfill");
  // C passes; B still starts at 100; D waits for B to end.
  EXPECT_THAT(backfill.pod_delay_s, ElementsAre(0, 99, 0, 50));
  EXPECT_DOUBLE_EQ(backfill.makespan_s, 310);
  const TimedRun fifo = ReplayTrace(t, BackfillTrace(), "fifo");
  // C waits behind B: starts at 110 with D.
  EXPECT_THAT(fifo.pod_delay_s, ElementsAre(0, 99, 108, 50));
  EXPECT_DOUBLE_EQ(fifo.makespan_s, 310);
  EXPECT_LT(backfill.delay_s.mean, fifo.delay_s.mean);
}

TEST(TimedReplay, PriorityPreemptsBestEffortWhichRestartsFromScratch) {
  // One GPU. BE pod A runs from 0; LS pod B arrives at 10 and preempts it;
  // A is back at 30 and runs its whole 100 s again.
  const Topology t = MakeTopology({{32}});
  const std::vector<TracePod> pods = {Pod(0, 100, 1, 1000, "BE"),
                                      Pod(10, 20, 1, 1000, "LS")};
  const TimedRun run = ReplayTrace(t, pods, "priority");
  EXPECT_THAT(run.pod_delay_s, ElementsAre(20, 0));
  EXPECT_EQ(run.preemptions, 1);
  EXPECT_NEAR(run.lost_gpu_hours, 10.0 / 3600, 1e-12);
  EXPECT_DOUBLE_EQ(run.makespan_s, 130);
  // Without preemption B waits for A.
  const TimedRun patient = ReplayTrace(t, pods, "priority", "best-fit", false);
  EXPECT_THAT(patient.pod_delay_s, ElementsAre(0, 90));
  EXPECT_EQ(patient.preemptions, 0);
}

TEST(TimedReplay, FairShareServesTheQosClassWithLessRunning) {
  // Two GPUs: LS pod A (0-100) and BE pod X (0-50) fill them. LS pod B
  // (arrives 10) and BE pod C (arrives 20) wait; when X leaves at 50 fifo
  // starts B, fair-share starts C (BE runs nothing, LS a whole GPU).
  const Topology t = MakeTopology({{32, 32}});
  const std::vector<TracePod> pods = {
      Pod(0, 100, 1, 1000, "LS"), Pod(0, 50, 1, 1000, "BE"),
      Pod(10, 10, 1, 1000, "LS"), Pod(20, 10, 1, 1000, "BE")};
  EXPECT_THAT(ReplayTrace(t, pods, "fifo").pod_delay_s,
              ElementsAre(0, 0, 40, 40));
  EXPECT_THAT(ReplayTrace(t, pods, "fair-share").pod_delay_s,
              ElementsAre(0, 0, 50, 30));
}

TEST(TimedReplay, UnplaceablePodsAreCountedApartAndBlockNothing) {
  // Four GPUs on a two-GPU node never fit; fifo goes on behind it.
  const Topology t = MakeTopology({{32, 32}});
  const TimedRun run =
      ReplayTrace(t, {Pod(0, 10, 4), Pod(1, 10, 1), Pod(2, 10, 2)}, "fifo");
  EXPECT_EQ(run.unplaceable, 1);
  EXPECT_EQ(run.stuck, 0);
  EXPECT_EQ(run.started, 2);
  EXPECT_EQ(run.never_started(), 1);
  EXPECT_THAT(run.pod_delay_s, ElementsAre(-1, 0, 9));
  // first arrival 0, last departure 21
  EXPECT_DOUBLE_EQ(run.makespan_s, 21);
}

TEST(TimedReplay, TheTraceFieldsMapToQueueFields) {
  TracePod be = Pod(100, 50, 1, 300, "BE");
  be.scheduled_time = -1;  // never scheduled in the trace
  be.deletion_time = 130;
  const TracePod ls = Pod(5, 0, 2, 1000, "LS");
  TracePod burst = Pod(7, 3, 0, 0, "Burstable");
  burst.scheduled_time = 9;
  burst.deletion_time = 12;
  auto timed = MakeTimedPods({be, ls, burst});
  ASSERT_TRUE(timed) << timed.error().message;
  const std::vector<TimedPod>& p = *timed;
  EXPECT_DOUBLE_EQ(p[0].arrival, 100);
  EXPECT_DOUBLE_EQ(p[0].duration, 30);  // deletion - creation
  EXPECT_EQ(p[0].job.priority, 0);
  EXPECT_TRUE(p[0].job.preemptible);
  EXPECT_EQ(p[0].job.user, "BE");
  EXPECT_EQ(p[0].job.demand.gpu_milli, 300);
  EXPECT_DOUBLE_EQ(p[0].job.time_limit_s, 30);  // the oracle estimate
  EXPECT_EQ(p[1].job.priority, 2);
  EXPECT_FALSE(p[1].job.preemptible);
  EXPECT_EQ(p[1].job.demand.gpus, 2);
  EXPECT_DOUBLE_EQ(p[1].job.time_limit_s, 1);  // 0 would read "unknown"
  EXPECT_EQ(p[2].job.priority, 1);
  EXPECT_DOUBLE_EQ(p[2].duration, 3);  // deletion - scheduled
  EXPECT_EQ(p[2].job.id, 3);
}

TEST(TimedReplay, PodsWithoutTimesAreRefused) {
  TracePod p = Pod(0, 10, 1);
  p.deletion_time = -1;
  auto one = MakeTimedPods({Pod(0, 10, 1), p});
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(one.error().message, HasSubstr(p.name));
  EXPECT_THAT(one.error().message, HasSubstr("deletion_time"));

  TracePod bare;
  bare.name = "multi";
  bare.num_gpu = 1;
  bare.gpu_milli = 1000;
  auto none = RunTimed(MakeTopology({{32}}), {bare, bare}, TimedOptions{});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(none.error().message, HasSubstr("no pod has a creation_time"));

  TracePod backwards = Pod(50, 10, 1);
  backwards.deletion_time = 40;
  auto bad = MakeTimedPods({backwards});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("out of order"));
}

TEST(TimedReplay, UnknownNamesAreBadInput) {
  TimedOptions o;
  o.queue_policy = "lottery";
  auto run = RunTimed(MakeTopology({{32}}), {Pod(0, 1, 1)}, o);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kBadInput);
  o.queue_policy = "fifo";
  o.scorer = "nope";
  run = RunTimed(MakeTopology({{32}}), {Pod(0, 1, 1)}, o);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kBadInput);
}

TEST(TimedReplay, DelayPercentilesAreNearestRank) {
  std::vector<double> d;
  for (int i = 100; i >= 1; --i) d.push_back(i);
  const DelayStats s = SummarizeDelays(d);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p95, 95);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(SummarizeDelays({}).p99, 0);
}

// Random traces on a small mixed cluster under every policy and a few
// scorers: the cluster's invariants hold after every round, utilization
// never passes 100%, every pod is accounted for, and nothing is left
// queued (every pod fits the empty cluster).
TEST(TimedReplay, InvariantsHoldAfterEveryRound) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32}, {32}});
  const std::vector<TracePod> pods = RandomTrace(120, 7);
  for (const std::string& policy : PolicyNames()) {
    for (const std::string scorer : {"best-fit", "fgd", "random"}) {
      TimedOptions o;
      o.queue_policy = policy;
      o.scorer = scorer;
      int rounds = 0;
      std::string broken;
      o.on_round = [&](double, const ClusterState& s) {
        ++rounds;
        if (broken.empty()) broken = s.CheckInvariants();
      };
      auto run = RunTimed(t, pods, o);
      ASSERT_TRUE(run) << run.error().message;
      SCOPED_TRACE(policy + " " + scorer);
      EXPECT_EQ(broken, "");
      EXPECT_GT(rounds, 0);
      EXPECT_EQ(run->started + run->never_started(), run->pods);
      EXPECT_EQ(run->stuck, 0);
      EXPECT_EQ(run->unplaceable, 0);
      EXPECT_LE(run->peak_utilization_pct, 100 + 1e-9);
      EXPECT_GT(run->mean_utilization_pct, 0);
      EXPECT_GE(run->delay_s.p99, run->delay_s.p50);
      for (const auto& [x, pct] : run->utilization) {
        EXPECT_LE(pct, 100 + 1e-9);
        EXPECT_GE(pct, 0);
      }
    }
  }
}

TEST(TimedReplay, ALoadFactorBringsArrivalsCloser) {
  // One GPU, pods of 60 s arriving every 100 s: nobody waits. Twice the
  // load: arrivals every 50 s, each pod waits 10 s more than the last.
  const Topology t = MakeTopology({{32}});
  const std::vector<TracePod> pods = {Pod(1000, 60, 1), Pod(1100, 60, 1),
                                      Pod(1200, 60, 1)};
  TimedOptions o;
  o.queue_policy = "fifo";
  auto calm = RunTimed(t, pods, o);
  ASSERT_TRUE(calm);
  EXPECT_THAT(calm->pod_delay_s, ElementsAre(0, 0, 0));
  o.load_factor = 2;
  auto busy = RunTimed(t, pods, o);
  ASSERT_TRUE(busy);
  EXPECT_THAT(busy->pod_delay_s, ElementsAre(0, 10, 20));
  EXPECT_DOUBLE_EQ(busy->first_arrival, 1000);
  EXPECT_DOUBLE_EQ(busy->makespan_s, 180);
  o.load_factor = 0;
  auto bad = RunTimed(t, pods, o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
}

TEST(TimedReplay, SampleClusterKeepsEveryGpuKind) {
  Topology t = MakeTopology(
      {{32, 32}, {32, 32}, {32, 32}, {32, 32}, {32}, {32}, {32}, {32}, {}});
  for (GpuInfo& g : t.gpus)
    g.kind = t.nodes[g.node].gpus.size() == 2 ? "a" : "b";
  const Topology half = SampleCluster(t, 0.5, 1);
  // Two of the four "a" nodes, two of the four "b" nodes, the CPU node.
  ASSERT_EQ(half.nodes.size(), 5u);
  EXPECT_EQ(half.gpus.size(), 6u);
  for (size_t n = 0; n < half.nodes.size(); ++n) {
    for (const int g : half.nodes[n].gpus) {
      EXPECT_EQ(half.gpus[g].node, static_cast<int>(n));
    }
  }
  EXPECT_TRUE(half.nodes.back().gpus.empty());
  const Topology tiny = SampleCluster(t, 0.01, 1);
  EXPECT_EQ(tiny.nodes.size(), 3u);  // one of each kind, and the CPU node
  EXPECT_EQ(SampleCluster(t, 1, 1).nodes.size(), t.nodes.size());
  // The same seed draws the same nodes.
  EXPECT_EQ(SampleCluster(t, 0.5, 9).nodes[0].name,
            SampleCluster(t, 0.5, 9).nodes[0].name);
}

TEST(TimedReplay, RunTimedAllKeepsTheOrderOfItsRuns) {
  const Topology t = MakeTopology({{32, 32}});
  std::vector<TimedOptions> runs(2);
  runs[0].queue_policy = "backfill";
  runs[1].queue_policy = "fifo";
  double last = 0;
  auto all = RunTimedAll(t, BackfillTrace(), runs, 2,
                         [&](double done) { last = done; });
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].queue_policy, "backfill");
  EXPECT_THAT((*all)[0].pod_delay_s, ElementsAre(0, 99, 0, 50));
  EXPECT_THAT((*all)[1].pod_delay_s, ElementsAre(0, 99, 108, 50));
  EXPECT_DOUBLE_EQ(last, 1.0);
}

TEST(TimedReplay, TheOpenbDefaultTraceReplaysSanely) {
  const std::string nodes_file = kOpenbTraces + "/openb_node_list_gpu_node.csv";
  const std::string pods_file = kOpenbTraces + "/openb_pod_list_default.csv";
  ASSERT_TRUE(std::filesystem::exists(pods_file))
      << kOpenbTraces << ": the openb trace is missing";
  auto nodes = LoadTraceNodes(nodes_file);
  auto pods = LoadTracePods(pods_file);
  ASSERT_TRUE(nodes && pods);
  const Topology t = TraceTopology(nodes->rows, "openb", 32 * 1024);
  TimedOptions o;
  o.scorer = "fgd";
  o.queue_policy = "fifo";
  auto run = RunTimed(t, pods->rows, o);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->pods, 8152);
  EXPECT_EQ(run->unplaceable, 0);
  EXPECT_EQ(run->stuck, 0);
  EXPECT_EQ(run->started, 8152);
  EXPECT_GT(run->mean_utilization_pct, 0);
  EXPECT_LE(run->peak_utilization_pct, 100);
  EXPECT_GE(run->delay_s.p99, run->delay_s.p50);
  EXPECT_GE(run->delay_s.p95, run->delay_s.p50);
  // The trace spans about 149 days; the replay ends no earlier than the
  // trace's last deletion.
  EXPECT_GE(run->makespan_s, 12902960);
  EXPECT_EQ(run->utilization.size(), 400u);
}

// On 2% of the openb cluster the default trace queues: every pod still
// starts, the cluster holds after every round, and the figures are sane.
TEST(TimedReplay, TheOpenbDefaultTraceQueuesOnASmallerCluster) {
  const std::string pods_file = kOpenbTraces + "/openb_pod_list_default.csv";
  ASSERT_TRUE(std::filesystem::exists(pods_file))
      << kOpenbTraces << ": the openb trace is missing";
  auto nodes = LoadTraceNodes(kOpenbTraces + "/openb_node_list_gpu_node.csv");
  auto pods = LoadTracePods(pods_file);
  ASSERT_TRUE(nodes && pods);
  const Topology t =
      SampleCluster(TraceTopology(nodes->rows, "openb", 0), 0.02, 42);
  ASSERT_LT(t.gpus.size(), 200u);
  for (const std::string policy : {"fifo", "backfill"}) {
    TimedOptions o;
    o.scorer = "fgd";
    o.queue_policy = policy;
    std::string broken;
    o.on_round = [&](double, const ClusterState& s) {
      if (broken.empty()) broken = s.CheckInvariants();
    };
    auto run = RunTimed(t, pods->rows, o);
    ASSERT_TRUE(run) << run.error().message;
    SCOPED_TRACE(policy);
    EXPECT_EQ(broken, "");
    EXPECT_EQ(run->started + run->never_started(), 8152);
    EXPECT_EQ(run->stuck, 0);
    EXPECT_GT(run->delay_s.mean, 0);
    EXPECT_GE(run->delay_s.p99, run->delay_s.p95);
    EXPECT_GE(run->delay_s.p95, run->delay_s.p50);
    EXPECT_GT(run->peak_queue, 0);
    EXPECT_GT(run->queued_utilization_pct, 0);
    EXPECT_LE(run->peak_utilization_pct, 100);
  }
}

}  // namespace
}  // namespace tessera::scheduler
