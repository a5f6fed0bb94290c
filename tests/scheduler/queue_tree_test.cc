// The queue tree (scheduler/queue_tree.h): config errors naming the field,
// admission in guarantee then borrowing by weight, reclaim youngest first,
// and a randomized property test: no queue held below its guarantee while
// it has queued work that fits (past the reclaim grace), no queue over its
// limit, every GPU within its capacity.
#include "scheduler/queue_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using testing::kGiB;  // 1024 MiB

Topology UniformTopology(int nodes, int gpus) {
  Topology t;
  t.pools = {"default"};
  for (int n = 0; n < nodes; ++n) {
    NodeInfo node;
    node.name = "node" + std::to_string(n);
    node.pool = "default";
    node.cpu_milli = 640000;
    node.memory_mib = 2560 * kGiB;
    for (int i = 0; i < gpus; ++i) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back(
          {node.name + "/gpu" + std::to_string(i), n, i, "test", 40 * kGiB});
    }
    t.nodes.push_back(node);
  }
  return t;
}

QueueSpec Q(std::string name, int64_t milli, int64_t limit = kNoLimit,
            double weight = 1, std::vector<QueueSpec> children = {}) {
  QueueSpec s;
  s.name = std::move(name);
  s.guaranteed = {milli, milli * 40};  // 40 MiB per milli: 40 GiB a GPU
  s.limit = {limit, limit == kNoLimit ? kNoLimit : limit * 40};
  s.weight = weight;
  s.children = std::move(children);
  return s;
}

QueueAmount Milli(int64_t m) { return {m, m * 40}; }

TEST(QueueTreeConfig, ErrorsNameTheField) {
  const auto error = [](std::vector<QueueSpec> top) {
    auto t = QueueTree::Make(std::move(top));
    return t ? std::string("ok") : t.error().message;
  };
  EXPECT_THAT(error({Q("org", 1000, kNoLimit, 1, {Q("a", 500), Q("b", 600)})}),
              HasSubstr("queues[0].guaranteed.gpu_milli: 1000 is less than "
                        "its children's guarantees together (1100)"));
  EXPECT_THAT(error({Q("org", 1000, kNoLimit, 1, {Q("a", 500), Q("b", -1)})}),
              HasSubstr("queues[0].children[1].guaranteed.gpu_milli: must "
                        "not be negative"));
  EXPECT_THAT(
      error({Q("org", 2000, kNoLimit, 1, {Q("a", 500), Q("b", 800, 700)})}),
      HasSubstr("queues[0].children[1].limit.gpu_milli: 700 is below "
                "the queue's guarantee (800)"));
  EXPECT_THAT(error({Q("org", 2000, kNoLimit, 1, {Q("a", 500), Q("org", 8)})}),
              HasSubstr("queues[0].children[1].name: 'org' is given twice"));
  EXPECT_THAT(error({Q("org", 2000, kNoLimit, 0)}),
              HasSubstr("queues[0].weight: must be above 0"));
  EXPECT_THAT(error({Q("", 0)}), HasSubstr("queues[0].name: required"));
  EXPECT_EQ(error({Q("org", 2000, kNoLimit, 1, {Q("a", 500), Q("b", 800)})}),
            "ok");
}

