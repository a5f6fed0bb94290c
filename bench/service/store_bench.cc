// The queue service on SQLite and on PostgreSQL (issue 32): submissions per
// second and the time of a scheduling round, for the same workload on each
// store. No HTTP: the bench calls Service::Submit from --threads threads
// (N jobs in all), then drives the rounds itself (Service::Tick, no round
// thread) until every job has run.
//
//   service_store_bench [--jobs 2000] [--threads 4] [--repeat 3]
//                       [--stores sqlite,postgres,leader,follower]
//
// The stores:
//   sqlite    one service, SQLite in WAL mode with synchronous=FULL (the
//             default store);
//   postgres  one service on PostgreSQL, without the lease (the store
//             alone);
//   leader    a replica that leads: what `tessera serve` runs with `store:
//             {postgres: ...}`, even alone (a lease renewed every second,
//             every write fenced by its epoch, the inbox read every round);
//   follower  two replicas: the jobs are submitted through the follower
//             (stored with a line of the leader's inbox), the rounds run on
//             the leader (which takes the inbox first).
// PostgreSQL is a real server the bench starts (initdb into /tmp, fsync on,
// synchronous_commit on: tests/testlib/postgres_server.h), on the same
// disk as the SQLite file; every run gets a fresh database.
//
// The workload: jobs of 100 milli-GPU and 1 GiB on 2 nodes of 4 GPUs (80
// run at once), each running exactly one round (a launcher that starts
// nothing and reports every job it started as exited 0 at the next poll).
// A busy round thus records ~80 ends and ~80 starts (each start two
// writes: `starting`, then `running`). Reported: submissions per second
// (median over the runs), a submission's latency (median and p99 over
// every call), a busy round's time (median and p90), an idle round's
// (median of 20 with nothing queued), and the time to run every job.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "launch/launcher.h"
#include "server/serve_config.h"
#include "service/service.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::service {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

// Starts nothing; a job it started is reported exited (code 0) at the
// next poll: every job runs for one round.
class OneRoundLauncher : public launch::Launcher {
 public:
  Result<launch::Launched> Start(const launch::LaunchSpec& spec) override {
    std::lock_guard lock(mu_);
    running_.push_back(spec.id);
    return launch::Launched{100000 + spec.id, 1};
  }
  void Stop(scheduler::JobId id, double /*grace_s*/) override {
    std::lock_guard lock(mu_);
    running_.erase(std::remove(running_.begin(), running_.end(), id),
                   running_.end());
  }
  std::vector<launch::Exited> Poll() override {
    std::lock_guard lock(mu_);
    std::vector<launch::Exited> out;
    for (const scheduler::JobId id : running_)
      out.push_back({id, 0, "", false});
    exited_ += static_cast<int64_t>(running_.size());
    running_.clear();
    return out;
  }
  bool Adopt(scheduler::JobId, int64_t, int64_t) override { return false; }
  std::string LogPath(scheduler::JobId, bool) const override {
    return "/dev/null";
  }
  int64_t exited() const {
    std::lock_guard lock(mu_);
    return exited_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<scheduler::JobId> running_;
  int64_t exited_ = 0;
};

struct Args {
  int jobs = 2000;
  int threads = 4;
  int repeat = 3;
  std::vector<std::string> stores = {"sqlite", "postgres", "leader",
                                     "follower"};
};

// One run of one store.
struct Run {
  double submit_s = 0;                // wall time of all submissions
  std::vector<double> submit_ms;      // each call
  std::vector<double> busy_round_ms;  // rounds that ended or started jobs
  std::vector<double> idle_round_ms;  // rounds with nothing to do
  double drain_s = 0;                 // rounds until every job ran
};

// The cluster: serve.yaml's parser builds the topology and the policies.
// GPUs are shared without isolation (nothing runs on them here).
Result<ServiceOptions> BaseOptions() {
  const std::string yaml =
      "pools:\n  - {name: a, policy: fifo}\n"
      "share_unisolated: true\n"
      "nodes:\n"
      "  - {name: node0, pool: a, cpu_milli: 64000, memory: 256GiB,\n"
      "     gpus: [{kind: a100-80gb, count: 4}]}\n"
      "  - {name: node1, pool: a, cpu_milli: 64000, memory: 256GiB,\n"
      "     gpus: [{kind: a100-80gb, count: 4}]}\n"
      "users:\n  - {name: bench, role: user, token_sha256: "
      "0000000000000000000000000000000000000000000000000000000000000000}\n";
  auto config = server::ParseServeConfig(yaml, "bench");
  if (!config) return config.error();
  ServiceOptions o = config->service;
  o.start_thread = false;
  o.max_queued_per_user = 100000000;
  o.kill_grace_s = 0;
  return o;
}

JobRequest SmallJob() {
  JobRequest r;
  r.name = "bench";
  r.command = {"true"};
  r.resources = Resources{0, 100, 1024, 0, 0};
  return r;
}

// N submissions from `threads` threads, through `service`.
Status Submit(Service& service, const Args& args, Run& run) {
  User user;
  user.name = "bench";
  std::mutex mu;
  std::atomic<int> next{0};
  std::string error;
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < args.threads; ++t) {
    threads.emplace_back([&] {
      std::vector<double> mine;
      while (next++ < args.jobs) {
        const Clock::time_point s = Clock::now();
        Result<Job> job = service.Submit(user, SmallJob());
        mine.push_back(MsSince(s));
        if (!job) {
          std::lock_guard lock(mu);
          error = job.error().message;
          return;
        }
      }
      std::lock_guard lock(mu);
      run.submit_ms.insert(run.submit_ms.end(), mine.begin(), mine.end());
    });
  }
  for (std::thread& t : threads) t.join();
  run.submit_s = MsSince(start) / 1000;
  if (!error.empty()) return Internal("a submission failed: " + error);
  return {};
}

