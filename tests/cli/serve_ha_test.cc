// High availability end to end (issue 32): three replicas of the real
// `tessera serve` over one PostgreSQL store the test starts, the local
// launcher, a lease of 2 s renewed every 0.25 s (tests/cli/ha_cluster.h).
//
// - The leader killed with SIGKILL 30 times while a client submits to
//   random replicas (each job under its own Idempotency-Key, retried with
//   it on no answer, 503 and 307), cancels, and urgent jobs preempt
//   preemptible ones: no acknowledged job is lost, one key is one job, no
//   (job, attempt) starts twice, no GPU is overbooked, and another replica
//   leads within lease_s + 2 s of every kill ("[failover]" on stdout).
// - The leader paused (SIGSTOP) past its lease while jobs wait: another
//   replica leads and starts them; woken, the old leader steps down, starts
//   nothing, and what it is given is started by the leader.
// - PostgreSQL stopped (as a crash) for 3 s under load: submissions answer
//   503, never 500 and never hang; afterwards a replica leads again and
//   every acknowledged job runs to its end.
// - A lone replica that lost the database and leads again keeps the exit
//   status of its jobs that ended meanwhile.
// - A follower's GET /v1/cluster names the leader and says its role.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>

#include "tests/cli/ha_cluster.h"

namespace tessera {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testlib::Call;
using testlib::HaCluster;
using testlib::JobStart;
using testlib::kLeaseS;
using testlib::Reply;
using testlib::SecondsSince;
using testlib::SteadyTime;

constexpr int kKills = 30;

void SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// What one client saw of its submissions.
struct SubmitStats {
  int answered_503 = 0;
  int redirected = 0;
  int no_answer = 0;
  double slowest_s = 0;             // one request's wait for its answer
  std::vector<std::string> errors;  // what must never happen
};

// Submits `request` under `key` to random replicas until one acknowledges
// it (201): its id, or 0 (and an error in `stats`) when a replica refused
// it otherwise or none took it in `give_up_s`. A 307 is followed here.
int64_t SubmitUntilAcknowledged(HaCluster& cluster, std::mt19937& rng,
                                const std::string& key, const Json& request,
                                double timeout_s, double give_up_s,
                                SubmitStats* stats) {
  const SteadyTime start = std::chrono::steady_clock::now();
  int port = 0;  // where a 307 sent it
  std::string path = "/v1/jobs";
  while (SecondsSince(start) < give_up_s) {
    if (port == 0) {
      port = cluster.port(static_cast<int>(rng() % cluster.size()));
      path = "/v1/jobs";
    }
    const SteadyTime asked = std::chrono::steady_clock::now();
    const Reply r = Call("POST", port, path, request.dump(), timeout_s,
                         {{"Idempotency-Key", key}});
    stats->slowest_s = std::max(stats->slowest_s, SecondsSince(asked));
    if (r.status == 201) {
      const Json j = r.Json();
      if (!j.is_object() || !j.contains("id")) {
        stats->errors.push_back(key + ": 201 without an id: " + r.body);
        return 0;
      }
      return j["id"].get<int64_t>();
    }
    if (r.status == 307) {
      ++stats->redirected;
      std::tie(port, path) = testlib::SplitLocation(r.Header("Location"));
      if (port == 0) {
        stats->errors.push_back(key + ": 307 to '" + r.Header("Location") +
                                "'");
        return 0;
      }
      continue;
    }
    if (r.status == 0) {
      ++stats->no_answer;
    } else if (r.status == 503) {
      ++stats->answered_503;
    } else {
      stats->errors.push_back(key + ": status " + std::to_string(r.status) +
                              ": " + r.body);
      return 0;
    }
    port = 0;
    SleepMs(30 + static_cast<int>(rng() % 50));
  }
  stats->errors.push_back(key + ": not acknowledged in " +
                          std::to_string(give_up_s) + " s");
  return 0;
}

// A client thread: submits (and, asked, cancels and submits again under a
// key already acknowledged) until stopped.
class Load {
 public:
  struct Options {
    std::function<Json(std::mt19937&, const std::string& key)> request;
    int pause_min_ms = 100, pause_max_ms = 300;
    bool cancels = false;  // a fifth of the actions cancel a job
    bool repeats = false;  // a sixth of the submissions repeat a key
    double timeout_s = 3;  // one request's
  };
  Load(HaCluster& cluster, uint32_t seed, Options options)
      : cluster_(cluster), rng_(seed), options_(std::move(options)) {}
  ~Load() { Stop(); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Key -> job, of the acknowledged submissions.
  std::map<std::string, int64_t> Acknowledged() const {
    std::lock_guard lock(mu_);
    return acknowledged_;
  }
  // After Stop.
  const SubmitStats& stats() const { return stats_; }
  int cancels() const { return cancels_; }
  int repeats() const { return repeats_; }

 private:
  void Run() {
    int n = 0;
    while (!stop_) {
      std::map<std::string, int64_t> acked = Acknowledged();
      const uint32_t dice = rng_() % 30;
      if (options_.cancels && dice < 6 && !acked.empty()) {
        Cancel(Pick(acked).second);
      } else if (options_.repeats && dice >= 25 && !acked.empty()) {
        Repeat(Pick(acked));
      } else {
        const std::string key = "k" + std::to_string(++n);
        const int64_t id = Submit(key, options_.request(rng_, key));
        if (id != 0) {
          std::lock_guard lock(mu_);
          acknowledged_[key] = id;
        }
      }
      SleepMs(options_.pause_min_ms +
              static_cast<int>(rng_() % (options_.pause_max_ms -
                                         options_.pause_min_ms + 1)));
    }
  }
  int64_t Submit(const std::string& key, const Json& request) {
    requests_[key] = request;
    return SubmitUntilAcknowledged(cluster_, rng_, key, request,
                                   options_.timeout_s, 60, &stats_);
  }
  std::pair<std::string, int64_t> Pick(
      const std::map<std::string, int64_t>& acked) {
    auto it = acked.begin();
    std::advance(it, static_cast<long>(rng_() % acked.size()));
    return *it;
  }
  // A client that did not hear the answer sends the same again.
  void Repeat(const std::pair<std::string, int64_t>& acked) {
    ++repeats_;
    const int64_t id = Submit(acked.first, requests_[acked.first]);
    if (id != 0 && id != acked.second) {
      stats_.errors.push_back(acked.first + " was job " +
                              std::to_string(acked.second) +
                              ", its repeat made job " + std::to_string(id));
    }
  }
  void Cancel(int64_t id) {
    const int port = cluster_.port(static_cast<int>(rng_() % cluster_.size()));
    const Reply r =
        Call("POST", port, "/v1/jobs/" + std::to_string(id) + "/cancel", "{}",
             options_.timeout_s);
    if (r.status == 200) {
      ++cancels_;
    } else if (r.status != 0 && r.status != 503) {
      stats_.errors.push_back("cancel " + std::to_string(id) + ": status " +
                              std::to_string(r.status) + ": " + r.body);
    }
  }

  HaCluster& cluster_;
  std::mt19937 rng_;
  const Options options_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::string, int64_t> acknowledged_;  // mu_
  std::map<std::string, Json> requests_;         // the thread's
  SubmitStats stats_;                            // the thread's
  int cancels_ = 0, repeats_ = 0;                // the thread's
};

class ServeHa : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cluster_.error(), ""); }
  void TearDown() override {
    if (!HasFailure()) return;
    for (int i = 0; i < cluster_.size(); ++i) {
      std::string log = testlib::ReadFile(cluster_.log(i));
      if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
      std::printf("---- %s's log (end) ----\n%s\n", cluster_.name(i).c_str(),
                  log.c_str());
    }
  }

  // "" when every acknowledged job is in the store (read through replica
  // `via`) as the job its key named, and no key made two jobs.
  std::string CheckAcknowledged(const std::map<std::string, int64_t>& acked,
                                int via) {
    auto jobs = cluster_.Jobs(via);
    if (!jobs) return "no job list from " + cluster_.name(via);
    std::map<int64_t, std::string> names;
    std::map<std::string, int> per_key;
    for (const Json& j : *jobs) {
      const std::string name = j["name"].get<std::string>();
      names[j["id"].get<int64_t>()] = name;
      ++per_key[name];
    }
    for (const auto& [key, id] : acked) {
      auto it = names.find(id);
      if (it == names.end()) {
        return "acknowledged job " + std::to_string(id) + " (" + key +
               ") is lost";
      }
      if (it->second != key) {
        return "key " + key + " was acknowledged as job " + std::to_string(id) +
               ", which is " + it->second;
      }
      if (per_key[key] != 1) {
        return "key " + key + " made " + std::to_string(per_key[key]) + " jobs";
      }
    }
    return "";
  }

  // Waits until no job is queued, starting, running or preempted.
  bool Drain(double wait_s) {
    const SteadyTime start = std::chrono::steady_clock::now();
    while (SecondsSince(start) < wait_s) {
      const int leader = cluster_.Leader(5);
      if (leader >= 0 && cluster_.Active(leader) == 0) return true;
      SleepMs(200);
    }
    return false;
  }

  HaCluster cluster_{3};
};

