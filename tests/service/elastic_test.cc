// Elastic jobs (docs/elastic.md): requests name the field that is wrong;
// a job starts with its guaranteed part, grows as capacity frees, gives
// extras back (released by the job, or reclaimed after the grace) before a
// job the policy admits can start; the long-poll answers on a change and
// on its timeout; an elastic job survives a restart. A virtual clock and a
// scripted launcher keep it deterministic.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <set>
#include <thread>

#include "scheduler/elastic.h"
#include "service/service.h"
#include "service/wire/job_json.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::JobRequestJson;
using service::ParseJobRequest;
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string ParseError(const json& j) {
  Result<JobRequest> r = ParseJobRequest(j);
  return r ? std::string("parsed") : r.error().message;
}

json Elastic(json resources) {
  return {{"command", {"python3", "hpo.py"}}, {"resources", resources}};
}

TEST(ElasticRequestTest, ErrorsNameTheField) {
  EXPECT_THAT(ParseError(Elastic({{"gpus", {{"min", 0}, {"max", 2}}}})),
              HasSubstr("resources.gpus.min: must be at least 1"));
  EXPECT_THAT(ParseError(Elastic({{"gpus", {{"min", 3}, {"max", 2}}}})),
              HasSubstr("resources.gpus.max: must be at least min (3"));
  EXPECT_THAT(ParseError(Elastic({{"gpus", {{"min", 1}}}})),
              HasSubstr("resources.gpus.max: required"));
  EXPECT_THAT(
      ParseError(Elastic({{"gpus", {{"min", 1}, {"max", 2}, {"step", 1}}}})),
      HasSubstr("resources.gpus.step: unknown field"));
  EXPECT_THAT(ParseError(Elastic({{"gpus", {{"min", 1}, {"max", 2}}},
                                  {"workers", {{"min", 1}, {"max", 2}}}})),
              HasSubstr("resources.workers: cannot be combined"));
  EXPECT_THAT(
      ParseError(Elastic({{"gpus", 2}, {"workers", {{"min", 1}, {"max", 2}}}})),
      HasSubstr("resources.gpus: an elastic job's worker"));
  EXPECT_THAT(ParseError(Elastic({{"gpu_milli", 250},
                                  {"gpu_memory_mib", 1024},
                                  {"workers", {{"min", 1}, {"max", "4"}}}})),
              HasSubstr("resources.workers.max: must be an integer"));
  json not_elastic = Elastic({{"gpus", 1}});
  not_elastic["elastic"] = {{"mode", "per-worker"}};
  EXPECT_THAT(ParseError(not_elastic), HasSubstr("elastic: only for"));
  json bad_mode = Elastic({{"gpus", {{"min", 1}, {"max", 2}}}});
  bad_mode["elastic"] = {{"mode", "threads"}};
  EXPECT_THAT(ParseError(bad_mode),
              HasSubstr("elastic.mode: must be one-process or per-worker"));
}

TEST(ElasticRequestTest, RoundTrips) {
  json j = Elastic({{"gpu_milli", 250},
                    {"gpu_memory_mib", 1024},
                    {"cpu_milli", 500},
                    {"workers", {{"min", 2}, {"max", 6}}}});
  j["elastic"] = {{"mode", "per-worker"}};
  Result<JobRequest> r = ParseJobRequest(j);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->elastic);
  EXPECT_EQ(r->elastic->min, 2);
  EXPECT_EQ(r->elastic->max, 6);
  EXPECT_FALSE(r->elastic->whole_gpus);
  EXPECT_EQ(r->elastic->mode, ElasticMode::kPerWorker);
  EXPECT_EQ(r->resources->gpu_milli, 250);
  Result<JobRequest> again = ParseJobRequest(JobRequestJson(*r));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->elastic, r->elastic);
  EXPECT_EQ(again->resources, r->resources);

  Result<JobRequest> whole =
      ParseJobRequest(Elastic({{"gpus", {{"min", 1}, {"max", 8}}}}));
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->resources->gpus, 1);  // a worker's GPU
  EXPECT_EQ(JobRequestJson(*whole)["resources"]["gpus"],
            json({{"min", 1}, {"max", 8}}));
  EXPECT_EQ(ElasticGuaranteedDemand(*whole->resources, *whole->elastic).gpus,
            1);
}

class ElasticServiceTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make(std::set<JobId> adoptable = {}) {
    ServiceOptions o;
    o.topology = FourGpus();
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.elastic_release_grace_s = 30;
    o.clock = [this] { return now_; };
    auto launcher = std::make_unique<ScriptedLauncher>();
    launcher->adoptable = std::move(adoptable);
    launcher_ = launcher.get();
    auto s = Service::Start(std::move(o), std::move(launcher));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  static JobRequest Whole(int gpus) {
    JobRequest r;
    r.name = "whole";
    r.pool = "a";
    r.command = {"true"};
    r.resources = Resources{gpus, 0, 0, 0, 0};
    return r;
  }
  static JobRequest ElasticJob(int min, int max) {
    JobRequest r = Whole(1);
    r.name = "sweep";
    r.elastic = ElasticRequest{min, max};
    return r;
  }
  Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return (j && *j) ? **j : Job{};
  }
  void Tick(Service& s) {
    s.Tick();
    EXPECT_EQ(s.CheckInvariants(), "");
  }
  size_t Notices(JobId id) {
    std::lock_guard lock(launcher_->mu);
    size_t n = 0;
    for (const auto& [job, sig] : launcher_->notified) {
      n += job == id && sig == SIGUSR1;
    }
    return n;
  }
  std::string AllocationFile(JobId id) {
    std::ifstream in(dir_.File("logs") + "/" + std::to_string(id) +
                     ".allocation.json");
    return {std::istreambuf_iterator<char>(in), {}};
  }

  testlib::TempDir dir_;
  double now_ = 1000;
  ScriptedLauncher* launcher_ = nullptr;
  User alice_{"alice", "", false, ""};
};

TEST_F(ElasticServiceTest, StartsWithMinAndGrowsAsCapacityFrees) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto a = s->Submit(alice_, Whole(2));
  ASSERT_TRUE(a);
  Tick(*s);
  auto e = s->Submit(alice_, ElasticJob(1, 4));
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->demand.gpus, 1);  // the guaranteed part
  // Starts with its minimum and, after the round's starts, the free GPU
  // goes to it in the same round.
  Tick(*s);
  Job job = Get(*s, e->id);
  ASSERT_EQ(job.state, JobState::kRunning);
  ASSERT_EQ(launcher_->started.size(), 2u);
  EXPECT_EQ(launcher_->started[1].parts.at(0).gpu_indices.size(), 1u);
  EXPECT_EQ(
      launcher_->started[1].env.at("TESSERA_ALLOCATION_FILE"),
      dir_.File("logs") + "/" + std::to_string(e->id) + ".allocation.json");
  EXPECT_EQ(launcher_->started[1].env.at("TESSERA_ELASTIC_MAX"), "4");
  EXPECT_EQ(job.allocation.gpus.size(), 2u);
  EXPECT_EQ(job.elastic.workers, std::vector<int>({0, 1}));
  EXPECT_EQ(job.elastic.version, 2);
  ASSERT_EQ(job.elastic.history.size(), 2u);
  EXPECT_EQ(job.elastic.history[0].action, "start");
  EXPECT_EQ(job.elastic.history[1].action, "grow");
  EXPECT_EQ(Notices(e->id), 1u);
  Tick(*s);  // nothing free: nothing changes
  EXPECT_EQ(Get(*s, e->id).elastic.version, 2);

  launcher_->Exit(a->id, 0);
  Tick(*s);  // the other job's two GPUs too
  job = Get(*s, e->id);
  EXPECT_EQ(job.allocation.gpus.size(), 4u);
  EXPECT_EQ(job.elastic.workers, std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(Notices(e->id), 2u);
  const json file = json::parse(AllocationFile(e->id));
  EXPECT_EQ(file["version"], job.elastic.version);
  EXPECT_EQ(file["workers"].size(), 4u);
  EXPECT_EQ(file["workers"][0]["guaranteed"], true);
  EXPECT_EQ(file["workers"][3]["guaranteed"], false);
  Tick(*s);  // at max: nothing more
  EXPECT_EQ(Get(*s, e->id).elastic.version, job.elastic.version);
}