TEST(QueueTree, RoutesAndClassifies) {
  auto tree = QueueTree::Make(
      {Q("org", 3000, kNoLimit, 1,
         {Q("team-a", 2000, 2500, 1, {Q("alice", 1000)}), Q("team-b", 1000)})});
  ASSERT_TRUE(tree);
  const int a = tree->Find("team-a"), alice = tree->Find("alice"),
            b = tree->Find("team-b");
  EXPECT_EQ(tree->Route("", "alice", "team-a"), alice);
  EXPECT_EQ(tree->Route("", "bob", "team-a"), a);
  EXPECT_EQ(tree->Route("team-b", "alice", "team-a"), b);
  EXPECT_EQ(tree->Route("nope", "alice", "team-a"), -1);
  EXPECT_EQ(tree->Route("", "carol", "other"), 0);
  using Fit = QueueTree::Fit;
  // team-a's own jobs: 2000 - alice's 1000.
  EXPECT_EQ(tree->Classify(a, Milli(1000), false), Fit::kGuaranteed);
  EXPECT_EQ(tree->Classify(a, Milli(1001), false), Fit::kNo);
  // team-a borrows at most limit - guaranteed = 500; team-b has no limit.
  EXPECT_EQ(tree->Classify(a, Milli(1001), true), Fit::kNo);
  EXPECT_EQ(tree->Classify(b, Milli(1001), true), Fit::kBorrowed);
  // The root's own jobs always borrow.
  EXPECT_EQ(tree->Classify(0, Milli(1), true), Fit::kBorrowed);
  EXPECT_EQ(tree->Classify(0, Milli(1), false), Fit::kNo);
  tree->Add({1, alice, Milli(1000), false, false, 0});
  tree->Add({2, a, Milli(1000), false, false, 0});
  // team-a borrows at most its limit 2500 - 2000 = 500.
  EXPECT_EQ(tree->Classify(alice, Milli(500), true), Fit::kBorrowed);
  EXPECT_EQ(tree->Classify(alice, Milli(501), true), Fit::kNo);
  tree->Add({3, alice, Milli(500), true, true, 1});
  const std::vector<QueueReport> r = tree->Report();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[1].name, "team-a");
  EXPECT_EQ(r[1].used.gpu_milli, 2500);
  EXPECT_EQ(r[1].borrowed.gpu_milli, 500);
  EXPECT_EQ(r[1].lent.gpu_milli, 0);
  EXPECT_EQ(r[3].name, "team-b");
  EXPECT_EQ(r[3].idle.gpu_milli, 1000);
  EXPECT_EQ(r[3].lent.gpu_milli, 500);
  EXPECT_EQ(r[0].borrowed.gpu_milli, 500);
}

// Whole GPUs of 40 GiB as queued jobs; the allocator is best-fit.
Resources Gpus(int n) { return Resources{n, 0, 0, 100, kGiB}; }

struct Fixture {
  Fixture(int nodes, int gpus)
      : state(UniformTopology(nodes, gpus)),
        scorer(std::move(MakeScorer("best-fit").value())) {}
  std::optional<Allocation> Allocate(const ClusterState& s,
                                     const Resources& d) const {
    return FindAllocation(s, "default", d, *scorer);
  }
  // `count` 1-GPU jobs of queue `q` reserved (ids 1.., each started at its
  // id): the first two in the queue's guarantee, the rest borrowed.
  std::vector<TreeJob> RunOneGpuJobs(int q, int count) {
    std::vector<TreeJob> out;
    for (JobId id = 1; id <= count; ++id) {
      const std::optional<Allocation> a = Allocate(state, Gpus(1));
      EXPECT_TRUE(a && state.Reserve(id, *a).ok()) << id;
      out.push_back({id, q, Milli(1000), id > 2, true, double(id)});
    }
    return out;
  }
  ClusterState state;
  std::unique_ptr<GpuScorer> scorer;
};

// The policies' view of `running` (user "b"'s jobs).
std::vector<RunningJob> Active(const std::vector<TreeJob>& running) {
  std::vector<RunningJob> out;
  for (const TreeJob& r : running) {
    out.push_back({r.id, "b", "", 0, true, r.started_at, 0});
  }
  return out;
}

// A priority policy's round over `queued` beside `active`: where the
// queue tree asks which job the policy would start.
TreeTrial PriorityTrial(QueuePolicy& policy, const Fixture& f,
                        const std::map<JobId, QueuedJob>& queued,
                        const std::vector<RunningJob>& active) {
  return [&](const ClusterState& s, const std::vector<JobId>& ids) {
    std::vector<QueuedJob> jobs;
    for (const JobId id : ids) jobs.push_back(queued.at(id));
    return policy.Schedule(
        jobs, active, s,
        [&](const ClusterState& st, const QueuedJob& q) {
          return f.Allocate(st, q.demand);
        },
        10);
  };
}

