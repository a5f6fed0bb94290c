// The local launcher on real processes: logs and exit codes, errors at
// Start, SIGTERM then SIGKILL on Stop, adoption checked by start time, and
// each job in its own process group. Every wait polls against a generous
// deadline; nothing assumes how fast the machine is.
#include "launch/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "tests/launch/launcher_waits.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::launch {
namespace {

using ::testing::HasSubstr;
using waits::Clock;
using waits::kPatience;
using waits::WaitForExit;
using waits::WaitUntil;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether `pid` exists and has not ended (a zombie has ended).
bool Alive(int64_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

LaunchSpec Spec(JobId id, std::vector<std::string> command,
                const std::string& log_dir) {
  LaunchSpec spec;
  spec.id = id;
  spec.command = std::move(command);
  spec.log_dir = log_dir;
  return spec;
}

class LocalLauncherTest : public ::testing::Test {
 protected:
  std::string LogDir() const { return dir_.File("logs"); }
  testlib::TempDir dir_;
  std::unique_ptr<Launcher> launcher_ = MakeLocalLauncher(dir_.File("logs"));
};

TEST_F(LocalLauncherTest, RunsTheCommandWithItsEnvironmentAndLogs) {
  LaunchSpec spec =
      Spec(7, {"sh", "-c", "echo $FOO; echo err >&2; exit 3"}, LogDir());
  spec.env = {{"FOO", "hello from tessera"}};
  auto launched = launcher_->Start(spec);
  ASSERT_TRUE(launched) << launched.error().message;
  EXPECT_GT(launched->pid, 0);
  EXPECT_GT(launched->start_time, 0);

  auto e = WaitForExit(*launcher_, 7);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 3);
  EXPECT_EQ(launcher_->LogPath(7, false), LogDir() + "/7.out");
  EXPECT_EQ(ReadFile(launcher_->LogPath(7, false)), "hello from tessera\n");
  EXPECT_EQ(ReadFile(launcher_->LogPath(7, true)), "err\n");
  EXPECT_TRUE(launcher_->Poll().empty());  // reported once
}

TEST_F(LocalLauncherTest, KeepsTheServiceEnvironmentAndAppendsLogs) {
  ASSERT_EQ(setenv("TESSERA_LAUNCHER_TEST", "inherited", 1), 0);
  for (int run = 0; run < 2; ++run) {  // a restarted job appends
    auto launched = launcher_->Start(
        Spec(8, {"sh", "-c", "echo $TESSERA_LAUNCHER_TEST"}, LogDir()));
    ASSERT_TRUE(launched) << launched.error().message;
    auto e = WaitForExit(*launcher_, 8);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->exit_code, 0);
  }
  unsetenv("TESSERA_LAUNCHER_TEST");
  EXPECT_EQ(ReadFile(launcher_->LogPath(8, false)), "inherited\ninherited\n");
}

TEST_F(LocalLauncherTest, AMissingProgramIsAnErrorAtStart) {
  auto launched = launcher_->Start(
      Spec(9, {"tessera-no-such-program", "--flag"}, LogDir()));
  ASSERT_FALSE(launched);
  EXPECT_THAT(launched.error().message,
              HasSubstr("cannot run 'tessera-no-such-program': No such file "
                        "or directory"));
  EXPECT_THAT(ReadFile(launcher_->LogPath(9, true)),
              HasSubstr("cannot run 'tessera-no-such-program'"));
  EXPECT_TRUE(launcher_->Poll().empty());  // nothing was left running
}

TEST_F(LocalLauncherTest, RunsEachJobInItsOwnProcessGroup) {
  auto launched = launcher_->Start(Spec(10, {"sleep", "30"}, LogDir()));
  ASSERT_TRUE(launched) << launched.error().message;
  const auto pid = static_cast<pid_t>(launched->pid);
  EXPECT_EQ(getpgid(pid), pid);
  EXPECT_NE(getpgid(pid), getpgid(0));
  EXPECT_EQ(ProcessStartTime(pid), launched->start_time);
  launcher_->Stop(10, 5);
  ASSERT_TRUE(WaitForExit(*launcher_, 10));
}

