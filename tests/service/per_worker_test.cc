// Per-worker elastic jobs (docs/elastic.md, "The two launch modes") on real
// processes: the local launcher starts one `sh` per worker, each writing
// its environment to a file; a grow starts a process with its own GPU, a
// shrink asked stops the extras' processes and their shares are released
// when they exit; the job ends when all its workers have, with its
// guaranteed workers' status; a restart adopts the live workers. Every
// wait polls against a generous deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "launch/launcher.h"
#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// NAME=value lines as written by `env`.
std::map<std::string, std::string> ReadEnv(const std::string& path) {
  std::map<std::string, std::string> env;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

bool Alive(int64_t pid) {
  if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) != 0) return false;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z';
}

class PerWorkerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make() {
    ServiceOptions o;
    o.topology = FourGpus();
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.kill_grace_s = 5;
    o.elastic_release_grace_s = 30;
    auto s = Service::Start(std::move(o),
                            launch::MakeLocalLauncher(dir_.File("logs")));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  // A worker: writes its pid and environment (each whole, then renamed),
  // says hello, then waits for
  // `stop<ID>` (exits with the code in it) or `stopall` (exits 0).
  JobRequest Workers(int min, int max) const {
    const std::string d = dir_.path().string();
    JobRequest r;
    r.name = "sweep";
    r.pool = "a";
    r.command = {"sh", "-c",
                 "w=" + d +
                     "/w$TESSERA_WORKER_ID; echo $$ > $w.pid.tmp; "
                     "mv $w.pid.tmp $w.pid; env > $w.env.tmp; mv $w.env.tmp "
                     "$w.env; echo hello from $TESSERA_WORKER_ID; "
                     "while :; do if [ -f " +
                     d + "/stop$TESSERA_WORKER_ID ]; then exit $(cat " + d +
                     "/stop$TESSERA_WORKER_ID); fi; if [ -f " + d +
                     "/stopall ]; then exit 0; fi; sleep 0.05; done"};
    r.resources = Resources{1, 0, 0, 0, 0};
    r.elastic = ElasticRequest{min, max, ElasticMode::kPerWorker, true};
    return r;
  }
  // A whole-GPU job that runs until `name` exists.
  JobRequest Blocker(int gpus, const std::string& name) const {
    JobRequest r;
    r.name = name;
    r.pool = "a";
    r.command = {"sh", "-c",
                 "while [ ! -f " + dir_.File(name) + " ]; do sleep 0.05; done"};
    r.resources = Resources{gpus, 0, 0, 0, 0};
    return r;
  }
  Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return (j && *j) ? **j : Job{};
  }
  // Ticks `s` until `done` holds (or gives up after 20 s).
  bool TickUntil(Service& s, const std::function<bool()>& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      s.Tick();
      EXPECT_EQ(s.CheckInvariants(), "");
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }
  bool Exists(const std::string& name) const {
    return std::filesystem::exists(dir_.File(name));
  }
  // Written whole, then renamed: a worker never reads half of it.
  void Touch(const std::string& name, const std::string& text = "") const {
    std::ofstream(dir_.File(name + ".tmp")) << text;
    std::filesystem::rename(dir_.File(name + ".tmp"), dir_.File(name));
  }
  int64_t Pid(int worker) const {
    std::ifstream in(dir_.File("w" + std::to_string(worker) + ".pid"));
    int64_t pid = 0;
    in >> pid;
    return pid;
  }
  // Worker `w`'s CUDA_VISIBLE_DEVICES as the allocation says.
  static std::string VisibleOf(const json& allocation, int w) {
    for (const json& x : allocation["workers"]) {
      if (x["worker"] == w) return x["cuda_visible_devices"];
    }
    return "?";
  }

  testlib::TempDir dir_;
  User alice_{"alice", "", false, ""};
};

