// The NVML probe (launch/gpu_usage.h) loaded for real (dlopen) over the
// fake NVML of tests/testlib/fake_nvml.cc: GPUs and both kinds of process
// as the fake's readings file says, read again at every Read; a missing
// library or a failing nvmlInit say why; a long process list is read
// whole. And SessionProcesses: a job's whole session, found in /proc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "launch/gpu_usage.h"
#include "launch/launcher.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::launch {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr char kReadingsVar[] = "TESSERA_FAKE_NVML_READINGS";
constexpr char kFailInitVar[] = "TESSERA_FAKE_NVML_FAIL_INIT";

// Sets the fake's variables for one test and restores them after.
class NvmlProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* var : {kReadingsVar, kFailInitVar}) {
      const char* old = std::getenv(var);
      saved_.emplace_back(var,
                          old ? std::optional<std::string>(old) : std::nullopt);
    }
    ASSERT_EQ(setenv(kReadingsVar, Readings().c_str(), 1), 0);
    ASSERT_EQ(unsetenv(kFailInitVar), 0);
  }
  void TearDown() override {
    for (const auto& [var, value] : saved_) {
      if (value) {
        setenv(var.c_str(), value->c_str(), 1);
      } else {
        unsetenv(var.c_str());
      }
    }
  }

  std::string Readings() const { return dir_.File("readings"); }
  void Write(const std::string& text) const {
    std::ofstream(Readings()) << text;
  }

  std::unique_ptr<GpuProbe> Open() {
    auto probe = OpenNvml(TESSERA_FAKE_NVML);
    EXPECT_TRUE(probe) << probe.error().message;
    return probe ? std::move(*probe) : nullptr;
  }

  testlib::TempDir dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

void ExpectGpu(const GpuReading& g, int index, int64_t used, int64_t total,
               int utilization) {
  EXPECT_EQ(g.index, index);
  EXPECT_EQ(g.used_mib, used);
  EXPECT_EQ(g.total_mib, total);
  EXPECT_EQ(g.utilization_pct, utilization);
}

void ExpectProcess(const ProcessReading& p, int gpu, uint32_t pid,
                   int64_t used) {
  EXPECT_EQ(p.gpu, gpu);
  EXPECT_EQ(p.pid, pid);
  EXPECT_EQ(p.used_mib, used);
}

TEST_F(NvmlProbeTest, ReadsGpusComputeProcessesAndMpsClients) {
  Write(
      "gpu 0 30000 81920 80\n"
      "gpu 1 2000 81920 20\n"
      "proc 0 100 6000\n"
      "mps 0 101 500\n"
      "mps 0 102 700\n"
      "mps 1 200 1500\n"
      "proc 1 201 250\n");
  auto probe = Open();
  ASSERT_TRUE(probe);
  Result<GpuReadings> r = probe->Read();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 2u);
  ExpectGpu(r->gpus[0], 0, 30000, 81920, 80);
  ExpectGpu(r->gpus[1], 1, 2000, 81920, 20);
  // By GPU; on each, the compute processes, then the MPS clients.
  ASSERT_EQ(r->processes.size(), 5u);
  ExpectProcess(r->processes[0], 0, 100, 6000);
  ExpectProcess(r->processes[1], 0, 101, 500);
  ExpectProcess(r->processes[2], 0, 102, 700);
  ExpectProcess(r->processes[3], 1, 201, 250);
  ExpectProcess(r->processes[4], 1, 200, 1500);
}

TEST_F(NvmlProbeTest, EachReadIsNew) {
  Write("gpu 0 1000 16384 10\nmps 0 42 900\n");
  auto probe = Open();
  ASSERT_TRUE(probe);
  Result<GpuReadings> first = probe->Read();
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ(first->gpus.size(), 1u);
  ExpectGpu(first->gpus[0], 0, 1000, 16384, 10);
  ASSERT_EQ(first->processes.size(), 1u);
  ExpectProcess(first->processes[0], 0, 42, 900);

  Write(
      "gpu 0 12000 16384 95\n"
      "gpu 1 0 16384 0\n"
      "mps 0 42 11000\n"
      "proc 1 43 64\n");
  Result<GpuReadings> second = probe->Read();
  ASSERT_TRUE(second) << second.error().message;
  ASSERT_EQ(second->gpus.size(), 2u);
  ExpectGpu(second->gpus[0], 0, 12000, 16384, 95);
  ExpectGpu(second->gpus[1], 1, 0, 16384, 0);
  ASSERT_EQ(second->processes.size(), 2u);
  ExpectProcess(second->processes[0], 0, 42, 11000);
  ExpectProcess(second->processes[1], 1, 43, 64);

  // The GPUs gone (the file empty): nothing to read, and no error.
  Write("");
  Result<GpuReadings> none = probe->Read();
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->gpus.empty());
  EXPECT_TRUE(none->processes.empty());
}

TEST_F(NvmlProbeTest, ReadsMoreProcessesThanItsFirstBuffer) {
  // 100 MPS clients and 150 compute processes on GPU 0: more than the
  // probe's first buffer holds (NVML_ERROR_INSUFFICIENT_SIZE, then again).
  std::string text = "gpu 0 50000 81920 99\n";
  for (int i = 0; i < 100; ++i) {
    text += "mps 0 " + std::to_string(1000 + i) + " " + std::to_string(i + 1) +
            "\n";
  }
  for (int i = 0; i < 150; ++i) {
    text += "proc 0 " + std::to_string(5000 + i) + " 7\n";
  }
  Write(text);
  auto probe = Open();
  ASSERT_TRUE(probe);
  Result<GpuReadings> r = probe->Read();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->processes.size(), 250u);
  for (int i = 0; i < 150; ++i) {
    ExpectProcess(r->processes[static_cast<size_t>(i)], 0,
                  static_cast<uint32_t>(5000 + i), 7);
  }
  for (int i = 0; i < 100; ++i) {
    ExpectProcess(r->processes[static_cast<size_t>(150 + i)], 0,
                  static_cast<uint32_t>(1000 + i), i + 1);
  }
  // Read again: the buffer grown, the same answer.
  Result<GpuReadings> again = probe->Read();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->processes.size(), 250u);
}