// Min, median, p90 and max of `v` (sorted here).
std::string Distribution(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
  };
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "n=%zu min=%.3f s median=%.3f s p90=%.3f s max=%.3f s",
                v.size(), v.front(), at(0.5), at(0.9), v.back());
  return buf;
}

// Submits `request` to replica i under `key`; its id, or 0.
int64_t SubmitTo(HaCluster& cluster, int i, const std::string& key,
                 const Json& request) {
  const SteadyTime start = std::chrono::steady_clock::now();
  while (SecondsSince(start) < 10) {
    const Reply r = Call("POST", cluster.port(i), "/v1/jobs", request.dump(), 3,
                         {{"Idempotency-Key", key}});
    if (r.status == 201) return r.Json()["id"].get<int64_t>();
    if (r.status != 503 && r.status != 0) {
      ADD_FAILURE() << key << " to " << cluster.name(i) << ": " << r.status
                    << " " << r.body;
      return 0;
    }
    SleepMs(100);
  }
  ADD_FAILURE() << key << " to " << cluster.name(i) << ": no 201 in 10 s";
  return 0;
}

// Who started job `id` (its first attempt), waiting up to `wait_s`; 0 if
// it did not start.
int64_t StartedBy(const HaCluster& cluster, int64_t id, double wait_s) {
  const SteadyTime start = std::chrono::steady_clock::now();
  do {
    for (const JobStart& s : cluster.Starts()) {
      if (s.id == id) return s.ppid;
    }
    SleepMs(50);
  } while (SecondsSince(start) < wait_s);
  return 0;
}

