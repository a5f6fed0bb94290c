// The queue policies on small hand-made cases: fifo blocks, backfill never
// delays the head, priority preempts only preemptible lower-priority jobs,
// fair-share converges to the weights, and big jobs do not starve.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using testing::kGiB;  // 1024 MiB

// One node per entry, each with that many 40 GiB GPUs, all in "default".
Topology TopologyOf(const std::vector<int>& gpus_per_node) {
  Topology t;
  t.pools = {"default"};
  for (size_t n = 0; n < gpus_per_node.size(); ++n) {
    NodeInfo node;
    node.name = "node" + std::to_string(n);
    node.pool = "default";
    node.cpu_milli = 64000;
    node.memory_mib = 256 * kGiB;
    for (int i = 0; i < gpus_per_node[n]; ++i) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back({node.name + "/gpu" + std::to_string(i),
                        static_cast<int>(n), i, "test", 40 * kGiB});
    }
    t.nodes.push_back(node);
  }
  return t;
}

Resources Fraction(int milli) { return Resources{0, milli, kGiB, 100, kGiB}; }
Resources WholeGpus(int n) { return Resources{n, 0, 0, 100, kGiB}; }

QueuedJob Queued(JobId id, Resources demand, double time_limit_s = 0,
                 int priority = 0, std::string user = "u") {
  QueuedJob job;
  job.id = id;
  job.user = std::move(user);
  job.priority = priority;
  job.submitted_at = static_cast<double>(id);
  job.time_limit_s = time_limit_s;
  job.demand = demand;
  return job;
}

// The queue, the running jobs and the cluster, driven through a policy with
// FindAllocation as the allocator.
class Harness {
 public:
  explicit Harness(Topology t, const std::string& scorer = "best-fit")
      : state(std::move(t)), scorer_(std::move(MakeScorer(scorer).value())) {
    allocate = [this](const ClusterState& s, const QueuedJob& job) {
      return FindAllocation(s, "default", job.demand, *scorer_);
    };
  }

  // Starts `job` now through FindAllocation, as if a policy had.
  void Run(const QueuedJob& job, double started_at, bool preemptible = false) {
    auto a = allocate(state, job);
    ASSERT_TRUE(a) << "job " << job.id;
    ASSERT_TRUE(state.Reserve(job.id, *a));
    RunningJob r;
    r.id = job.id;
    r.user = job.user;
    r.team = job.team;
    r.priority = job.priority;
    r.preemptible = preemptible;
    r.started_at = started_at;
    r.time_limit_s = job.time_limit_s;
    running.push_back(r);
  }

  void Finish(JobId id) {
    state.Release(id);
    std::erase_if(running, [id](const RunningJob& r) { return r.id == id; });
  }

  // One round: schedules and applies the decision; returns the started ids.
  std::vector<JobId> Round(QueuePolicy& policy, double now) {
    Decision d = policy.Schedule(queue, running, state, allocate, now);
    for (JobId id : d.preempt) Finish(id);
    std::vector<JobId> started;
    for (const auto& [id, a] : d.start) {
      auto it =
          std::find_if(queue.begin(), queue.end(),
                       [id = id](const QueuedJob& q) { return q.id == id; });
      EXPECT_NE(it, queue.end()) << "job " << id << " is not queued";
      if (it == queue.end()) continue;
      EXPECT_TRUE(state.Reserve(id, a)) << "job " << id;
      RunningJob r{
          id,  it->user,        it->team, it->priority, it->preemptible,
          now, it->time_limit_s};
      running.push_back(r);
      queue.erase(it);
      started.push_back(id);
    }
    EXPECT_EQ(state.CheckInvariants(), "");
    return started;
  }

  ClusterState state;
  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  Allocator allocate;

 private:
  std::unique_ptr<GpuScorer> scorer_;
};

std::unique_ptr<QueuePolicy> Policy(
    const std::string& name, bool preemption = false,
    std::map<std::string, double> weights = {}) {
  PolicyConfig config;
  config.name = name;
  config.preemption = preemption;
  config.weights = std::move(weights);
  return std::move(MakePolicy(config).value());
}

std::vector<JobId> Ids(const Decision& d) {
  std::vector<JobId> ids;
  for (const auto& start : d.start) ids.push_back(start.first);
  return ids;
}

