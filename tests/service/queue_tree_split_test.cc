// The queue tree composes with split-on-admit (docs/quotas.md): a model job
// the service splits over two GPUs' slivers is one job of its queue, marked
// borrowed when its queue has no guarantee left, and when the owner of the
// capacity needs it the split job is reclaimed whole: both GPU shares
// released, requeued as `preempted`, never left on one GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

constexpr int64_t kSplitGpuMiB = 80 * 1024;
// What the fillers leave of each GPU of pool a: 500 milli and 700 MiB, so
// GPT-2 (inference, ~0.9 GiB) fits no GPU alone and is split over both.
constexpr int64_t kSliverTaken = kSplitGpuMiB - 700;

QueueSpec Team(std::string name, int64_t milli, int64_t mib) {
  QueueSpec q;
  q.name = std::move(name);
  q.guaranteed = {milli, mib};
  return q;
}

TEST(QueueTreeSplitTest, ASplitModelJobBorrowsAndIsReclaimedWhole) {
  testlib::TempDir dir;
  double now = 1000;
  ServiceOptions o;
  o.topology = TwoPools();
  o.model_roots = {std::string(TESSERA_SOURCE_DIR) + "/models/zoo"};
  o.db_path = dir.File("q.db");
  o.log_dir = dir.File("logs");
  o.start_thread = false;
  o.clock = [&now] { return now; };
  // team-b owns pool a's two GPUs; team-a is guaranteed nothing (its jobs
  // only borrow).
  QueueSpec org = Team("org", 3000, 2 * kSplitGpuMiB + 16 * 1024);
  org.children = {Team("team-a", 0, 0), Team("team-b", 2000, 2 * kSplitGpuMiB)};
  o.queues = {org};
  auto started =
      Service::Start(std::move(o), std::make_unique<ScriptedLauncher>());
  ASSERT_TRUE(started) << started.error().message;
  Service& s = **started;
  const User alice{"alice", "team-a", false, ""};
  const User bob{"bob", "team-b", false, ""};
  const auto get = [&](JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return j && *j ? **j : Job{};
  };

  // team-b's fillers, within its guarantee.
  std::vector<JobId> fillers;
  for (int i = 0; i < 2; ++i) {
    auto f = s.Submit(bob, Fraction(500, kSliverTaken));
    ASSERT_TRUE(f) << f.error().message;
    fillers.push_back(f->id);
  }
  s.Tick();
  for (const JobId f : fillers) {
    ASSERT_EQ(get(f).state, JobState::kRunning);
    EXPECT_FALSE(get(f).borrowed);
  }

  // alice's GPT-2, preemptible: split over both slivers, borrowed.
  now += 10;
  JobRequest gpt2;
  gpt2.name = "gpt2";
  gpt2.pool = "a";
  gpt2.command = {"true"};
  gpt2.preemptible = true;
  gpt2.model.emplace();
  gpt2.model->path = std::string(TESSERA_SOURCE_DIR) + "/models/zoo/gpt2.onnx";
  auto split = s.Submit(alice, gpt2);
  ASSERT_TRUE(split) << split.error().message;
  s.Tick();
  Job running = get(split->id);
  ASSERT_EQ(running.state, JobState::kRunning) << running.reason;
  ASSERT_EQ(running.allocation.gpus.size(), 2u);  // split over both GPUs
  EXPECT_FALSE(running.plan.is_null());
  EXPECT_EQ(running.queue, "team-a");
  EXPECT_TRUE(running.borrowed);
  int64_t split_milli = 0;
  for (const GpuShare& g : running.allocation.gpus) split_milli += g.milli;
  const nlohmann::json cluster = s.ClusterJson();
  nlohmann::json team_a;
  for (const auto& q : cluster["queues"]) {
    if (q["name"] == "team-a") team_a = q;
  }
  EXPECT_EQ(team_a["borrowed"]["gpu_milli"], split_milli)
      << cluster["queues"].dump();

  // bob needs what is left of team-b's guarantee; no GPU has it free: the
  // split job is reclaimed, both of its shares at once.
  now += 10;
  auto owner = s.Submit(bob, Fraction(400, 512));
  ASSERT_TRUE(owner) << owner.error().message;
  s.Tick();
  s.Tick();  // the victim has exited
  const Job victim = get(split->id);
  EXPECT_EQ(victim.state, JobState::kPreempted);
  EXPECT_THAT(victim.reason, HasSubstr("reclaimed by queue 'team-b'"));
  EXPECT_TRUE(victim.allocation.gpus.empty());
  EXPECT_EQ(get(owner->id).state, JobState::kRunning);
  EXPECT_FALSE(get(owner->id).borrowed);
  for (const JobId f : fillers) EXPECT_EQ(get(f).state, JobState::kRunning);
  // Nothing of the split job is held on either GPU.
  const nlohmann::json after = s.ClusterJson();
  for (const auto& g : after["gpus"]) {
    for (const auto& j : g["jobs"]) EXPECT_NE(j, split->id) << g.dump();
  }
  EXPECT_EQ(s.CheckInvariants(), "");
}

}  // namespace
}  // namespace tessera::scheduler
