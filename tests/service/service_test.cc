// Service: submissions are durable, rounds start what fits, exits release,
// cancels stop, restarts recover; the cluster's invariants hold throughout.
// A scripted launcher makes exits deterministic; the local launcher runs
// real processes where the environment and recovery need them.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::NodeRoom;
using service::ReserveOutcome;
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using ::testing::HasSubstr;

class ServiceTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make(ServiceOptions o = {}) {
    if (o.topology.gpus.empty()) o.topology = TwoPools();
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
  static std::string Zoo(const std::string& file) {
    return std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + file;
  }
  // The zoo is the model root.
  static ServiceOptions ZooRoots() {
    ServiceOptions o;
    o.model_roots = {std::string(TESSERA_SOURCE_DIR) + "/models/zoo"};
    return o;
  }
  static JobRequest ModelJob(const std::string& path) {
    JobRequest r;
    r.name = "model";
    r.pool = "a";
    r.command = {"true"};
    r.model.emplace();
    r.model->path = path;
    return r;
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static JobRequest Whole(int gpus) {
    JobRequest r;
    r.name = "whole";
    r.pool = "a";
    r.command = {"true"};
    r.resources = Resources{gpus, 0, 0, 0, 0};
    return r;
  }
  JobState StateOf(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return (j && *j) ? (*j)->state : JobState::kFailed;
  }

  testlib::TempDir dir_;
  double now_ = 1000;
  ScriptedLauncher* launcher_ = nullptr;
  const User alice_{"alice", "", false, ""};
};

TEST_F(ServiceTest, SubmittedJobsStartWhereTheyFitAndExitReleases) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto a = s->Submit(alice_, Fraction(600, 40 * 1024));
  auto b = s->Submit(alice_, Fraction(600, 40 * 1024));
  auto c = s->Submit(alice_, Fraction(600, 40 * 1024));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->state, JobState::kQueued);
  s->Tick();
  // Two GPUs of 1000 milli: two jobs of 600 run, the third waits.
  EXPECT_EQ(StateOf(*s, a->id), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, b->id), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, c->id), JobState::kQueued);
  EXPECT_EQ(s->CheckInvariants(), "");
  launcher_->Exit(a->id, 0);
  s->Tick();
  EXPECT_EQ(StateOf(*s, a->id), JobState::kSucceeded);
  EXPECT_EQ(StateOf(*s, c->id), JobState::kRunning);
  launcher_->Exit(b->id, 3);
  s->Tick();
  auto failed = s->Get(b->id);
  EXPECT_EQ((*failed)->state, JobState::kFailed);
  EXPECT_EQ((*failed)->exit_code, 3);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(ServiceTest, EnvironmentCarriesTheGpusAndLimits) {
  auto s = Make();
  auto j = s->Submit(alice_, Fraction(250, 8192));
  ASSERT_TRUE(j);
  s->Tick();
  ASSERT_EQ(launcher_->started.size(), 1u);
  const auto& env = launcher_->started[0].env;
  EXPECT_EQ(env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  EXPECT_EQ(env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=8192M");
  EXPECT_EQ(env.at("TESSERA_JOB_ID"), std::to_string(j->id));
  EXPECT_TRUE(env.at("CUDA_VISIBLE_DEVICES") == "0" ||
              env.at("CUDA_VISIBLE_DEVICES") == "1");
}

TEST_F(ServiceTest, WholeGpuJobsShareWithNobody) {
  auto s = Make();
  auto w = s->Submit(alice_, Whole(2));
  auto f = s->Submit(alice_, Fraction(100, 1024));
  ASSERT_TRUE(w && f);
  s->Tick();
  EXPECT_EQ(StateOf(*s, w->id), JobState::kRunning);
  EXPECT_EQ(StateOf(*s, f->id), JobState::kQueued);
  EXPECT_EQ(
      launcher_->started[0].env.count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  EXPECT_EQ(launcher_->started[0].env.at("CUDA_VISIBLE_DEVICES"), "0,1");
}

// priority with preemption: a preemptible low-priority job is stopped for a
// higher-priority one, goes back to the queue as `preempted`, and restarts
// when the GPUs are free again.
TEST_F(ServiceTest, PreemptedJobsAreRequeuedAndRestarted) {
  ServiceOptions o;
  o.policies["a"] = PolicyConfig{"priority", true, {}};
  auto s = Make(std::move(o));
  JobRequest low = Whole(2);
  low.priority = 0;
  low.preemptible = true;
  auto victim = s->Submit(alice_, low);
  ASSERT_TRUE(victim);
  s->Tick();
  ASSERT_EQ(StateOf(*s, victim->id), JobState::kRunning);
  JobRequest high = Whole(1);
  high.priority = 5;
  auto urgent = s->Submit({"bob", "", false, ""}, high);
  ASSERT_TRUE(urgent);
  s->Tick();  // stops the victim (the scripted launcher exits it at once)
  s->Tick();  // reaps it, requeues it, starts the urgent job
  auto v = s->Get(victim->id);
  EXPECT_EQ((*v)->state, JobState::kPreempted);
  EXPECT_EQ((*v)->restarts, 1);
  EXPECT_EQ(StateOf(*s, urgent->id), JobState::kRunning);
  EXPECT_EQ(s->CheckInvariants(), "");
  launcher_->Exit(urgent->id, 0);
  s->Tick();
  EXPECT_EQ(StateOf(*s, victim->id), JobState::kRunning);  // restarted
}

TEST_F(ServiceTest, BadRequestsChangeNothing) {
  auto s = Make();
  auto unknown = s->Submit(alice_, Fraction(100, 1024, "nope"));
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("pool"));
  auto huge = s->Submit(alice_, Fraction(100, 100 * 1024, "b"));
  ASSERT_FALSE(huge);
  EXPECT_THAT(huge.error().message, HasSubstr("could ever hold"));
  auto whole = s->Submit(alice_, Whole(3));
  ASSERT_FALSE(whole);
  auto jobs = s->List({});
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->empty());
}

TEST_F(ServiceTest, PerUserQueueLimit) {
  ServiceOptions o;
  o.max_queued_per_user = 2;
  auto s = Make(std::move(o));
  ASSERT_TRUE(s->Submit(alice_, Fraction(100, 1024, "b")));
  ASSERT_TRUE(s->Submit(alice_, Fraction(100, 1024, "b")));
  auto third = s->Submit(alice_, Fraction(100, 1024, "b"));
  ASSERT_FALSE(third);
  EXPECT_THAT(third.error().message, HasSubstr("queued jobs"));
  EXPECT_TRUE(s->Submit({"bob", "", false, ""}, Fraction(100, 1024, "b")));
}

TEST_F(ServiceTest, CancelQueuedAndRunning) {
  auto s = Make();
  auto run = s->Submit(alice_, Whole(2));
  auto wait = s->Submit(alice_, Whole(1));
  s->Tick();
  auto c1 = s->Cancel(wait->id, "cancelled by alice");
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->state, JobState::kCancelled);
  auto c2 = s->Cancel(run->id, "cancelled by alice");
  ASSERT_TRUE(c2);
  s->Tick();  // the scripted launcher reports the stop as an exit
  EXPECT_EQ(StateOf(*s, run->id), JobState::kCancelled);
  EXPECT_EQ(s->CheckInvariants(), "");
  auto none = s->Cancel(999, "x");
  EXPECT_FALSE(none);
}