// Two preemptible jobs (priority 1) hold both GPUs whole; once they run,
// an urgent one (20) needs a whole GPU: one of them is preempted. Their
// keys and ids go to `submitted`.
void Preemption(HaCluster& cluster, int n,
                std::map<std::string, int64_t>* submitted) {
  std::vector<int64_t> holders;
  for (int i = 0; i < 2; ++i) {
    const std::string key =
        "hold" + std::to_string(n) + "-" + std::to_string(i);
    const int64_t id = SubmitTo(cluster, i, key,
                                Json{{"name", key},
                                     {"command", cluster.Command("1")},
                                     {"priority", 1},
                                     {"preemptible", true},
                                     {"resources", {{"gpus", 1}}}});
    if (id == 0) return;
    (*submitted)[key] = id;
    holders.push_back(id);
  }
  for (const int64_t id : holders) {
    if (StartedBy(cluster, id, 5) == 0) return;
  }
  const std::string key = "urgent" + std::to_string(n);
  const int64_t id = SubmitTo(cluster, 2, key,
                              Json{{"name", key},
                                   {"command", cluster.Command("0.1")},
                                   {"priority", 20},
                                   {"preemptible", false},
                                   {"resources", {{"gpus", 1}}}});
  if (id != 0) (*submitted)[key] = id;
}

