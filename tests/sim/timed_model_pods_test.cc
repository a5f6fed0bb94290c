// Model pods in the timed replay (docs/simulate_timed.md, "Model pods"):
// which pods are models, their slowdown while they share a GPU, the
// split-or-wait admission against the fixed one, and refused options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/timed_replay.h"
#include "sim/trace.h"
#include "tests/sim/timed_pods.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::AdmissionComparison;
using sim::CompareAdmissions;
using sim::DeclaresModel;
using sim::RunTimed;
using sim::TimedAdmission;
using sim::TimedAdmissionName;
using sim::TimedOptions;
using sim::TimedRun;

namespace {

using ::testing::ElementsAre;
using testing::MakeTopology;

// A name DeclaresModel puts among (or outside) the model pods at `pct`.
std::string PodNameWhere(bool model, int pct) {
  for (int i = 0;; ++i) {
    std::string name = "pod-m" + std::to_string(i);
    if (DeclaresModel(name, pct) == model) return name;
  }
}

TracePod Named(TracePod p, bool model) {
  p.name = PodNameWhere(model, 50);
  return p;
}

TimedRun ReplayModels(const Topology& t, const std::vector<TracePod>& pods,
                      TimedAdmission admission, InterferenceLaw law,
                      int pct = 50, const std::string& policy = "fifo") {
  TimedOptions o;
  o.queue_policy = policy;
  o.scorer = "best-fit";
  o.utilization_points = 4;
  o.model_pods_pct = pct;
  o.admission = admission;
  o.law = law;
  std::string broken;
  o.on_round = [&](double, const ClusterState& s) {
    if (broken.empty()) broken = s.CheckInvariants();
  };
  auto run = RunTimed(t, pods, o);
  EXPECT_TRUE(run) << run.error().message;
  EXPECT_EQ(broken, "");
  return run ? std::move(run.value()) : TimedRun{};
}

TEST(TimedReplay, DeclaresModelIsAStableHashOfTheName) {
  EXPECT_FALSE(DeclaresModel("openb-pod-0001", 0));
  EXPECT_TRUE(DeclaresModel("openb-pod-0001", 100));
  EXPECT_EQ(DeclaresModel("openb-pod-0042", 30),
            DeclaresModel("openb-pod-0042", 30));
  int models = 0;
  for (int i = 0; i < 10000; ++i) {
    models += DeclaresModel("pod-" + std::to_string(i), 20) ? 1 : 0;
  }
  EXPECT_NEAR(models, 2000, 150);
  // A model pod at 20% is one at 30%: the set grows with the percentage.
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "pod-" + std::to_string(i);
    if (DeclaresModel(name, 20)) {
      EXPECT_TRUE(DeclaresModel(name, 30)) << name;
    }
  }
}

TEST(TimedReplay, ModelPodsSlowDownWhileTheyShareAGpu) {
  const Topology t = MakeTopology({{32}});
  // Two model pods of 100 s on one GPU under alpha 1: each at half speed,
  // both end at 200.
  const TimedRun two =
      ReplayModels(t, {Pod(0, 100, 1, 500), Pod(0, 100, 1, 500)},
                   TimedAdmission::kFixed, InterferenceLaw::Linear(1), 100);
  EXPECT_THAT(two.pod_jct_s, ElementsAre(200, 200));
  EXPECT_EQ(two.admission, "fixed");
  EXPECT_EQ(two.model.pods, 2);
  EXPECT_EQ(two.model.fractional, 2);
  EXPECT_DOUBLE_EQ(two.model.mean_slowdown, 2);
  // A model pod beside a plain one (50 s): half speed until the plain one
  // leaves at 50 (25 s of work done), then alone: ends at 125. The plain
  // pod keeps its trace duration.
  const TimedRun mixed = ReplayModels(
      t, {Named(Pod(0, 100, 1, 500), true), Named(Pod(0, 50, 1, 500), false)},
      TimedAdmission::kFixed, InterferenceLaw::Linear(1));
  EXPECT_THAT(mixed.pod_jct_s, ElementsAre(125, 50));
  EXPECT_EQ(mixed.model.pods, 1);
  EXPECT_DOUBLE_EQ(mixed.model.mean_jct_s, 125);
  EXPECT_DOUBLE_EQ(mixed.makespan_s, 125);
  // The measured law (timeslicing) slows a busy pod beside any other.
  const TimedRun measured = ReplayModels(
      t, {Named(Pod(0, 100, 1, 500), true), Named(Pod(0, 50, 1, 500), false)},
      TimedAdmission::kFixed, InterferenceLaw{});
  EXPECT_GT(measured.pod_jct_s[0], 100);
  EXPECT_DOUBLE_EQ(measured.pod_jct_s[1], 50);
}

// Two GPUs: a plain pod X holds half of GPU 0 for 1000 s, a plain
// whole-GPU pod Y holds GPU 1 until 20. Model pod M (half a GPU, 100 s)
// arrives at 10: its request fits only beside X.
std::vector<TracePod> WaitOrShareTrace() {
  return {Named(Pod(0, 1000, 1, 500), false), Named(Pod(0, 20, 1), false),
          Named(Pod(10, 100, 1, 500), true)};
}