std::unique_ptr<QueuePolicy> Priority() {
  PolicyConfig pc;
  pc.name = "priority";
  return std::move(MakePolicy(pc).value());
}

TEST(QueueTree, ReclaimsYoungestBorrowedOfOtherQueuesOnly) {
  auto tree = QueueTree::Make({Q("a", 2000), Q("b", 2000)});
  ASSERT_TRUE(tree);
  const int a = tree->Find("a"), b = tree->Find("b");
  Fixture f(1, 4);
  // b borrows all four GPUs (two in its guarantee, two borrowed); a's
  // guaranteed job of two GPUs needs the two youngest borrowed back.
  std::vector<TreeJob> running;
  const auto run = [&](JobId id, int q, bool borrowed, double at) {
    auto al = f.Allocate(f.state, Gpus(1));
    ASSERT_TRUE(al);
    ASSERT_TRUE(f.state.Reserve(id, *al));
    running.push_back({id, q, Milli(1000), borrowed, true, at});
  };
  run(1, b, false, 1);
  run(2, b, false, 2);
  run(3, b, true, 3);
  run(4, b, true, 4);
  TreePending job{10, a, Milli(2000), false};
  auto fits = [&](const ClusterState& s) {
    return f.Allocate(s, Gpus(2)).has_value();
  };
  EXPECT_THAT(tree->Reclaim(job, running, f.state, fits), ElementsAre(4, 3));
  // One GPU needed: only the youngest.
  EXPECT_THAT(tree->Reclaim({10, a, Milli(1000), false}, running, f.state,
                            [&](const ClusterState& s) {
                              return f.Allocate(s, Gpus(1)).has_value();
                            }),
              ElementsAre(4));
  // b's own work does not reclaim from b.
  EXPECT_THAT(tree->Reclaim({11, b, Milli(1000), false}, running, f.state,
                            [&](const ClusterState& s) {
                              return f.Allocate(s, Gpus(1)).has_value();
                            }),
              IsEmpty());
  // Three GPUs: only two are borrowed, so nothing.
  EXPECT_THAT(tree->Reclaim({10, a, Milli(3000), false}, running, f.state,
                            [&](const ClusterState& s) {
                              return f.Allocate(s, Gpus(3)).has_value();
                            }),
              IsEmpty());
}

TEST(QueueTree, GuaranteesFirstThenBorrowersByWeight) {
  // No guarantee for c and d: both borrow; d weighs 3, c 1.
  auto tree = QueueTree::Make(
      {Q("a", 1000), Q("c", 0, kNoLimit, 1), Q("d", 0, kNoLimit, 3)});
  ASSERT_TRUE(tree);
  const int a = tree->Find("a"), c = tree->Find("c"), d = tree->Find("d");
  Fixture f(1, 8);
  std::vector<TreePending> pending = {
      {1, c, Milli(1000), true},  {2, c, Milli(1000), true},
      {3, d, Milli(1000), true},  {4, d, Milli(1000), true},
      {5, a, Milli(1000), false}, {6, d, Milli(1000), true},
      {7, a, Milli(1000), false}};
  const TreePlan plan = PlanTreeRound(
      *tree, pending, {}, f.state,
      [&](const ClusterState& s, JobId) { return f.Allocate(s, Gpus(1)); },
      false);
  // a's first job in guarantee; its second is beyond it and not
  // preemptible: held. Then borrowers: c and d alternate by used / weight
  // (d three times as much).
  EXPECT_THAT(plan.offer, ElementsAre(5, 1, 3, 4, 6, 2));
  EXPECT_EQ(plan.fit.at(5), QueueTree::Fit::kGuaranteed);
  EXPECT_EQ(plan.fit.at(1), QueueTree::Fit::kBorrowed);
  EXPECT_THAT(plan.held.at(7), HasSubstr("only preemptible jobs borrow"));
}