TEST(MakePolicy, NamesTheKnownPoliciesForAnUnknownOne) {
  for (const std::string& name : PolicyNames()) {
    EXPECT_EQ(Policy(name)->name(), name);
  }
  PolicyConfig config;
  config.name = "lottery";
  auto bad = MakePolicy(config);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(bad.error().message,
              HasSubstr("'lottery' (known: fifo, backfill, priority, "
                        "fair-share)"));
  config.name = "fair-share";
  config.weights["alice"] = 0;
  auto zero = MakePolicy(config);
  ASSERT_FALSE(zero);
  EXPECT_THAT(zero.error().message, HasSubstr("weights.alice"));
}

TEST(Fifo, StartsInOrderUntilTheFirstThatDoesNotFit) {
  Harness h(TopologyOf({2}));
  h.queue = {Queued(1, Fraction(600)), Queued(2, Fraction(600)),
             Queued(3, WholeGpus(1)), Queued(4, Fraction(100))};
  // 1 and 2 take a GPU each, so 3 finds no free GPU and blocks 4, which
  // would fit.
  EXPECT_THAT(h.Round(*Policy("fifo"), 10), ElementsAre(1, 2));
  EXPECT_THAT(h.Round(*Policy("fifo"), 11), IsEmpty());
  h.Finish(1);
  EXPECT_THAT(h.Round(*Policy("fifo"), 12), ElementsAre(3, 4));
}

TEST(Fifo, StartsOnlyWhatFitsTogether) {
  Harness h(TopologyOf({1}));
  h.queue = {Queued(1, Fraction(400)), Queued(2, Fraction(400)),
             Queued(3, Fraction(400))};
  Decision d =
      Policy("fifo")->Schedule(h.queue, h.running, h.state, h.allocate, 0);
  EXPECT_THAT(Ids(d), ElementsAre(1, 2));
  EXPECT_TRUE(h.state.Holders().empty()) << "the policy changed the state";
}

// Two GPUs: job 1 holds GPU 0 until t=100, job 2 half of GPU 1 until
// t=1000. The head (3) wants both GPUs: its shadow time is 1000.
Harness BackfillCase() {
  Harness h(TopologyOf({2}));
  h.Run(Queued(1, WholeGpus(1), 100), 0);
  h.Run(Queued(2, Fraction(500), 1000), 0);
  h.queue = {Queued(3, WholeGpus(2), 50)};
  return h;
}

TEST(Backfill, StartsAShortJobThatEndsBeforeTheShadowTime) {
  Harness h = BackfillCase();
  h.queue.push_back(Queued(4, Fraction(300), 900));  // ends at 910
  EXPECT_THAT(h.Round(*Policy("backfill"), 10), ElementsAre(4));
}

TEST(Backfill, RefusesJobsThatWouldDelayTheHead) {
  Harness h = BackfillCase();
  h.queue.push_back(Queued(4, Fraction(300), 1500));  // ends at 1510
  h.queue.push_back(Queued(5, Fraction(300)));        // no time limit
  EXPECT_THAT(h.Round(*Policy("backfill"), 10), IsEmpty());
  // FIFO would not have started it either; nor does it once job 2 ends
  // and the head fits: the head starts first.
  h.Finish(1);
  h.Finish(2);
  EXPECT_THAT(h.Round(*Policy("backfill"), 20), ElementsAre(3));
}

TEST(Backfill, StartsJobsThatLeaveTheHeadsGpusAlone) {
  // node0 has the head's two GPUs (one busy until t=100); node1 is free.
  // Job 3 has no time limit: it may start only off node0. First-fit would
  // take node0's free GPU; the policy places it on node1 instead.
  Harness h(TopologyOf({2, 1}), "first-fit");
  h.Run(Queued(1, WholeGpus(1), 100), 0);
  h.queue = {Queued(2, WholeGpus(2)), Queued(3, Fraction(300)),
             Queued(4, Fraction(800))};
  Decision d =
      Policy("backfill")->Schedule(h.queue, h.running, h.state, h.allocate, 10);
  ASSERT_THAT(Ids(d), ElementsAre(3));  // 4 fits only on node0 now
  EXPECT_EQ(d.start[0].second.node, 1);
}

TEST(Backfill, ShadowTimeIsTheEarliestEndThatFitsTheHead) {
  // 13 GPUs, 12 held by jobs ending at t=10, 20, ..., 120 (submitted in a
  // shuffled order); the head wants 4: it fits once three of them end, at
  // t=30. A one-GPU job may take the free GPU if it ends by then.
  for (double limit : {30.0, 31.0}) {
    Harness h(TopologyOf({13}));
    for (int k : {7, 3, 11, 1, 12, 5, 9, 2, 8, 10, 4, 6}) {
      h.Run(Queued(k, WholeGpus(1), 10.0 * k), 0);
    }
    h.queue = {Queued(20, WholeGpus(4)), Queued(21, WholeGpus(1), limit)};
    Decision d = Policy("backfill")
                     ->Schedule(h.queue, h.running, h.state, h.allocate, 0);
    EXPECT_EQ(d.start.size(), limit <= 30 ? 1u : 0u) << limit;
  }
}

