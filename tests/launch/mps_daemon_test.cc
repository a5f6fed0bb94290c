// The MPS control daemon of a GPU (launch/mps_daemon.h) through a fake
// control program: started when it does not answer, started again when it
// died, stopped; a missing, failing or silent control program is a clear
// error. Also RunCommand's stdin, which the control program reads.
#include "launch/mps_daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launch/subprocess.h"
#include "tests/launch/fake_mps_control.h"

namespace tessera::launch {
namespace {

using ::testing::HasSubstr;

// A private directory, removed with everything in it.
class Dir {
 public:
  Dir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tessera-mps-XXXXXX")
            .string();
    path_ = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~Dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The fake control program (fake_mps_control.h) in `dir`.
std::string FakeControl(const Dir& dir, bool silent = false,
                        bool failing = false) {
  return testing::WriteFakeMpsControl(dir.File(silent    ? "fake-mps-silent"
                                               : failing ? "fake-mps-failing"
                                                         : "fake-mps"),
                                      silent    ? testing::FakeMps::kSilent
                                      : failing ? testing::FakeMps::kFailing
                                                : testing::FakeMps::kWorking);
}

int Starts(const std::string& log) { return testing::FakeMpsStarts(log); }

TEST(MpsDaemon, StartedThenStartedAgainWhenItDied) {
  Dir dir;
  MpsDaemon d({FakeControl(dir), dir.File("gpu3"), "3", 5});
  EXPECT_FALSE(d.Alive());
  ASSERT_TRUE(d.Ensure().ok());
  EXPECT_TRUE(d.Alive());
  EXPECT_EQ(d.restarts(), 0);
  const auto env = d.ClientEnv();
  EXPECT_EQ(env.at("CUDA_MPS_PIPE_DIRECTORY"), dir.File("gpu3") + "/pipe");
  EXPECT_EQ(env.at("CUDA_MPS_LOG_DIRECTORY"), dir.File("gpu3") + "/log");
  std::ifstream running(dir.File("gpu3") + "/pipe/running");
  std::string gpu;
  running >> gpu;
  EXPECT_EQ(gpu, "3");  // started for its GPU only
  // Running: checked, not started again.
  ASSERT_TRUE(d.Ensure().ok());
  EXPECT_EQ(Starts(dir.File("gpu3") + "/log/control.log"), 1);
  // It dies: the next check starts it again, and counts it.
  std::filesystem::remove(dir.File("gpu3") + "/pipe/running");
  ASSERT_TRUE(d.Ensure().ok());
  EXPECT_EQ(d.restarts(), 1);
  EXPECT_EQ(Starts(dir.File("gpu3") + "/log/control.log"), 2);
  // Stopped.
  ASSERT_TRUE(d.Stop().ok());
  EXPECT_FALSE(d.Alive());
  EXPECT_TRUE(d.Stop().ok());  // not running: nothing to do
}

TEST(MpsDaemon, ClearErrorsWhenItCannotRun) {
  Dir dir;
  MpsDaemon missing({dir.File("no-such-control"), dir.File("a"), "0", 5});
  Status st = missing.Ensure();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(st.error().message, HasSubstr("MPS control daemon for GPU 0"));
  EXPECT_THAT(st.error().message, HasSubstr("no-such-control"));

  MpsDaemon failing({FakeControl(dir, false, true), dir.File("b"), "1", 5});
  st = failing.Ensure();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().message,
              HasSubstr("-d' failed: An instance of this daemon is already "
                        "running"));

  MpsDaemon silent({FakeControl(dir, true), dir.File("c"), "2", 0.3});
  st = silent.Ensure();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().message, HasSubstr("did not answer within"));
  EXPECT_THAT(st.error().message, HasSubstr(dir.File("c") + "/log"));
}

TEST(RunCommand, FeedsItsInput) {
  const CommandResult r = RunCommand({"cat"}, {}, 5, "get_server_list\n");
  ASSERT_TRUE(r.ok()) << r.Summary();
  EXPECT_EQ(r.out, "get_server_list\n");
  // Too much for the pipe's buffer is refused, not run.
  const CommandResult big =
      RunCommand({"cat"}, {}, 5, std::string(kMaxCommandInput + 1, 'x'));
  EXPECT_FALSE(big.ok());
  EXPECT_THAT(big.start_error, HasSubstr("its input"));
}

}  // namespace
}  // namespace tessera::launch