TEST(TimedReplay, TheDecisionWaitsForAWholeGpuUnderHighInterference) {
  const Topology t = MakeTopology({{32, 32}});
  const InterferenceLaw law = InterferenceLaw::Linear(4);
  // fixed: M shares with X at a fifth of its speed for its whole run.
  const TimedRun fixed =
      ReplayModels(t, WaitOrShareTrace(), TimedAdmission::kFixed, law);
  EXPECT_THAT(fixed.pod_jct_s, ElementsAre(1000, 20, 500));
  // tessera: beside X it would end at 510; GPU 1 frees at 20, alone it
  // ends at 120. It waits, then takes GPU 1 whole.
  const TimedRun tessera =
      ReplayModels(t, WaitOrShareTrace(), TimedAdmission::kTessera, law);
  EXPECT_THAT(tessera.pod_jct_s, ElementsAre(1000, 20, 110));
  EXPECT_THAT(tessera.pod_delay_s, ElementsAre(0, 0, 10));
  EXPECT_EQ(tessera.admission, "tessera");
  EXPECT_EQ(tessera.model.waited, 1);
  EXPECT_EQ(tessera.model.whole, 1);
  EXPECT_DOUBLE_EQ(tessera.model.mean_slowdown, 1);
  // GPU 1 is the model pod's alone: 1000 milli of it from 20 to 120.
  EXPECT_DOUBLE_EQ(tessera.peak_utilization_pct, 75);

  const AdmissionComparison c = CompareAdmissions(fixed, tessera);
  EXPECT_EQ(c.model_pods, 1);
  EXPECT_DOUBLE_EQ(c.fixed_jct_s, 500);
  EXPECT_DOUBLE_EQ(c.tessera_jct_s, 110);
  EXPECT_EQ(c.earlier, 1);
  EXPECT_EQ(c.later, 0);
  EXPECT_EQ(c.other_pods, 2);
  EXPECT_DOUBLE_EQ(c.fixed_other_delay_s, 0);
  EXPECT_DOUBLE_EQ(c.tessera_other_delay_s, 0);
}

TEST(TimedReplay, TheDecisionSharesWithoutInterference) {
  const Topology t = MakeTopology({{32, 32}});
  // alpha 0: beside X it ends at 110, before GPU 1 even frees.
  const TimedRun tessera =
      ReplayModels(t, WaitOrShareTrace(), TimedAdmission::kTessera,
                   InterferenceLaw::Linear(0));
  EXPECT_THAT(tessera.pod_jct_s, ElementsAre(1000, 20, 100));
  EXPECT_THAT(tessera.pod_delay_s, ElementsAre(0, 0, 0));
  EXPECT_EQ(tessera.model.waited, 0);
  EXPECT_EQ(tessera.model.whole, 0);
  const TimedRun fixed =
      ReplayModels(t, WaitOrShareTrace(), TimedAdmission::kFixed,
                   InterferenceLaw::Linear(0));
  EXPECT_EQ(fixed.pod_jct_s, tessera.pod_jct_s);
  const AdmissionComparison c = CompareAdmissions(fixed, tessera);
  EXPECT_EQ(c.earlier + c.later, 0);
}

TEST(TimedReplay, AnIdleGpuIsTakenWholeRatherThanSharedUnderInterference) {
  // best-fit puts M beside X; GPU 1 is idle, and alone M ends 400 s
  // sooner: tessera takes it whole at once.
  const Topology t = MakeTopology({{32, 32}});
  const std::vector<TracePod> pods = {Named(Pod(0, 1000, 1, 500), false),
                                      Named(Pod(10, 100, 1, 500), true)};
  const InterferenceLaw law = InterferenceLaw::Linear(4);
  EXPECT_THAT(ReplayModels(t, pods, TimedAdmission::kFixed, law).pod_jct_s,
              ElementsAre(1000, 500));
  const TimedRun tessera = ReplayModels(t, pods, TimedAdmission::kTessera, law);
  EXPECT_THAT(tessera.pod_jct_s, ElementsAre(1000, 100));
  EXPECT_EQ(tessera.model.waited, 0);
  EXPECT_EQ(tessera.model.whole, 1);
}

