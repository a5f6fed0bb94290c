// The timed replay under the queue tree (docs/quotas.md): teams by FNV-1a
// of the pod name, a pod borrowing idle quota reclaimed by the owner's pod
// (restarting from scratch), and the invariants after every round.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/timed_replay.h"
#include "sim/trace.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::RunTimed;
using sim::TeamOf;
using sim::TeamOfPod;
using sim::TeamSplit;
using sim::TeamSplitName;
using sim::TimedOptions;
using sim::TracePod;

namespace {

using ::testing::ElementsAre;
using testing::MakeTopology;

// A pod named so that it falls in `team` of `teams`.
TracePod TeamPod(int team, int teams, double arrival, double duration,
                 int gpus) {
  static int n = 0;
  TracePod p;
  do {
    p.name = "pod-" + std::to_string(n++);
  } while (TeamOfPod(p.name, teams) != team);
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  p.num_gpu = gpus;
  p.gpu_milli = gpus > 0 ? 1000 : 0;
  p.qos = "LS";
  p.creation_time = arrival;
  p.scheduled_time = arrival;
  p.deletion_time = arrival + duration;
  return p;
}

std::vector<QueueSpec> Equal(int teams, int64_t milli, int64_t mib) {
  std::vector<QueueSpec> out;
  for (int k = 0; k < teams; ++k) {
    QueueSpec q;
    q.name = "team" + std::to_string(k);
    q.guaranteed = {milli / teams, mib / teams};
    out.push_back(q);
  }
  return out;
}

TEST(TimedQuotas, TeamsAreAHashOfTheName) {
  EXPECT_EQ(TeamOfPod("openb-pod-0000", 4), TeamOfPod("openb-pod-0000", 4));
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 300; ++i) ++seen[TeamOfPod("p" + std::to_string(i), 3)];
  for (const int s : seen) EXPECT_GT(s, 50);
}

TEST(TimedQuotas, TheSkewedSplitSeparatesSmallAndWholeGpuPods) {
  // 4 teams: fractional (and CPU-only) pods to team0 and team1, whole-GPU
  // pods to team2 and team3, each side by FNV-1a 64 of the name.
  int seen[4] = {0, 0, 0, 0};
  for (int i = 0; i < 400; ++i) {
    TracePod p;
    p.name = "openb-pod-" + std::to_string(i);
    p.num_gpu = i % 4 == 3 ? 2 : (i % 4 == 0 ? 0 : 1);
    p.gpu_milli = i % 4 == 1 ? 500 : 1000;
    const int team = TeamOf(p, 4, TeamSplit::kSkewed);
    ++seen[team];
    const bool whole = p.num_gpu > 1 || (p.num_gpu == 1 && p.gpu_milli >= 1000);
    EXPECT_EQ(team >= 2, whole) << p.name;
    EXPECT_EQ(team, TeamOf(p, 4, TeamSplit::kSkewed));  // deterministic
    EXPECT_EQ(team, (whole ? 2 : 0) + TeamOfPod(p.name, 2));
    EXPECT_EQ(TeamOf(p, 4, TeamSplit::kHash), TeamOfPod(p.name, 4));
  }
  for (const int s : seen) EXPECT_GT(s, 50);
  // 3 teams: two small, one whole; one team: everything in team 0.
  TracePod whole;
  whole.name = "x";
  whole.num_gpu = 1;
  whole.gpu_milli = 1000;
  EXPECT_EQ(TeamOf(whole, 3, TeamSplit::kSkewed), 2);
  EXPECT_EQ(TeamOf(whole, 1, TeamSplit::kSkewed), 0);
  EXPECT_EQ(TeamSplitName(TeamSplit::kSkewed), "skewed");
}

TEST(TimedQuotas, TheOwnerReclaimsWhatItLent) {
  // Two 32 GiB GPUs, teams 0 and 1 each guaranteed one. Team 0's two pods
  // take both at 0 (one borrowed); team 1's pod at 10 reclaims the
  // borrowed one (the younger), which restarts at 30 when team 1's ends.
  const Topology t = MakeTopology({{32, 32}});
  const std::vector<TracePod> pods = {TeamPod(0, 2, 0, 100, 1),
                                      TeamPod(0, 2, 1, 100, 1),
                                      TeamPod(1, 2, 10, 20, 1)};
  TimedOptions o;
  o.queue_policy = "fifo";
  o.scorer = "best-fit";
  o.teams = 2;
  o.queues = Equal(2, 2000, 64 * 1024);
  auto run = RunTimed(t, pods, o);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_TRUE(run->quotas);
  EXPECT_EQ(run->reclaims, 1);
  EXPECT_EQ(run->preemptions, 1);
  EXPECT_THAT(run->pod_delay_s, ElementsAre(0, 20, 0));
  // Without the tree team 1's pod waits for a departure.
  o.queues.clear();
  auto plain = RunTimed(t, pods, o);
  ASSERT_TRUE(plain);
  EXPECT_THAT(plain->pod_delay_s, ElementsAre(0, 0, 90));
  EXPECT_EQ(plain->reclaims, 0);
}

TEST(TimedQuotas, InvariantsHoldAfterEveryRound) {
  const Topology t = MakeTopology({{32, 32, 32, 32}, {32, 32}, {32}});
  std::mt19937 rng(11);
  std::vector<TracePod> pods;
  for (int i = 0; i < 150; ++i) {
    TracePod p = TeamPod(
        static_cast<int>(rng() % 3), 3, static_cast<double>(rng() % 400),
        static_cast<double>(1 + rng() % 200), 1 + static_cast<int>(rng() % 2));
    if (rng() % 3 == 0) p.gpu_milli = 100 + static_cast<int>(rng() % 800);
    if (p.gpu_milli < 1000) p.num_gpu = 1;
    pods.push_back(p);
  }
  int64_t reclaims = 0;
  for (const std::string policy : {"fifo", "backfill", "fair-share"}) {
    TimedOptions o;
    o.queue_policy = policy;
    o.scorer = "best-fit";
    o.teams = 3;
    o.queues = Equal(3, 7000, 7 * 32 * 1024);
    std::string broken;
    o.on_round = [&](double, const ClusterState& s) {
      if (broken.empty()) broken = s.CheckInvariants();
    };
    auto run = RunTimed(t, pods, o);
    ASSERT_TRUE(run) << run.error().message;
    SCOPED_TRACE(policy);
    EXPECT_EQ(broken, "");
    EXPECT_EQ(run->started, run->pods);
    EXPECT_EQ(run->stuck, 0);
    reclaims += run->reclaims;
  }
  EXPECT_GT(reclaims, 0);
}

}  // namespace
}  // namespace tessera::scheduler
