// DecideStart, CapacityFreesAt and BuildStartRequest: the split-or-wait
// decision by predicted finish.
#include "scheduler/start_decision.h"

#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using ::testing::HasSubstr;
using testing::kGiB;
using testing::MakeTopology;

constexpr double kInf = std::numeric_limits<double>::infinity();

Allocation Share(int node, int gpu, int milli, int64_t mib) {
  Allocation a;
  a.node = node;
  a.gpus.push_back({gpu, milli, mib});
  return a;
}

// A node with one GPU, of which job 1 holds half, ending in `ends` s; a
// second node of one GPU for a whole one.
struct OneBusyGpu {
  ClusterState state{MakeTopology({{80}, {80}})};
  OneBusyGpu() {
    (void)state.Reserve(1, Share(0, 0, 500, 10 * kGiB));
    state.SetDrained(1, true);
  }
  double ends = 600;
  std::function<Occupant(JobId)> occupant() const {
    return [this](JobId) { return Occupant{1.0, ends}; };
  }
  StartRequest Request(double alpha, double work) const {
    StartRequest r;
    r.now = 100;
    r.work_s = work;
    r.busy_fraction = 1.0;
    r.law = InterferenceLaw::Linear(alpha);
    r.candidates.push_back(
        {StartOption::kFraction, Share(0, 0, 500, 10 * kGiB), 1.0});
    r.whole = CapacityFreesAt(state, "default", 1, kFullGpuMilli, 0, r.now,
                              [this](JobId) { return 100 + ends; });
    return r;
  }
};

TEST(CapacityFreesAt, IsNowForAnEmptyGpuAndTheLastEndOtherwise) {
  ClusterState state(MakeTopology({{80, 80}}));
  const auto ends = [](JobId id) { return id == 1 ? 500.0 : 900.0; };
  EXPECT_EQ(CapacityFreesAt(state, "default", 1, kFullGpuMilli, 0, 10, ends).at,
            10);
  (void)state.Reserve(1, Share(0, 0, 300, 10 * kGiB));
  (void)state.Reserve(2, Share(0, 0, 300, 10 * kGiB));
  (void)state.Reserve(3, Share(0, 1, 300, 10 * kGiB));
  // Two whole GPUs: gpu0 empties when job 2 ends, gpu1 when job 1... no:
  // job 3 is on gpu1 and ends at 900 too.
  const auto two = CapacityFreesAt(state, "default", 2, kFullGpuMilli, 0, 10,
                                   [](JobId id) { return 100.0 * id; });
  EXPECT_EQ(two.at, 300);
  EXPECT_EQ(two.sharing_with, 0);
  // One whole GPU: the first to empty (gpu0 at 200).
  EXPECT_EQ(CapacityFreesAt(state, "default", 1, kFullGpuMilli, 0, 10,
                            [](JobId id) { return 100.0 * id; })
                .at,
            200);
  // A fraction of 500 milli: gpu0 has 400 free, and 700 once job 1 ends
  // (at 100), with job 2 still there.
  const auto part = CapacityFreesAt(state, "default", 1, 500, 10 * kGiB, 10,
                                    [](JobId id) { return 100.0 * id; });
  EXPECT_EQ(part.at, 10);  // gpu1 has 700 free now
  EXPECT_EQ(part.sharing_with, 1);
  // Unknown ends: never.
  EXPECT_TRUE(std::isinf(
      CapacityFreesAt(state, "default", 2, kFullGpuMilli, 0, 10, [](JobId) {
        return kInf;
      }).at));
  // No GPU has the memory.
  EXPECT_TRUE(std::isinf(
      CapacityFreesAt(state, "default", 1, kFullGpuMilli, 90 * kGiB, 10, ends)
          .at));
}