TEST(TimedReplay, AModelPodWaitsForAGpuOfAKindItMayUse) {
  // Node 0 has kind-a GPUs, node 1 one kind-b GPU. X holds half of a0 for
  // 1000 s, Y all of a1 until 300, Z all of b0 until 20. M (kind a only,
  // alpha 4) would end at 510 beside X; b0 frees at 20 but is not its
  // kind: it waits for a1 (300) and ends at 400.
  Topology t = MakeTopology({{32, 32}, {32}});
  for (GpuInfo& g : t.gpus) g.kind = g.node == 0 ? "a" : "b";
  auto on = [](TracePod p, const char* kind, bool model) {
    p = Named(std::move(p), model);
    p.gpu_spec = {kind};
    return p;
  };
  const std::vector<TracePod> pods = {
      on(Pod(0, 1000, 1, 500), "a", false), on(Pod(0, 300, 1), "a", false),
      on(Pod(0, 20, 1), "b", false), on(Pod(10, 100, 1, 500), "a", true)};
  const TimedRun tessera = ReplayModels(t, pods, TimedAdmission::kTessera,
                                        InterferenceLaw::Linear(4));
  EXPECT_THAT(tessera.pod_jct_s, ElementsAre(1000, 300, 20, 390));
  EXPECT_EQ(tessera.model.waited, 1);
  EXPECT_EQ(tessera.model.whole, 1);
}

void ExpectSameRun(const TimedRun& a, const TimedRun& b) {
  EXPECT_EQ(a.pod_delay_s, b.pod_delay_s);
  EXPECT_EQ(a.pod_jct_s, b.pod_jct_s);
  EXPECT_EQ(a.started, b.started);
  EXPECT_EQ(a.stuck, b.stuck);
  EXPECT_EQ(a.preemptions, b.preemptions);
  EXPECT_EQ(a.lost_gpu_hours, b.lost_gpu_hours);
  EXPECT_EQ(a.makespan_s, b.makespan_s);
  EXPECT_EQ(a.mean_utilization_pct, b.mean_utilization_pct);
  EXPECT_EQ(a.queued_utilization_pct, b.queued_utilization_pct);
  EXPECT_EQ(a.utilization, b.utilization);
  EXPECT_EQ(a.mean_queue, b.mean_queue);
  EXPECT_EQ(a.peak_queue, b.peak_queue);
  EXPECT_EQ(a.rounds, b.rounds);
}

TEST(TimedReplay, NoModelPodsIsThePlainReplayBitForBit) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32}, {32}});
  const std::vector<TracePod> pods = RandomTrace(150, 11);
  for (const std::string& policy : PolicyNames()) {
    SCOPED_TRACE(policy);
    TimedOptions plain;
    plain.queue_policy = policy;
    plain.scorer = "fgd";
    TimedOptions off = plain;
    off.model_pods_pct = 0;
    off.admission = TimedAdmission::kTessera;
    off.law = InterferenceLaw::Linear(3);
    auto a = RunTimed(t, pods, plain);
    auto b = RunTimed(t, pods, off);
    ASSERT_TRUE(a && b);
    ExpectSameRun(*a, *b);
    EXPECT_EQ(b->admission, "");
    EXPECT_TRUE(b->pod_model.empty());
    EXPECT_EQ(b->model.pods, 0);
    // Model pods with no interference and the fixed admission run as
    // plain pods too.
    TimedOptions free = plain;
    free.model_pods_pct = 100;
    free.law = InterferenceLaw::Linear(0);
    auto c = RunTimed(t, pods, free);
    ASSERT_TRUE(c);
    ExpectSameRun(*a, *c);
  }
}

TEST(TimedReplay, InvariantsHoldWithModelPodsUnderEveryPolicy) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32}, {32}});
  const std::vector<TracePod> pods = RandomTrace(150, 5);
  for (const std::string& policy : PolicyNames()) {
    for (const TimedAdmission admission :
         {TimedAdmission::kFixed, TimedAdmission::kTessera}) {
      for (const InterferenceLaw& law :
           {InterferenceLaw{}, InterferenceLaw::Linear(2)}) {
        SCOPED_TRACE(policy + " " + std::string(TimedAdmissionName(admission)) +
                     " " + InterferenceName(law));
        const TimedRun run = ReplayModels(t, pods, admission, law, 40, policy);
        EXPECT_EQ(run.stuck, 0);
        EXPECT_EQ(run.started, run.pods);
        EXPECT_GT(run.model.pods, 0);
        EXPECT_EQ(run.model.finished, run.model.pods);
        EXPECT_GE(run.model.mean_slowdown, 1);
        EXPECT_LE(run.peak_utilization_pct, 100 + 1e-9);
        if (admission == TimedAdmission::kFixed) {
          EXPECT_EQ(run.model.waited + run.model.whole, 0);
        }
      }
    }
  }
}

// The errors name TimedOptions' fields (the CLI maps them to its flags).
TEST(TimedReplay, BadModelPodOptionsAreBadInputNamingTheField) {
  TimedOptions o;
  o.model_pods_pct = 101;
  auto run = RunTimed(MakeTopology({{32}}), {Pod(0, 1, 1)}, o);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(run.error().message,
            "model_pods_pct: a percentage in 0..100, got 101");
  o.model_pods_pct = 10;
  o.law = InterferenceLaw::Linear(-1);
  run = RunTimed(MakeTopology({{32}}), {Pod(0, 1, 1)}, o);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message, "law.alpha: must be >= 0");
}

}  // namespace
}  // namespace tessera::scheduler
