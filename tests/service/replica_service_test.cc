// Replicas of the service (docs/operations.md, "High availability"): two
// or three Services in this process, each a replica (ServiceOptions::
// replica) of one PostgreSQL database the test starts, each with the real
// local launcher (one machine: they share its log directory, so that a
// replica that takes over can adopt what another started). Exactly one
// leads; a follower stores submissions and cancels for the leader, which
// acts on them within a round or two; a retried submission is one job on
// every replica; a clean stop hands the lead over at once and the new
// leader adopts the running jobs. Every wait polls against a deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "launch/launcher.h"
#include "service/service.h"
#include "service/store_internal.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::JobFilter;
using service::ReplicaStatus;
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Polls `done` every 20 ms until it holds or `seconds` have passed.
bool Eventually(const std::function<bool()>& done, double seconds = 15) {
  const auto t0 = Clock::now();
  while (SecondsSince(t0) < seconds) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// Whether process `pid` runs (a zombie has ended).
bool Alive(int64_t pid) {
  if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream s;
  s << in.rdbuf();
  const std::string stat = s.str();
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z';
}

class ReplicaServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pg_.error(), "");
    ASSERT_TRUE(pg_.CreateDatabase("jobs")) << pg_.error();
  }
  void TearDown() override {
    // The jobs' processes outlive the services: end them all.
    Touch("stop-all");
    for (const int64_t pid : pids_) {
      EXPECT_TRUE(Eventually([&] { return !Alive(pid); }, 10))
          << "pid " << pid << " still runs";
    }
  }

  // Replica `name` (answering at http://<name>.test:8080) of the test's
  // database, on two pools (node0: two GPUs in pool a; node1: one in b).
  std::unique_ptr<Service> Make(const std::string& name, double lease_s = 1,
                                double renew_s = 0.1) {
    ServiceOptions o;
    o.topology = TwoPools();
    o.db_path = dir_.File(name + "-unused.db");
    o.store.postgres_url = pg_.Url("jobs");
    o.store.postgres_password_file = pg_.password_file();
    o.log_dir = dir_.File("logs");
    o.tick_s = 0.1;
    o.kill_grace_s = 2;
    o.replica.emplace();
    o.replica->name = name;
    o.replica->address = "http://" + name + ".test:8080";
    o.replica->lease_s = lease_s;
    o.replica->lease_renew_s = renew_s;
    auto s = Service::Start(std::move(o),
                            launch::MakeLocalLauncher(dir_.File("logs")));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }

  // A whole GPU of `pool`, running until stop-<name> (or stop-all) exists
  // (or 60 s have passed: nothing outlives a test for long).
  JobRequest Blocker(const std::string& name, const std::string& pool = "a") {
    const std::string stop = dir_.File("stop-" + name);
    const std::string all = dir_.File("stop-all");
    JobRequest r;
    r.name = name;
    r.pool = pool;
    r.command = {"sh", "-c",
                 "i=0; while [ $i -lt 1200 ] && [ ! -f " + stop +
                     " ] && [ ! -f " + all +
                     " ]; do sleep 0.05; i=$((i+1)); done"};
    r.resources = Resources{1, 0, 0, 0, 0};
    return r;
  }
  void Touch(const std::string& name) const {
    std::ofstream(dir_.File(name)) << "";
  }

  static Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j) << "job " << id;
    return (j && *j) ? **j : Job{};
  }
  // Waits until job `id` is in `state` as `s` answers.
  bool WaitState(Service& s, JobId id, JobState state, double seconds = 15) {
    return Eventually([&] { return Get(s, id).state == state; }, seconds);
  }
  // Waits until job `id` runs, and remembers its process for TearDown.
  bool WaitRunning(Service& s, JobId id) {
    if (!WaitState(s, id, JobState::kRunning)) return false;
    pids_.push_back(Get(s, id).pid);
    return true;
  }
  // Submits a job that runs until the test ends it ("kept") and waits
  // until it runs: the running job, or one with id 0 (and a failure).
  Job RunKept(Service& s) {
    auto job = s.Submit(alice_, Blocker("kept"));
    if (!job) {
      ADD_FAILURE() << job.error().message;
      return {};
    }
    if (!WaitRunning(s, job->id)) {
      ADD_FAILURE() << "job " << job->id << " did not run";
      return {};
    }
    return Get(s, job->id);
  }
  static int Leaders(const std::vector<Service*>& replicas) {
    int n = 0;
    for (Service* s : replicas) n += s->Replica().leader ? 1 : 0;
    return n;
  }

  testlib::PostgresServer pg_;
  testlib::TempDir dir_;
  std::vector<int64_t> pids_;  // the jobs' processes seen running
  const User alice_{"alice", "", false, "laptop"};
  const User bob_{"bob", "", false, ""};
};