TEST(QueueTree, PlanReclaimsAndHoldsBorrowersDuringTheGrace) {
  auto tree = QueueTree::Make({Q("a", 2000), Q("b", 2000)});
  ASSERT_TRUE(tree);
  const int a = tree->Find("a"), b = tree->Find("b");
  Fixture f(1, 4);
  std::vector<TreeJob> running = f.RunOneGpuJobs(b, 4);
  const auto alloc = [&](const ClusterState& s, JobId id) {
    return f.Allocate(s, Gpus(id == 10 ? 2 : 1));
  };
  const std::vector<TreePending> pending = {{9, b, Milli(1000), true},
                                            {10, a, Milli(2000), false}};
  TreePlan plan = PlanTreeRound(*tree, pending, running, f.state, alloc, false);
  EXPECT_THAT(plan.reclaim, ElementsAre(4, 3));
  EXPECT_EQ(plan.reclaimed_for.at(4), 10);
  EXPECT_THAT(plan.offer, ElementsAre(10));
  EXPECT_THAT(plan.held.at(9), HasSubstr("reclaiming"));
  // While the victims stop, nothing more is reclaimed.
  plan = PlanTreeRound(*tree, pending, running, f.state, alloc, true);
  EXPECT_THAT(plan.reclaim, IsEmpty());
  // A guaranteed job of b ends: b's oldest borrowed job becomes
  // guaranteed, and is no victim any more.
  f.state.Release(1);
  running.erase(running.begin());
  plan = PlanTreeRound(*tree, {{10, a, Milli(2000), false}}, running, f.state,
                       alloc, false);
  EXPECT_THAT(plan.promote, ElementsAre(3));
  EXPECT_THAT(plan.reclaim, ElementsAre(4));
}

// The reclaim is for the job the policy would start next, not for the first
// in submission order: under priority, a's job 11 (priority 5, one GPU)
// goes before its job 10 (priority 0, two GPUs, submitted first), so only
// 11 reclaims, and only the one GPU it needs. (Before: 10 reclaimed two
// GPUs that priority then gave to 11, and 10 still waited.)
TEST(QueueTree, ReclaimsForTheJobThePolicyStartsNext) {
  auto tree = QueueTree::Make({Q("a", 2000), Q("b", 2000)});
  ASSERT_TRUE(tree);
  const int a = tree->Find("a"), b = tree->Find("b");
  Fixture f(1, 4);
  std::vector<TreeJob> running = f.RunOneGpuJobs(b, 4);
  std::vector<RunningJob> active = Active(running);
  std::map<JobId, QueuedJob> queued;
  queued[10] = {10, "a", "", 0, false, 5, 0, Gpus(2)};
  queued[11] = {11, "a", "", 5, false, 6, 0, Gpus(1)};
  const auto alloc = [&](const ClusterState& s, JobId id) {
    return f.Allocate(s, queued.at(id).demand);
  };
  const std::unique_ptr<QueuePolicy> policy = Priority();
  const TreeTrial trial = PriorityTrial(*policy, f, queued, active);
  const std::vector<TreePending> pending = {{10, a, Milli(2000), false},
                                            {11, a, Milli(1000), false}};
  TreePlan plan =
      PlanTreeRound(*tree, pending, running, f.state, alloc, false, {}, trial);
  EXPECT_THAT(plan.reclaim, ElementsAre(4));
  EXPECT_EQ(plan.reclaimed_for.at(4), 11);
  ASSERT_TRUE(plan.held_room.count(11));
  EXPECT_FALSE(plan.held_room.count(10));
  // The victim stops; the next round holds its room for 11 (a reclaimer)
  // and the policy's round starts 11 there.
  f.state.Release(4);
  running.pop_back();
  active.pop_back();
  plan = PlanTreeRound(*tree, pending, running, f.state, alloc, false, {11},
                       trial);
  EXPECT_THAT(plan.reclaim, IsEmpty());
  ASSERT_TRUE(plan.held_room.count(11));
  const Decision d = ScheduleWithTree(
      *policy, plan, {queued.at(10), queued.at(11)}, active, f.state,
      [&](const ClusterState& st, const QueuedJob& q) {
        return f.Allocate(st, q.demand);
      },
      10);
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].first, 11);
}