TEST_F(ServiceTest, RestartReadoptsLiveJobsAndFailsLostOnes) {
  JobId live = 0, lost = 0, queued = 0;
  {
    auto s = Make();
    live = s->Submit(alice_, Fraction(500, 1024))->id;
    lost = s->Submit(alice_, Fraction(500, 1024))->id;
    s->Tick();
    queued = s->Submit(alice_, Whole(2))->id;
  }
  ServiceOptions o;
  o.topology = TwoPools();
  o.db_path = dir_.File("q.db");
  o.log_dir = dir_.File("logs");
  o.start_thread = false;
  o.clock = [this] { return now_; };
  auto launcher = std::make_unique<ScriptedLauncher>();
  launcher->adoptable = {live};
  auto s = Service::Start(std::move(o), std::move(launcher));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(StateOf(**s, live), JobState::kRunning);
  auto l = (*s)->Get(lost);
  EXPECT_EQ((*l)->state, JobState::kFailed);
  EXPECT_EQ((*l)->reason, "lost");
  EXPECT_EQ(StateOf(**s, queued), JobState::kQueued);
  const auto cluster = (*s)->ClusterJson();
  int64_t reserved = 0;
  for (const auto& g : cluster["gpus"])
    reserved += g["reserved_milli"].get<int64_t>();
  EXPECT_EQ(reserved, 500);  // only the re-adopted job holds anything
  EXPECT_EQ((*s)->CheckInvariants(), "");
}

