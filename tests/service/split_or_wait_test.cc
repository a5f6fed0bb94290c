// The service's split-or-wait decision for model jobs (docs/scheduler.md,
// "Split or wait"): a whole GPU now, a fraction beside others, a split, or
// waiting for the capacity the running jobs' time limits free; the jobs'
// progress reports and the interference factor fitted from them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using ::testing::HasSubstr;

class SplitOrWaitTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make(ServiceOptions o = {}) {
    o.topology = TwoPools();
    o.model_roots = {std::string(TESSERA_SOURCE_DIR) + "/models/zoo"};
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.clock = [this] { return now_; };
    auto launcher = std::make_unique<ScriptedLauncher>();
    launcher_ = launcher.get();
    auto s = Service::Start(std::move(o), std::move(launcher));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  // GPT-2 inference (~0.9 GiB) in pool a.
  static JobRequest Gpt2(double time_limit_s = 0, int64_t steps = 0) {
    JobRequest r;
    r.name = "gpt2";
    r.pool = "a";
    r.command = {"true"};
    r.model.emplace();
    r.model->path = std::string(TESSERA_SOURCE_DIR) + "/models/zoo/gpt2.onnx";
    r.time_limit_s = time_limit_s;
    r.work_steps = steps;
    return r;
  }
  static JobRequest Limited(int milli, int64_t mib, double limit_s) {
    JobRequest r = Fraction(milli, mib);
    r.time_limit_s = limit_s;
    return r;
  }
  Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return j && *j ? **j : Job{};
  }

  testlib::TempDir dir_;
  double now_ = 1000;
  ScriptedLauncher* launcher_ = nullptr;
  const User alice_{"alice", "", false, ""};
};

// Each GPU of pool a has 500 milli and 2 GiB free (GPT-2 reserves about
// 1.1 GiB): it fits one GPU's fraction beside the job there, and a split
// over both. Nobody's end is known, so there is nothing to wait for.
TEST_F(SplitOrWaitTest, TakesAFractionOverASplitWhenOneGpuHoldsIt) {
  auto s = Make();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(s->Submit(alice_, Fraction(500, 78 * 1024)));
  }
  s->Tick();
  auto job = s->Submit(alice_, Gpt2());
  ASSERT_TRUE(job) << job.error().message;
  s->Tick();
  const Job after = Get(*s, job->id);
  ASSERT_EQ(after.state, JobState::kRunning) << after.reason;
  ASSERT_EQ(after.allocation.gpus.size(), 1u);
  EXPECT_EQ(after.allocation.gpus[0].milli, 500);  // all that was free
  EXPECT_TRUE(after.plan.is_null());
  const nlohmann::json d = s->DecisionOf(job->id);
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["chosen"], "fraction");
  EXPECT_EQ(d["work_from"], "model_default_work_s");
  EXPECT_EQ(d["work_s"], 3600);
  std::vector<std::string> options;
  for (const auto& o : d["options"]) options.push_back(o["option"]);
  EXPECT_THAT(options, ::testing::ElementsAre("fraction", "split"));
  EXPECT_EQ(d["options"][0]["sharing_with"], 1);
  EXPECT_THAT(d["summary"].get<std::string>(), HasSubstr("-> fraction"));
  EXPECT_EQ(s->CheckInvariants(), "");
}

// The jobs on pool a's GPUs end within a minute (their time limits); at a
// high interference factor sharing would double the model job's step, so
// it waits for a whole GPU, and starts on it once one frees.
TEST_F(SplitOrWaitTest, WaitsForAWholeGpuThatFreesSoon) {
  ServiceOptions o;
  o.interference["a100-80gb"] = InterferenceLaw::Linear(1.5);
  auto s = Make(std::move(o));
  auto a = s->Submit(alice_, Limited(500, 78 * 1024, 60));
  auto b = s->Submit(alice_, Limited(500, 78 * 1024, 600));
  ASSERT_TRUE(a && b);
  s->Tick();
  auto job = s->Submit(alice_, Gpt2(3600));
  ASSERT_TRUE(job) << job.error().message;
  s->Tick();
  EXPECT_EQ(Get(*s, job->id).state, JobState::kQueued);
  nlohmann::json d = s->DecisionOf(job->id);
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["chosen"], "wait");
  EXPECT_EQ(d["work_from"], "time_limit_s");
  EXPECT_EQ(d["interference"], "alpha 1.50");
  const nlohmann::json& wait = d["options"].back();
  EXPECT_EQ(wait["option"], "wait");
  EXPECT_DOUBLE_EQ(wait["start_s"].get<double>(), 1060);  // a's time limit
  EXPECT_DOUBLE_EQ(wait["finish_s"].get<double>(), 1060 + 3600);
  EXPECT_GT(d["options"][0]["finish_s"].get<double>(), 1060 + 3600);
  EXPECT_THAT(d["summary"].get<std::string>(), HasSubstr("-> waiting"));
  // The queue view says why, and shows the same decision.
  const nlohmann::json q = s->QueueJson("");
  const nlohmann::json& queued = q["pools"][0]["queued"];
  ASSERT_EQ(queued.size(), 1u) << q.dump();
  EXPECT_EQ(queued[0]["why_code"], "decision");
  EXPECT_THAT(queued[0]["why"].get<std::string>(),
              HasSubstr("the split-or-wait decision chose to wait: "));
  EXPECT_EQ(queued[0]["decision"], d);

  // a ends: the whole GPU is free, and the job takes it.
  now_ = 1060;
  launcher_->Exit(a->id, 0);
  s->Tick();
  const Job after = Get(*s, job->id);
  ASSERT_EQ(after.state, JobState::kRunning) << after.reason;
  ASSERT_EQ(after.allocation.gpus.size(), 1u);
  EXPECT_EQ(after.allocation.gpus[0].milli, 1000);
  EXPECT_EQ(s->DecisionOf(job->id)["chosen"], "whole");
  EXPECT_EQ(s->CheckInvariants(), "");
}