// Jobs much as serve_crash_test.cc submits them, in three tiers: batch
// (priority 0) and middle (5) jobs are preemptible and run 0.5 s on a
// whole GPU or a share; urgent ones (10) run 0.1 s on a whole GPU. A job
// of a higher tier that finds no room preempts.
Json MixedJob(const HaCluster& cluster, std::mt19937& rng,
              const std::string& key) {
  const int tier = static_cast<int>(rng() % 3);
  const bool urgent = tier == 2;
  Json j = {{"name", key},
            {"command", cluster.Command(urgent ? "0.1" : "0.5")},
            {"priority", 5 * tier},
            {"preemptible", !urgent}};
  if (urgent || rng() % 2) {
    j["resources"] = {{"gpus", 1}};
  } else {
    j["resources"] = {{"gpu_milli", 300 + static_cast<int>(rng() % 500)},
                      {"gpu_memory_mib", 1024 * (1 + rng() % 30)}};
  }
  return j;
}

TEST_F(ServeHa, LeaderKilledThirtyTimesLosesNothingAndStartsNothingTwice) {
  ASSERT_EQ(cluster_.StartAll(), "");
  Load::Options o;
  o.request = [this](std::mt19937& rng, const std::string& key) {
    return MixedJob(cluster_, rng, key);
  };
  o.pause_min_ms = 200;
  o.pause_max_ms = 500;
  o.cancels = true;
  o.repeats = true;
  Load load(cluster_, 20261130, std::move(o));
  load.Start();
  std::mt19937 rng(32);
  std::vector<double> failover_s, restart_s;
  std::map<std::string, int64_t> injected;  // the preemptions' jobs
  auto acknowledged = [&] {
    std::map<std::string, int64_t> all = load.Acknowledged();
    all.insert(injected.begin(), injected.end());
    return all;
  };
  for (int kill = 0; kill < kKills; ++kill) {
    // Every tenth kill lands while a preemption is under way.
    if (kill % 10 == 4) Preemption(cluster_, kill, &injected);
    SleepMs(static_cast<int>(rng() % 400));
    const int leader = cluster_.Leader(10);
    ASSERT_GE(leader, 0) << "nobody leads before kill " << kill;
    const SteadyTime killed = std::chrono::steady_clock::now();
    cluster_.process(leader).Kill(SIGKILL);
    const int next = cluster_.Leader(30, leader, 0.25);
    failover_s.push_back(SecondsSince(killed));
    ASSERT_GE(next, 0) << "nobody leads 30 s after kill " << kill;
    // Back with its name and port: it follows now.
    const SteadyTime restart = std::chrono::steady_clock::now();
    ASSERT_EQ(cluster_.Start(leader), "") << "restart after kill " << kill;
    restart_s.push_back(SecondsSince(restart));
    EXPECT_EQ(cluster_.Role(leader), "follower") << cluster_.name(leader);
    ASSERT_EQ(CheckAcknowledged(acknowledged(), next), "")
        << "after kill " << kill;
    ASSERT_EQ(cluster_.CheckGpus(next), "") << "after kill " << kill;
  }
  load.Stop();
  const std::map<std::string, int64_t> acked = acknowledged();
  EXPECT_THAT(load.stats().errors, ::testing::IsEmpty());
  const SteadyTime drain = std::chrono::steady_clock::now();
  ASSERT_TRUE(Drain(120)) << "jobs still active 120 s after the last kill";
  const double drain_s = SecondsSince(drain);
  const int leader = cluster_.Leader(10);
  ASSERT_GE(leader, 0);
  EXPECT_EQ(CheckAcknowledged(acked, leader), "");
  EXPECT_EQ(cluster_.CheckGpus(leader), "");
  EXPECT_EQ(cluster_.CheckStartedOnce(), "");
  const std::vector<JobStart> starts = cluster_.Starts();
  const auto preempted =
      std::count_if(starts.begin(), starts.end(),
                    [](const JobStart& s) { return s.attempt > 0; });
  std::set<int64_t> started;
  for (const JobStart& s : starts) started.insert(s.id);
  EXPECT_GT(started.size(), acked.size() / 2);
  EXPECT_GT(preempted, 0) << "no preempted job started again";
  EXPECT_GT(load.repeats(), 0);
  // p99 of 30 and more is their maximum.
  EXPECT_LE(*std::max_element(failover_s.begin(), failover_s.end()),
            kLeaseS + 2)
      << Distribution(failover_s);
  RecordProperty("failover", Distribution(failover_s));
  std::printf(
      "[failover] lease_s=%.1f lease_renew_s=0.25 kill -9 of the leader to "
      "another replica's /readyz?role=leader 200: %s\n",
      kLeaseS, Distribution(failover_s).c_str());
  std::printf(
      "[ha-kill-loop] %d kills, %zu jobs acknowledged, %zu started, %zu "
      "starts (%ld after a preemption), %d cancels, %d repeated keys, %d "
      "answers 503, %d redirects, %d unanswered\n",
      kKills, acked.size(), started.size(), starts.size(),
      static_cast<long>(preempted), load.cancels(), load.repeats(),
      load.stats().answered_503, load.stats().redirected,
      load.stats().no_answer);
  std::printf(
      "[ha-kill-loop] restart of a killed replica: %s; drained in "
      "%.1f s\n",
      Distribution(restart_s).c_str(), drain_s);
}