// The room reclaimed for a job goes to it even when the policy would give
// it to another job first (here a higher-priority job of the same queue
// that came while the victims stopped). Before, the policy's first call
// ran on the freed room and started job 12 there; 11 waited again.
TEST(QueueTree, ReclaimedRoomGoesToItsOwner) {
  auto tree = QueueTree::Make({Q("a", 2000), Q("b", 2000)});
  ASSERT_TRUE(tree);
  const int a = tree->Find("a"), b = tree->Find("b");
  Fixture f(1, 4);
  const std::vector<TreeJob> running = f.RunOneGpuJobs(b, 3);
  const std::vector<RunningJob> active = Active(running);
  std::map<JobId, QueuedJob> queued;
  queued[11] = {11, "a", "", 0, false, 5, 0, Gpus(1)};
  queued[12] = {12, "a", "", 9, false, 7, 0, Gpus(1)};
  const auto alloc = [&](const ClusterState& s, JobId id) {
    return f.Allocate(s, queued.at(id).demand);
  };
  const std::unique_ptr<QueuePolicy> policy = Priority();
  const TreePlan plan = PlanTreeRound(
      *tree, {{11, a, Milli(1000), false}, {12, a, Milli(1000), false}},
      running, f.state, alloc, false, {11});
  ASSERT_TRUE(plan.held_room.count(11));
  const Decision d = ScheduleWithTree(
      *policy, plan, {queued.at(11), queued.at(12)}, active, f.state,
      [&](const ClusterState& st, const QueuedJob& q) {
        return f.Allocate(st, q.demand);
      },
      10);
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].first, 11);
}

// ---------------------------------------------------------------------------
// The property test: random trees, jobs and durations, driven round by
// round through fair-share (which skips jobs that do not fit) under the
// tree. A victim stops one round after its reclaim (the grace).
class TreeSim {
 public:
  TreeSim(uint64_t seed, QueueTree tree, int nodes, int gpus)
      : rng_(seed), tree_(std::move(tree)), f_(nodes, gpus) {
    PolicyConfig pc;
    pc.name = "fair-share";
    policy_ = std::move(MakePolicy(pc).value());
  }

  struct SimJob {
    JobId id;
    int queue;
    Resources demand;
    QueueAmount amount;
    bool preemptible;
    double duration;
    double submitted;
  };

  void Submit(const SimJob& j) {
    jobs_[j.id] = j;
    queue_.push_back(j.id);
  }

  std::optional<Allocation> Alloc(const ClusterState& s, JobId id) const {
    return f_.Allocate(s, jobs_.at(id).demand);
  }