TEST_F(ServiceTest, DrainsAreStoredAndSurviveARestart) {
  const std::string node = TwoPools().nodes[0].name;
  {
    auto s = Make();
    ASSERT_TRUE(s->SetDrained(node, true));
    EXPECT_EQ(s->ClusterJson()["gpus"][0]["drained"], true);
  }
  {
    auto s = Make();  // the same database
    EXPECT_EQ(s->ClusterJson()["gpus"][0]["drained"], true);
    ASSERT_TRUE(s->SetDrained(node, false));
  }
  auto s = Make();
  EXPECT_EQ(s->ClusterJson()["gpus"][0]["drained"], false);
}

TEST_F(ServiceTest, RandomMixesKeepTheInvariants) {
  auto s = Make();
  std::mt19937 rng(3);
  std::vector<JobId> running;
  for (int round = 0; round < 200; ++round) {
    const int kind = static_cast<int>(rng() % 3);
    JobRequest r = kind == 0   ? Whole(1 + static_cast<int>(rng() % 2))
                   : kind == 1 ? Fraction(100 + static_cast<int>(rng() % 900),
                                          1024 * (1 + rng() % 60))
                               : Fraction(100 + static_cast<int>(rng() % 900),
                                          1024 * (1 + rng() % 15), "b");
    ASSERT_TRUE(s->Submit(alice_, r));
    for (const launch::LaunchSpec& spec : launcher_->started) {
      if (rng() % 3 == 0) launcher_->Exit(spec.id, 0);
    }
    s->Tick();
    ASSERT_EQ(s->CheckInvariants(), "") << "round " << round;
  }
}

TEST_F(ServiceTest, MetricsAndClusterDescribeTheState) {
  auto s = Make();
  ASSERT_TRUE(s->Submit(alice_, Fraction(250, 8192)));
  s->Tick();
  const std::string m = s->MetricsText();
  EXPECT_THAT(m, HasSubstr("tessera_jobs{state=\"running\",pool=\"a\"} 1"));
  EXPECT_THAT(m, HasSubstr("tessera_gpu_milli_reserved{gpu=\"node0/gpu"));
  EXPECT_THAT(m, HasSubstr("tessera_queue_wait_seconds_count 1"));
  EXPECT_THAT(m, HasSubstr("tessera_admission_latency_seconds_bucket"));
  const auto c = s->ClusterJson();
  EXPECT_EQ(c["gpus"].size(), 3u);
  EXPECT_EQ(c["pools"].size(), 2u);
}

// A model job that fits no single GPU's free capacity is split by the
// placer over the slivers two GPUs have left and admitted as one gang.
// What a model job needs fits no GPU alone: 500 milli and 700 MiB free on
// each GPU of pool a, GPT-2 (inference) needs ~0.9 GiB.
constexpr int64_t kSliverTaken = 80 * 1024 - 700;

TEST_F(ServiceTest, ModelJobIsSplitAcrossSliversAsAGang) {
  auto s = Make(ZooRoots());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(s->Submit(alice_, Fraction(500, kSliverTaken)));
  }
  s->Tick();
  JobRequest r;
  r.name = "gpt2";
  r.pool = "a";
  r.command = {"true"};
  r.model.emplace();
  r.model->path = Zoo("gpt2.onnx");
  auto job = s->Submit(alice_, r);
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_GT(job->demand.gpu_memory_mib, 800);  // GPT-2 inference, ~0.9 GiB
  s->Tick();
  auto after = s->Get(job->id);
  ASSERT_EQ((*after)->state, JobState::kRunning) << (*after)->reason;
  EXPECT_EQ((*after)->allocation.gpus.size(), 2u);  // the gang
  EXPECT_FALSE((*after)->plan.is_null());
  EXPECT_TRUE((*after)->plan.contains("placement"));
  const auto& env = launcher_->started.back().env;
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_TRUE(env.count("TESSERA_PLAN"));
  EXPECT_TRUE(env.count("TESSERA_DEVICE_MAP"));
  std::ifstream map(env.at("TESSERA_DEVICE_MAP"));
  EXPECT_TRUE(map.good());
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST_F(ServiceTest, ModelThatDoesNotLoadIsBadInput) {
  ServiceOptions o;
  o.model_roots = {dir_.path().string()};
  auto s = Make(std::move(o));
  std::ofstream(dir_.File("junk.onnx")) << "junk";
  for (const char* name : {"missing.onnx", "junk.onnx"}) {
    auto job = s->Submit(alice_, ModelJob(dir_.File(name)));
    ASSERT_FALSE(job);
    EXPECT_THAT(job.error().message, HasSubstr("model.path"));
  }
}