// BuildStartRequest, the one rule of its three callers: a whole GPU is
// waited for only when none fits now, a fraction only when no single GPU
// fits (and the caller allows it), an opening already free now is dropped
// where the caller asks so, and the queue's backlog is per GPU.
TEST(BuildStartRequest, OpensWaitsOnlyForWhatDoesNotFitNow) {
  ClusterState state(MakeTopology({{80, 80}}));
  (void)state.Reserve(1, Share(0, 0, 600, 10 * kGiB));
  StartInputs in;
  in.now = 10;
  in.work_s = 500;
  in.pool = "default";
  in.fraction_milli = 500;
  in.fraction_memory_mib = 10 * kGiB;
  in.ends_at = [](JobId) { return 300.0; };
  in.held_back = 6;
  in.pool_gpus = 2;
  in.work_cv2 = 1.5;
  in.gang_queued = true;

  // Nothing fits now, yet gpu1 is empty already: the caller's allocator
  // did not give it (its node's CPU or memory is taken, say), so "now" is
  // no opening, and none is looked for after it.
  StartRequest r = BuildStartRequest(state, in);
  EXPECT_TRUE(r.candidates.empty());
  EXPECT_TRUE(std::isinf(r.whole.at));
  EXPECT_TRUE(std::isinf(r.fraction.at));
  EXPECT_DOUBLE_EQ(r.backlog_per_gpu, 3);
  EXPECT_EQ(r.held_back, 6);
  EXPECT_DOUBLE_EQ(r.work_cv2, 1.5);
  EXPECT_TRUE(r.gang_queued);
  // With gpu1 busy too (400 milli free on each), the whole GPU and the
  // fraction open when they leave, at 300.
  ASSERT_TRUE(state.Reserve(2, Share(0, 1, 600, 10 * kGiB)).ok());
  r = BuildStartRequest(state, in);
  EXPECT_EQ(r.whole.at, 300);
  EXPECT_EQ(r.whole.sharing_with, 0);
  EXPECT_EQ(r.fraction.at, 300);

  // A split fits now: still both waits (no single GPU now).
  in.candidates = {{StartOption::kSplit, Share(0, 0, 400, kGiB), 0.5}};
  r = BuildStartRequest(state, in);
  EXPECT_FALSE(std::isinf(r.whole.at));
  EXPECT_FALSE(std::isinf(r.fraction.at));
  in.fraction_wait = false;  // the caller's job fits no single GPU
  EXPECT_TRUE(std::isinf(BuildStartRequest(state, in).fraction.at));
  in.fraction_wait = true;
  // A fraction fits now: the whole GPU is waited for, no fraction.
  in.candidates = {{StartOption::kFraction, Share(0, 0, 400, kGiB), 1.0}};
  r = BuildStartRequest(state, in);
  EXPECT_FALSE(std::isinf(r.whole.at));
  EXPECT_TRUE(std::isinf(r.fraction.at));
  // A whole GPU fits now: no wait at all.
  in.candidates = {{StartOption::kWhole, Share(0, 1, 1000, kGiB), 1.0}};
  r = BuildStartRequest(state, in);
  EXPECT_TRUE(std::isinf(r.whole.at));
  EXPECT_TRUE(std::isinf(r.fraction.at));
  ASSERT_EQ(r.candidates.size(), 1u);
  // No GPU in the pool: the backlog is counted over one.
  in.pool_gpus = 0;
  EXPECT_DOUBLE_EQ(BuildStartRequest(state, in).backlog_per_gpu, 6);
}

TEST(DecideStart, TakesAWholeGpuOverSharingOne) {
  OneBusyGpu c;
  StartRequest r = c.Request(0.5, 1000);
  r.candidates.push_back(
      {StartOption::kWhole, Share(1, 1, 1000, 10 * kGiB), 1.0});
  const StartDecision d = DecideStart(r, c.state, c.occupant());
  ASSERT_TRUE(d.Chosen());
  EXPECT_EQ(d.Chosen()->option, StartOption::kWhole);
  EXPECT_DOUBLE_EQ(d.Chosen()->finish_s, 1100);
  EXPECT_EQ(d.Chosen()->sharing_with, 0);
}

TEST(DecideStart, WaitsWhenTheWholeGpuFreesSoonAndSharingIsSlow) {
  OneBusyGpu c;
  c.ends = 60;  // the GPU is all ours in a minute
  const StartDecision d =
      DecideStart(c.Request(1.5, 3600), c.state, c.occupant());
  ASSERT_EQ(d.options.size(), 2u);
  const OptionForecast& share = d.options[0];
  EXPECT_EQ(share.option, StartOption::kFraction);
  EXPECT_EQ(share.sharing_with, 1);
  EXPECT_DOUBLE_EQ(share.slowdown, 2.5);
  // Together for 150 s (the other's 60 s of work at 1/2.5), then alone.
  EXPECT_NEAR(share.finish_s, 100 + 150 + (3600 - 60), 1e-6);
  EXPECT_NEAR(share.cost_to_others_s, 90, 1e-6);
  EXPECT_TRUE(d.waits());
  EXPECT_DOUBLE_EQ(d.Chosen()->start_s, 160);
  EXPECT_DOUBLE_EQ(d.Chosen()->finish_s, 160 + 3600);
}

TEST(DecideStart, SharesWhenTheWholeGpuIsFarAndSharingIsCheap) {
  OneBusyGpu c;
  c.ends = 7200;
  const StartDecision d =
      DecideStart(c.Request(0.25, 1800), c.state, c.occupant());
  ASSERT_TRUE(d.Chosen());
  EXPECT_EQ(d.Chosen()->option, StartOption::kFraction);
  EXPECT_NEAR(d.Chosen()->finish_s, 100 + 1800 * 1.25, 1e-6);
}