TEST(Backfill, HeadThatCanNeverFitProtectsNothing) {
  Harness h(TopologyOf({2, 1}));
  h.state.SetDrained(0, true);  // the head's only possible node
  h.queue = {Queued(1, WholeGpus(2)), Queued(2, Fraction(300))};
  EXPECT_THAT(h.Round(*Policy("backfill"), 0), ElementsAre(2));
}

TEST(Priority, StartsHigherPriorityFirstAndBlocksBehindIt) {
  Harness h(TopologyOf({2}));
  h.Run(Queued(1, WholeGpus(1)), 0);
  h.queue = {Queued(2, Fraction(500), 0, 0), Queued(3, WholeGpus(2), 0, 9),
             Queued(4, Fraction(500), 0, 1)};
  // 3 does not fit; 2 and 4 would, but wait behind it.
  EXPECT_THAT(h.Round(*Policy("priority"), 5), IsEmpty());
  h.Finish(1);
  EXPECT_THAT(h.Round(*Policy("priority"), 6), ElementsAre(3));
  h.queue.push_back(Queued(5, Fraction(100), 0, 1));
  h.Finish(3);
  EXPECT_THAT(h.Round(*Policy("priority"), 7), ElementsAre(4, 5, 2));
}

TEST(Priority, PreemptsOnlyPreemptibleLowerPriorityJobs) {
  Harness h(TopologyOf({3}));
  h.Run(Queued(1, WholeGpus(1), 0, 0), 0, /*preemptible=*/true);
  h.Run(Queued(2, WholeGpus(1), 0, 5), 0, /*preemptible=*/true);
  h.Run(Queued(3, WholeGpus(1), 0, 0), 0, /*preemptible=*/false);
  h.queue = {Queued(4, WholeGpus(1), 0, 3)};
  Decision d = Policy("priority", true)
                   ->Schedule(h.queue, h.running, h.state, h.allocate, 10);
  EXPECT_THAT(d.preempt, ElementsAre(1));
  ASSERT_THAT(Ids(d), ElementsAre(4));
  EXPECT_EQ(d.start[0].second.gpus[0].gpu, 0);  // job 1's GPU
  // Two GPUs would need job 2 or 3 as well: nothing is preempted.
  h.queue = {Queued(5, WholeGpus(2), 0, 3)};
  d = Policy("priority", true)
          ->Schedule(h.queue, h.running, h.state, h.allocate, 10);
  EXPECT_THAT(d.preempt, IsEmpty());
  EXPECT_THAT(d.start, IsEmpty());
  // Without preemption, nothing either.
  h.queue = {Queued(4, WholeGpus(1), 0, 3)};
  d = Policy("priority")->Schedule(h.queue, h.running, h.state, h.allocate, 10);
  EXPECT_THAT(d.preempt, IsEmpty());
  EXPECT_THAT(d.start, IsEmpty());
}

TEST(Priority, PreemptsTheLowestPriorityThenTheLatestStarted) {
  Harness h(TopologyOf({3}));
  h.Run(Queued(1, WholeGpus(1), 0, 2), 0, true);
  h.Run(Queued(2, WholeGpus(1), 0, 1), 10, true);
  h.Run(Queued(3, WholeGpus(1), 0, 1), 20, true);
  h.queue = {Queued(4, WholeGpus(1), 0, 5)};
  Decision d = Policy("priority", true)
                   ->Schedule(h.queue, h.running, h.state, h.allocate, 30);
  EXPECT_THAT(d.preempt, ElementsAre(3));
  h.queue = {Queued(4, WholeGpus(2), 0, 5)};
  d = Policy("priority", true)
          ->Schedule(h.queue, h.running, h.state, h.allocate, 30);
  EXPECT_THAT(d.preempt, ElementsAre(3, 2));
}