// With no interference the same job does not wait: sharing costs nothing.
TEST_F(SplitOrWaitTest, SharesAtOnceWhenSharingIsFree) {
  ServiceOptions o;
  o.interference["a100-80gb"] = InterferenceLaw::Linear(0);
  auto s = Make(std::move(o));
  ASSERT_TRUE(s->Submit(alice_, Limited(500, 78 * 1024, 60)));
  ASSERT_TRUE(s->Submit(alice_, Limited(500, 78 * 1024, 600)));
  s->Tick();
  auto job = s->Submit(alice_, Gpt2(3600));
  ASSERT_TRUE(job);
  s->Tick();
  EXPECT_EQ(Get(*s, job->id).state, JobState::kRunning);
  EXPECT_EQ(s->DecisionOf(job->id)["chosen"], "fraction");
}

// Steps measured alone and beside another job: the factor of the GPU's
// kind is fitted from them (slowdown 2 with one other job: alpha 1) and
// replaces the configured law once three intervals are measured.
TEST_F(SplitOrWaitTest, ProgressReportsCalibrateTheInterferenceFactor) {
  auto s = Make();
  auto other = s->Submit(alice_, Fraction(500, 10 * 1024));
  auto full = s->Submit(alice_, Fraction(1000, 10 * 1024));  // all of gpu1
  ASSERT_TRUE(other && full);
  s->Tick();
  auto job = s->Submit(alice_, Gpt2(0, 10000));
  ASSERT_TRUE(job);
  s->Tick();
  ASSERT_EQ(Get(*s, job->id).state, JobState::kRunning);
  EXPECT_EQ(s->DecisionOf(job->id)["work_from"], "work.steps");

  ASSERT_TRUE(s->ReportProgress(job->id, 0));
  // The other job leaves: the next report spans a change (not a sample),
  // the one after measures the job alone: 0.1 s a step.
  launcher_->Exit(other->id, 0);
  s->Tick();
  now_ += 10;
  ASSERT_TRUE(s->ReportProgress(job->id, 100));
  now_ += 10;
  auto alone = s->ReportProgress(job->id, 200);
  ASSERT_TRUE(alone);
  EXPECT_DOUBLE_EQ(alone->step_s.value_or(0), 0.1);
  EXPECT_EQ(alone->sharing_with, 0);
  EXPECT_DOUBLE_EQ(alone->predicted_end_s.value_or(0), now_ + 9800 * 0.1);
  EXPECT_FALSE(alone->slowdown);  // measured alone
  // The wire's form of it (POST /v1/jobs/{id}/progress).
  const nlohmann::json wire = service::ProgressJson(*alone);
  EXPECT_EQ(wire["steps"], 200);
  EXPECT_DOUBLE_EQ(wire["step_s"].get<double>(), 0.1);
  EXPECT_FALSE(wire.contains("slowdown"));
  // Someone joins; beside it the job runs at 0.2 s a step.
  ASSERT_TRUE(s->Submit(alice_, Fraction(400, 10 * 1024)));
  s->Tick();
  now_ += 5;
  ASSERT_TRUE(s->ReportProgress(job->id, 250));
  for (int i = 0; i < 3; ++i) {
    now_ += 20;
    auto shared = s->ReportProgress(job->id, 350 + 100 * i);
    ASSERT_TRUE(shared) << shared.error().message;
    EXPECT_DOUBLE_EQ(shared->slowdown.value_or(0), 2.0);
  }
  const nlohmann::json cluster = s->ClusterJson();
  bool found = false;
  for (const auto& k : cluster["interference"]) {
    if (k["kind"] != "a100-80gb") continue;
    found = true;
    EXPECT_EQ(k["samples"], 3);
    EXPECT_DOUBLE_EQ(k["calibrated_alpha"].get<double>(), 1.0);
    EXPECT_EQ(k["law"], "alpha 1.00");
    EXPECT_EQ(k["configured"], "measured (timeslice)");
  }
  EXPECT_TRUE(found);

  // Bad reports: steps going back, a job that is not running.
  auto back = s->ReportProgress(job->id, 10);
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(back.error().message, HasSubstr("went back"));
  auto queued = s->Submit(alice_, Fraction(1000, 70 * 1024));
  ASSERT_TRUE(queued);
  auto not_running = s->ReportProgress(queued->id, 1);
  ASSERT_FALSE(not_running);
  EXPECT_EQ(not_running.error().code, ErrorCode::kInfeasible);
}

}  // namespace
}  // namespace tessera::scheduler
