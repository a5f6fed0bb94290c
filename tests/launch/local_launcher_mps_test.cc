// The local launcher's MPS clients (issue 31): a fractional part on a node
// of isolation mps runs as a client of the launcher's MPS control daemon,
// which is checked before each such start and started (again) when it does
// not answer; when it cannot be, the start fails as transient. Whole GPUs
// and unisolated fractions never touch the daemon. Through the fake control
// program of fake_mps_control.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "launch/launcher.h"
#include "tests/launch/fake_mps_control.h"
#include "tests/launch/launcher_waits.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::launch {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using waits::WaitForExit;
using waits::WaitUntil;

// A part of node0 on GPU 0: a fraction (250 milli, 4 GiB) or the whole
// GPU, of an mps node or not.
LaunchPart Part(bool mps, bool exclusive) {
  LaunchPart p;
  p.node = "node0";
  p.gpu_indices = {0};
  p.gpu_milli = {exclusive ? 1000 : 250};
  p.gpu_memory_mib = {exclusive ? 81920 : 4096};
  p.exclusive = exclusive;
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  p.mps = mps;
  return p;
}

class LocalLauncherMpsTest : public ::testing::Test {
 protected:
  std::string File(const std::string& name) const { return dir_.File(name); }
  std::string MpsDir() const { return File("mps"); }
  std::string ControlLog() const { return MpsDir() + "/log/control.log"; }
  std::vector<std::string> Calls() const {
    return testing::FileLines(testing::FakeMpsCalls(control_));
  }
  int DashD() const {
    int n = 0;
    for (const std::string& c : Calls()) n += c == "-d";
    return n;
  }

  std::unique_ptr<Launcher> Make(const std::string& control) {
    MpsOptions mps;
    mps.control = control;
    mps.dir = MpsDir();
    mps.timeout_s = 5;
    return MakeLocalLauncher(File("logs"), std::move(mps));
  }

  // Job `id` writes its environment to env-<id> and exits.
  LaunchSpec EnvJob(JobId id, LaunchPart part) const {
    LaunchSpec spec;
    spec.id = id;
    spec.command = {"sh", "-c", "env > '" + EnvFile(id) + "'"};
    spec.log_dir = File("logs");
    spec.env = {{"JOB_OWN", "kept"}};
    spec.parts = {std::move(part)};
    return spec;
  }
  std::string EnvFile(JobId id) const {
    return File("env-" + std::to_string(id));
  }

  // Runs `spec` to its end; its environment, one variable a line.
  std::vector<std::string> RunForEnv(Launcher& launcher,
                                     const LaunchSpec& spec) {
    auto launched = launcher.Start(spec);
    EXPECT_TRUE(launched) << launched.error().message;
    if (!launched) return {};
    auto e = WaitForExit(launcher, spec.id);
    EXPECT_TRUE(e);
    if (e) {
      EXPECT_EQ(e->exit_code, 0) << e->reason;
    }
    return testing::FileLines(EnvFile(spec.id));
  }

  std::string PipeVar() const {
    return "CUDA_MPS_PIPE_DIRECTORY=" + MpsDir() + "/pipe";
  }
  std::string LogVar() const {
    return "CUDA_MPS_LOG_DIRECTORY=" + MpsDir() + "/log";
  }

  testlib::TempDir dir_;
  std::string control_ = testing::WriteFakeMpsControl(File("mps-control"));
};

TEST_F(LocalLauncherMpsTest, AFractionRunsAsAClientOfTheDaemonItStarts) {
  auto launcher = Make(control_);
  const std::vector<std::string> env =
      RunForEnv(*launcher, EnvJob(1, Part(/*mps=*/true, false)));
  EXPECT_THAT(env, Contains(PipeVar()));
  EXPECT_THAT(env, Contains(LogVar()));
  EXPECT_THAT(env, Contains("JOB_OWN=kept"));  // its own still there
  // Checked (it did not answer), started once, checked until it answered.
  EXPECT_EQ(testing::FakeMpsStarts(ControlLog()), 1);
  EXPECT_EQ(DashD(), 1);
  ASSERT_FALSE(Calls().empty());
  EXPECT_EQ(Calls().front(), "get_server_list");
  EXPECT_TRUE(std::filesystem::exists(MpsDir() + "/pipe/running"));

  // Running: the next fractional start checks it and starts nothing.
  const size_t calls = Calls().size();
  EXPECT_THAT(RunForEnv(*launcher, EnvJob(2, Part(true, false))),
              Contains(PipeVar()));
  EXPECT_EQ(DashD(), 1);
  EXPECT_EQ(Calls().size(), calls + 1);
  EXPECT_EQ(Calls().back(), "get_server_list");
}