TEST_F(PerWorkerTest, GrowsAndShrinksWithAProcessPerWorker) {
  auto s = Make();
  ASSERT_TRUE(s);
  auto a = s->Submit(alice_, Blocker(2, "a_done"));
  ASSERT_TRUE(a);
  ASSERT_TRUE(TickUntil(
      *s, [&] { return Get(*s, a->id).state == JobState::kRunning; }));
  auto e = s->Submit(alice_, Workers(1, 4));
  ASSERT_TRUE(e) << e.error().message;
  // Worker 0 starts, then worker 1 grows into the fourth GPU.
  ASSERT_TRUE(
      TickUntil(*s, [&] { return Exists("w0.env") && Exists("w1.env"); }));
  Job job = Get(*s, e->id);
  ASSERT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.elastic.workers, std::vector<int>({0, 1}));
  auto polled = s->WaitAllocation(e->id, -1, 0);
  ASSERT_TRUE(polled);
  json alloc = service::ElasticAllocationJson(*polled, s->topology());
  for (const int w : {0, 1}) {
    const auto env = ReadEnv(dir_.File("w" + std::to_string(w) + ".env"));
    EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), VisibleOf(alloc, w)) << w;
    EXPECT_EQ(env.at("TESSERA_WORKER_ID"), std::to_string(w));
    EXPECT_EQ(env.at("TESSERA_WORKER_GUARANTEED"), w == 0 ? "1" : "0");
    EXPECT_EQ(env.at("TESSERA_ELASTIC_MODE"), "per-worker");
    EXPECT_EQ(env.count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);  // whole
    EXPECT_EQ(env.at("TESSERA_JOB_ID"), std::to_string(e->id));
  }
  EXPECT_NE(VisibleOf(alloc, 0), VisibleOf(alloc, 1));

  // The 2-GPU job ends: two more worker processes, each on its own GPU.
  Touch("a_done");
  ASSERT_TRUE(
      TickUntil(*s, [&] { return Exists("w2.env") && Exists("w3.env"); }));
  polled = s->WaitAllocation(e->id, -1, 0);
  ASSERT_TRUE(polled);
  alloc = service::ElasticAllocationJson(*polled, s->topology());
  EXPECT_EQ(alloc["workers"].size(), 4u);
  std::set<std::string> visible;
  for (const int w : {0, 1, 2, 3}) {
    const auto env = ReadEnv(dir_.File("w" + std::to_string(w) + ".env"));
    EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), VisibleOf(alloc, w)) << w;
    visible.insert(env.at("CUDA_VISIBLE_DEVICES"));
  }
  EXPECT_EQ(visible.size(), 4u);

  // A 2-GPU job arrives: two extras are asked back; their processes get
  // SIGTERM, and their shares are released when they have exited, with no
  // POST /release; the newcomer then starts.
  auto b = s->Submit(alice_, Blocker(2, "b_done"));
  ASSERT_TRUE(b);
  ASSERT_TRUE(TickUntil(
      *s, [&] { return Get(*s, b->id).state == JobState::kRunning; }));
  job = Get(*s, e->id);
  EXPECT_EQ(job.allocation.gpus.size(), 2u);
  EXPECT_TRUE(job.elastic.releasing.empty());
  std::vector<std::string> actions;
  for (const ElasticChange& c : job.elastic.history)
    actions.push_back(c.action);
  EXPECT_THAT(actions, ::testing::Contains("shrink asked"));
  EXPECT_EQ(actions.back(), "released");
  EXPECT_THAT(actions, ::testing::Not(::testing::Contains("reclaimed")));
  int alive = 0;
  for (const int w : {0, 1, 2, 3}) {
    const bool held =
        std::find(job.elastic.workers.begin(), job.elastic.workers.end(), w) !=
        job.elastic.workers.end();
    EXPECT_EQ(Alive(Pid(w)), held) << "worker " << w;
    alive += Alive(Pid(w));
  }
  EXPECT_EQ(alive, 2);
  // Releasing by hand is for one-process jobs.
  auto by_hand = s->ReleaseWorkers(e->id, {job.elastic.workers.back()});
  ASSERT_FALSE(by_hand);
  EXPECT_THAT(by_hand.error().message, HasSubstr("runs a process per worker"));

  // Every worker ends: the job succeeds (its guaranteed worker exited 0).
  Touch("stopall");
  ASSERT_TRUE(TickUntil(*s, [&] { return IsTerminal(Get(*s, e->id).state); }));
  job = Get(*s, e->id);
  EXPECT_EQ(job.state, JobState::kSucceeded) << job.reason;
  EXPECT_TRUE(job.allocation.gpus.empty());
  // All workers wrote to the job's log: `tessera logs` shows them all.
  const std::string out = ReadFile(s->LogPath(e->id, false));
  for (const int w : {0, 1, 2, 3}) {
    EXPECT_THAT(out, HasSubstr("hello from " + std::to_string(w)));
  }
  Touch("b_done");
  ASSERT_TRUE(TickUntil(*s, [&] { return IsTerminal(Get(*s, b->id).state); }));
}