TEST_F(ReplicaServiceTest, ExactlyOneLeadsAndEveryReplicaNamesIt) {
  auto r1 = Make("r1");
  auto r2 = Make("r2");
  auto r3 = Make("r3");
  ASSERT_TRUE(r1 && r2 && r3);
  const std::vector<Service*> all = {r1.get(), r2.get(), r3.get()};
  // Watched for longer than the lease: renewals keep it where it is.
  const auto t0 = Clock::now();
  while (SecondsSince(t0) < 1.5) {
    ASSERT_EQ(Leaders(all), 1);
    for (Service* s : all) {
      const ReplicaStatus st = s->Replica();
      EXPECT_TRUE(st.replicated);
      EXPECT_EQ(st.leader, s == r1.get()) << st.name;
      EXPECT_EQ(st.leader_name, "r1") << st.name;
      EXPECT_EQ(st.leader_address, "http://r1.test:8080") << st.name;
      EXPECT_EQ(st.epoch, 1) << st.name;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(r2->Replica().name, "r2");
  const json lead = r1->ClusterJson()["replica"];
  EXPECT_EQ(lead["replicated"], true);
  EXPECT_EQ(lead["role"], "leader");
  EXPECT_EQ(lead["name"], "r1");
  EXPECT_EQ(lead["epoch"], 1);
  EXPECT_EQ(lead["leader"]["name"], "r1");
  EXPECT_EQ(lead["leader"]["address"], "http://r1.test:8080");
  EXPECT_FALSE(lead.contains("view_age_s"));
  for (Service* s : {r2.get(), r3.get()}) {
    const json follow = s->ClusterJson()["replica"];
    EXPECT_EQ(follow["role"], "follower");
    EXPECT_EQ(follow["name"], s->Replica().name);
    EXPECT_EQ(follow["leader"]["name"], "r1");
    EXPECT_EQ(follow["leader"]["address"], "http://r1.test:8080");
    EXPECT_EQ(follow["leader"]["since"], lead["leader"]["since"]);
    ASSERT_TRUE(follow.contains("view_age_s"));
    EXPECT_GE(follow["view_age_s"].get<double>(), 0);
    EXPECT_LT(follow["view_age_s"].get<double>(), 5);
  }
}

TEST_F(ReplicaServiceTest, AFollowersSubmissionIsStartedByTheLeader) {
  auto leader = Make("r1");
  auto follower = Make("r2");
  ASSERT_TRUE(leader && follower);
  ASSERT_FALSE(follower->Replica().leader);
  const auto t0 = Clock::now();
  auto job = follower->Submit(alice_, Blocker("one"));
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_GT(job->id, 0);
  // Stored: the follower shows it at once, and so does the leader.
  EXPECT_EQ(Get(*follower, job->id).user, "alice");
  auto listed = follower->List(JobFilter{std::nullopt, "alice", "", 10});
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().id, job->id);
  EXPECT_EQ(Get(*leader, job->id).user, "alice");
  // The leader starts it within a round or two (a round every 0.1 s).
  ASSERT_TRUE(WaitRunning(*leader, job->id));
  const double took = SecondsSince(t0);
  RecordProperty("started_after_s", std::to_string(took));
  EXPECT_LT(took, 3.0) << "started " << took << " s after the submission";
  const Job running = Get(*leader, job->id);
  EXPECT_GT(running.pid, 0);
  EXPECT_TRUE(Alive(running.pid));
  EXPECT_EQ(running.allocation.node, 0);
  // The follower's view follows the store.
  EXPECT_EQ(Get(*follower, job->id).state, JobState::kRunning);
  ASSERT_TRUE(Eventually(
      [&] { return follower->ClusterJson()["pools"][0]["running"] == 1; }));
  auto events = follower->Events(job->id);
  ASSERT_TRUE(events && !events->empty());
  EXPECT_EQ(events->front().action, "submitted");
  EXPECT_EQ(events->front().actor, "alice");
  // It ends: the leader reaps it, and everyone sees it.
  Touch("stop-one");
  ASSERT_TRUE(WaitState(*follower, job->id, JobState::kSucceeded));
  EXPECT_EQ(Get(*leader, job->id).exit_code, 0);
  EXPECT_EQ(leader->CheckInvariants(), "");
}

TEST_F(ReplicaServiceTest, ACancelOnAFollowerIsCarriedOutByTheLeader) {
  auto leader = Make("r1");
  auto follower = Make("r2");
  ASSERT_TRUE(leader && follower);
  // Pool b's one GPU is held: a second whole-GPU job there waits.
  auto holder = leader->Submit(alice_, Blocker("holder", "b"));
  ASSERT_TRUE(holder) << holder.error().message;
  ASSERT_TRUE(WaitRunning(*leader, holder->id));
  auto waiting = follower->Submit(alice_, Blocker("waiting", "b"));
  ASSERT_TRUE(waiting) << waiting.error().message;
  // The leader has it queued.
  ASSERT_TRUE(Eventually(
      [&] { return leader->ClusterJson()["pools"][1]["queued"] == 1; }));
  EXPECT_EQ(Get(*leader, waiting->id).state, JobState::kQueued);

  auto asked = follower->Cancel(waiting->id, "not needed", &alice_);
  ASSERT_TRUE(asked) << asked.error().message;
  EXPECT_EQ(asked->id, waiting->id);
  EXPECT_EQ(asked->state, JobState::kQueued);  // as it is now
  ASSERT_TRUE(WaitState(*leader, waiting->id, JobState::kCancelled, 5));
  EXPECT_EQ(Get(*follower, waiting->id).reason, "not needed");
  EXPECT_EQ(Get(*follower, waiting->id).pid, 0);  // it never ran
  auto events = leader->Events(waiting->id);
  ASSERT_TRUE(events && !events->empty());
  const service::JobEvent& last = events->back();
  EXPECT_EQ(last.action, "cancelled");
  EXPECT_EQ(last.actor, "alice");
  EXPECT_EQ(last.token, "laptop");
  EXPECT_EQ(last.detail, "not needed");

  // A running job's cancel, asked of the follower, stops its process.
  const int64_t pid = Get(*leader, holder->id).pid;
  ASSERT_TRUE(follower->Cancel(holder->id, "done with it", &bob_));
  ASSERT_TRUE(WaitState(*follower, holder->id, JobState::kCancelled));
  EXPECT_TRUE(Eventually([&] { return !Alive(pid); }));
  events = follower->Events(holder->id);
  ASSERT_TRUE(events);
  bool requested = false;
  for (const service::JobEvent& e : *events) {
    requested |= e.action == "cancel requested" && e.actor == "bob";
  }
  EXPECT_TRUE(requested);
  EXPECT_EQ(leader->CheckInvariants(), "");
}

TEST_F(ReplicaServiceTest, ARetryOnAnotherReplicaIsTheSameJob) {
  auto r1 = Make("r1");
  auto r2 = Make("r2");
  auto r3 = Make("r3");
  ASSERT_TRUE(r1 && r2 && r3);
  auto first = r2->Submit(alice_, Fraction(250, 1024), "retry-1");
  ASSERT_TRUE(first) << first.error().message;
  auto again = r3->Submit(alice_, Fraction(250, 1024), "retry-1");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->id, first->id);
  auto on_leader = r1->Submit(alice_, Fraction(250, 1024), "retry-1");
  ASSERT_TRUE(on_leader) << on_leader.error().message;
  EXPECT_EQ(on_leader->id, first->id);
  // Another user's key is another job.
  auto bobs = r3->Submit(bob_, Fraction(250, 1024), "retry-1");
  ASSERT_TRUE(bobs);
  EXPECT_NE(bobs->id, first->id);
  for (Service* s : {r1.get(), r2.get(), r3.get()}) {
    auto mine = s->List(JobFilter{std::nullopt, "alice", "", 10});
    ASSERT_TRUE(mine);
    EXPECT_EQ(mine->size(), 1u);
  }
  // It runs once (`true`: it succeeds), submitted once.
  ASSERT_TRUE(WaitState(*r2, first->id, JobState::kSucceeded));
  ASSERT_TRUE(WaitState(*r1, bobs->id, JobState::kSucceeded));
  auto events = r1->Events(first->id);
  ASSERT_TRUE(events);
  int submitted = 0, started = 0;
  for (const service::JobEvent& e : *events) {
    submitted += e.action == "submitted";
    started += e.action == "starting";
  }
  EXPECT_EQ(submitted, 1);
  EXPECT_LE(started, 1);
}