// Grown to 4, then a 2-GPU job arrives: the extras in its way are asked
// back with notice, the job releases them, and the newcomer starts.
TEST_F(ElasticServiceTest, ShrinksWhenTheJobReleasesExtras) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto e = s->Submit(alice_, ElasticJob(1, 4));
  ASSERT_TRUE(e);
  Tick(*s);
  Tick(*s);
  ASSERT_EQ(Get(*s, e->id).allocation.gpus.size(), 4u);
  auto b = s->Submit(alice_, Whole(2));
  ASSERT_TRUE(b);
  Tick(*s);
  Job job = Get(*s, e->id);
  EXPECT_EQ(Get(*s, b->id).state, JobState::kQueued);
  ASSERT_EQ(job.elastic.releasing.size(), 2u);
  EXPECT_EQ(job.elastic.release_by, now_ + 30);
  EXPECT_EQ(job.allocation.gpus.size(), 4u);                  // until released
  for (const int w : job.elastic.releasing) EXPECT_GE(w, 1);  // extras only
  EXPECT_EQ(Notices(e->id), 2u);  // the grow, the shrink asked
  Tick(*s);  // nothing grows, nothing starts, while it releases
  EXPECT_EQ(Get(*s, e->id).elastic.version, job.elastic.version);
  EXPECT_EQ(Get(*s, b->id).state, JobState::kQueued);

  // Releasing a guaranteed worker, or one it does not hold, is refused.
  auto bad = s->ReleaseWorkers(e->id, {0});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("worker 0 is guaranteed"));
  EXPECT_FALSE(s->ReleaseWorkers(e->id, {7}));

  auto released = s->ReleaseWorkers(e->id, job.elastic.releasing, &alice_);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->elastic.workers.size(), 2u);
  EXPECT_TRUE(released->elastic.releasing.empty());
  EXPECT_EQ(s->CheckInvariants(), "");
  Tick(*s);
  EXPECT_EQ(Get(*s, b->id).state, JobState::kRunning);
  job = Get(*s, e->id);
  EXPECT_EQ(job.allocation.gpus.size(), 2u);
  ASSERT_GE(job.elastic.history.size(), 4u);
  EXPECT_EQ(job.elastic.history.back().action, "released");
}

// The job does not answer: after the grace its extras are reclaimed and
// the newcomer starts in the same round.
TEST_F(ElasticServiceTest, ReclaimsExtrasAfterTheGrace) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto e = s->Submit(alice_, ElasticJob(2, 4));
  ASSERT_TRUE(e);
  Tick(*s);
  Tick(*s);
  ASSERT_EQ(Get(*s, e->id).allocation.gpus.size(), 4u);
  auto b = s->Submit(alice_, Whole(2));
  ASSERT_TRUE(b);
  Tick(*s);
  EXPECT_EQ(Get(*s, e->id).elastic.releasing, std::vector<int>({2, 3}));
  now_ += 29;
  Tick(*s);
  EXPECT_EQ(Get(*s, b->id).state, JobState::kQueued);
  now_ += 1;
  Tick(*s);
  EXPECT_EQ(Get(*s, b->id).state, JobState::kRunning);
  const Job job = Get(*s, e->id);
  EXPECT_EQ(job.elastic.workers, std::vector<int>({0, 1}));
  EXPECT_EQ(job.elastic.history.back().action, "reclaimed");
  EXPECT_TRUE(job.elastic.releasing.empty());
}