// Fractional workers: each process sees its own GPU with its share's MPS
// limits. An extra that ends on its own is released and the job grows no
// more; a guaranteed worker's failure fails the job, naming it.
TEST_F(PerWorkerTest, FractionalWorkersAndAFailingWorker) {
  auto s = Make();
  ASSERT_TRUE(s);
  JobRequest r = Workers(2, 3);
  r.resources = Resources{0, 250, 4096, 0, 0};
  r.elastic->whole_gpus = false;
  auto e = s->Submit(alice_, r);
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_TRUE(TickUntil(*s, [&] {
    return Exists("w0.env") && Exists("w1.env") && Exists("w2.env");
  }));
  std::set<std::string> visible;
  for (const int w : {0, 1, 2}) {
    const auto env = ReadEnv(dir_.File("w" + std::to_string(w) + ".env"));
    EXPECT_EQ(env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
    EXPECT_EQ(env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4096M");
    visible.insert(env.at("CUDA_VISIBLE_DEVICES"));
  }
  EXPECT_EQ(visible.size(), 3u);  // one GPU per worker

  Touch("stop2", "0");  // the extra ends on its own
  ASSERT_TRUE(TickUntil(
      *s, [&] { return Get(*s, e->id).allocation.gpus.size() == 2u; }));
  Job job = Get(*s, e->id);
  EXPECT_EQ(job.elastic.history.back().action, "ended");
  EXPECT_TRUE(job.elastic.grow_stopped);
  for (int i = 0; i < 5; ++i) s->Tick();  // GPUs are free, yet no regrow
  EXPECT_EQ(Get(*s, e->id).allocation.gpus.size(), 2u);

  Touch("stop1", "3");  // a guaranteed worker fails
  Touch("stop0", "0");
  ASSERT_TRUE(TickUntil(*s, [&] { return IsTerminal(Get(*s, e->id).state); }));
  job = Get(*s, e->id);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.reason, "worker 1: exit code 3");
  EXPECT_EQ(job.exit_code, 3);
}

// The service restarts: the live workers are adopted, an extra that ended
// meanwhile is released, and a cancel stops every worker.
TEST_F(PerWorkerTest, RestartAdoptsTheWorkers) {
  JobId id = 0;
  {
    auto s = Make();
    ASSERT_TRUE(s);
    auto e = s->Submit(alice_, Workers(1, 3));
    ASSERT_TRUE(e) << e.error().message;
    id = e->id;
    ASSERT_TRUE(TickUntil(*s, [&] {
      return Exists("w0.env") && Exists("w1.env") && Exists("w2.env");
    }));
  }
  // While the service is down, worker 2 ends.
  Touch("stop2", "0");
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Alive(Pid(2)) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto s = Make();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->CheckInvariants(), "");
  Job job = Get(*s, id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.elastic.workers, std::vector<int>({0, 1}));
  EXPECT_EQ(job.elastic.history.back().action, "ended");
  EXPECT_TRUE(Alive(Pid(0)));
  EXPECT_TRUE(Alive(Pid(1)));

  ASSERT_TRUE(s->Cancel(id, "test", &alice_));
  ASSERT_TRUE(TickUntil(*s, [&] { return IsTerminal(Get(*s, id).state); }));
  EXPECT_EQ(Get(*s, id).state, JobState::kCancelled);
  EXPECT_FALSE(Alive(Pid(0)));
  EXPECT_FALSE(Alive(Pid(1)));
}

}  // namespace
}  // namespace tessera::scheduler
