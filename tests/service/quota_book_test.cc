// The service's quota part (service/quota_book_internal.h) by itself: the
// submission rate's bucket on a virtual clock, the queued-job limits, what
// running and starting jobs hold, the JSON GET /v1/cluster shows, and why
// jobs wait. (Through the HTTP API: quota_test.cc.)
#include "service/quota_book_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

using service::Quota;
using service::Quotas;
using service::User;
using service::service_internal::JobTable;
using service::service_internal::QuotaBook;
using ::testing::HasSubstr;

Job Queued(JobId id, const std::string& user, const std::string& team) {
  Job j;
  j.id = id;
  j.user = user;
  j.team = team;
  j.state = JobState::kQueued;
  return j;
}

TEST(QuotaBook, RateThenQueuedLimits) {
  Quotas q;
  q.user_default.submissions_per_s = 1;
  q.user_default.burst = 2;
  q.teams["ml"].max_queued = 2;
  QuotaBook book(q, 1000);
  const User ann{"ann", "ml", false, ""};
  std::vector<Job> queue;
  // A burst of two, then one a second.
  EXPECT_TRUE(book.Admit(ann, queue, 100).ok());
  EXPECT_TRUE(book.Admit(ann, queue, 100).ok());
  const Status third = book.Admit(ann, queue, 100);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kRateLimited);
  EXPECT_THAT(third.error().message,
              HasSubstr("user 'ann' submits faster than its quota's 1"));
  EXPECT_TRUE(book.Admit(ann, queue, 101.5).ok());
  // The team's queued limit, counted over the queue given.
  queue = {Queued(1, "ann", "ml"), Queued(2, "bob", "ml")};
  const Status full = book.Admit(ann, queue, 200);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(
      full.error().message,
      HasSubstr("team 'ml' already has 2 queued jobs (the limit is 2)"));
  // The service-wide per-user limit applies without a quota.
  QuotaBook plain(Quotas{}, 1);
  EXPECT_THAT(
      plain.Admit({"ann", "", false, ""}, queue, 0).error().message,
      HasSubstr("user 'ann' already has 1 queued jobs (the limit is 1)"));
}

TEST(QuotaBook, HeldCountsRunningAndStartingJobs) {
  Quotas q;
  q.users["ann"].max_gpu_milli = 1500;
  QuotaBook book(q, 1000);
  JobTable jobs;
  Job run = Queued(1, "ann", "ml");
  run.state = JobState::kRunning;
  run.allocation.gpus = {{0, 1000, 1024}};
  Job start = Queued(2, "ann", "ml");
  start.state = JobState::kStarting;
  start.allocation.gpus = {{1, 250, 512}};
  jobs.running.emplace(1, run);
  jobs.starting.emplace(2, start);
  jobs.queue.push_back(Queued(3, "ann", "ml"));
  service::service_internal::Holdings held = QuotaBook::Held(jobs);
  EXPECT_EQ(held.users["ann"].gpu_milli, 1250);
  EXPECT_EQ(held.teams["ml"].running, 2);
  // One more GPU would pass ann's 1500 milli.
  EXPECT_THAT(held.Over(q, jobs.queue[0], {0, 1, 1000, 1024}),
              HasSubstr("user 'ann' holds 1250 GPU milli of its quota's 1500"));
  EXPECT_EQ(held.Over(q, jobs.queue[0], {0, 1, 250, 1024}), "");
  const nlohmann::json j = book.Json(jobs);
  ASSERT_EQ(j["users"].size(), 1u);
  EXPECT_EQ(j["users"][0]["queued"], 1);
  EXPECT_EQ(j["users"][0]["gpu_milli"], 1250);
  EXPECT_EQ(j["users"][0]["team"], "ml");
  EXPECT_EQ(j["users"][0]["quota"]["max_gpu_milli"], 1500);
  EXPECT_EQ(j["users"][0]["quota"]["max_queued"], 1000);
  // Why jobs wait: the plan's, then the commit's.
  book.SetWaits({{3, "team 'ml' at its limit"}});
  book.Wait(4, "user 'ann' holds 1250 GPU milli");
  ASSERT_NE(book.WaitOf(3), nullptr);
  EXPECT_EQ(*book.WaitOf(3), "team 'ml' at its limit");
  EXPECT_EQ(book.WaitOf(5), nullptr);
  EXPECT_EQ(book.waits().size(), 2u);
}

}  // namespace
}  // namespace tessera::scheduler
