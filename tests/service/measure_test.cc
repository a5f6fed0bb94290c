// What the service measures of its jobs (issue 31): GPU use per job from
// the probe, kept with the job across a restart and shown in the cluster
// view and /metrics; out of memory caught from stderr or from the last
// reading at the cap, and put back once with more when asked; model jobs
// sized from what jobs of the same fingerprint measured, the record of it
// kept across a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "launch/gpu_usage.h"
#include "service/measure/learned_part_internal.h"
#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/scripted_launcher.h"

extern char** environ;

namespace tessera::scheduler {

using service::JobEvent;
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using ::testing::HasSubstr;

// GPU 0 of node0 with the device memory the test says each job's session
// leader uses (a job's process is its session leader here).
class FakeProbe : public launch::GpuProbe {
 public:
  Result<launch::GpuReadings> Read() override {
    std::lock_guard lock(mu);
    launch::GpuReadings r;
    int64_t used = 0;
    for (const auto& [pid, mib] : memory) {
      r.processes.push_back({0, static_cast<uint32_t>(pid), mib});
      used += mib;
    }
    r.gpus.push_back({0, used, 80 * 1024, utilization});
    return r;
  }
  std::mutex mu;
  std::map<int64_t, int64_t> memory;  // by session leader
  int utilization = 40;
};

// A real process in a session of its own (what a job is to the sampler).
class Session {
 public:
  Session() {
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    char sh[] = "sleep", arg[] = "60";
    char* argv[] = {sh, arg, nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawnp(&pid, "sleep", nullptr, &attr, argv, environ), 0);
    posix_spawnattr_destroy(&attr);
    pid_ = pid;
  }
  ~Session() {
    kill(static_cast<pid_t>(pid_), SIGKILL);
    waitpid(static_cast<pid_t>(pid_), nullptr, 0);
  }
  int64_t pid() const { return pid_; }

 private:
  int64_t pid_ = 0;
};

class MeasureTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make(ServiceOptions o = {}) {
    o.topology = TwoPools();
    o.model_roots = {std::string(TESSERA_SOURCE_DIR) + "/models/zoo"};
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.clock = [this] { return now_; };
    o.gpu_probe = probe_;
    o.usage_interval_s = 1;
    auto launcher = std::make_unique<ScriptedLauncher>();
    launcher->log_dir = dir_.path().string();
    launcher->pid_for = pids_;
    launcher->adoptable = adoptable_;
    launcher_ = launcher.get();
    auto s = Service::Start(std::move(o), std::move(launcher));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  // The job `id` will run as `session`, using `mib` of GPU memory.
  void RunsAs(JobId id, const Session& session) {
    pids_[id] = session.pid();
    if (launcher_) launcher_->pid_for[id] = session.pid();
  }
  void Uses(const Session& session, int64_t mib) {
    std::lock_guard lock(probe_->mu);
    probe_->memory[session.pid()] = mib;
  }
  // A tick `dt` seconds on.
  void TickAfter(Service& s, double dt) {
    now_ += dt;
    s.Tick();
  }
  void Ends(JobId id, const std::string& err, int code) {
    std::ofstream(dir_.File(std::to_string(id) + ".err")) << err;
    launcher_->Exit(id, code);
  }
  Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return j && *j ? **j : Job{};
  }
  static JobRequest Gpt2() {
    JobRequest r;
    r.pool = "a";
    r.command = {"true"};
    r.model.emplace();
    r.model->path = std::string(TESSERA_SOURCE_DIR) + "/models/zoo/gpt2.onnx";
    return r;
  }
  JobId NextId(Service& s, const JobRequest& r) {
    auto job = s.Submit(alice_, r);
    EXPECT_TRUE(job) << job.error().message;
    return job ? job->id : 0;
  }

  testlib::TempDir dir_;
  double now_ = 1000;
  std::shared_ptr<FakeProbe> probe_ = std::make_shared<FakeProbe>();
  std::map<JobId, int64_t> pids_;
  std::set<JobId> adoptable_;
  ScriptedLauncher* launcher_ = nullptr;
  const User alice_{"alice", "", false, ""};
};

