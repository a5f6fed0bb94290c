// The queue tree in the service (docs/quotas.md): a job starts in its
// queue's guarantee or on borrowed capacity, the mark is stored (and
// survives a restart), and an owner's job that fits its guarantee but not
// what is free reclaims borrowed work: youngest first, a gang whole, the
// victims requeued as `preempted`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::JobEvent;
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using ::testing::HasSubstr;

constexpr int64_t kGpuMiB = 80 * 1024;

QueueSpec Team(std::string name, int gpus) {
  QueueSpec q;
  q.name = std::move(name);
  q.guaranteed = {1000 * gpus, kGpuMiB * gpus};
  return q;
}

JobRequest Gpus(int n, bool preemptible) {
  JobRequest r;
  r.name = "whole";
  r.pool = "a";
  r.command = {"true"};
  r.preemptible = preemptible;
  r.resources = Resources{n, 0, 0, 0, 0};
  return r;
}

class QueueTreeServiceTest : public ::testing::Test {
 protected:
  // `adoptable`: the jobs whose processes a restart finds alive.
  std::unique_ptr<Service> Make(std::set<JobId> adoptable = {}) {
    ServiceOptions o;
    o.topology = FourGpus();
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.clock = [this] { return now_; };
    QueueSpec org;
    org.name = "org";
    org.guaranteed = {4000, 4 * kGpuMiB};
    org.children = {Team("team-a", 2), Team("team-b", 2)};
    if (team_a_limit_gpus_ > 0) {
      org.children[0].limit = {1000 * team_a_limit_gpus_,
                               kGpuMiB * team_a_limit_gpus_};
    }
    o.queues = {org};
    auto l = std::make_unique<ScriptedLauncher>();
    l->adoptable = std::move(adoptable);
    launcher_ = l.get();
    auto s = Service::Start(std::move(o), std::move(l));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return (j && *j) ? **j : Job{};
  }
  JobId Submit(Service& s, const User& u, JobRequest r) {
    auto j = s.Submit(u, std::move(r));
    EXPECT_TRUE(j) << j.error().message;
    return j ? j->id : 0;
  }
  static nlohmann::json Queue(const nlohmann::json& cluster,
                              const std::string& name) {
    for (const auto& q : cluster["queues"]) {
      if (q["name"] == name) return q;
    }
    return nullptr;
  }

  testlib::TempDir dir_;
  double now_ = 1000;
  int team_a_limit_gpus_ = 0;  // > 0: team-a's limit, in whole GPUs
  ScriptedLauncher* launcher_ = nullptr;
  const User alice_{"alice", "team-a", false, ""};
  const User bob_{"bob", "team-b", false, ""};
};

