// The Slurm launcher against a real Slurm (tests/slurm/slurm_up.sh: node n1
// with pinned GPUs, n2 with untyped GRES; fake GPUs): what a job sees, two
// fractions on one GPU, a split job as a heterogeneous job over both nodes,
// cancel, exit codes, refusals, an unreachable controller, and a launcher
// that restarts while its jobs run or end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "launch/slurm/slurm_launcher.h"
#include "tests/slurm/slurm_cluster.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {
namespace {

using slurm_test::ReadText;
using slurm_test::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LauncherOnSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_NEED_SLURM(conf_);
    options_.slurm_conf = conf_;
    options_.partition = "gpu";
    options_.poll_interval_s = 0.2;
    options_.instance = "launcher-test";
    // Distinct job names per test, so that no test takes over another's.
    options_.job_prefix = slurm_test::TestJobPrefix("lt");
  }

  void TearDown() override {
    if (!conf_.empty()) {
      slurm_test::CancelJobsNamed(conf_, options_.job_prefix);
    }
  }

  std::unique_ptr<launch::Launcher> Make() {
    return launch::MakeSlurmLauncher(options_, dir_.File("logs"));
  }

  static launch::LaunchPart Part(const std::string& node, std::vector<int> gpus,
                                 int milli) {
    launch::LaunchPart p;
    p.node = node;
    p.gpu_indices = std::move(gpus);
    p.gpu_milli.assign(p.gpu_indices.size(), milli);
    p.gpu_memory_mib.assign(p.gpu_indices.size(), 1024);
    p.exclusive = milli == 1000;
    return p;
  }

  launch::LaunchSpec Spec(JobId id, std::vector<launch::LaunchPart> parts,
                          std::vector<std::string> command) {
    launch::LaunchSpec spec;
    spec.id = id;
    spec.user = "alice";
    spec.command = std::move(command);
    spec.env = {{"TESSERA_JOB_ID", std::to_string(id)},
                {"CUDA_VISIBLE_DEVICES", "tessera's, overridden"}};
    spec.parts = std::move(parts);
    return spec;
  }

  // Waits for job `id`'s exit; exits of other jobs that Poll returns
  // meanwhile are kept for their own wait.
  std::optional<launch::Exited> WaitForExit(launch::Launcher& launcher,
                                            JobId id, double seconds = 30) {
    WaitUntil(seconds, [&] {
      for (launch::Exited& e : launcher.Poll()) exits_[e.id] = std::move(e);
      return exits_.count(id) > 0;
    });
    auto it = exits_.find(id);
    if (it == exits_.end()) {
      // Everything that says why: the queue, every record of the job
      // (a heterogeneous job's components too), the job's own output and
      // what the node daemons logged last.
      std::string logs;
      for (const char* log :
           {"slurmctld.log", "slurmd-n1.log", "slurmd-n2.log"}) {
        const std::string text =
            ReadText(std::string(TESSERA_SLURM_DIR) + "/log/" + log);
        logs += std::string("\n--- ") + log + " (last lines)\n" +
                text.substr(text.size() > 4000 ? text.size() - 4000 : 0);
      }
      ADD_FAILURE()
          << "job " << id << " did not end within " << seconds
          << " s; Slurm says: "
          << slurm_test::Slurm(
                 conf_, {"squeue", "--states=all", "--format=%i %j %T %R %b"})
                 .out
          << slurm_test::Slurm(conf_, {"scontrol", "show", "job", "-d"}).out
          << "\n--- the job's output\n"
          << Out(id) << logs;
      return std::nullopt;
    }
    launch::Exited e = it->second;
    exits_.erase(it);
    return e;
  }

  std::string Out(JobId id) {
    return ReadText(dir_.File("logs") + "/" + std::to_string(id) + ".out");
  }

  std::string conf_;
  launch::SlurmOptions options_;
  std::map<JobId, launch::Exited> exits_;  // seen by Poll, not yet waited for
  testlib::TempDir dir_;
};

TEST_F(LauncherOnSlurm, AFractionRunsOnAShardOfItsGpu) {
  auto launcher = Make();
  auto launched = launcher->Start(
      Spec(1, {Part("n1", {2}, 250)},
           {"sh", "-c",
            "echo CVD=$CUDA_VISIBLE_DEVICES SHARDS=$SLURM_SHARDS_ON_NODE "
            "JOB=$TESSERA_JOB_ID MPS=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
            "NODE=$TESSERA_NODE SLURMD=$SLURMD_NODENAME"}));
  ASSERT_TRUE(launched) << launched.error().message;
  EXPECT_GT(launched->pid, 0);
  const auto exited = WaitForExit(*launcher, 1);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit_code, 0) << exited->reason;
  // n1's GPUs are pinned: Slurm gave GPU 2 itself, 25 of its 100 shards.
  EXPECT_THAT(Out(1), HasSubstr("CVD=2 SHARDS=25 JOB=1 MPS=25 NODE=n1 "
                                "SLURMD=n1"));
}