TEST_F(ServeHa, APausedLeaderStepsDownWhenItWakesAndStartsNothing) {
  ASSERT_EQ(cluster_.StartAll(), "");  // r1 leads
  const pid_t paused = cluster_.process(0).pid();
  auto job = [&](const std::string& key, const std::string& seconds) {
    return Json{{"name", key},
                {"command", cluster_.Command(seconds)},
                {"resources", {{"gpus", 1}}}};
  };
  // Two jobs hold both GPUs a little while; four wait behind them.
  std::vector<int64_t> holders, waiting;
  for (const char* key : {"hold1", "hold2"}) {
    holders.push_back(SubmitTo(cluster_, 0, key, job(key, "1.5")));
  }
  for (const int64_t id : holders) {
    ASSERT_EQ(StartedBy(cluster_, id, 10), paused) << "job " << id;
  }
  for (int i = 0; i < 4; ++i) {
    const std::string key = "wait" + std::to_string(i);
    waiting.push_back(SubmitTo(cluster_, 1 + i % 2, key, job(key, "0.2")));
  }
  ASSERT_EQ(cluster_.Starts().size(), 2u) << "the waiting jobs started";

  cluster_.process(0).Signal(SIGSTOP);
  const SteadyTime stopped = std::chrono::steady_clock::now();
  const double pause_s = kLeaseS + 2;
  const int leader = cluster_.Leader(pause_s - 0.5, /*except=*/0, 0.25);
  const double took_over_s = SecondsSince(stopped);
  ASSERT_GE(leader, 1) << "nobody took over from the paused leader";
  const pid_t leader_pid = cluster_.process(leader).pid();
  int started = 0;
  while (SecondsSince(stopped) < pause_s) {
    started = 0;
    for (const JobStart& s : cluster_.Starts()) {
      started += std::count(waiting.begin(), waiting.end(), s.id) > 0 &&
                 s.ppid == leader_pid;
    }
    if (started == 4) break;
    SleepMs(50);
  }
  EXPECT_EQ(started, 4) << "the waiting jobs did not start under "
                        << cluster_.name(leader) << " while r1 slept";
  while (SecondsSince(stopped) < pause_s) SleepMs(20);
  cluster_.process(0).Signal(SIGCONT);
  const SteadyTime woke = std::chrono::steady_clock::now();

  std::string role;
  while (SecondsSince(woke) < 5 && (role = cluster_.Role(0)) != "follower") {
    SleepMs(50);
  }
  EXPECT_EQ(role, "follower") << "r1, 5 s after it woke";
  std::string log;
  while (SecondsSince(woke) < 5 &&
         (log = testlib::ReadFile(cluster_.log(0))).find("steps down") ==
             std::string::npos) {
    SleepMs(50);
  }
  EXPECT_THAT(log, HasSubstr("tessera serve: replica r1 steps down"));
  EXPECT_EQ(cluster_.Leader(5), leader);
  // Given a job, the old leader hands it to the leader.
  const int64_t late = SubmitTo(cluster_, 0, "late", job("late", "0.1"));
  ASSERT_NE(late, 0);
  EXPECT_EQ(StartedBy(cluster_, late, 10), leader_pid);
  EXPECT_TRUE(Drain(20));
  EXPECT_EQ(cluster_.CheckStartedOnce(), "");
  for (const JobStart& s : cluster_.Starts()) {
    if (s.ppid == paused) {
      EXPECT_THAT(holders, ::testing::Contains(s.id))
          << "r1 started job " << s.id << " after its pause";
    }
  }
  EXPECT_EQ(cluster_.CheckGpus(leader), "");
  std::printf("[ha-pause] r1 stopped %.1f s; %s led %.3f s after the stop\n",
              pause_s, cluster_.name(leader).c_str(), took_over_s);
}