TEST_F(ElasticServiceTest, LongPollAnswersOnChangeAndOnTimeout) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto a = s->Submit(alice_, Whole(3));
  ASSERT_TRUE(a);
  Tick(*s);
  auto e = s->Submit(alice_, ElasticJob(1, 4));
  ASSERT_TRUE(e);
  Tick(*s);
  auto now = s->WaitAllocation(e->id, -1, 30);  // newer: at once
  ASSERT_TRUE(now) << now.error().message;
  const int64_t v = now->elastic.version;
  EXPECT_EQ(v, 1);
  // Nothing changes: answered unchanged when the (short) wait is over.
  auto unchanged = s->WaitAllocation(e->id, v, 0.05);
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(unchanged->elastic.version, v);
  // A change wakes a long wait (30 s: the test would fail by its answer,
  // not its time, if the wake were lost).
  std::optional<Result<Job>> polled;
  std::thread poller([&] { polled = s->WaitAllocation(e->id, v, 30); });
  launcher_->Exit(a->id, 0);
  s->Tick();
  poller.join();
  ASSERT_TRUE(polled && *polled);
  EXPECT_GT((**polled).elastic.version, v);
  EXPECT_EQ((**polled).elastic.workers.size(), 4u);
  // The wire's form of it (GET /v1/jobs/{id}/allocation).
  const json wire = service::ElasticAllocationJson(**polled, s->topology());
  EXPECT_EQ(wire["version"], (**polled).elastic.version);
  EXPECT_EQ(wire["workers"].size(), 4u);
  // Not elastic, unknown: errors.
  EXPECT_FALSE(s->WaitAllocation(a->id, -1, 0));
  EXPECT_FALSE(s->WaitAllocation(999, -1, 0));
}

TEST_F(ElasticServiceTest, SurvivesARestartWithItsExtrasAndNotice) {
  JobId id = 0;
  Job before;
  {
    auto s = Make();
    ASSERT_TRUE(s);
    auto e = s->Submit(alice_, ElasticJob(1, 4));
    ASSERT_TRUE(e);
    id = e->id;
    Tick(*s);
    Tick(*s);
    auto b = s->Submit(alice_, Whole(2));
    ASSERT_TRUE(b);
    Tick(*s);  // a shrink asked, not released yet
    before = Get(*s, id);
    ASSERT_EQ(before.elastic.releasing.size(), 2u);
  }
  auto s = Make({id});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->CheckInvariants(), "");
  Job after = Get(*s, id);
  EXPECT_EQ(after.state, JobState::kRunning);
  EXPECT_EQ(after.allocation.gpus, before.allocation.gpus);
  EXPECT_EQ(after.elastic, before.elastic);
  // The notice still runs: reclaimed at its deadline, then the 2-GPU job.
  now_ = before.elastic.release_by;
  Tick(*s);
  EXPECT_EQ(Get(*s, id).allocation.gpus.size(), 2u);
  auto jobs = s->List({});
  ASSERT_TRUE(jobs);
  int running = 0;
  for (const Job& j : *jobs) running += j.state == JobState::kRunning;
  EXPECT_EQ(running, 2);
}

// Per-worker mode needs a launcher that runs a process per worker (the
// local one); any other refuses it at submission, saying what to use.
TEST_F(ElasticServiceTest, PerWorkerNeedsALauncherThatRunsWorkers) {
  auto s = Make();
  ASSERT_TRUE(s);
  JobRequest r = ElasticJob(1, 2);
  r.elastic->mode = ElasticMode::kPerWorker;
  auto e = s->Submit(alice_, r);
  ASSERT_FALSE(e);
  EXPECT_THAT(e.error().message,
              HasSubstr("elastic.mode: this service's launcher cannot run a "
                        "process per worker"));
}

// Several fractional workers, one per GPU, all on one node.
TEST_F(ElasticServiceTest, FractionalWorkers) {
  auto s = Make();
  ASSERT_TRUE(s);
  JobRequest r = ElasticJob(2, 3);
  r.resources = Resources{0, 250, 4096, 0, 0};
  r.elastic->whole_gpus = false;
  auto e = s->Submit(alice_, r);
  ASSERT_TRUE(e) << e.error().message;
  Tick(*s);
  Job job = Get(*s, e->id);
  ASSERT_EQ(job.state, JobState::kRunning);
  // Its two guaranteed workers, and a third grown in the same round.
  ASSERT_EQ(launcher_->started.size(), 1u);
  EXPECT_EQ(launcher_->started[0].parts.at(0).gpu_indices.size(), 2u);
  ASSERT_EQ(job.allocation.gpus.size(), 3u);
  std::set<int> gpus;
  for (const GpuShare& g : job.allocation.gpus) {
    gpus.insert(g.gpu);
    EXPECT_EQ(g.milli, 250);
  }
  EXPECT_EQ(gpus.size(), 3u);
}

}  // namespace
}  // namespace tessera::scheduler