// Jobs by path read only regular files under the model roots; anything
// else is refused at once (a read of /dev/zero or a FIFO never ends), with
// one message whether the file exists or not.
TEST_F(ServiceTest, ModelPathsOutsideTheRootsAreRefusedAtOnce) {
  ServiceOptions o;
  o.model_roots = {std::string(TESSERA_SOURCE_DIR) + "/models/zoo"};
  auto s = Make(std::move(o));
  ASSERT_EQ(mkfifo(dir_.File("fifo").c_str(), 0600), 0);
  std::string message;
  for (const std::string& path :
       {std::string("/dev/zero"), dir_.File("fifo"), std::string("/etc/passwd"),
        dir_.File("missing.onnx"), Zoo("../clusters"),
        Zoo("../zoo/../../README.md")}) {
    const auto start = std::chrono::steady_clock::now();
    auto job = s->Submit(alice_, ModelJob(path));
    ASSERT_FALSE(job) << path;
    EXPECT_LT(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count(),
        1.0);
    if (message.empty()) message = job.error().message;
    EXPECT_EQ(job.error().message, message) << path;
  }
  EXPECT_THAT(message, HasSubstr("model.path"));
  auto list = s->List({});
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->empty());
  // Inside the roots, it is sized.
  auto ok = s->Submit(alice_, ModelJob(Zoo("resnet50.onnx")));
  ASSERT_TRUE(ok) << ok.error().message;
}

TEST_F(ServiceTest, WithoutModelRootsJobsByPathAreRefused) {
  auto s = Make();
  auto job = s->Submit(alice_, ModelJob(Zoo("resnet50.onnx")));
  ASSERT_FALSE(job);
  EXPECT_THAT(job.error().message, HasSubstr("model_roots"));
  EXPECT_THAT(job.error().message, HasSubstr("upload"));
}

TEST_F(ServiceTest, ModelRootsMustBeDirectories) {
  ServiceOptions o;
  o.model_roots = {dir_.File("nowhere")};
  o.topology = TwoPools();
  o.db_path = dir_.File("q.db");
  o.start_thread = false;
  auto s = Service::Start(std::move(o), std::make_unique<ScriptedLauncher>());
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("model_roots"));
}

// An upload is checked, stored under its SHA-256 (durably: a restart finds
// it) and named by a job's model.upload.
TEST_F(ServiceTest, UploadedModelsAreStoredByHashAndSizeJobs) {
  auto s = Make();
  const std::string bytes = ReadFile(Zoo("resnet50.onnx"));
  auto up = s->UploadModel(alice_, bytes);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(up->id.size(), 64u);
  EXPECT_EQ(up->bytes, static_cast<int64_t>(bytes.size()));
  EXPECT_GT(up->nodes, 100);
  EXPECT_EQ(ReadFile(dir_.File("logs") + "/models/" + up->id + ".onnx"), bytes);
  auto again = s->UploadModel(alice_, bytes);  // the same content, one file
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, up->id);
  JobRequest r = ModelJob("");
  r.model->upload = up->id;
  auto job = s->Submit(alice_, r);
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_GT(job->demand.gpu_memory_mib, 0);
  r.model->upload = std::string(64, '0');
  auto unknown = s->Submit(alice_, r);
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("model.upload"));
}