TEST_F(LocalLauncherTest, StopEndsTheJobWithSigtermWithinTheGrace) {
  auto launched = launcher_->Start(Spec(11, {"sleep", "30"}, LogDir()));
  ASSERT_TRUE(launched) << launched.error().message;
  const auto t0 = Clock::now();
  launcher_->Stop(11, 30);  // SIGKILL only after 30 s
  auto e = WaitForExit(*launcher_, 11);
  ASSERT_TRUE(e);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(30));
  EXPECT_FALSE(e->exit_code);
  EXPECT_EQ(e->reason, "signal " + std::to_string(SIGTERM));
}

TEST_F(LocalLauncherTest, StopKillsAJobThatIgnoresSigterm) {
  // The shell prints sleep's pid once the trap is set (sleep inherits it),
  // so SIGTERM cannot arrive before.
  auto launched = launcher_->Start(Spec(
      12, {"sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"}, LogDir()));
  ASSERT_TRUE(launched) << launched.error().message;
  std::string out;
  ASSERT_TRUE(WaitUntil([&] {
    out = ReadFile(launcher_->LogPath(12, false));
    return !out.empty() && out.back() == '\n';
  }));
  const int64_t sleep_pid = std::stoll(out);
  const auto t0 = Clock::now();
  launcher_->Stop(12, 0.3);
  auto e = WaitForExit(*launcher_, 12);
  ASSERT_TRUE(e);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(300));
  EXPECT_FALSE(e->exit_code);
  EXPECT_EQ(e->reason, "signal " + std::to_string(SIGKILL));
  // The group went with it: sleep, orphaned, was killed too (a zombie
  // until whatever adopted it reaps it).
  EXPECT_TRUE(WaitUntil([&] { return !Alive(sleep_pid); }));
}

TEST_F(LocalLauncherTest, WhatAJobLeavesInItsGroupEndsWithIt) {
  auto launched =
      launcher_->Start(Spec(13, {"sh", "-c", "sleep 30 & echo $!"}, LogDir()));
  ASSERT_TRUE(launched) << launched.error().message;
  auto e = WaitForExit(*launcher_, 13);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 0);
  const int64_t sleep_pid = std::stoll(ReadFile(launcher_->LogPath(13, false)));
  EXPECT_TRUE(WaitUntil([&] { return !Alive(sleep_pid); }));
}

TEST_F(LocalLauncherTest, StopOfAnUnknownJobDoesNothing) {
  launcher_->Stop(999, 0);
  EXPECT_TRUE(launcher_->Poll().empty());
}

// A process the test starts itself, as a previous service would have.
pid_t SpawnSleep() {
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST_F(LocalLauncherTest, AdoptsALiveProcessAndSeesItEnd) {
  const pid_t pid = SpawnSleep();
  ASSERT_GT(pid, 0);
  const int64_t start = ProcessStartTime(pid);
  ASSERT_GT(start, 0);
  ASSERT_TRUE(launcher_->Adopt(20, pid, start));
  EXPECT_TRUE(launcher_->Poll().empty());  // still running

  kill(pid, SIGKILL);
  auto e = WaitForExit(*launcher_, 20);
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->exit_code);
  EXPECT_THAT(e->reason, HasSubstr("exit code unknown"));
  waitpid(pid, nullptr, 0);
}

TEST_F(LocalLauncherTest, StopReachesAnAdoptedProcess) {
  const pid_t pid = SpawnSleep();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitUntil([&] { return getpgid(pid) == pid; }));  // setsid
  ASSERT_TRUE(launcher_->Adopt(21, pid, ProcessStartTime(pid)));
  launcher_->Stop(21, 5);
  ASSERT_TRUE(WaitForExit(*launcher_, 21));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST_F(LocalLauncherTest, AdoptRefusesAWrongStartTimeOrADeadPid) {
  const pid_t pid = SpawnSleep();
  ASSERT_GT(pid, 0);
  const int64_t start = ProcessStartTime(pid);
  // Same pid, another start time: the pid was reused by someone else.
  EXPECT_FALSE(launcher_->Adopt(30, pid, start + 1));
  kill(pid, SIGKILL);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  EXPECT_FALSE(launcher_->Adopt(31, pid, start));
  EXPECT_FALSE(launcher_->Adopt(32, 0, 0));
  EXPECT_TRUE(launcher_->Poll().empty());
}

