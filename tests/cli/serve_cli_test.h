#ifndef TESSERA_TESTS_CLI_SERVE_CLI_TEST_H_
#define TESSERA_TESTS_CLI_SERVE_CLI_TEST_H_

// A CLI test with a `tessera serve` of its own on a loopback port found
// free: its config is ServeConfigHead plus what the test writes
// (WriteConfig), StartServe runs it, and Cli runs the CLI against it as a
// user's shell would (TESSERA_URL and TESSERA_TOKEN in the environment).

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/cli/serve_process.h"

namespace tessera::testlib {

class ServeCliTest : public ::testing::Test {
 protected:
  void TearDown() override { serve_.Stop(SIGTERM); }

  // serve.yaml: ServeConfigHead, then `body`.
  void WriteConfig(const std::string& body) {
    std::ofstream(config_) << ServeConfigHead(dir_, port_) << body;
  }
  // "" once it answers, else why not (with its log).
  std::string StartServe() {
    return serve_.Start(config_, port_, dir_.File("serve.log"));
  }
  // A job command (shell words for `tessera submit -- ...`) that runs until
  // the test ends and its temp dir goes, however slow the machine is: a
  // `sleep 30` ended before a loaded machine's test had looked at it.
  std::string UntilTestEnds() const {
    return "sh -c 'while [ -e " + config_ + " ]; do sleep 0.2; done'";
  }
  RunResult Cli(const std::string& args, const char* token) {
    setenv("TESSERA_URL", url_.c_str(), 1);
    setenv("TESSERA_TOKEN", token, 1);
    return RunTessera(args, dir_);
  }

  TempDir dir_;
  const int port_ = FreeLoopbackPort();
  const std::string url_ = "http://127.0.0.1:" + std::to_string(port_);
  const std::string config_ = dir_.File("serve.yaml");
  ServeProcess serve_;
};

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_CLI_SERVE_CLI_TEST_H_