TEST_F(LauncherOnSlurm, TwoFractionsShareOneGpu) {
  auto launcher = Make();
  // Both run until the test creates the gate file.
  const std::string gate = dir_.File("gate");
  for (JobId id : {1, 2}) {
    auto launched =
        launcher->Start(Spec(id, {Part("n1", {1}, 500)},
                             {"sh", "-c",
                              "echo CVD=$CUDA_VISIBLE_DEVICES; while [ ! -e " +
                                  gate + " ]; do sleep 0.1; done"}));
    ASSERT_TRUE(launched) << launched.error().message;
  }
  // Both run at once on GPU 1 (each 50 of its 100 shards).
  const bool together = WaitUntil(15, [&] {
    int running = 0;
    const auto r = slurm_test::Slurm(
        conf_,
        {"squeue", "--noheader", "--states=RUNNING",
         "--name=" + options_.job_prefix + "-1," + options_.job_prefix + "-2",
         "--format=%i %b"});
    for (char c : r.out) running += c == '\n';
    return running == 2;
  });
  EXPECT_TRUE(together) << "not both running in Slurm at once";
  std::ofstream(gate).put('\n');
  for (JobId id : {1, 2}) {
    const auto exited = WaitForExit(*launcher, id);
    ASSERT_TRUE(exited);
    EXPECT_EQ(exited->exit_code, 0);
    EXPECT_THAT(Out(id), HasSubstr("CVD=1"));
  }
}

TEST_F(LauncherOnSlurm, ASplitJobIsOneHeterogeneousJobOverBothNodes) {
  auto launcher = Make();
  launch::LaunchPart first = Part("n1", {0, 3}, 300);
  first.cpu_milli = 2000;
  auto launched = launcher->Start(Spec(
      1, {first, Part("n2", {1}, 400)},
      {"sh", "-c",
       "echo part=$TESSERA_PART node=$TESSERA_NODE slurmd=$SLURMD_NODENAME "
       "cvd=$CUDA_VISIBLE_DEVICES mem=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}));
  ASSERT_TRUE(launched) << launched.error().message;
  // One heterogeneous job: a component per node, started together.
  const auto components = slurm_test::ShowJob(conf_, launched->pid);
  ASSERT_EQ(components.size(), 2u);
  EXPECT_EQ(components[0].het_job_id, launched->pid);
  EXPECT_EQ(components[1].het_job_id, launched->pid);
  const auto exited = WaitForExit(*launcher, 1, 60);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit_code, 0) << exited->reason;
  const std::string out = Out(1);
  EXPECT_THAT(out, HasSubstr("part=0 node=n1 slurmd=n1 cvd=0,3 "
                             "mem=0=1024M,1=1024M"));
  // n2's GPUs are not pinned: Slurm picks one of them.
  EXPECT_THAT(out, HasSubstr("part=1 node=n2 slurmd=n2 cvd="));
  EXPECT_THAT(out, HasSubstr("mem=0=1024M\n"));
}

// The other part would sleep for 10 minutes: the job ends well before only
// if the script stopped it. The wait leaves Slurm room to finish the
// stopped part (SIGTERM, KillWait, SIGKILL, the nodes' completion, up to
// UnkillableStepTimeout on a loaded machine) instead of racing its sleep.
TEST_F(LauncherOnSlurm, APartThatFailsFailsTheSplitJob) {
  auto launcher = Make();
  auto launched = launcher->Start(Spec(
      1, {Part("n1", {1}, 200), Part("n2", {0}, 200)},
      {"sh", "-c", "[ \"$TESSERA_PART\" = 1 ] && exit 6; exec sleep 600"}));
  ASSERT_TRUE(launched) << launched.error().message;
  const auto exited = WaitForExit(*launcher, 1, 150);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit_code, 6) << exited->reason;
}

TEST_F(LauncherOnSlurm, WholeGpus) {
  auto launcher = Make();
  for (const char* node : {"n1", "n2"}) {
    auto launched =
        launcher->Start(Spec(node[1] - '0', {Part(node, {1, 2}, 1000)},
                             {"sh", "-c",
                              "echo CVD=$CUDA_VISIBLE_DEVICES MPS=${CUDA_MPS_"
                              "ACTIVE_THREAD_PERCENTAGE:-none}"}));
    ASSERT_TRUE(launched) << launched.error().message;
  }
  for (JobId id : {1, 2}) {
    const auto exited = WaitForExit(*launcher, id);
    ASSERT_TRUE(exited);
    EXPECT_EQ(exited->exit_code, 0);
  }
  EXPECT_THAT(Out(1), HasSubstr("CVD=1,2 MPS=none"));  // pinned
  EXPECT_THAT(Out(2), HasSubstr("MPS=none"));          // two of Slurm's
}

TEST_F(LauncherOnSlurm, CancelEndsTheSlurmJob) {
  auto launcher = Make();
  auto launched =
      launcher->Start(Spec(1, {Part("n2", {0}, 100)}, {"sleep", "300"}));
  ASSERT_TRUE(launched) << launched.error().message;
  ASSERT_TRUE(WaitUntil(10, [&] {
    const auto j = slurm_test::ShowJob(conf_, launched->pid);
    return !j.empty() && j[0].state == "RUNNING";
  }));
  launcher->Stop(1, 10);
  const auto exited = WaitForExit(*launcher, 1);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->cancelled);
  EXPECT_EQ(slurm_test::ShowJob(conf_, launched->pid)[0].state, "CANCELLED");
}