constexpr char kTorchOom[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. "
    "GPU 0 has a total capacity of 79.18 GiB of which 1.50 GiB is free.\n";

// A job that runs out of GPU memory ends `oom`: its stderr's last error
// says so (launch/out_of_memory.h), and the reason says what it held and
// asked for; a failure that only looks similar stays `failed`, and the
// state survives a restart.
TEST_F(MeasureTest, OutOfGpuMemoryEndsOomNotFailed) {
  auto s = Make();
  auto oom = s->Submit(alice_, Fraction(500, 2930));
  auto similar = s->Submit(alice_, Fraction(300, 1024));
  auto fine = s->Submit(alice_, Fraction(100, 1024));
  ASSERT_TRUE(oom && similar && fine);
  s->Tick();
  Ends(oom->id,
       "Traceback (most recent call last):\n"
       "  File \"train.py\", line 9, in <module>\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 "
       "GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.50 GiB is "
       "free.\n",
       1);
  Ends(similar->id,
       "INFO: reducing the batch to avoid CUDA out of memory\n"
       "ValueError: bad config\n",
       1);
  // Exit 0: whatever it printed, it succeeded.
  Ends(fine->id, "torch.OutOfMemoryError: CUDA out of memory. (caught)\n", 0);
  s->Tick();
  const Job o = Get(*s, oom->id);
  EXPECT_EQ(o.state, JobState::kOom);
  EXPECT_THAT(o.reason, HasSubstr("out of GPU memory: held 2930 MiB, asked "
                                  "for 4096 MiB more (pytorch: "));
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(Get(*s, similar->id).state, JobState::kFailed);
  EXPECT_EQ(Get(*s, fine->id).state, JobState::kSucceeded);
  EXPECT_EQ(s->CheckInvariants(), "");
  // The events say it, and the state is kept across a restart.
  auto events = s->Events(oom->id);
  ASSERT_TRUE(events);
  EXPECT_EQ(events->back().action, "oom");
  s.reset();
  s = Make();
  EXPECT_EQ(Get(*s, oom->id).state, JobState::kOom);
}

TEST_F(MeasureTest, UseIsKeptWithTheJobAcrossARestart) {
  auto s = Make();
  Session session;
  const JobId id = NextId(*s, Fraction(500, 4096));
  RunsAs(id, session);
  s->Tick();
  ASSERT_EQ(Get(*s, id).state, JobState::kRunning);
  Uses(session, 1500);
  TickAfter(*s, 1);
  Uses(session, 3000);
  TickAfter(*s, 11);  // the peak grew and 10 s passed: stored
  Uses(session, 2000);
  TickAfter(*s, 1);
  Job j = Get(*s, id);
  EXPECT_EQ(j.usage.peak_mib, 3000);
  EXPECT_EQ(j.usage.last_mib, 2000);
  EXPECT_EQ(j.usage.readings, 3);
  EXPECT_DOUBLE_EQ(j.usage.mean_utilization_pct, 40);
  // The cluster view and /metrics show it.
  const nlohmann::json cluster = s->ClusterJson();
  EXPECT_EQ(cluster["gpus"][0]["used_memory_mib"], 2000);
  EXPECT_EQ(cluster["gpus"][0]["utilization_pct"], 40);
  EXPECT_FALSE(cluster["gpus"][2].contains("used_memory_mib"));  // node1's
  EXPECT_THAT(cluster["gpu_usage"].get<std::string>(),
              HasSubstr("measured every 1 s"));
  const std::string metrics = s->MetricsText();
  EXPECT_THAT(metrics,
              HasSubstr("tessera_pool_measured_memory_reserved_mib{pool=\"a\"} "
                        "4096\n"));
  EXPECT_THAT(metrics,
              HasSubstr("tessera_pool_measured_memory_peak_mib{pool=\"a\"} "
                        "3000\n"));
  EXPECT_THAT(metrics, HasSubstr("tessera_gpu_memory_used_mib{gpu=\"node0/"
                                 "gpu0\",pool=\"a\"} 2000\n"));
  // Across a restart (the job adopted): the stored peak.
  s.reset();
  adoptable_.insert(id);
  s = Make();
  j = Get(*s, id);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.usage.peak_mib, 3000);
  // And its record keeps it when it ends.
  Ends(id, "", 0);
  s->Tick();
  EXPECT_EQ(Get(*s, id).usage.peak_mib, 3000);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// The probe reads this machine's GPUs (node0's, the first node): a job on
// node1 is not measured, nor counted as measured in /metrics.
TEST_F(MeasureTest, JobsOnAnotherNodeAreNotMeasured) {
  auto s = Make();
  Session here, there;
  const JobId a = NextId(*s, Fraction(300, 2048, "a"));
  const JobId b = NextId(*s, Fraction(300, 2048, "b"));
  RunsAs(a, here);
  RunsAs(b, there);
  s->Tick();
  Uses(here, 1000);
  Uses(there, 1500);  // the same pid space: the probe would see it
  TickAfter(*s, 1);
  EXPECT_EQ(Get(*s, a).usage.readings, 1);
  EXPECT_EQ(Get(*s, b).usage.readings, 0);
  EXPECT_THAT(s->MetricsText(),
              HasSubstr("tessera_pool_measured_memory_reserved_mib{pool=\"b\"} "
                        "0\n"));
}

TEST_F(MeasureTest, DyingAtTheCapIsOutOfMemory) {
  auto s = Make();
  Session a, b;
  const JobId at_cap = NextId(*s, Fraction(300, 2048));
  const JobId below = NextId(*s, Fraction(300, 2048));
  RunsAs(at_cap, a);
  RunsAs(below, b);
  s->Tick();
  Uses(a, 2000);  // 98% of its cap
  Uses(b, 1000);
  TickAfter(*s, 1);
  Ends(at_cap, "Killed\n", 137);
  Ends(below, "Killed\n", 137);
  TickAfter(*s, 1);
  const Job j = Get(*s, at_cap);
  EXPECT_EQ(j.state, JobState::kOom);
  EXPECT_THAT(j.reason, HasSubstr("held 2048 MiB"));
  EXPECT_THAT(j.reason, HasSubstr("(sampler: its last reading, 2000 MiB"));
  EXPECT_EQ(Get(*s, below).state, JobState::kFailed);
}

TEST_F(MeasureTest, PutBackOnceWithMoreAndNotAgain) {
  auto s = Make();
  Session first, second;
  JobRequest r = Fraction(500, 2048);
  r.on_oom = "requeue";
  const JobId id = NextId(*s, r);
  RunsAs(id, first);
  s->Tick();
  Uses(first, 1900);
  TickAfter(*s, 1);
  Ends(id, kTorchOom, 1);
  TickAfter(*s, 1);
  Job j = Get(*s, id);
  // Seen to need 2048 held + 1024 asked: 3072 MiB, plus 5%.
  EXPECT_EQ(j.oom_requeues, 1);
  EXPECT_EQ(j.demand.gpu_memory_mib, 3226);
  auto events = s->Events(id);
  ASSERT_TRUE(events);
  const auto requeued =
      std::find_if(events->begin(), events->end(),
                   [](const JobEvent& e) { return e.action == "requeued"; });
  ASSERT_NE(requeued, events->end());
  EXPECT_EQ(requeued->actor, "scheduler");
  EXPECT_THAT(requeued->detail,
              HasSubstr("out of GPU memory: held 2048 MiB, asked for 1024 MiB "
                        "more (pytorch: "));
  EXPECT_THAT(requeued->detail, HasSubstr("put back once, reservation 2048 -> "
                                          "3226 MiB per GPU (seen 3072 MiB + "
                                          "5%)"));
  // It starts again with the raised reservation, its use measured afresh.
  if (j.state != JobState::kRunning) {
    RunsAs(id, second);
    TickAfter(*s, 1);
  }
  j = Get(*s, id);
  ASSERT_EQ(j.state, JobState::kRunning);
  ASSERT_EQ(j.allocation.gpus.size(), 1u);
  EXPECT_EQ(j.allocation.gpus[0].memory_mib, 3226);
  EXPECT_EQ(j.usage.readings, 0);
  // Out of memory again: it ends oom, not a loop.
  Ends(id, kTorchOom, 1);
  TickAfter(*s, 1);
  j = Get(*s, id);
  EXPECT_EQ(j.state, JobState::kOom);
  EXPECT_EQ(j.oom_requeues, 1);
  EXPECT_THAT(j.reason, HasSubstr("not put back again: it was once already"));
  TickAfter(*s, 1);
  EXPECT_EQ(launcher_->StartCount(), 2u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(MeasureTest, ThePoolsDefaultAndWhatIsNeverPutBack) {
  ServiceOptions o;
  o.requeue_oom_pools = {"a"};
  auto s = Make(o);
  JobRequest whole = Fraction(0, 0);
  whole.resources = Resources{1, 0, 0, 1000, 1024};  // one whole GPU
  const JobId whole_id = NextId(*s, whole);
  JobRequest declined = Fraction(200, 1024);
  declined.on_oom = "fail";
  const JobId declined_id = NextId(*s, declined);
  const JobId too_big = NextId(*s, Fraction(200, 78 * 1024));
  const JobId by_pool = NextId(*s, Fraction(200, 1024, "a"));
  s->Tick();
  for (const JobId id : {whole_id, declined_id, too_big, by_pool}) {
    ASSERT_EQ(Get(*s, id).state, JobState::kRunning) << id;
    Ends(id, kTorchOom, 1);
  }
  TickAfter(*s, 1);
  EXPECT_THAT(Get(*s, whole_id).reason,
              HasSubstr("not put back: it held whole GPUs"));
  EXPECT_EQ(Get(*s, declined_id).state, JobState::kOom);
  EXPECT_THAT(Get(*s, too_big).reason,
              HasSubstr("more than any GPU of its pool has (81920 MiB)"));
  const Job pooled = Get(*s, by_pool);
  EXPECT_EQ(pooled.oom_requeues, 1);
  EXPECT_EQ(pooled.demand.gpu_memory_mib, 2151);  // (1024 + 1024) x 1.05
}

// GPT-2 inference, sized by the estimate, then by what its runs used:
// one measurement above the estimate raises it, three below replace it.
TEST_F(MeasureTest, ModelJobsAreSizedByWhatTheirRunsMeasured) {
  auto s = Make();
  Job j = Get(*s, NextId(*s, Gpt2()));
  EXPECT_EQ(j.sized_by, "estimate");
  const int64_t estimate = j.demand.gpu_memory_mib;
  ASSERT_GT(estimate, 700);
  auto run = [&](JobId id, int64_t peak) {
    Session session;
    RunsAs(id, session);
    TickAfter(*s, 1);
    ASSERT_EQ(Get(*s, id).state, JobState::kRunning);
    Uses(session, peak);
    TickAfter(*s, 1);
    Ends(id, "", 0);
    TickAfter(*s, 1);
    ASSERT_EQ(Get(*s, id).state, JobState::kSucceeded);
  };
  run(j.id, estimate + 500);
  j = Get(*s, NextId(*s, Gpt2()));
  EXPECT_EQ(j.sized_by, "estimate, raised by 1 measurement");
  EXPECT_EQ(j.demand.gpu_memory_mib,
            static_cast<int64_t>(std::ceil((estimate + 500) * 1.05)));
  run(j.id, 700);
  for (int i = 0; i < 2; ++i) run(NextId(*s, Gpt2()), 700);
  j = Get(*s, NextId(*s, Gpt2()));
  // Enough samples to replace the estimate; the largest of the window
  // (the first run's) still decides.
  EXPECT_EQ(j.sized_by, "measured (4 samples)");
  EXPECT_EQ(j.demand.gpu_memory_mib,
            static_cast<int64_t>(std::ceil((estimate + 500) * 1.05)));
  // Another model (a batch of 2) learned nothing.
  JobRequest other = Gpt2();
  other.model->batch = 2;
  EXPECT_EQ(Get(*s, NextId(*s, other)).sized_by, "estimate");
  // The record is kept across a restart.
  s.reset();
  s = Make();
  EXPECT_EQ(Get(*s, NextId(*s, Gpt2())).sized_by, "measured (4 samples)");
}

TEST(LearnedPart, ItsRecordRoundTripsAndADamagedOneIsRefused) {
  service::service_internal::LearnedPart part;
  ModelFingerprint fp{"sha256:ab", 8, "bf16", true, "pytorch"};
  SizingSample sample;
  sample.peak_mib = 3000;
  sample.step_s = 0.25;
  sample.gpu_kind = "h200";
  for (int i = 0; i < 3; ++i) part.AddSample(fp, sample);
  part.mutable_fits()["h200"] = {0.5, 2.0, 4};
  service::service_internal::LearnedPart back;
  ASSERT_TRUE(back.Load(part.Json()).ok());
  const LearnedSize size = back.Size(fp, 5000, "h200");
  EXPECT_EQ(size.memory_mib, 3150);
  EXPECT_EQ(size.source, "measured (3 samples)");
  EXPECT_DOUBLE_EQ(size.step_s.value_or(0), 0.25);
  EXPECT_EQ(back.fits().at("h200").samples, 4);
  EXPECT_DOUBLE_EQ(back.fits().at("h200").alpha(), 0.25);
  for (const char* bad : {"[]", "{", R"({"models": 3})",
                          R"({"models": [{"samples": [{"peak_mib": -1}]}]})",
                          R"({"interference": {"h200": {"xx": -1}}})"}) {
    EXPECT_FALSE(back.Load(bad).ok()) << bad;
  }
  // What it had stays when a record is refused.
  EXPECT_EQ(back.Size(fp, 5000).source, "measured (3 samples)");
}

}  // namespace
}  // namespace tessera::scheduler
