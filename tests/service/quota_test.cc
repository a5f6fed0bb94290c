// Quotas per user and per team: queued and running jobs, GPU milli and
// memory held, and the submission rate (Slurm's QOS limits, Kubernetes'
// ResourceQuota). Jobs over a running quota wait, with the reason in
// ClusterJson; submissions over a queued quota are refused, over a rate
// limited with a retry time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::Quotas;
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using ::testing::HasSubstr;

class QuotaTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make(Quotas quotas) {
    ServiceOptions o;
    o.topology = TwoPools();
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.clock = [this] { return now_; };
    o.quotas = std::move(quotas);
    auto l = std::make_unique<ScriptedLauncher>();
    launcher_ = l.get();
    auto s = Service::Start(std::move(o), std::move(l));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  JobState StateOf(Service& s, JobId id) {
    auto j = s.Get(id);
    return (j && *j) ? (*j)->state : JobState::kFailed;
  }
  static nlohmann::json Entry(const nlohmann::json& list,
                              const std::string& name) {
    for (const auto& e : list) {
      if (e["name"] == name) return e;
    }
    return nullptr;
  }

  testlib::TempDir dir_;
  double now_ = 1000;
  ScriptedLauncher* launcher_ = nullptr;
  const User alice_{"alice", "ml", false, ""};
  const User bob_{"bob", "ml", false, ""};
  const User carol_{"carol", "", false, ""};
};

TEST_F(QuotaTest, RunningJobsOverAUsersQuotaWaitWithTheReason) {
  Quotas q;
  q.user_default.max_running = 2;
  auto s = Make(q);
  std::vector<JobId> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(s->Submit(alice_, Fraction(100, 1024))->id);
  }
  const JobId other = s->Submit(carol_, Fraction(100, 1024))->id;
  s->Tick();
  EXPECT_EQ(StateOf(*s, ids[0]), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, ids[1]), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, ids[2]), JobState::kQueued);
  EXPECT_EQ(StateOf(*s, other), JobState::kRunning);  // carol's own quota
  const nlohmann::json cluster = s->ClusterJson();
  ASSERT_EQ(cluster["quota_waits"].size(), 1u);
  EXPECT_EQ(cluster["quota_waits"][0]["job"], ids[2]);
  EXPECT_THAT(cluster["quota_waits"][0]["reason"].get<std::string>(),
              HasSubstr("user 'alice' holds 2 running jobs of its quota's 2"));
  const nlohmann::json alice = Entry(cluster["users"], "alice");
  EXPECT_EQ(alice["running"], 2);
  EXPECT_EQ(alice["queued"], 1);
  EXPECT_EQ(alice["quota"]["max_running"], 2);
  launcher_->Exit(ids[0], 0);
  s->Tick();
  EXPECT_EQ(StateOf(*s, ids[2]), JobState::kRunning);
  EXPECT_TRUE(s->ClusterJson()["quota_waits"].empty());
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(QuotaTest, ATeamsGpuQuotaCountsItsUsersTogether) {
  Quotas q;
  q.teams["ml"].max_gpu_milli = 1000;
  q.teams["ml"].max_gpu_memory_mib = 100 * 1024;
  auto s = Make(q);
  const JobId a = s->Submit(alice_, Fraction(600, 1024))->id;
  const JobId b = s->Submit(bob_, Fraction(600, 1024))->id;
  const JobId c = s->Submit(carol_, Fraction(600, 1024))->id;
  const JobId d = s->Submit(bob_, Fraction(300, 1024))->id;
  s->Tick();
  EXPECT_EQ(StateOf(*s, a), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, b), JobState::kQueued);   // 1200 > 1000 for ml
  EXPECT_EQ(StateOf(*s, c), JobState::kRunning);  // carol has no team
  EXPECT_EQ(StateOf(*s, d), JobState::kRunning);  // 900 <= 1000
  const nlohmann::json ml = Entry(s->ClusterJson()["teams"], "ml");
  EXPECT_EQ(ml["gpu_milli"], 900);
  EXPECT_EQ(ml["quota"]["max_gpu_milli"], 1000);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(QuotaTest, GpuMemoryQuota) {
  Quotas q;
  q.users["alice"].max_gpu_memory_mib = 50 * 1024;
  auto s = Make(q);
  const JobId a = s->Submit(alice_, Fraction(100, 40 * 1024))->id;
  const JobId b = s->Submit(alice_, Fraction(100, 40 * 1024))->id;
  s->Tick();
  EXPECT_EQ(StateOf(*s, a), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, b), JobState::kQueued);
  EXPECT_THAT(s->ClusterJson()["quota_waits"][0]["reason"].get<std::string>(),
              HasSubstr("GPU memory"));
}

TEST_F(QuotaTest, QueuedQuotasRefuseSubmissions) {
  Quotas q;
  q.users["alice"].max_queued = 2;
  q.teams["ml"].max_queued = 3;
  auto s = Make(q);
  ASSERT_TRUE(s->Submit(alice_, Fraction(100, 1024)));
  ASSERT_TRUE(s->Submit(alice_, Fraction(100, 1024)));
  auto third = s->Submit(alice_, Fraction(100, 1024));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(third.error().message, HasSubstr("the limit is 2"));
  ASSERT_TRUE(s->Submit(bob_, Fraction(100, 1024)));
  auto team = s->Submit(bob_, Fraction(100, 1024));
  ASSERT_FALSE(team);
  EXPECT_THAT(team.error().message, HasSubstr("team 'ml' already has 3"));
}

TEST_F(QuotaTest, SubmissionRateIsLimitedWithARetryTime) {
  Quotas q;
  q.user_default.submissions_per_s = 1;
  q.user_default.burst = 2;
  auto s = Make(q);
  ASSERT_TRUE(s->Submit(alice_, Fraction(100, 1024)));
  ASSERT_TRUE(s->Submit(alice_, Fraction(100, 1024)));
  auto third = s->Submit(alice_, Fraction(100, 1024));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ErrorCode::kRateLimited);
  EXPECT_NEAR(third.error().retry_after_s, 1.0, 1e-9);
  EXPECT_THAT(third.error().message, HasSubstr("1 submissions per second"));
  EXPECT_TRUE(s->Submit(carol_, Fraction(100, 1024)));  // her own bucket
  now_ += 1;
  EXPECT_TRUE(s->Submit(alice_, Fraction(100, 1024)));
  EXPECT_FALSE(s->Submit(alice_, Fraction(100, 1024)));
}

}  // namespace
}  // namespace tessera::scheduler