// A clean stop lets the lease go: a follower leads at its next renewal,
// long before the lease would have lapsed, and adopts the running job.
TEST_F(ReplicaServiceTest, ACleanStopHandsTheLeadOverAtOnce) {
  constexpr double kLeaseS = 5;
  auto r1 = Make("r1", kLeaseS);
  auto r2 = Make("r2", kLeaseS);
  ASSERT_TRUE(r1 && r2);
  const Job before = RunKept(*r1);
  ASSERT_NE(before.id, 0);

  const auto t0 = Clock::now();
  r1.reset();
  ASSERT_TRUE(Eventually([&] { return r2->Replica().leader; }, 2 * kLeaseS));
  const double took = SecondsSince(t0);
  RecordProperty("led_after_s", std::to_string(took));
  EXPECT_LT(took, kLeaseS / 2) << "r2 led " << took << " s after r1 stopped";
  const ReplicaStatus st = r2->Replica();
  EXPECT_EQ(st.leader_name, "r2");
  EXPECT_EQ(st.epoch, 2);
  const json replica = r2->ClusterJson()["replica"];
  EXPECT_EQ(replica["role"], "leader");
  EXPECT_EQ(replica["leader"]["name"], "r2");
  EXPECT_EQ(replica["epoch"], 2);

  // The job ran on throughout: adopted, its GPU still held.
  EXPECT_TRUE(Alive(before.pid));
  const Job adopted = Get(*r2, before.id);
  EXPECT_EQ(adopted.state, JobState::kRunning);
  EXPECT_EQ(adopted.pid, before.pid);
  const json cluster = r2->ClusterJson();
  EXPECT_EQ(cluster["pools"][0]["running"], 1);
  EXPECT_EQ(r2->CheckInvariants(), "");
  // The new leader starts jobs, on the other GPU...
  auto next = r2->Submit(alice_, Blocker("next"));
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_TRUE(WaitRunning(*r2, next->id));
  EXPECT_NE(Get(*r2, next->id).allocation.gpus.front().gpu,
            adopted.allocation.gpus.front().gpu);
  // ...and watches the adopted one: it ends, its exit code unknown.
  Touch("stop-kept");
  ASSERT_TRUE(
      Eventually([&] { return IsTerminal(Get(*r2, before.id).state); }));
  EXPECT_THAT(Get(*r2, before.id).reason, HasSubstr("exit code unknown"));
  Touch("stop-next");
  ASSERT_TRUE(WaitState(*r2, next->id, JobState::kSucceeded));
}