TEST_F(ServeHa, ADatabaseRestartUnderLoadAnswers503AndLosesNothing) {
  ASSERT_EQ(cluster_.StartAll(), "");
  Load::Options o;
  o.request = [this](std::mt19937&, const std::string& key) {
    return Json{{"name", key},
                {"command", cluster_.Command("0.2")},
                {"resources", {{"gpu_milli", 100}, {"gpu_memory_mib", 1024}}}};
  };
  o.pause_min_ms = 20;
  o.pause_max_ms = 80;
  o.timeout_s = 10;  // a hang is an answer later than this
  Load load(cluster_, 7, std::move(o));
  load.Start();
  SleepMs(2000);
  const size_t before = load.Acknowledged().size();
  ASSERT_TRUE(cluster_.pg().Stop(/*immediate=*/true));
  SleepMs(3000);
  const size_t during = load.Acknowledged().size();
  ASSERT_TRUE(cluster_.pg().Restart()) << cluster_.pg().error();
  const SteadyTime restarted = std::chrono::steady_clock::now();
  const int leader = cluster_.Leader(15);
  const double leader_after_s = SecondsSince(restarted);
  ASSERT_GE(leader, 0) << "nobody leads 15 s after the database restarted";
  while (SecondsSince(restarted) < 3) SleepMs(50);
  load.Stop();
  for (int i = 0; i < cluster_.size(); ++i) {
    EXPECT_TRUE(cluster_.process(i).Alive()) << cluster_.name(i) << " died";
  }
  const SubmitStats& stats = load.stats();
  EXPECT_THAT(stats.errors, ::testing::IsEmpty());  // no 500, no give-up
  EXPECT_EQ(stats.no_answer, 0) << "requests unanswered in 10 s";
  EXPECT_LT(stats.slowest_s, 10);
  EXPECT_GT(stats.answered_503, 0) << "the outage answered no 503";
  const std::map<std::string, int64_t> acked = load.Acknowledged();
  ASSERT_TRUE(Drain(60)) << "jobs still active 60 s after the restart";
  EXPECT_EQ(CheckAcknowledged(acked, leader), "");
  auto jobs = cluster_.Jobs(leader);
  ASSERT_TRUE(jobs);
  std::map<std::string, int> states;
  std::map<std::string, int> failures;  // why, how many (no pids)
  for (const Json& j : *jobs) {
    ++states[j["state"].get<std::string>()];
    if (j["state"] != "failed") continue;
    const std::string why = j["reason"].get<std::string>();
    ++failures[why.substr(0, why.find(" (pid "))];  // one line per cause
  }
  // Each ran to its end. One that ended while no replica led, or while
  // its leader could not store the exit, is "lost" (its exit status is
  // unknown to the next leader); nothing fails otherwise.
  const std::set<std::pair<int64_t, int>> ends = cluster_.Ends();
  for (const auto& [key, id] : acked) {
    EXPECT_TRUE(ends.count({id, 0}))
        << key << " (job " << id << ") did not run to its end";
  }
  for (const auto& [why, n] : failures) {
    EXPECT_EQ(why.rfind("lost", 0), 0u) << n << " jobs failed: " << why;
  }
  EXPECT_EQ(cluster_.CheckStartedOnce(), "");
  std::string by_state;
  for (const auto& [state, n] : states) {
    by_state += " " + state + "=" + std::to_string(n);
  }
  for (const auto& [why, n] : failures) {
    by_state += "; " + std::to_string(n) + " failed: " + why;
  }
  std::printf(
      "[ha-db-restart] %zu acknowledged (%zu before the stop, %zu while "
      "down), %d answers 503, slowest answer %.3f s, a leader %.3f s after "
      "the restart; states:%s\n",
      acked.size(), before, during - before, stats.answered_503,
      stats.slowest_s, leader_after_s, by_state.c_str());
}