TEST_F(ServiceTest, BadUploadsAreRefusedWithClearMessages) {
  ServiceOptions o;
  o.max_upload_bytes = 100000;
  auto s = Make(std::move(o));
  const std::string bytes = ReadFile(Zoo("resnet50.onnx"));
  auto empty = s->UploadModel(alice_, "");
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message, HasSubstr("empty"));
  auto garbage = s->UploadModel(alice_, "garbage, not a model");
  ASSERT_FALSE(garbage);
  EXPECT_THAT(garbage.error().message, HasSubstr("not an ONNX model"));
  auto truncated = s->UploadModel(alice_, bytes.substr(0, bytes.size() / 2));
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(truncated.error().message, HasSubstr("the uploaded model"));
  auto big = s->UploadModel(alice_, std::string(100001, 'x'));
  ASSERT_FALSE(big);
  EXPECT_THAT(big.error().message, HasSubstr("max_upload_bytes"));
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("logs") + "/models", ec) &&
               !std::filesystem::is_empty(dir_.File("logs") + "/models", ec));
}

// After a restart the job of an uploaded model is loaded again from the
// store (to split it, here), through the same checks as a submission.
TEST_F(ServiceTest, RestartReloadsAnUploadedModelsJob) {
  JobId a = 0, b = 0, gpt2 = 0;
  {
    auto s = Make();
    a = s->Submit(alice_, Fraction(500, kSliverTaken))->id;
    b = s->Submit(alice_, Fraction(500, kSliverTaken))->id;
    s->Tick();
    auto up = s->UploadModel(alice_, ReadFile(Zoo("gpt2.onnx")));
    ASSERT_TRUE(up) << up.error().message;
    JobRequest r = ModelJob("");
    r.model->upload = up->id;
    auto job = s->Submit(alice_, r);
    ASSERT_TRUE(job) << job.error().message;
    gpt2 = job->id;
  }
  ServiceOptions o;
  o.topology = TwoPools();
  o.db_path = dir_.File("q.db");
  o.log_dir = dir_.File("logs");
  o.start_thread = false;
  o.clock = [this] { return now_; };
  auto launcher = std::make_unique<ScriptedLauncher>();
  launcher->adoptable = {a, b};
  ScriptedLauncher* l = launcher.get();
  auto s = Service::Start(std::move(o), std::move(launcher));
  ASSERT_TRUE(s) << s.error().message;
  (*s)->Tick();
  auto after = (*s)->Get(gpt2);
  ASSERT_TRUE(after && *after);
  ASSERT_EQ((*after)->state, JobState::kRunning) << (*after)->reason;
  EXPECT_EQ((*after)->allocation.gpus.size(), 2u);  // split: the model loaded
  ASSERT_FALSE(l->started.empty());
  EXPECT_TRUE(l->started.back().env.count("TESSERA_DEVICE_MAP"));
}

// Reservations for an outside system: they hold capacity in the queue's
// cluster state, never reach the launcher, survive a restart and end by
// EndReservation or Cancel.
Job Reservation(int milli, int64_t mib) {
  Job job;
  job.origin = "test-origin";
  job.user = "outside:ns";
  job.request.name = "ns/thing";
  job.request.resources = Resources{0, milli, mib, 0, 0};
  job.request.env = {{"KEY", "value"}};
  job.demand = *job.request.resources;
  return job;
}