// Someone else takes the lease (here a store of the test's, as a replica
// that took over while the leader was paused would): the leader steps down
// at its next renewal, its job runs on, and when the lease is free again
// one replica leads with the next epoch and adopts it.
TEST_F(ReplicaServiceTest, ALeaderWhoseLeaseIsTakenStepsDown) {
  auto r1 = Make("r1");
  auto r2 = Make("r2");
  ASSERT_TRUE(r1 && r2);
  const Job job = RunKept(*r1);
  ASSERT_NE(job.id, 0);
  const int64_t pid = job.pid;

  service::StoreOptions o;
  o.postgres_url = pg_.Url("jobs");
  o.postgres_password_file = pg_.password_file();
  auto opened = service::Store::OpenPostgres(o);
  ASSERT_TRUE(opened) << opened.error().message;
  std::unique_ptr<service::Store> other = std::move(opened).value();
  // Taken from whoever holds it (a replica may renew in between).
  ASSERT_TRUE(Eventually([&] {
    auto now = other->ReadLease();
    if (!now || !other->ReleaseLease(now->holder)) return false;
    auto took = other->AcquireLease("other", "http://other.test:8080", 60);
    return took && took->holder == "other";
  }));
  const int64_t taken_at = other->ReadLease()->epoch;
  EXPECT_GE(taken_at, 2);
  ASSERT_TRUE(Eventually(
      [&] { return !r1->Replica().leader && !r2->Replica().leader; }));
  EXPECT_EQ(r1->Replica().leader_name, "other");
  EXPECT_EQ(r1->ClusterJson()["replica"]["role"], "follower");
  EXPECT_TRUE(Alive(pid));  // stepping down stops no job
  // A submission meanwhile is stored for whoever leads next.
  auto queued = r1->Submit(alice_, Blocker("later"));
  ASSERT_TRUE(queued) << queued.error().message;
  EXPECT_EQ(queued->state, JobState::kQueued);

  ASSERT_TRUE(other->ReleaseLease("other"));
  // The next lease is taken_at + 1. A replica that won an epoch the test's
  // taking then overtook (the lease changed hands twice in the loop above)
  // may still believe it leads until its renewal fails: wait for that.
  const auto next_leader = [&]() -> Service* {
    for (Service* s : {r1.get(), r2.get()}) {
      if (s->Replica().leader && s->Replica().epoch == taken_at + 1) return s;
    }
    return nullptr;
  };
  ASSERT_TRUE(Eventually([&] {
    return next_leader() != nullptr && Leaders({r1.get(), r2.get()}) == 1;
  }));
  Service& now = *next_leader();
  const Job adopted = Get(now, job.id);
  EXPECT_EQ(adopted.state, JobState::kRunning);
  EXPECT_EQ(adopted.pid, pid);
  ASSERT_TRUE(WaitRunning(now, queued->id));
  EXPECT_EQ(now.CheckInvariants(), "");
}