TEST(Priority, PreemptsOnlyWhatItNeeds) {
  Harness h(TopologyOf({2}));
  h.Run(Queued(1, Fraction(300), 0, 0), 0, true);   // GPU 0, lowest
  h.Run(Queued(2, Fraction(700), 0, 9), 0, false);  // GPU 0, stays
  h.Run(Queued(3, Fraction(600), 0, 1), 10, true);  // GPU 1
  h.Run(Queued(4, Fraction(400), 0, 1), 20, true);  // GPU 1, latest
  // Job 5 needs 500 milli. Released in order 1, 4, 3, it fits only after
  // job 3; then jobs 1 (on the other GPU) and 4 (400 of 1000) turn out not
  // to be needed and keep running.
  h.queue = {Queued(5, Fraction(500), 0, 5)};
  Decision d = Policy("priority", true)
                   ->Schedule(h.queue, h.running, h.state, h.allocate, 30);
  EXPECT_THAT(d.preempt, ElementsAre(3));
  EXPECT_THAT(Ids(d), ElementsAre(5));
  h.Round(*Policy("priority", true), 30);
  EXPECT_NE(h.state.AllocationOf(1), nullptr);
  EXPECT_NE(h.state.AllocationOf(4), nullptr);
  EXPECT_EQ(h.state.AllocationOf(3), nullptr);
}

TEST(FairShare, StartsTheAccountFurthestBelowItsShareFirst) {
  Harness h(TopologyOf({1}));
  h.Run(Queued(1, Fraction(500), 0, 0, "alice"), 0);
  h.queue = {Queued(2, Fraction(300), 0, 0, "alice"),
             Queued(3, Fraction(300), 0, 0, "bob")};
  // bob runs nothing: his job goes first and only one fits.
  EXPECT_THAT(h.Round(*Policy("fair-share"), 10), ElementsAre(3));
  // With weight 4, alice's 500 count as 125, bob's 300 as 300.
  Harness w(TopologyOf({1}));
  w.Run(Queued(1, Fraction(500), 0, 0, "alice"), 0);
  w.Run(Queued(4, Fraction(300), 0, 0, "bob"), 0);
  w.queue = {Queued(3, Fraction(200), 0, 0, "bob"),
             Queued(2, Fraction(200), 0, 0, "alice")};
  EXPECT_THAT(w.Round(*Policy("fair-share", false, {{"alice", 4}}), 10),
              ElementsAre(2));
}

// The order a policy reports (what GET /v1/queue shows as positions) is
// the order it starts jobs in when every job fits: checked on random
// queues of users, priorities, fractions and whole GPUs, with some jobs
// past fair-share's overdue limit, on a cluster big enough for all.
TEST(PolicyOrder, IsTheOrderJobsStartInWhenAllFit) {
  std::mt19937 rng(7);
  const std::vector<std::string> users = {"a", "b", "c"};
  for (int trial = 0; trial < 200; ++trial) {
    for (const std::string& name : PolicyNames()) {
      Harness h(TopologyOf({8, 8, 8, 8}));
      const double now = 1000;
      // Running jobs give the accounts different shares.
      const JobId running = 100 + static_cast<JobId>(rng() % 4);
      for (JobId id = 100; id < running; ++id) {
        h.Run(Queued(id, Fraction(100 + 100 * static_cast<int>(rng() % 9)), 0,
                     0, users[rng() % users.size()]),
              0);
      }
      const int n = 1 + static_cast<int>(rng() % 8);
      const int overdue = static_cast<int>(rng() % (n + 1));
      for (JobId id = 1; id <= n; ++id) {
        QueuedJob q =
            Queued(id,
                   rng() % 3 == 0 ? WholeGpus(1 + rng() % 2)
                                  : Fraction(100 + 100 * (rng() % 9)),
                   0, static_cast<int>(rng() % 3), users[rng() % users.size()]);
        // The first `overdue` past fair-share's limit (600 s), the rest
        // recent; the queue stays in submission order.
        q.submitted_at = static_cast<double>(id) + (id <= overdue ? 0 : 900);
        h.queue.push_back(q);
      }
      std::map<std::string, double> weights = {
          {"a", 1.0 + static_cast<double>(rng() % 4)}};
      auto policy = Policy(name, false, weights);
      std::vector<JobId> reported;
      for (const size_t i : policy->Order(h.queue, h.running, h.state, now)) {
        reported.push_back(h.queue[i].id);
      }
      EXPECT_EQ(h.Round(*policy, now), reported) << name << ", trial " << trial;
    }
  }
}

TEST(FairShare, TeamsShareOneAccount) {
  Harness h(TopologyOf({1}));
  QueuedJob running = Queued(1, Fraction(500), 0, 0, "alice");
  running.team = "vision";
  h.Run(running, 0);
  QueuedJob carol = Queued(2, Fraction(300), 0, 0, "carol");
  carol.team = "vision";
  h.queue = {carol, Queued(3, Fraction(300), 0, 0, "bob")};
  EXPECT_THAT(h.Round(*Policy("fair-share"), 10), ElementsAre(3));
}