TEST_F(ServiceTest, ReservationsHoldCapacityWithoutALauncher) {
  auto s = Make();
  ASSERT_TRUE(s);
  Result<ReserveOutcome> r =
      s->Reserve(Reservation(600, 1024), "node0", "a", "the thing");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->kind, ReserveOutcome::Kind::kReserved);
  EXPECT_EQ(r->job.state, JobState::kRunning);
  EXPECT_EQ(r->job.request.pool, "a");
  EXPECT_TRUE(launcher_->started.empty());
  ASSERT_EQ(s->Reservations("test-origin").size(), 1u);
  EXPECT_TRUE(s->Reservations("other").empty());

  // The node now has less room: a second 600 milli share goes to the other
  // GPU, a third finds no room and says what is short.
  ASSERT_EQ(s->Reserve(Reservation(600, 1024), "node0", "a", "the thing")->kind,
            ReserveOutcome::Kind::kReserved);
  Result<ReserveOutcome> full =
      s->Reserve(Reservation(600, 1024), "node0", "a", "the thing");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->kind, ReserveOutcome::Kind::kNoRoom);
  EXPECT_THAT(full->reason, HasSubstr("no GPU has 600 milli"));
  const std::vector<NodeRoom> fits =
      s->EvaluateNodes(Resources{0, 600, 1024, 0, 0},
                       {"node0", "node1", "node9"}, "a", "the thing");
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_EQ(fits[0].verdict, NodeRoom::Verdict::kNoRoomNow);
  EXPECT_EQ(fits[1].verdict, NodeRoom::Verdict::kOtherPool);
  EXPECT_EQ(fits[1].node_pool, "b");
  EXPECT_EQ(fits[2].verdict, NodeRoom::Verdict::kUnknownNode);
  EXPECT_EQ(s->CheckInvariants(), "");

  // A queued job of the pool waits for the reservation to end.
  auto queued = s->Submit({"alice", "", false, ""}, Fraction(600, 1024));
  ASSERT_TRUE(queued);
  s->Tick();
  EXPECT_TRUE(launcher_->started.empty());
  Result<std::optional<Job>> ended =
      s->EndReservation(r->job.id, JobState::kSucceeded, "the thing ended");
  ASSERT_TRUE(ended && *ended);
  EXPECT_EQ((*ended)->state, JobState::kSucceeded);
  s->Tick();
  ASSERT_EQ(launcher_->started.size(), 1u);
  EXPECT_EQ(launcher_->started[0].id, queued->id);
  EXPECT_FALSE(*s->EndReservation(r->job.id, JobState::kFailed, "again"));
}

TEST_F(ServiceTest, ReservationsSurviveARestartAndEndByCancel) {
  JobId id = 0;
  {
    auto s = Make();
    ASSERT_TRUE(s);
    Result<ReserveOutcome> r =
        s->Reserve(Reservation(500, 2048), "node1", "", "the thing");
    ASSERT_TRUE(r && r->kind == ReserveOutcome::Kind::kReserved);
    id = r->job.id;
  }
  auto s = Make();
  ASSERT_TRUE(s);
  const std::vector<Job> held = s->Reservations("test-origin");
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].id, id);
  EXPECT_EQ(held[0].request.env.at("KEY"), "value");
  EXPECT_EQ(s->ClusterJson()["gpus"][2]["reserved_milli"], 500);
  Result<Job> cancelled = s->Cancel(id, "by an admin");
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_TRUE(s->Reservations("test-origin").empty());
  EXPECT_EQ(s->ClusterJson()["gpus"][2]["reserved_milli"], 0);
}

TEST_F(ServiceTest, AReservationNeedsAnOrigin) {
  auto s = Make();
  ASSERT_TRUE(s);
  Job job = Reservation(100, 100);
  job.origin.clear();
  Result<ReserveOutcome> r = s->Reserve(job, "node0", "", "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
}

TEST_F(ServiceTest, ALauncherThatSaysTryLaterKeepsTheJobAnErrorFailsIt) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto first = s->Submit({"alice", "", false, ""}, Fraction(100, 1024));
  ASSERT_TRUE(first);
  launcher_->fail_next = Unavailable("Slurm unreachable: connection refused");
  s->Tick();
  auto waiting = s->Get(first->id);
  ASSERT_TRUE(waiting && *waiting);
  EXPECT_EQ((*waiting)->state, JobState::kQueued);
  EXPECT_THAT((*waiting)->reason, HasSubstr("not started yet"));
  EXPECT_EQ(s->ClusterJson()["gpus"][0]["reserved_milli"], 0);
  now_ += 10;  // past the retry pause
  s->Tick();
  ASSERT_EQ(launcher_->started.size(), 1u);

  auto second = s->Submit({"alice", "", false, ""}, Fraction(100, 1024));
  ASSERT_TRUE(second);
  launcher_->fail_next = Internal("a bug in the launcher");
  s->Tick();
  auto failed = s->Get(second->id);
  ASSERT_TRUE(failed && *failed);
  EXPECT_EQ((*failed)->state, JobState::kFailed);
  EXPECT_EQ((*failed)->reason, "a bug in the launcher");
  EXPECT_EQ(s->CheckInvariants(), "");
}

}  // namespace
}  // namespace tessera::scheduler