// The database goes away: the leader cannot renew, so it steps down before
// its lease would lapse (it may have been taken meanwhile) and starts
// nothing; when the database is back, exactly one replica leads and has
// the job that ran on throughout.
TEST_F(ReplicaServiceTest, WithoutTheStoreNobodyLeadsThenOneDoes) {
  auto r1 = Make("r1");
  auto r2 = Make("r2");
  ASSERT_TRUE(r1 && r2);
  const Job job = RunKept(*r1);
  ASSERT_NE(job.id, 0);
  const int64_t pid = job.pid;

  ASSERT_TRUE(pg_.Stop());
  const auto t0 = Clock::now();
  ASSERT_TRUE(Eventually([&] { return !r1->Replica().leader; }, 10));
  const double took = SecondsSince(t0);
  RecordProperty("stepped_down_after_s", std::to_string(took));
  EXPECT_LT(took, 3.0);  // lease_s 1, less the margin, plus a renewal
  EXPECT_FALSE(r2->Replica().leader);
  auto refused = r2->Submit(alice_, Blocker("refused"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Alive(pid));

  ASSERT_TRUE(pg_.Restart()) << pg_.error();
  ASSERT_TRUE(
      Eventually([&] { return r1->Replica().leader || r2->Replica().leader; }));
  EXPECT_EQ(Leaders({r1.get(), r2.get()}), 1);
  Service& now = r1->Replica().leader ? *r1 : *r2;
  const Job adopted = Get(now, job.id);
  EXPECT_EQ(adopted.state, JobState::kRunning);
  EXPECT_EQ(adopted.pid, pid);
  auto next = r2->Submit(alice_, Blocker("next"));
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_TRUE(WaitRunning(now, next->id));
  EXPECT_EQ(now.CheckInvariants(), "");
}

}  // namespace
}  // namespace tessera::scheduler