// Rounds on `service` until the launcher saw every job end, then 20 idle
// ones.
Status Rounds(Service& service, const OneRoundLauncher& launcher,
              const Args& args, Run& run) {
  const Clock::time_point start = Clock::now();
  int64_t seen = 0;
  int still = 0;  // rounds in a row in which no job ended
  while (launcher.exited() < args.jobs) {
    const Clock::time_point s = Clock::now();
    service.Tick();
    run.busy_round_ms.push_back(MsSince(s));
    const int64_t now = launcher.exited();
    still = now == seen ? still + 1 : 0;
    seen = now;
    if (still > 20) {
      return Internal("no job ended in 20 rounds (" + std::to_string(now) +
                      " of " + std::to_string(args.jobs) + " ran)");
    }
  }
  run.drain_s = MsSince(start) / 1000;
  for (int i = 0; i < 20; ++i) {
    const Clock::time_point s = Clock::now();
    service.Tick();
    run.idle_round_ms.push_back(MsSince(s));
  }
  return {};
}

std::unique_ptr<Service> Started(ServiceOptions options,
                                 std::unique_ptr<launch::Launcher> launcher,
                                 std::string* error) {
  auto service = Service::Start(std::move(options), std::move(launcher));
  if (!service) {
    *error = service.error().message;
    return nullptr;
  }
  return std::move(service).value();
}

