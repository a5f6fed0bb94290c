#ifndef TESSERA_TESTS_TESTLIB_IDLE_LAUNCHER_H_
#define TESSERA_TESTS_TESTLIB_IDLE_LAUNCHER_H_

// A launcher that starts nothing, for the tests and benchmarks that run the
// real service and care about the queue, not about the jobs' processes:
// Start succeeds at once (pid 100000 + the job's id), a started job runs
// until it is stopped, and Stop ends it (the next Poll reports it killed,
// "signal 15"). Adopt finds nothing. A job's logs are <log_dir>/<id>.out
// and .err, files the test writes itself, or /dev/null without a log_dir.
// Thread-safe; needs no GoogleTest, so the benchmarks may use it too.

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "launch/launcher.h"

namespace tessera::testlib {

class IdleLauncher : public launch::Launcher {
 public:
  IdleLauncher() = default;
  explicit IdleLauncher(std::string log_dir) : log_dir_(std::move(log_dir)) {}

  Result<launch::Launched> Start(const launch::LaunchSpec& spec) override {
    return launch::Launched{100000 + spec.id, 1};
  }
  void Stop(scheduler::JobId id, double /*grace_s*/) override {
    std::lock_guard lock(mu_);
    exits_.push_back({id, {}, "signal 15"});
  }
  std::vector<launch::Exited> Poll() override {
    std::lock_guard lock(mu_);
    return std::exchange(exits_, {});
  }
  bool Adopt(scheduler::JobId /*id*/, int64_t /*pid*/,
             int64_t /*start_time*/) override {
    return false;
  }
  std::string LogPath(scheduler::JobId id, bool stderr_log) const override {
    if (log_dir_.empty()) return "/dev/null";
    return log_dir_ + "/" + std::to_string(id) + (stderr_log ? ".err" : ".out");
  }

 private:
  const std::string log_dir_;
  std::mutex mu_;  // guards exits_
  std::vector<launch::Exited> exits_;
};

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_IDLE_LAUNCHER_H_
