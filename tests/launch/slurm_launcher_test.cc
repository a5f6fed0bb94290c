// The Slurm launcher against fake Slurm commands (shell scripts in a
// temporary bin_dir): the error convention (controller down = transient,
// refusal = the job fails, a hung command is killed), the state mapping
// through Poll, adoption after a restart, and no double submission. The
// real Slurm runs in tests/slurm/.
#include "launch/slurm/slurm_launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/testlib/onnx_model_builder.h"

namespace tessera::launch {
namespace {

using ::testing::HasSubstr;

constexpr char kNodes[] =
    "NodeName=n1 Gres=gpu:idx0:1,gpu:idx1:1,shard:idx0:100,shard:idx1:100 "
    "State=IDLE\n";

// Fake sbatch/squeue/scontrol/scancel reading their answers from files in
// the same directory: sbatch.out/.err/.rc, jobs (scontrol show job),
// squeue.out; each call appends its arguments to calls.log.
class FakeSlurm {
 public:
  FakeSlurm() {
    const std::string d = dir_.path().string();
    Tool("sbatch", "[ -f " + d +
                       "/sbatch.sleep ] && sleep 5\n"
                       "cat " +
                       d +
                       "/sbatch.out 2>/dev/null\n"
                       "cat " +
                       d +
                       "/sbatch.err >&2 2>/dev/null\n"
                       "exit $(cat " +
                       d + "/sbatch.rc 2>/dev/null || echo 0)\n");
    Tool("squeue", "cat " + d + "/squeue.out 2>/dev/null; exit 0\n");
    Tool(
        "scontrol",
        "if [ \"$2\" = node ]; then cat " + d +
            "/nodes; exit 0; fi\n"
            "if [ -f " +
            d +
            "/down ]; then\n"
            "  echo 'slurm_load_jobs error: Unable to contact slurm controller "
            "(connect failure)' >&2; exit 1\n"
            "fi\n"
            "cat " +
            d + "/jobs 2>/dev/null; exit 0\n");
    Tool("scancel", "exit 0\n");
    Set("nodes", kNodes);
    Set("sbatch.out", "42\n");
  }
  void Tool(const std::string& name, const std::string& body) {
    const std::string path =
        dir_.Write(name, "#!/bin/sh\necho \"" + name + " $*\" >> " +
                             dir_.File("calls.log") + "\n" + body);
    chmod(path.c_str(), 0755);
  }
  // Atomically (a new file renamed over the old): the launcher's poller
  // runs the fake commands concurrently, and a file caught between
  // truncate and write reads as "Slurm does not know the job".
  void Set(const std::string& file, const std::string& text) {
    const std::string staged = dir_.Write(file + ".new", text);
    std::filesystem::rename(staged, dir_.File(file));
  }
  void Remove(const std::string& file) {
    std::filesystem::remove(dir_.File(file));
  }
  std::string Calls() {
    std::ifstream in(dir_.File("calls.log"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  SlurmOptions Options() const {
    SlurmOptions o;
    o.bin_dir = dir_.path().string();
    o.poll_interval_s = 0.05;
    o.command_timeout_s = 2;
    return o;
  }
  std::string LogDir() const { return dir_.File("logs"); }
  std::string Dir() const { return dir_.path().string(); }

 private:
  testlib::TempDir dir_;
};

LaunchSpec Spec(JobId id) {
  LaunchSpec spec;
  spec.id = id;
  spec.command = {"true"};
  LaunchPart part;
  part.node = "n1";
  part.gpu_indices = {1};
  part.gpu_milli = {250};
  part.gpu_memory_mib = {1024};
  spec.parts = {part};
  return spec;
}

std::vector<Exited> WaitForExit(Launcher& launcher) {
  for (int i = 0; i < 200; ++i) {
    std::vector<Exited> e = launcher.Poll();
    if (!e.empty()) return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

std::string Record(int64_t id, const std::string& name,
                   const std::string& state, const std::string& exit) {
  return "JobId=" + std::to_string(id) + " JobName=" + name +
         " JobState=" + state + " Reason=None ExitCode=" + exit + "\n";
}

TEST(SlurmLauncher, StartsAndFollowsTheJob) {
  FakeSlurm slurm;
  auto launcher = MakeSlurmLauncher(slurm.Options(), slurm.LogDir());
  EXPECT_TRUE(launcher->multi_node());
  slurm.Set("jobs", Record(42, "tessera-7", "RUNNING", "0:0"));
  auto launched = launcher->Start(Spec(7));
  ASSERT_TRUE(launched) << launched.error().message;
  EXPECT_EQ(launched->pid, 42);
  EXPECT_EQ(launched->start_time, 0);
  EXPECT_THAT(slurm.Calls(), HasSubstr("--gres=shard:idx1:25"));
  EXPECT_TRUE(std::filesystem::exists(slurm.LogDir() + "/7.sbatch"));
  EXPECT_EQ(launcher->LogPath(7, true), slurm.LogDir() + "/7.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(launcher->Poll().empty());  // still running
  slurm.Set("jobs", Record(42, "tessera-7", "FAILED", "3:0"));
  const auto exited = WaitForExit(*launcher);
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].id, 7);
  EXPECT_EQ(exited[0].exit_code, 3);
}

TEST(SlurmLauncher, MpsNodeNeedsMpsGresAndIsAskedAgainOnceConfigured) {
  FakeSlurm slurm;
  auto launcher = MakeSlurmLauncher(slurm.Options(), slurm.LogDir());
  LaunchSpec spec = Spec(7);
  spec.parts[0].mps = true;
  auto refused = launcher->Start(spec);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(refused.error().message,
              HasSubstr("node 'n1' is isolation: mps in the config, but "
                        "Slurm lists no mps GRES on it"));
  EXPECT_THAT(slurm.Calls(), ::testing::Not(HasSubstr("sbatch")));
  // The admin adds gres/mps: the next start sees it without a restart.
  slurm.Set("nodes",
            "NodeName=n1 Gres=gpu:idx0:1,gpu:idx1:1,mps:idx0:100,"
            "mps:idx1:100 State=IDLE\n");
  slurm.Set("jobs", Record(42, "tessera-7", "RUNNING", "0:0"));
  auto launched = launcher->Start(spec);
  ASSERT_TRUE(launched) << launched.error().message;
  EXPECT_THAT(slurm.Calls(), HasSubstr("--gres=mps:idx1:25"));
}

TEST(SlurmLauncher, CancelIsScancelAndEndsCancelled) {
  FakeSlurm slurm;
  auto launcher = MakeSlurmLauncher(slurm.Options(), slurm.LogDir());
  slurm.Set("jobs", Record(42, "tessera-7", "RUNNING", "0:0"));
  // Like Slurm's, this scancel ends the job.
  slurm.Tool("scancel",
             "echo '" + Record(42, "tessera-7", "CANCELLED", "0:15") + "' > " +
                 slurm.Dir() + "/jobs.new && mv " + slurm.Dir() + "/jobs.new " +
                 slurm.Dir() + "/jobs\n");
  ASSERT_TRUE(launcher->Start(Spec(7)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(launcher->Poll().empty());  // running until cancelled
  launcher->Stop(7, 10);
  const auto exited = WaitForExit(*launcher);
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_TRUE(exited[0].cancelled);
  EXPECT_THAT(slurm.Calls(), HasSubstr("scancel 42"));
}

TEST(SlurmLauncher, ControllerDownIsTransientUntilItAnswersAgain) {
  FakeSlurm slurm;
  auto launcher = MakeSlurmLauncher(slurm.Options(), slurm.LogDir());
  slurm.Set("sbatch.err",
            "sbatch: error: Batch job submission failed: Unable to contact "
            "slurm controller (connect failure)\n");
  slurm.Set("sbatch.out", "");
  slurm.Set("sbatch.rc", "1");
  slurm.Set("down", "");
  auto first = launcher->Start(Spec(1));
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(first.error().message,
              HasSubstr("Slurm unreachable: sbatch: sbatch: error: Batch job "
                        "submission failed: Unable to contact slurm "
                        "controller"));
  // While the poller cannot reach it, Start fails at once.
  slurm.Remove("sbatch.err");
  slurm.Set("sbatch.rc", "0");
  slurm.Set("sbatch.out", "43\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto second = launcher->Start(Spec(1));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  // Back up: the next Start goes through.
  slurm.Remove("down");
  bool started = false;
  for (int i = 0; i < 100 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    started = launcher->Start(Spec(1)).has_value();
  }
  EXPECT_TRUE(started);
}

TEST(SlurmLauncher, ARefusedSubmissionFailsTheJob) {
  FakeSlurm slurm;
  auto launcher = MakeSlurmLauncher(slurm.Options(), slurm.LogDir());
  slurm.Set("sbatch.err",
            "sbatch: error: invalid partition specified: nope\n"
            "sbatch: error: Batch job submission failed: Invalid partition "
            "name specified\n");
  slurm.Set("sbatch.out", "");
  slurm.Set("sbatch.rc", "1");
  auto r = launcher->Start(Spec(1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(r.error().message,
            "Slurm refused the job: sbatch: sbatch: error: Batch job "
            "submission failed: Invalid partition name specified");
}

TEST(SlurmLauncher, AHungCommandIsKilledAndRetried) {
  FakeSlurm slurm;
  SlurmOptions options = slurm.Options();
  options.command_timeout_s = 0.3;
  auto launcher = MakeSlurmLauncher(options, slurm.LogDir());
  slurm.Set("sbatch.sleep", "");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = launcher->Start(Spec(1));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("sbatch: timed out"));
  EXPECT_LT(took, 3);
}

TEST(SlurmLauncher, AJobLeftInSlurmIsTakenOverNotSubmittedTwice) {
  FakeSlurm slurm;
  SlurmOptions options = slurm.Options();
  options.instance = "abcd0123";
  auto launcher = MakeSlurmLauncher(options, slurm.LogDir());
  // Another service's (database's) job of the same id is not ours.
  slurm.Set("squeue.out",
            "40|tessera-9|tessera job 9 of bob [ffff0000]\n"
            "41+0|tessera-9|tessera job 9 of bob [abcd0123]\n"
            "41+1|tessera-9|tessera job 9 of bob [abcd0123]\n");
  auto r = launcher->Start(Spec(9));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pid, 41);
  EXPECT_THAT(slurm.Calls(), ::testing::Not(HasSubstr("sbatch")));
}

TEST(SlurmLauncher, AdoptsItsJobsAfterARestart) {
  FakeSlurm slurm;
  slurm.Set("jobs", Record(50, "tessera-1", "COMPLETED", "0:0") +
                        Record(51, "tessera-2", "RUNNING", "0:0") +
                        Record(52, "someone-else", "RUNNING", "0:0"));
  auto launcher = MakeSlurmLauncher(slurm.Options(), slurm.LogDir());
  EXPECT_TRUE(launcher->Adopt(1, 50, 0));         // ended meanwhile
  EXPECT_TRUE(launcher->Adopt(2, 51, 0));         // still running
  EXPECT_FALSE(launcher->Adopt(3, 52, 0));        // not tessera's
  EXPECT_TRUE(launcher->Adopt(4, 53, 0));         // purged from Slurm's memory
  EXPECT_FALSE(launcher->Adopt(5, 1234, 98765));  // a local process
  std::vector<Exited> all;
  for (int i = 0; i < 100 && all.size() < 2; ++i) {
    for (Exited& e : launcher->Poll()) all.push_back(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(all.size(), 2u);
  std::sort(all.begin(), all.end(),
            [](const Exited& a, const Exited& b) { return a.id < b.id; });
  EXPECT_EQ(all[0].id, 1);
  EXPECT_EQ(all[0].exit_code, 0);
  EXPECT_EQ(all[1].id, 4);
  EXPECT_FALSE(all[1].exit_code);
  EXPECT_THAT(all[1].reason, HasSubstr("lost: unknown to Slurm"));
}

TEST(SlurmLauncher, AJobPendingTooLongIsCancelledAndFails) {
  FakeSlurm slurm;
  SlurmOptions options = slurm.Options();
  options.pending_timeout_s = 0.2;
  slurm.Set("jobs",
            "JobId=42 JobName=tessera-7 JobState=PENDING "
            "Reason=Resources ExitCode=0:0\n");
  auto launcher = MakeSlurmLauncher(options, slurm.LogDir());
  ASSERT_TRUE(launcher->Start(Spec(7)));
  const auto exited = WaitForExit(*launcher);
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_FALSE(exited[0].cancelled);
  EXPECT_THAT(exited[0].reason,
              HasSubstr("never started: Slurm kept Slurm job 42 pending"));
  EXPECT_THAT(exited[0].reason, HasSubstr("Reason=Resources"));
  for (int i = 0;
       i < 100 && slurm.Calls().find("scancel 42") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(slurm.Calls(), HasSubstr("scancel 42"));
}

TEST(SlurmLauncher, CheckSlurmCommands) {
  FakeSlurm slurm;
  EXPECT_TRUE(CheckSlurmCommands(slurm.Options()).ok());
  SlurmOptions missing;
  missing.bin_dir = "/nonexistent";
  EXPECT_FALSE(CheckSlurmCommands(missing).ok());
}

}  // namespace
}  // namespace tessera::launch