TEST_F(LocalLauncherMpsTest, ADeadDaemonIsStartedAgainBeforeTheNextFraction) {
  auto launcher = Make(control_);
  ASSERT_THAT(RunForEnv(*launcher, EnvJob(1, Part(true, false))),
              Contains(PipeVar()));
  ASSERT_EQ(DashD(), 1);
  // The daemon dies.
  ASSERT_TRUE(std::filesystem::remove(MpsDir() + "/pipe/running"));
  const std::vector<std::string> env =
      RunForEnv(*launcher, EnvJob(2, Part(true, false)));
  EXPECT_THAT(env, Contains(PipeVar()));
  EXPECT_THAT(env, Contains(LogVar()));
  EXPECT_EQ(DashD(), 2);
  EXPECT_EQ(testing::FakeMpsStarts(ControlLog()), 2);
  EXPECT_TRUE(std::filesystem::exists(MpsDir() + "/pipe/running"));
  // Dies again, and again it is started.
  ASSERT_TRUE(std::filesystem::remove(MpsDir() + "/pipe/running"));
  RunForEnv(*launcher, EnvJob(3, Part(true, false)));
  EXPECT_EQ(DashD(), 3);
}

TEST_F(LocalLauncherMpsTest, ADaemonThatCannotStartFailsTheStartAsTransient) {
  auto launcher = Make(testing::WriteFakeMpsControl(
      File("failing-control"), testing::FakeMps::kFailing));
  auto launched = launcher->Start(EnvJob(5, Part(true, false)));
  ASSERT_FALSE(launched);
  EXPECT_EQ(launched.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(launched.error().message, HasSubstr("job 5: not started"));
  EXPECT_THAT(launched.error().message,
              HasSubstr("the MPS control daemon (" + MpsDir() + ")"));
  EXPECT_THAT(launched.error().message,
              HasSubstr("An instance of this daemon is already running"));
  // Nothing ran.
  EXPECT_FALSE(std::filesystem::exists(EnvFile(5)));
  EXPECT_FALSE(std::filesystem::exists(File("logs/5.pid")));
  EXPECT_TRUE(launcher->Poll().empty());

  // A control program that is not there: the same, naming it.
  auto missing = Make(File("no-such-control"));
  auto not_there = missing->Start(EnvJob(6, Part(true, false)));
  ASSERT_FALSE(not_there);
  EXPECT_EQ(not_there.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(not_there.error().message, HasSubstr("job 6: not started"));
  EXPECT_THAT(not_there.error().message, HasSubstr(MpsDir()));
  EXPECT_THAT(not_there.error().message, HasSubstr("no-such-control"));
  EXPECT_FALSE(std::filesystem::exists(EnvFile(6)));

  // Silent after its start: the error points at its log.
  MpsOptions quick;
  quick.control = testing::WriteFakeMpsControl(File("silent-control"),
                                               testing::FakeMps::kSilent);
  quick.dir = MpsDir();
  quick.timeout_s = 0.3;
  auto silent = MakeLocalLauncher(File("logs"), quick);
  auto no_answer = silent->Start(EnvJob(7, Part(true, false)));
  ASSERT_FALSE(no_answer);
  EXPECT_EQ(no_answer.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(no_answer.error().message, HasSubstr("did not answer"));
  EXPECT_THAT(no_answer.error().message, HasSubstr(MpsDir() + "/log"));
}

TEST_F(LocalLauncherMpsTest, WholeGpusAndUnisolatedFractionsNeverTouchIt) {
  auto launcher = Make(control_);
  // A whole GPU of an mps node: not a client.
  std::vector<std::string> env =
      RunForEnv(*launcher, EnvJob(1, Part(/*mps=*/true, /*exclusive=*/true)));
  ASSERT_THAT(env, Not(IsEmpty()));
  EXPECT_THAT(env, Not(Contains(PipeVar())));
  EXPECT_THAT(env, Not(Contains(LogVar())));
  // A fraction of a node without isolation.
  env = RunForEnv(*launcher, EnvJob(2, Part(false, false)));
  ASSERT_THAT(env, Not(IsEmpty()));
  EXPECT_THAT(env, Not(Contains(PipeVar())));
  // A part of an mps node with no GPU (CPU only).
  LaunchPart cpu_only = Part(true, false);
  cpu_only.gpu_indices.clear();
  cpu_only.gpu_milli.clear();
  cpu_only.gpu_memory_mib.clear();
  env = RunForEnv(*launcher, EnvJob(3, cpu_only));
  ASSERT_THAT(env, Not(IsEmpty()));
  EXPECT_THAT(env, Not(Contains(PipeVar())));
  // No part at all.
  LaunchSpec bare = EnvJob(4, Part(true, false));
  bare.parts.clear();
  env = RunForEnv(*launcher, bare);
  EXPECT_THAT(env, Not(Contains(PipeVar())));
  // The control program was never run.
  EXPECT_THAT(Calls(), IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(MpsDir()));
}

TEST_F(LocalLauncherMpsTest, WithoutADaemonAnMpsFractionIsInfeasible) {
  auto launcher = MakeLocalLauncher(File("logs"));  // no MpsOptions
  auto launched = launcher->Start(EnvJob(8, Part(true, false)));
  ASSERT_FALSE(launched);
  EXPECT_EQ(launched.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(launched.error().message,
              HasSubstr("job 8: its node's isolation is mps"));
  EXPECT_THAT(launched.error().message,
              HasSubstr("manages no MPS control daemon"));
  EXPECT_FALSE(std::filesystem::exists(EnvFile(8)));
  // Whole GPUs of the node, and unisolated fractions, start as before.
  EXPECT_THAT(RunForEnv(*launcher, EnvJob(9, Part(true, true))),
              Not(Contains(PipeVar())));
  EXPECT_THAT(RunForEnv(*launcher, EnvJob(10, Part(false, false))),
              Not(IsEmpty()));
}

TEST_F(LocalLauncherMpsTest, PerWorkerProcessesAreClientsToo) {
  auto launcher = Make(control_);
  ASSERT_TRUE(launcher->per_worker());
  // Each worker writes its environment to env-w<W> (whole, by a rename),
  // then waits for `stop`.
  const std::string stop = File("stop");
  LaunchSpec spec = EnvJob(11, Part(true, false));
  spec.command = {"sh", "-c",
                  "env > '" + File("tmp-w") + "'$W && mv '" + File("tmp-w") +
                      "'$W '" + File("env-w") + "'$W; while [ ! -f '" + stop +
                      "' ]; do sleep 0.02; done"};
  spec.workers = {{0, {{"W", "0"}}}};
  spec.guaranteed_workers = 1;
  auto launched = launcher->Start(spec);
  ASSERT_TRUE(launched) << launched.error().message;
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(File("env-w0")); }));
  EXPECT_EQ(DashD(), 1);

  // The daemon dies; a grow's new worker restarts it and is its client.
  ASSERT_TRUE(std::filesystem::remove(MpsDir() + "/pipe/running"));
  LaunchSpec grow = spec;
  grow.workers = {{1, {{"W", "1"}}}};
  ASSERT_TRUE(launcher->StartWorkers(grow).ok());
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(File("env-w1")); }));
  EXPECT_EQ(DashD(), 2);
  for (const char* w : {"env-w0", "env-w1"}) {
    const std::vector<std::string> env = testing::FileLines(File(w));
    EXPECT_THAT(env, Contains(PipeVar())) << w;
    EXPECT_THAT(env, Contains(LogVar())) << w;
    EXPECT_THAT(env, Contains("JOB_OWN=kept")) << w;
  }
  EXPECT_THAT(testing::FileLines(File("env-w1")), Contains("W=1"));

  // The daemon cannot start: the grow fails, the job runs on.
  ASSERT_TRUE(std::filesystem::remove(MpsDir() + "/pipe/running"));
  testing::WriteFakeMpsControl(control_, testing::FakeMps::kFailing);
  grow.workers = {{2, {{"W", "2"}}}};
  const Status refused = launcher->StartWorkers(grow);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(refused.error().message, HasSubstr("job 11: not started"));
  EXPECT_FALSE(std::filesystem::exists(File("env-w2")));

  std::ofstream(stop).close();
  auto e = WaitForExit(*launcher, 11);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 0) << e->reason;
}

}  // namespace
}  // namespace tessera::launch
