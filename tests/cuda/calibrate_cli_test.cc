// `tessera calibrate` on a machine without a usable GPU (the build machines):
// exit code 2 and "no CUDA device found" on stderr. On a machine with a GPU
// the no-GPU test is skipped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testlib/repo_paths.h"

namespace {

using ::testing::HasSubstr;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliRun RunTessera(const std::string& args) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tessera_calibrate_cli_" +
       std::string(
           ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::create_directories(dir);
  const std::string command = std::string("'") + TESSERA_BIN + "' " + args +
                              " >'" + (dir / "out").string() + "' 2>'" +
                              (dir / "err").string() + "'";
  const int status = std::system(command.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(dir / "out");
  r.err = ReadFile(dir / "err");
  std::filesystem::remove_all(dir);
  return r;
}

// True when this machine has a GPU calibrate would use.
bool HasGpu() {
  return RunTessera("calibrate --help").exit_code == 0 &&
         RunTessera("calibrate --gpu 99999").err.find("no CUDA device found") ==
             std::string::npos;
}

TEST(CalibrateCliTest, WithoutGpuExitsTwoWithReason) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = RunTessera("calibrate --quick");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("tessera: error: no CUDA device found ("));
  EXPECT_EQ(r.out, "");
}

TEST(CalibrateCliTest, WithoutGpuOtherOptionsStillExitTwo) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r =
      RunTessera("calibrate --gpu 3 --name x --base a100-80gb -o " +
                 (std::filesystem::temp_directory_path() /
                  "tessera_calibrate_never_written.yaml")
                     .string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no CUDA device found"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() /
                                       "tessera_calibrate_never_written.yaml"));
}

TEST(CalibrateCliTest, BadArgumentsExitTwoBeforeMeasuring) {
  CliRun r = RunTessera("calibrate --name 'Bad Name'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--name 'Bad Name'"));
  r = RunTessera("calibrate --base no-such-gpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no-such-gpu"));
  r = RunTessera("calibrate --gpu -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gpu -1: a CUDA device index is 0 or more"));
}

TEST(CalibrateCliTest, HelpListsOptionsAndExamples) {
  const CliRun r = RunTessera("calibrate --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* option : {"--gpu", "--name", "--base", "--output", "--json",
                             "--quick", "Examples:"}) {
    EXPECT_THAT(r.out, HasSubstr(option));
  }
  EXPECT_THAT(RunTessera("--help").out, HasSubstr("calibrate"));
}

}  // namespace