  // One round at `now`; returns whether anything changed.
  bool Round(double now) {
    bool changed = false;
    // The grace is over: the victims stop and go back to the queue.
    for (const JobId v : stopping_) {
      Stop(v);
      queue_.push_back(v);
      std::sort(queue_.begin(), queue_.end());
      ++reclaims_;
      changed = true;
    }
    stopping_.clear();
    std::vector<TreePending> pending;
    for (const JobId id : queue_) {
      const SimJob& j = jobs_.at(id);
      pending.push_back({id, j.queue, j.amount, j.preemptible});
    }
    std::vector<TreeJob> running;
    for (const auto& [id, r] : running_) running.push_back(r);
    std::vector<RunningJob> active;
    for (const auto& [id, r] : running_) {
      active.push_back(
          {id, tree_.name(r.queue), "", 0, r.preemptible, r.started_at, 0});
    }
    const auto queued_job = [&](JobId id) {
      QueuedJob q;
      q.id = id;
      q.user = tree_.name(jobs_.at(id).queue);
      q.submitted_at = jobs_.at(id).submitted;
      q.preemptible = jobs_.at(id).preemptible;
      q.demand = jobs_.at(id).demand;
      return q;
    };
    // The reclaim asks the policy (fair-share) which job it starts next.
    const TreeTrial trial = [&](const ClusterState& s,
                                const std::vector<JobId>& ids) {
      std::vector<QueuedJob> jobs;
      for (const JobId id : ids) jobs.push_back(queued_job(id));
      return policy_->Schedule(
          jobs, active, s,
          [&](const ClusterState& st, const QueuedJob& q) {
            return Alloc(st, q.id);
          },
          now);
    };
    const TreePlan plan = PlanTreeRound(
        tree_, pending, running, f_.state,
        [&](const ClusterState& s, JobId id) { return Alloc(s, id); }, false,
        reclaimers_, trial);
    for (const JobId id : plan.promote) {
      TreeJob& r = running_.at(id);
      tree_.Remove(r);
      r.borrowed = false;
      tree_.Add(r);
    }
    for (const JobId v : plan.reclaim) {
      EXPECT_TRUE(running_.at(v).borrowed) << v;
      EXPECT_TRUE(running_.at(v).preemptible) << v;
      stopping_.push_back(v);
      changed = true;
    }
    // One owner at a time: at most one job reclaims per round.
    std::set<JobId> owners;
    for (const auto& [v, owner] : plan.reclaimed_for) owners.insert(owner);
    EXPECT_LE(owners.size(), 1u);
    reclaimers_.insert(owners.begin(), owners.end());
    std::vector<QueuedJob> queued;
    for (const JobId id : queue_) queued.push_back(queued_job(id));
    const Decision d = ScheduleWithTree(
        *policy_, plan, queued, active, f_.state,
        [&](const ClusterState& s, const QueuedJob& q) {
          return Alloc(s, q.id);
        },
        now);
    EXPECT_THAT(d.preempt, IsEmpty());
    for (const auto& [id, a] : d.start) {
      const SimJob& j = jobs_.at(id);
      // The start's mark against what is held now, as the service does.
      const QueueTree::Fit fit =
          tree_.Classify(j.queue, j.amount, j.preemptible);
      if (fit == QueueTree::Fit::kNo) continue;
      EXPECT_TRUE(f_.state.Reserve(id, a).ok()) << id;
      TreeJob r{id,
                j.queue,
                j.amount,
                fit == QueueTree::Fit::kBorrowed,
                j.preemptible,
                now};
      tree_.Add(r);
      running_[id] = r;
      ends_[id] = now + j.duration;
      std::erase(queue_, id);
      reclaimers_.erase(id);
      changed = true;
    }
    return changed;
  }

  void Stop(JobId id) {
    tree_.Remove(running_.at(id));
    running_.erase(id);
    ends_.erase(id);
    f_.state.Release(id);
  }

  // Ends the jobs due by `now`.
  void Departures(double now) {
    std::vector<JobId> due;
    for (const auto& [id, end] : ends_) {
      if (end <= now && std::find(stopping_.begin(), stopping_.end(), id) ==
                            stopping_.end()) {
        due.push_back(id);
      }
    }
    for (const JobId id : due) Stop(id);
  }

  // The invariants after the rounds of one instant have settled.
  void Check(int step) {
    ASSERT_EQ(f_.state.CheckInvariants(), "") << "step " << step;
    const std::vector<QueueReport> report = tree_.Report();
    for (const QueueReport& r : report) {
      ASSERT_TRUE(r.used.Within(r.limit)) << r.name << " step " << step;
      QueueAmount guaranteed = r.used;
      guaranteed -= r.borrowed;
      ASSERT_TRUE(guaranteed.Within(r.guaranteed))
          << r.name << " step " << step;
    }
    if (!stopping_.empty()) return;  // the grace period
    // Every queued job in its queue's guarantee that would fit with every
    // borrowed preemptible job of the other queues gone: a violation.
    for (const JobId id : queue_) {
      const SimJob& j = jobs_.at(id);
      if (tree_.Classify(j.queue, j.amount, false) !=
          QueueTree::Fit::kGuaranteed) {
        continue;
      }
      ClusterState s = f_.state;
      for (const auto& [rid, r] : running_) {
        if (r.borrowed && r.preemptible && !tree_.Within(r.queue, j.queue)) {
          s.Release(rid);
        }
      }
      ASSERT_FALSE(Alloc(s, id).has_value())
          << "step " << step << ": job " << id << " of queue "
          << tree_.name(j.queue) << " waits in its guarantee and fits";
    }
  }

