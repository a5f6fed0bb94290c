#ifndef TESSERA_TESTS_SLURM_SLURM_CLUSTER_H_
#define TESSERA_TESTS_SLURM_SLURM_CLUSTER_H_

// The Slurm cluster that tests/slurm/slurm_up.sh started for these tests
// (CTest's fixture `slurm`) in TESSERA_SLURM_DIR: SLURM_CONF from its
// `env` file, or why it could not start from its `skip` file. Without a
// cluster a test is skipped, unless TESSERA_REQUIRE_SLURM=1 (CI, as root)
// makes that a failure.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "launch/slurm/slurm_state.h"
#include "launch/subprocess.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::slurm_test {

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// SLURM_CONF of the running cluster, or "" and `why`.
inline std::string ClusterConf(std::string* why) {
  const std::string dir = TESSERA_SLURM_DIR;
  std::string env = ReadText(dir + "/env");
  const std::string key = "SLURM_CONF=";
  if (env.rfind(key, 0) == 0) {
    env = env.substr(key.size());
    while (!env.empty() && (env.back() == '\n' || env.back() == ' ')) {
      env.pop_back();
    }
    return env;
  }
  const std::string skip = ReadText(dir + "/skip");
  *why = skip.empty() ? "no Slurm cluster in " + dir +
                            " (run the tests through ctest, whose fixture "
                            "starts one, or: bash tests/slurm/slurm_up.sh " +
                            dir + ")"
                      : "Slurm cannot run here: " + skip;
  return "";
}

inline bool SlurmRequired() {
  const char* v = std::getenv("TESSERA_REQUIRE_SLURM");
  return v != nullptr && std::string(v) == "1";
}

// In a test body: the cluster's SLURM_CONF into `conf`, or skip (or fail
// when TESSERA_REQUIRE_SLURM=1).
#define TESSERA_NEED_SLURM(conf)                                  \
  do {                                                            \
    std::string why_;                                             \
    conf = ::tessera::slurm_test::ClusterConf(&why_);             \
    if (conf.empty()) {                                           \
      if (::tessera::slurm_test::SlurmRequired()) FAIL() << why_; \
      GTEST_SKIP() << why_;                                       \
    }                                                             \
  } while (false)

// A Slurm job name prefix of its own for the running test: `kind`, this
// process and the test's name, so that no test (nor a rerun against the
// same cluster, whose controller remembers ended jobs for MinJobAge) takes
// another's jobs for its own.
inline std::string TestJobPrefix(const std::string& kind) {
  return kind + "-" + std::to_string(getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

// Runs a Slurm command against the cluster.
inline launch::CommandResult Slurm(const std::string& conf,
                                   std::vector<std::string> argv) {
  return launch::RunCommand(argv, {{"SLURM_CONF", conf}}, 20);
}

// Cancels every live Slurm job whose name starts with `prefix` (a test's
// leftovers, e.g. after a failed assertion), so that they hold no GPU
// the next test needs.
inline void CancelJobsNamed(const std::string& conf,
                            const std::string& prefix) {
  const auto r = Slurm(conf, {"squeue", "--noheader", "--format=%A %j"});
  std::istringstream lines(r.out);
  std::vector<std::string> argv = {"scancel"};
  for (std::string id, name; lines >> id >> name;) {
    if (name.rfind(prefix, 0) == 0) argv.push_back(id);
  }
  if (argv.size() > 1) Slurm(conf, argv);
}

// `scontrol show job -o -d ID`'s records (a heterogeneous job's
// components too), empty if it fails.
inline std::vector<launch::SlurmJob> ShowJob(const std::string& conf,
                                             int64_t id) {
  const auto r =
      Slurm(conf, {"scontrol", "show", "job", "-o", "-d", std::to_string(id)});
  if (!r.ok()) return {};
  auto jobs = launch::ParseScontrolJobs(r.out);
  return jobs ? *jobs : std::vector<launch::SlurmJob>{};
}

// Polls `done` every 50 ms for up to `seconds`.
template <typename F>
bool WaitUntil(double seconds, F done) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace tessera::slurm_test

#endif  // TESSERA_TESTS_SLURM_SLURM_CLUSTER_H_