// One run of `store` in a fresh database (`n` numbers the runs).
Result<Run> RunOnce(const std::string& store, const Args& args, int n,
                    testlib::PostgresServer* pg,
                    const std::filesystem::path& tmp) {
  Result<ServiceOptions> base = BaseOptions();
  TESSERA_RETURN_IF_ERROR(base);
  ServiceOptions options = *base;
  const std::string name = store + "_" + std::to_string(n);
  options.log_dir = (tmp / ("logs_" + name)).string();
  options.db_path = (tmp / (name + ".db")).string();
  if (store != "sqlite") {
    if (!pg->CreateDatabase("bench_" + name)) return Internal(pg->error());
    options.store.postgres_url = pg->Url("bench_" + name);
    options.store.postgres_password_file = pg->password_file();
  }
  if (store == "leader" || store == "follower") {
    options.replica = ReplicaOptions{"r1", "http://127.0.0.1:1", 10, 1};
  }
  auto owned = std::make_unique<OneRoundLauncher>();
  const OneRoundLauncher& launcher = *owned;
  std::string error;
  std::unique_ptr<Service> leader = Started(options, std::move(owned), &error);
  if (!leader) return Internal(store + ": " + error);
  std::unique_ptr<Service> follower;
  if (store == "follower") {
    ServiceOptions f = options;
    f.replica = ReplicaOptions{"r2", "http://127.0.0.1:2", 10, 1};
    follower = Started(f, std::make_unique<OneRoundLauncher>(), &error);
    if (!follower) return Internal("follower: " + error);
    if (follower->Replica().leader) {
      return Internal("follower: replica r2 leads, r1 should");
    }
  }
  Run run;
  TESSERA_RETURN_IF_ERROR(Submit(follower ? *follower : *leader, args, run));
  TESSERA_RETURN_IF_ERROR(Rounds(*leader, launcher, args, run));
  follower.reset();
  leader.reset();
  return run;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

// A store's runs, summarized.
struct Summary {
  std::string store;
  double submits_per_s = 0;  // median over the runs
  double submit_p50 = 0, submit_p99 = 0;
  double busy_p50 = 0, busy_p90 = 0;
  size_t busy_rounds = 0;  // per run
  double idle_p50 = 0;
  double drain_s = 0;  // median over the runs
};

Summary Summarize(const std::string& store, const std::vector<Run>& runs,
                  const Args& args) {
  Summary s;
  s.store = store;
  std::vector<double> rates, drains, submit, busy, idle;
  for (const Run& r : runs) {
    rates.push_back(args.jobs / r.submit_s);
    drains.push_back(r.drain_s);
    submit.insert(submit.end(), r.submit_ms.begin(), r.submit_ms.end());
    busy.insert(busy.end(), r.busy_round_ms.begin(), r.busy_round_ms.end());
    idle.insert(idle.end(), r.idle_round_ms.begin(), r.idle_round_ms.end());
  }
  s.submits_per_s = Quantile(rates, 0.5);
  s.drain_s = Quantile(drains, 0.5);
  s.submit_p50 = Quantile(submit, 0.5);
  s.submit_p99 = Quantile(submit, 0.99);
  s.busy_p50 = Quantile(busy, 0.5);
  s.busy_p90 = Quantile(busy, 0.9);
  s.busy_rounds = runs.empty() ? 0 : busy.size() / runs.size();
  s.idle_p50 = Quantile(idle, 0.5);
  return s;
}

void Print(const std::vector<Summary>& rows, const Args& args) {
  std::printf(
      "%d jobs of 100 milli-GPU from %d threads, then rounds until all ran "
      "(2 nodes x 4 GPUs: 80 at once); %d run(s) per store; %u cores\n\n",
      args.jobs, args.threads, args.repeat,
      std::thread::hardware_concurrency());
  std::printf("%-9s %9s %8s %8s %7s %9s %9s %9s %8s %8s\n", "store", "submit/s",
              "p50 ms", "p99 ms", "rounds", "round p50", "round p90",
              "idle p50", "drain s", "vs sqlite");
  const Summary* sqlite = nullptr;
  for (const Summary& s : rows) {
    if (s.store == "sqlite") sqlite = &s;
  }
  for (const Summary& s : rows) {
    std::string ratio = "-";
    if (sqlite != nullptr && &s != sqlite) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2fx/%.2fx",
                    s.submits_per_s / sqlite->submits_per_s,
                    s.busy_p50 / sqlite->busy_p50);
      ratio = buf;
    }
    std::printf("%-9s %9.0f %8.2f %8.2f %7zu %9.2f %9.2f %9.2f %8.2f %s\n",
                s.store.c_str(), s.submits_per_s, s.submit_p50, s.submit_p99,
                s.busy_rounds, s.busy_p50, s.busy_p90, s.idle_p50, s.drain_s,
                ratio.c_str());
  }
  std::printf(
      "\nround times in ms; \"vs sqlite\": submissions per second, then the "
      "busy round's median, as a multiple of SQLite's\n");
}

std::optional<Args> Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::string v = argv[i + 1];
    if (a == "--jobs") {
      args.jobs = std::stoi(v);
    } else if (a == "--threads") {
      args.threads = std::stoi(v);
    } else if (a == "--repeat") {
      args.repeat = std::stoi(v);
    } else if (a == "--stores") {
      args.stores.clear();
      std::stringstream in(v);
      for (std::string s; std::getline(in, s, ',');) args.stores.push_back(s);
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return std::nullopt;
    }
  }
  const std::set<std::string> known = {"sqlite", "postgres", "leader",
                                       "follower"};
  for (const std::string& s : args.stores) {
    if (known.count(s) == 0) {
      std::fprintf(stderr, "unknown store %s\n", s.c_str());
      return std::nullopt;
    }
  }
  if (args.jobs < 1 || args.threads < 1 || args.repeat < 1) {
    std::fprintf(stderr, "--jobs, --threads and --repeat must be >= 1\n");
    return std::nullopt;
  }
  return args;
}

}  // namespace
}  // namespace tessera::service

int main(int argc, char** argv) {
  using namespace tessera::service;
  const std::optional<Args> args = Parse(argc, argv);
  if (!args) return 2;
  const bool needs_pg =
      std::any_of(args->stores.begin(), args->stores.end(),
                  [](const std::string& s) { return s != "sqlite"; });
  std::optional<tessera::testlib::PostgresServer> pg;
  if (needs_pg) {
    pg.emplace();
    if (!pg->error().empty()) {
      std::fprintf(stderr, "PostgreSQL: %s\n", pg->error().c_str());
      return 1;
    }
  }
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("tessera_store_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  std::vector<Summary> rows;
  int status = 0;
  for (const std::string& store : args->stores) {
    std::vector<Run> runs;
    for (int n = 0; n < args->repeat && status == 0; ++n) {
      auto run = RunOnce(store, *args, n, pg ? &*pg : nullptr, tmp);
      if (!run) {
        std::fprintf(stderr, "%s\n", run.error().message.c_str());
        status = 1;
        break;
      }
      runs.push_back(std::move(*run));
    }
    if (status != 0) break;
    rows.push_back(Summarize(store, runs, *args));
  }
  std::filesystem::remove_all(tmp);
  if (status == 0) Print(rows, *args);
  return status;
}
