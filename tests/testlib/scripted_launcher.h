#ifndef TESSERA_TESTS_TESTLIB_SCRIPTED_LAUNCHER_H_
#define TESSERA_TESTS_TESTLIB_SCRIPTED_LAUNCHER_H_

// A launcher for the service's tests that starts nothing: it records what
// it was asked, exits jobs when told, can fail or hold a start, and answers
// Adopt and Reconcile from tables. Thread-safe, so a test may drive it
// while the service's round thread calls it.

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "launch/launcher.h"
#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

class ScriptedLauncher : public launch::Launcher {
 public:
  Result<launch::Launched> Start(const launch::LaunchSpec& spec) override {
    std::function<void(const launch::LaunchSpec&)> hook;
    {
      std::unique_lock lock(mu);
      if (fail_next) return *std::exchange(fail_next, std::nullopt);
      hook = start_hook;
    }
    if (hook) hook(spec);  // may block: a slow engine
    std::lock_guard lock(mu);
    started.push_back(spec);
    const auto pid = pid_for.find(spec.id);
    return launch::Launched{pid == pid_for.end() ? 1000 + spec.id : pid->second,
                            1};
  }
  void Stop(JobId id, double) override {
    std::lock_guard lock(mu);
    exits.push_back({id, {}, "signal 15"});
  }
  void Notify(JobId id, int sig) override {
    std::lock_guard lock(mu);
    notified.emplace_back(id, sig);
  }
  std::vector<launch::Exited> Poll() override {
    std::lock_guard lock(mu);
    return std::exchange(exits, {});
  }
  bool Adopt(JobId id, int64_t, int64_t) override {
    std::lock_guard lock(mu);
    return adoptable.count(id) > 0;
  }
  launch::Reconciled Reconcile(JobId id) override {
    std::lock_guard lock(mu);
    auto it = reconcile.find(id);
    if (it == reconcile.end()) {
      return {launch::Reconciled::Kind::kNotFound, {}, "it never ran"};
    }
    return it->second;
  }
  // Logs under `log_dir` (none when it is empty: nothing to read).
  std::string LogPath(JobId id, bool err) const override {
    if (log_dir.empty()) return "";
    return log_dir + "/" + std::to_string(id) + (err ? ".err" : ".out");
  }
  std::string log_dir;
  void Exit(JobId id, int code) {
    std::lock_guard lock(mu);
    exits.push_back({id, code, ""});
  }
  size_t StartCount() {
    std::lock_guard lock(mu);
    return started.size();
  }

  std::mutex mu;  // guards the members below
  std::vector<launch::LaunchSpec> started;
  std::vector<launch::Exited> exits;
  std::set<JobId> adoptable;
  std::vector<std::pair<JobId, int>> notified;  // Notify's calls
  std::map<JobId, launch::Reconciled> reconcile;
  std::optional<Error> fail_next;  // the next Start's error
  // The pid Start reports for a job (default 1000 + id, no process).
  std::map<JobId, int64_t> pid_for;
  // Called by Start (without mu) before it records the start.
  std::function<void(const launch::LaunchSpec&)> start_hook;
};

// Two nodes: node0 with two 80 GiB GPUs in pool "a", node1 with one 16 GiB
// GPU in pool "b".
inline Topology TwoPools() {
  Topology t;
  t.pools = {"a", "b"};
  t.nodes.push_back({"node0", "a", 64000, 256 * 1024, {0, 1}, false});
  t.nodes.push_back({"node1", "b", 32000, 128 * 1024, {2}, false});
  t.gpus.push_back({"node0/gpu0", 0, 0, "a100-80gb", 80 * 1024});
  t.gpus.push_back({"node0/gpu1", 0, 1, "a100-80gb", 80 * 1024});
  t.gpus.push_back({"node1/gpu0", 1, 0, "t4", 16 * 1024});
  return t;
}

// One node, node0, of four 80 GiB GPUs in pool "a".
inline Topology FourGpus() {
  Topology t;
  t.pools = {"a"};
  t.nodes.push_back({"node0", "a", 64000, 256 * 1024, {0, 1, 2, 3}, false});
  for (int g = 0; g < 4; ++g) {
    t.gpus.push_back(
        {"node0/gpu" + std::to_string(g), 0, g, "a100-80gb", 80 * 1024});
  }
  return t;
}

// A job asking `milli` of one GPU and `mib` of its memory in `pool`,
// running `true`.
inline JobRequest Fraction(int milli, int64_t mib, std::string pool = "a") {
  JobRequest r;
  r.name = "frac";
  r.pool = std::move(pool);
  r.command = {"true"};
  r.resources = Resources{0, milli, mib, 0, 0};
  return r;
}

}  // namespace tessera::scheduler

#endif  // TESSERA_TESTS_TESTLIB_SCRIPTED_LAUNCHER_H_