// After a crash during a start, a new launcher finds the job by its pid
// file: running (then watched like an adopted process), ended, or never
// started.
TEST_F(LocalLauncherTest, ReconcileFindsAStartedJobByItsPidFile) {
  auto started = launcher_->Start(Spec(40, {"sleep", "30"}, LogDir()));
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_THAT(ReadFile(LogDir() + "/40.pid"),
              HasSubstr(std::to_string(started->pid)));
  auto restarted = MakeLocalLauncher(LogDir());
  const Reconciled found = restarted->Reconcile(40);
  ASSERT_EQ(found.kind, Reconciled::Kind::kRunning) << found.detail;
  EXPECT_EQ(found.launched.pid, started->pid);
  EXPECT_EQ(found.launched.start_time, started->start_time);
  EXPECT_TRUE(restarted->Poll().empty());
  restarted->Stop(40, 5);
  ASSERT_TRUE(WaitForExit(*launcher_, 40));  // the first one reaps it
  const Reconciled ended = restarted->Reconcile(40);
  EXPECT_EQ(ended.kind, Reconciled::Kind::kNotFound);
  EXPECT_THAT(ended.detail, HasSubstr("ended while the service was down"));
  const Reconciled never = restarted->Reconcile(41);
  EXPECT_EQ(never.kind, Reconciled::Kind::kNotFound);
  EXPECT_EQ(never.detail, "it never ran");
  EXPECT_TRUE(never.never_ran);  // no pid file: it cannot have started
  EXPECT_FALSE(ended.never_ran);
}

// A replica that leads again reconciles a job it started itself: the job
// stays its child, so its exit code is reaped, not "unknown" (and it
// leaves no zombie).
TEST_F(LocalLauncherTest, ReconcileKeepsItsOwnChild) {
  auto started = launcher_->Start(Spec(42, {"sh", "-c", "exit 4"}, LogDir()));
  ASSERT_TRUE(started) << started.error().message;
  const Reconciled found = launcher_->Reconcile(42);
  ASSERT_EQ(found.kind, Reconciled::Kind::kRunning) << found.detail;
  EXPECT_EQ(found.launched.pid, started->pid);
  auto e = WaitForExit(*launcher_, 42);
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->exit_code);
  EXPECT_EQ(*e->exit_code, 4);
  EXPECT_EQ(kill(static_cast<pid_t>(started->pid), 0), -1);  // reaped
}

TEST(ProcessStartTime, ReadsThisProcessAndRejectsTheAbsent) {
  EXPECT_GT(ProcessStartTime(getpid()), 0);
  EXPECT_EQ(ProcessStartTime(getpid()), ProcessStartTime(getpid()));
  EXPECT_EQ(ProcessStartTime(-1), -1);
  EXPECT_EQ(ProcessStartTime(0), -1);
}

TEST(ProcessStartTime, ParsesAfterACommandNameWithParentheses) {
  int go[2], renamed[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(renamed), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    prctl(PR_SET_NAME, "a) b (c) d");
    if (write(renamed[1], "x", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  ASSERT_GT(pid, 0);
  const int64_t before = ProcessStartTime(pid);
  char c = 'x';
  ASSERT_EQ(write(go[1], &c, 1), 1);
  ASSERT_EQ(read(renamed[0], &c, 1), 1);
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(pid) + "/comm"), "a) b (c) d\n");
  EXPECT_GT(before, 0);
  EXPECT_EQ(ProcessStartTime(pid), before);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  for (int fd : {go[0], go[1], renamed[0], renamed[1]}) close(fd);
}

}  // namespace
}  // namespace tessera::launch