// A replica that cannot renew its lease steps down; when it leads again,
// the jobs it started that ended meanwhile are still its children, whose
// exit it reaps: they succeed (before the fix in the local launcher's
// Adopt, a zombie child counted as gone and its job failed "lost").
TEST_F(ServeHa,
       ALoneReplicaKeepsTheExitOfJobsThatEndedWhileTheDatabaseWasDown) {
  ASSERT_EQ(cluster_.Start(0), "");
  ASSERT_EQ(cluster_.Leader(15), 0);
  const std::string go = cluster_.File("go");
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    const std::string key = "j" + std::to_string(i);
    ids.push_back(SubmitTo(
        cluster_, 0, key,
        Json{{"name", key},
             {"command", cluster_.CommandUntil(go)},
             {"resources", {{"gpu_milli", 100}, {"gpu_memory_mib", 1024}}}}));
  }
  for (const int64_t id : ids) ASSERT_NE(StartedBy(cluster_, id, 10), 0);
  ASSERT_TRUE(cluster_.pg().Stop(/*immediate=*/true));
  const SteadyTime stopped = std::chrono::steady_clock::now();
  std::string log;
  while (SecondsSince(stopped) < kLeaseS + 5 &&
         (log = testlib::ReadFile(cluster_.log(0))).find("steps down") ==
             std::string::npos) {
    SleepMs(50);
  }
  ASSERT_THAT(log, HasSubstr("replica r1 steps down: cannot renew the lease"));
  // The jobs end while r1 follows.
  std::ofstream(go) << "go\n";
  while (SecondsSince(stopped) < 20 && cluster_.Ends().size() < ids.size()) {
    SleepMs(50);
  }
  ASSERT_EQ(cluster_.Ends().size(), ids.size());
  ASSERT_TRUE(cluster_.pg().Restart()) << cluster_.pg().error();
  ASSERT_EQ(cluster_.Leader(15), 0);
  ASSERT_TRUE(Drain(20));
  for (const int64_t id : ids) {
    const Reply r =
        Call("GET", cluster_.port(0), "/v1/jobs/" + std::to_string(id));
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.Json()["state"], Json("succeeded")) << r.body;
  }
}

TEST_F(ServeHa, AFollowersClusterNamesTheLeader) {
  ASSERT_EQ(cluster_.Start(0), "");
  ASSERT_EQ(cluster_.Leader(15), 0);
  ASSERT_EQ(cluster_.Start(1), "");
  const std::string leader_url =
      "http://127.0.0.1:" + std::to_string(cluster_.port(0));

  const Reply follower = Call("GET", cluster_.port(1), "/v1/cluster");
  ASSERT_EQ(follower.status, 200) << follower.body;
  EXPECT_EQ(follower.Header("X-Tessera-Role"), "follower");
  EXPECT_EQ(follower.Header("X-Tessera-Replica"), "r2");
  Json r = follower.Json()["replica"];
  EXPECT_EQ(r["role"], Json("follower"));
  EXPECT_EQ(r["name"], Json("r2"));
  ASSERT_TRUE(r["leader"].is_object()) << r.dump();
  EXPECT_EQ(r["leader"]["name"], Json("r1"));
  EXPECT_EQ(r["leader"]["address"], leader_url);

  const Reply leader = Call("GET", cluster_.port(0), "/v1/cluster");
  ASSERT_EQ(leader.status, 200) << leader.body;
  EXPECT_EQ(leader.Header("X-Tessera-Role"), "leader");
  EXPECT_EQ(leader.Json()["replica"]["role"], Json("leader"));
  EXPECT_EQ(leader.Json()["replica"]["leader"]["name"], Json("r1"));

  EXPECT_EQ(Call("GET", cluster_.port(1), "/readyz?role=leader").status, 503);
  EXPECT_EQ(Call("GET", cluster_.port(1), "/readyz").status, 200);
  // What only the leader does, a follower sends there.
  const Reply drain =
      Call("POST", cluster_.port(1), "/v1/nodes/node0/drain", "{}");
  EXPECT_EQ(drain.status, 307) << drain.body;
  EXPECT_EQ(drain.Header("Location"), leader_url + "/v1/nodes/node0/drain");
}

}  // namespace
}  // namespace tessera