TEST_F(NvmlProbeTest, AMissingLibraryIsUnavailableAndNamed) {
  const std::string missing = dir_.File("libnvidia-ml.so.1");
  auto probe = OpenNvml(missing);
  ASSERT_FALSE(probe);
  EXPECT_EQ(probe.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(probe.error().message, HasSubstr("cannot load " + missing));
}

TEST_F(NvmlProbeTest, AFailingInitIsUnavailable) {
  Write("gpu 0 1 16384 0\n");
  ASSERT_EQ(setenv(kFailInitVar, "1", 1), 0);
  auto probe = OpenNvml(TESSERA_FAKE_NVML);
  ASSERT_FALSE(probe);
  EXPECT_EQ(probe.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(probe.error().message, HasSubstr("nvmlInit failed"));
  EXPECT_THAT(probe.error().message, HasSubstr("NVML error 9"));
  // Once it initialises, the same library loads.
  ASSERT_EQ(unsetenv(kFailInitVar), 0);
  auto works = Open();
  ASSERT_TRUE(works);
  Result<GpuReadings> r = works->Read();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->gpus.size(), 1u);
}

// The state letter of process `pid` (/proc/PID/stat), or 0 if it is gone.
char State(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return 0;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2]
                                                               : 0;
}

bool WaitTenSeconds(const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(SessionProcesses, ListsAJobsWholeSession) {
  testlib::TempDir dir;
  auto launcher = MakeLocalLauncher(dir.File("logs"));
  // The job (a session leader: the launcher starts it with setsid) starts
  // a child of its own and writes the child's pid.
  const std::string child_file = dir.File("child");
  LaunchSpec spec;
  spec.id = 1;
  // Builtins only (one write of "PID\n"), so that no other process of
  // the session may be caught running.
  spec.command = {"sh", "-c",
                  "sleep 30 & echo $! > '" + child_file + "'; wait"};
  spec.log_dir = dir.File("logs");
  auto launched = launcher->Start(spec);
  ASSERT_TRUE(launched) << launched.error().message;
  const auto leader = static_cast<uint32_t>(launched->pid);
  uint32_t child = 0;
  ASSERT_TRUE(WaitTenSeconds([&] {
    std::ifstream in(child_file);
    std::string line;
    // Whole once it ends with its newline.
    if (!std::getline(in, line) || in.eof()) return false;
    child = static_cast<uint32_t>(std::stoul(line));
    return true;
  }));
  ASSERT_NE(child, 0u);
  ASSERT_NE(child, leader);

  const int64_t own = getsid(0);
  ASSERT_NE(own, static_cast<int64_t>(leader));
  const int64_t nobody = 0x7ffffff0;  // above any pid_max
  const auto sessions =
      SessionProcesses({static_cast<int64_t>(leader), own, nobody});
  ASSERT_TRUE(sessions.contains(leader));
  EXPECT_EQ(sessions.at(leader), (std::set<uint32_t>{leader, child}));
  // This test's own session: this process, and not the job's.
  ASSERT_TRUE(sessions.contains(own));
  EXPECT_TRUE(sessions.at(own).contains(static_cast<uint32_t>(getpid())));
  EXPECT_FALSE(sessions.at(own).contains(leader));
  EXPECT_FALSE(sessions.at(own).contains(child));
  EXPECT_FALSE(sessions.contains(nobody));  // no live process
  // A session not asked about is not listed.
  const auto only_own = SessionProcesses({own});
  EXPECT_FALSE(only_own.contains(leader));
  EXPECT_TRUE(SessionProcesses({}).empty());

  // The job stopped (its process group): its session is gone.
  launcher->Stop(1, 5);
  ASSERT_TRUE(WaitTenSeconds([&] {
    for (const Exited& e : launcher->Poll()) {
      if (e.id == 1) return true;
    }
    return false;
  }));
  // Nothing of it lives on (its child may stay a zombie until the
  // machine's init reaps it: AZombieIsNotALiveProcess).
  EXPECT_TRUE(WaitTenSeconds([&] {
    const auto left = SessionProcesses({static_cast<int64_t>(leader)});
    if (!left.contains(leader)) return true;
    for (const uint32_t pid : left.at(leader)) {
      if (State(pid) != 'Z') return false;
    }
    return true;
  }));
}

// A session whose only process has ended (a zombie its parent has not
// reaped yet) has no live process: absent, as gpu_usage.h says.
TEST(SessionProcesses, AZombieIsNotALiveProcess) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setsid();
    _exit(0);
  }
  // Not reaped yet: a zombie, the leader of its own session.
  ASSERT_TRUE(
      WaitTenSeconds([&] { return State(static_cast<uint32_t>(pid)) == 'Z'; }));
  const auto sessions = SessionProcesses({static_cast<int64_t>(pid)});
  EXPECT_FALSE(sessions.contains(pid))
      << "listed " << sessions.at(pid).size() << " process(es)";
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(SessionProcesses({static_cast<int64_t>(pid)}).empty());
}

}  // namespace
}  // namespace tessera::launch