TEST_F(QueueTreeServiceTest, OwnerReclaimsYoungestBorrowedFirst) {
  auto s = Make();
  // team-b fills the cluster: two GPUs in its guarantee, two borrowed.
  const JobId b1 = Submit(*s, bob_, Gpus(1, true));
  const JobId b2 = Submit(*s, bob_, Gpus(1, false));
  s->Tick();
  now_ += 10;
  const JobId b3 = Submit(*s, bob_, Gpus(1, true));
  s->Tick();
  now_ += 10;
  const JobId b4 = Submit(*s, bob_, Gpus(1, true));
  s->Tick();
  for (const JobId id : {b1, b2, b3, b4}) {
    ASSERT_EQ(Get(*s, id).state, JobState::kRunning) << id;
    EXPECT_EQ(Get(*s, id).queue, "team-b");
  }
  EXPECT_FALSE(Get(*s, b1).borrowed);
  EXPECT_FALSE(Get(*s, b2).borrowed);
  EXPECT_TRUE(Get(*s, b3).borrowed);
  EXPECT_TRUE(Get(*s, b4).borrowed);
  nlohmann::json cluster = s->ClusterJson();
  EXPECT_EQ(Queue(cluster, "team-b")["borrowed"]["gpu_milli"], 2000);
  EXPECT_EQ(Queue(cluster, "team-a")["lent"]["gpu_milli"], 2000);
  EXPECT_EQ(Queue(cluster, "team-a")["guaranteed"]["gpu_milli"], 2000);

  // alice's job is in team-a's guarantee and nothing is free: the youngest
  // borrowed job (b4) is reclaimed, only it.
  now_ += 10;
  const JobId a1 = Submit(*s, alice_, Gpus(1, false));
  s->Tick();
  EXPECT_EQ(Get(*s, a1).state, JobState::kQueued);
  s->Tick();  // the victim has exited: its GPU goes to the owner
  EXPECT_EQ(Get(*s, a1).state, JobState::kRunning);
  EXPECT_FALSE(Get(*s, a1).borrowed);
  EXPECT_EQ(Get(*s, b3).state, JobState::kRunning);
  const Job victim = Get(*s, b4);
  EXPECT_EQ(victim.state, JobState::kPreempted);
  EXPECT_THAT(victim.reason, HasSubstr("reclaimed by queue 'team-a'"));
  EXPECT_EQ(victim.restarts, 1);
  // A non-preemptible job beyond its queue's guarantee does not borrow.
  const JobId b5 = Submit(*s, bob_, Gpus(1, false));
  s->Tick();
  EXPECT_EQ(Get(*s, b5).state, JobState::kQueued);
  cluster = s->ClusterJson();
  bool held = false;
  for (const auto& w : cluster["quota_waits"]) {
    if (w["job"] == b5) {
      held = true;
      EXPECT_THAT(w["reason"].get<std::string>(),
                  HasSubstr("only preemptible jobs borrow"));
    }
  }
  EXPECT_TRUE(held);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(QueueTreeServiceTest, AGangIsReclaimedWholeAndTheMarkSurvivesRestart) {
  auto s = Make();
  const JobId b1 = Submit(*s, bob_, Gpus(2, false));
  s->Tick();
  now_ += 10;
  const JobId gang = Submit(*s, bob_, Gpus(2, true));  // borrowed, 2 GPUs
  s->Tick();
  ASSERT_EQ(Get(*s, gang).state, JobState::kRunning);
  EXPECT_TRUE(Get(*s, gang).borrowed);
  EXPECT_EQ(Get(*s, gang).allocation.gpus.size(), 2u);

  // A restart: the processes are still there, the marks come back.
  s.reset();
  s = Make({b1, gang});
  ASSERT_EQ(Get(*s, gang).state, JobState::kRunning);
  EXPECT_TRUE(Get(*s, gang).borrowed);
  EXPECT_FALSE(Get(*s, b1).borrowed);
  EXPECT_EQ(Queue(s->ClusterJson(), "team-b")["borrowed"]["gpu_milli"], 2000);

  // alice needs one GPU of her guarantee: the whole gang goes.
  now_ += 10;
  const JobId a1 = Submit(*s, alice_, Gpus(1, false));
  s->Tick();
  s->Tick();
  EXPECT_EQ(Get(*s, a1).state, JobState::kRunning);
  const Job g = Get(*s, gang);
  EXPECT_EQ(g.state, JobState::kPreempted);
  EXPECT_TRUE(g.allocation.gpus.empty());
  EXPECT_EQ(Get(*s, b1).state, JobState::kRunning);
  // One GPU is free but the gang needs two: it waits, whole.
  s->Tick();
  EXPECT_EQ(Get(*s, gang).state, JobState::kPreempted);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(QueueTreeServiceTest, ASubmissionNamesAQueueThatExists) {
  auto s = Make();
  JobRequest r = Gpus(1, false);
  r.queue = "team-c";
  auto j = s->Submit(alice_, r);
  ASSERT_FALSE(j);
  EXPECT_EQ(j.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(j.error().message, HasSubstr("queue: no queue 'team-c'"));
  r.queue = "team-b";  // alice may run in team-b's queue
  const JobId id = Submit(*s, alice_, r);
  s->Tick();
  EXPECT_EQ(Get(*s, id).queue, "team-b");
}

// Elastic extras (docs/elastic.md, "Fairness and quotas"): team-a's
// elastic job grows into team-b's idle guarantee as borrowed use of
// team-a's queue; when team-b submits, the extras in the way are asked
// back (with the grace), nobody is preempted, and team-b's job starts
// once they are released.
TEST_F(QueueTreeServiceTest, ElasticExtrasBorrowAndAreAskedBackFirst) {
  auto s = Make();
  JobRequest r = Gpus(1, false);
  r.name = "sweep";
  r.elastic = ElasticRequest{1, 4};
  const JobId e = Submit(*s, alice_, r);
  s->Tick();  // its guaranteed worker
  s->Tick();  // three extras
  Job job = Get(*s, e);
  ASSERT_EQ(job.state, JobState::kRunning);
  ASSERT_EQ(job.allocation.gpus.size(), 4u);
  EXPECT_EQ(job.queue, "team-a");
  EXPECT_FALSE(job.borrowed);  // the mark is its guaranteed part's
  nlohmann::json a = Queue(s->ClusterJson(), "team-a");
  EXPECT_EQ(a["used"]["gpu_milli"], 4000);
  EXPECT_EQ(a["borrowed"]["gpu_milli"], 3000);  // the extras
  EXPECT_EQ(a["borrowing_jobs"], 1);

  const JobId b = Submit(*s, bob_, Gpus(2, false));
  s->Tick();
  EXPECT_EQ(s->CheckInvariants(), "");
  job = Get(*s, e);
  EXPECT_EQ(job.state, JobState::kRunning);
  ASSERT_EQ(job.elastic.releasing.size(), 2u);
  EXPECT_EQ(job.elastic.history.back().action, "shrink asked");
  EXPECT_EQ(Get(*s, b).state, JobState::kQueued);
  auto released = s->ReleaseWorkers(e, job.elastic.releasing, &alice_);
  ASSERT_TRUE(released) << released.error().message;
  s->Tick();
  EXPECT_EQ(Get(*s, b).state, JobState::kRunning);
  EXPECT_EQ(Get(*s, b).queue, "team-b");
  EXPECT_FALSE(Get(*s, b).borrowed);
  job = Get(*s, e);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.allocation.gpus.size(), 2u);
  auto events = s->Events(e);
  ASSERT_TRUE(events);
  for (const JobEvent& ev : *events) {
    EXPECT_THAT(ev.action, ::testing::Not(HasSubstr("preempt"))) << ev.detail;
  }
  a = Queue(s->ClusterJson(), "team-a");
  EXPECT_EQ(a["borrowed"]["gpu_milli"], 1000);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// Extras grow only while no queue from the job's up would pass its limit.
TEST_F(QueueTreeServiceTest, ElasticExtrasStopAtTheQueueLimit) {
  team_a_limit_gpus_ = 3;
  auto s = Make();
  JobRequest r = Gpus(1, false);
  r.elastic = ElasticRequest{1, 4};
  const JobId e = Submit(*s, alice_, r);
  for (int i = 0; i < 3; ++i) s->Tick();
  EXPECT_EQ(Get(*s, e).allocation.gpus.size(), 3u);  // not the fourth GPU
  EXPECT_EQ(Queue(s->ClusterJson(), "team-a")["used"]["gpu_milli"], 3000);
  EXPECT_EQ(s->CheckInvariants(), "");
}

}  // namespace
}  // namespace tessera::scheduler