  std::mt19937_64& rng() { return rng_; }
  const QueueTree& tree() const { return tree_; }
  int64_t reclaims() const { return reclaims_; }
  int64_t borrowing() const {
    int64_t n = 0;
    for (const auto& [id, r] : running_) n += r.borrowed;
    return n;
  }

 private:
  std::mt19937_64 rng_;
  QueueTree tree_;
  Fixture f_;
  std::unique_ptr<QueuePolicy> policy_;
  std::map<JobId, SimJob> jobs_;
  std::vector<JobId> queue_;
  std::map<JobId, TreeJob> running_;
  std::map<JobId, double> ends_;
  std::vector<JobId> stopping_;
  std::set<JobId> reclaimers_;
  int64_t reclaims_ = 0;
};

TEST(QueueTreeProperty, GuaranteesLimitsAndCapacityHold) {
  int64_t reclaims = 0, borrowed_seen = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    // Two teams of two users under one organisation, 4 nodes x 4 GPUs:
    // guarantees of whole GPUs that add up to at most the cluster.
    const int64_t ga = 1000 * (2 + static_cast<int64_t>(rng() % 6));
    const int64_t gb = 1000 * (2 + static_cast<int64_t>(rng() % 6));
    const auto limit = [&](int64_t g) {
      return rng() % 3 == 0 ? kNoLimit : g + 1000 * (1 + int64_t(rng() % 6));
    };
    std::vector<QueueSpec> top = {Q(
        "org", ga + gb, kNoLimit, 1,
        {Q("team-a", ga, limit(ga), 1 + double(rng() % 3),
           {Q("a1", ga / 2), Q("a2", 0)}),
         Q("team-b", gb, limit(gb), 1 + double(rng() % 3), {Q("b1", 1000)})})};
    auto tree = QueueTree::Make(std::move(top));
    ASSERT_TRUE(tree) << tree.error().message;
    TreeSim sim(seed, std::move(tree).value(), 4, 4);
    const std::vector<int> queues = {
        sim.tree().Find("team-a"), sim.tree().Find("a1"), sim.tree().Find("a2"),
        sim.tree().Find("team-b"), sim.tree().Find("b1")};
    JobId next = 1;
    double now = 0;
    for (int step = 0; step < 150; ++step) {
      now += 1;
      sim.Departures(now);
      // A burst of arrivals now and then, from a random queue.
      const int arrivals = static_cast<int>(sim.rng()() % 4);
      for (int k = 0; k < arrivals; ++k) {
        TreeSim::SimJob j;
        j.id = next++;
        j.queue = queues[sim.rng()() % queues.size()];
        const bool whole = sim.rng()() % 2 == 0;
        if (whole) {
          const int n = 1 + static_cast<int>(sim.rng()() % 3);
          j.demand = Gpus(n);
          j.amount = Milli(1000 * n);
        } else {
          const int milli = 100 * (1 + static_cast<int>(sim.rng()() % 9));
          j.demand = Resources{0, milli, milli * 40, 100, kGiB};
          j.amount = Milli(milli);
        }
        j.preemptible = sim.rng()() % 4 != 0;
        j.duration = 1 + static_cast<double>(sim.rng()() % 20);
        j.submitted = now;
        sim.Submit(j);
      }
      // The rounds of this instant, until nothing changes (a reclaim's
      // victims stop one round later: the grace).
      for (int r = 0; r < 20 && sim.Round(now); ++r) {
      }
      sim.Check(step);
      if (::testing::Test::HasFatalFailure()) return;
      borrowed_seen += sim.borrowing();
    }
    reclaims += sim.reclaims();
  }
  // The test exercised what it checks.
  EXPECT_GT(reclaims, 10);
  EXPECT_GT(borrowed_seen, 100);
}

}  // namespace
}  // namespace tessera::scheduler