TEST_F(LauncherOnSlurm, AFailingCommandEndsWithItsExitCode) {
  auto launcher = Make();
  ASSERT_TRUE(launcher->Start(
      Spec(1, {Part("n1", {0}, 100)}, {"sh", "-c", "echo oops >&2; exit 7"})));
  ASSERT_TRUE(launcher->Start(
      Spec(2, {Part("n1", {0}, 100)}, {"no-such-program-tessera"})));
  const auto seven = WaitForExit(*launcher, 1);
  ASSERT_TRUE(seven);
  EXPECT_EQ(seven->exit_code, 7);
  EXPECT_THAT(ReadText(launcher->LogPath(1, true)), HasSubstr("oops"));
  const auto missing = WaitForExit(*launcher, 2);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exit_code, 127);
}

TEST_F(LauncherOnSlurm, SlurmsRefusalsFailTheJobWithItsMessage) {
  options_.partition = "nope";
  auto launcher = Make();
  auto r = launcher->Start(Spec(1, {Part("n1", {0}, 100)}, {"true"}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(r.error().message, HasSubstr("Invalid partition name"));
  options_.partition = "gpu";
  launcher = Make();
  r = launcher->Start(Spec(2, {Part("n7", {0}, 100)}, {"true"}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("'n7' is not a Slurm node"));
  r = launcher->Start(Spec(3, {Part("n2", {0, 1}, 300)}, {"true"}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("untyped shard GRES"));
}

TEST_F(LauncherOnSlurm, AnUnreachableControllerIsTransient) {
  // The cluster's config with the controller on a port nobody listens on.
  std::string text = ReadText(conf_);
  const size_t at = text.find("SlurmctldPort=");
  ASSERT_NE(at, std::string::npos);
  const size_t end = text.find('\n', at);
  text.replace(at, end - at, "SlurmctldPort=9");
  const std::string dead = dir_.Write("slurm.conf", text);
  options_.slurm_conf = dead;
  options_.command_timeout_s = 2;
  auto launcher = Make();
  auto r = launcher->Start(Spec(1, {Part("n1", {0}, 100)}, {"true"}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("Slurm unreachable"));
}

TEST_F(LauncherOnSlurm, ARestartedLauncherRecoversRunningAndEndedJobs) {
  int64_t running = 0, ended = 0;
  {
    auto launcher = Make();
    auto a = launcher->Start(
        Spec(1, {Part("n1", {3}, 100)}, {"sh", "-c", "sleep 3; exit 5"}));
    auto b = launcher->Start(
        Spec(2, {Part("n2", {0}, 100)}, {"sh", "-c", "exit 4"}));
    ASSERT_TRUE(a && b);
    running = a->pid;
    ended = b->pid;
  }  // the launcher (service) is gone; the jobs are not
  ASSERT_TRUE(WaitUntil(15, [&] {
    const auto j = slurm_test::ShowJob(conf_, ended);
    return !j.empty() && j[0].state == "FAILED";
  }));
  auto launcher = Make();
  EXPECT_TRUE(launcher->Adopt(1, running, 0));
  EXPECT_TRUE(launcher->Adopt(2, ended, 0));
  EXPECT_FALSE(launcher->Adopt(3, running, 0));  // not job 3's
  const auto four = WaitForExit(*launcher, 2);
  ASSERT_TRUE(four);
  EXPECT_EQ(four->exit_code, 4);
  const auto five = WaitForExit(*launcher, 1);
  ASSERT_TRUE(five);
  EXPECT_EQ(five->exit_code, 5);
}

}  // namespace
}  // namespace tessera::scheduler