TEST(DecideStart, TheBacklogTipsASharingThatCostsThroughputToWaiting) {
  OneBusyGpu c;
  c.ends = 7200;
  // Alone, sharing at alpha 1.5 finishes first (the GPU frees in 2 h)...
  StartRequest r = c.Request(1.5, 600);
  StartDecision d = DecideStart(r, c.state, c.occupant());
  EXPECT_EQ(d.Chosen()->option, StartOption::kFraction);
  EXPECT_LT(d.options[0].gained_work_s, 0);  // 2 jobs do 0.8 GPU of work
  // ...but with 40 jobs queued per GPU, the throughput it costs delays
  // them all: it waits.
  r.backlog_per_gpu = 40;
  r.held_back = 80;
  d = DecideStart(r, c.state, c.occupant());
  EXPECT_TRUE(d.waits());
  // At alpha 0.25 sharing adds throughput: the same backlog now makes it
  // start (and charges the wait for holding the queue back).
  r.law = InterferenceLaw::Linear(0.25);
  d = DecideStart(r, c.state, c.occupant());
  EXPECT_EQ(d.Chosen()->option, StartOption::kFraction);
  EXPECT_GT(d.options[0].gained_work_s, 0);
  EXPECT_GT(d.options[1].cost_to_others_s, 0);
}

TEST(DecideStart, ASplitIsChargedItsSpeedAndItsBusiestGpu) {
  ClusterState state(MakeTopology({{80, 80, 80}}));
  (void)state.Reserve(1, Share(0, 1, 500, 40 * kGiB));
  StartRequest r;
  r.now = 0;
  r.work_s = 1000;
  r.busy_fraction = 1.0;
  r.law = InterferenceLaw::Linear(1.0);
  r.charge_others = false;
  Allocation split;
  split.node = 0;
  split.gpus = {{0, 500, 30 * kGiB}, {1, 500, 30 * kGiB}};
  r.candidates.push_back({StartOption::kSplit, split, 0.8});
  const StartDecision d = DecideStart(r, state, [](JobId) {
    return Occupant{1.0, kInf};
  });
  ASSERT_EQ(d.options.size(), 1u);
  EXPECT_EQ(d.options[0].sharing_with, 1);
  // 0.8 of a GPU's speed, halved by the job on gpu1 that never ends.
  EXPECT_NEAR(d.options[0].finish_s, 1000 / 0.8 * 2, 1e-6);
  EXPECT_EQ(DescribeGpus(state.topology(), split), "node0/gpu0+gpu1");
}

TEST(DecideStart, NothingToChooseWhenNothingFitsEver) {
  ClusterState state(MakeTopology({{80}}));
  StartRequest r;
  r.work_s = 10;
  const StartDecision d = DecideStart(r, state, {});
  EXPECT_EQ(d.Chosen(), nullptr);
  EXPECT_FALSE(d.waits());
  EXPECT_THAT(DescribeDecision(d, state.topology(), 0), HasSubstr("nothing"));
}

TEST(DecideStart, ExplainsItselfInTextAndJson) {
  OneBusyGpu c;
  c.ends = 60;
  const StartDecision d =
      DecideStart(c.Request(1.5, 3600), c.state, c.occupant());
  const std::string text = DescribeDecision(d, c.state.topology(), 100);
  EXPECT_THAT(text,
              HasSubstr("fraction of node0/gpu0 now: ends +1h01m (beside"));
  EXPECT_THAT(text, HasSubstr("beside 1 job, x2.50 slower"));
  EXPECT_THAT(text, HasSubstr("whole capacity frees +1m00s: ends +1h01m"));
  EXPECT_THAT(text, HasSubstr("-> waiting"));
  const nlohmann::json j = DecisionJson(d, c.state.topology());
  EXPECT_EQ(j["chosen"], "wait");
  EXPECT_EQ(j["work_s"], 3600);
  ASSERT_EQ(j["options"].size(), 2u);
  EXPECT_EQ(j["options"][0]["where"], "node0/gpu0");
  EXPECT_EQ(j["options"][0]["sharing_with"], 1);
  EXPECT_EQ(j["options"][1]["option"], "wait");
  EXPECT_EQ(j["options"][1]["start_s"], 160);
}

TEST(SquaredCv, IsVarianceOverMeanSquared) {
  EXPECT_EQ(SquaredCv({}), 0);
  EXPECT_EQ(SquaredCv({5}), 0);
  EXPECT_DOUBLE_EQ(SquaredCv({1, 3}), 0.25);
  EXPECT_EQ(SquaredCv({0, 0}), 0);
}

}  // namespace
}  // namespace tessera::scheduler