// Users a and b keep sixteen 250-milli jobs each queued on 3 GPUs (12
// slots), all held by b at first; jobs run 3 to 12 rounds. Returns a's
// running milli over b's, averaged over rounds 100 to 400.
double RunningRatio(const std::map<std::string, double>& weights) {
  Harness h(TopologyOf({3}));
  auto policy = Policy("fair-share", false, weights);
  std::mt19937 rng(1);
  std::map<JobId, double> ends;
  JobId next = 1;
  for (int k = 0; k < 12; ++k) {
    h.Run(Queued(next, Fraction(250), 0, 0, "b"), 0);
    ends[next++] = 1 + static_cast<double>(rng() % 12);
  }
  double a_milli = 0, b_milli = 0;
  for (int round = 0; round < 400; ++round) {
    const double now = round;
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->second <= now) {
        h.Finish(it->first);
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
    for (const std::string user : {"a", "b"}) {
      while (std::count_if(h.queue.begin(), h.queue.end(),
                           [&](const QueuedJob& q) { return q.user == user; }) <
             16) {
        QueuedJob job = Queued(next++, Fraction(250), 0, 0, user);
        job.submitted_at = now;
        h.queue.push_back(job);
      }
    }
    for (JobId id : h.Round(*policy, now)) ends[id] = now + 3 + rng() % 10;
    if (round >= 100) {
      for (const RunningJob& r : h.running) {
        (r.user == "a" ? a_milli : b_milli) += 250;
      }
    }
  }
  return b_milli > 0 ? a_milli / b_milli : 0;
}

TEST(FairShare, RunningSharesConvergeToTheWeights) {
  EXPECT_NEAR(RunningRatio({{"a", 2}, {"b", 1}}), 2.0, 0.1);
  EXPECT_NEAR(RunningRatio({}), 1.0, 0.1);
  EXPECT_NEAR(RunningRatio({{"a", 1}, {"b", 3}}), 1.0 / 3, 0.05);
}

// Two small jobs arrive every 2 s, more than two GPUs can run, so the GPUs
// are never both idle by chance; a job that needs both GPUs must still
// start, within `bound` seconds of its submission.
void ExpectBigJobStarts(QueuePolicy& policy, double small_limit_s,
                        double bound) {
  Harness h(TopologyOf({2}));
  std::mt19937 rng(3);
  std::map<JobId, double> ends;
  JobId next = 100;
  QueuedJob big = Queued(1, WholeGpus(2), 100, 0, "big");
  big.submitted_at = 5;
  bool queued_big = false;
  for (int t = 0; t < 2000; ++t) {
    const double now = t;
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->second <= now) {
        h.Finish(it->first);
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
    if (t == 5) {
      h.queue.push_back(big);
      queued_big = true;
    }
    if (t % 2 == 0) {
      for (int k = 0; k < 2; ++k) {
        QueuedJob small =
            Queued(next++, Fraction(400), small_limit_s, 0, "small");
        small.submitted_at = now;
        h.queue.push_back(small);
      }
    }
    for (JobId id : h.Round(policy, now)) {
      if (id == 1) {
        EXPECT_LE(now - big.submitted_at, bound);
        return;
      }
      // Small jobs run a random part of their time limit (20 s without).
      const double limit = small_limit_s > 0 ? small_limit_s : 20;
      ends[id] = now + 1 + rng() % static_cast<int>(limit);
    }
  }
  ADD_FAILURE() << "the big job never started (queued: " << queued_big
                << ", queue length " << h.queue.size() << ")";
}

TEST(Starvation, BackfillStartsTheHeadWhileSmallJobsKeepComing) {
  // Small jobs declare 30 s: the head waits at most for those running when
  // it arrived, never for those that came later.
  ExpectBigJobStarts(*Policy("backfill"), 30, 31);
}

TEST(Starvation, FairShareStartsAnOverdueJobWhileSmallJobsKeepComing) {
  // The big user's share is zero but its job never fits while small jobs
  // fill the GPUs: once overdue (10 minutes) it holds them back, and the
  // running small jobs (at most 20 s, a few started just before) drain.
  ExpectBigJobStarts(*Policy("fair-share"), 0, 600 + 30);
}

}  // namespace
}  // namespace tessera::scheduler
