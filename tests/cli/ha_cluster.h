#ifndef TESSERA_TESTS_CLI_HA_CLUSTER_H_
#define TESSERA_TESTS_CLI_HA_CLUSTER_H_

// Replicas of the real `tessera serve` (TESSERA_BIN) over one PostgreSQL
// store that the test starts itself (tests/testlib/postgres_server.h), for
// the end-to-end tests of high availability (serve_ha_test.cc). All
// replicas read one config file (store: postgres, a short lease, the local
// launcher, one node of two shared GPUs in a priority pool with
// preemption) and differ by `--listen 127.0.0.1:PORT --replica rN`. Every
// job's command appends "JOB_ID ATTEMPT PPID" to one file when it starts
// (PPID is the replica that started it: the local launcher forks and execs
// the command), and "JOB_ID ATTEMPT" to another when it ran to its end.
// Needs httplib and OpenSSL (serve_process.h).

#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/serve_process.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::testlib {

// The lease the tests run with (short, so that CI stays fast).
inline constexpr double kLeaseS = 2;
inline constexpr const char* kHaToken = "alice-ha-token";

using SteadyTime = std::chrono::steady_clock::time_point;

inline double SecondsSince(SteadyTime t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

// An HTTP answer; status 0 when none came (refused, reset, timed out).
struct Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  nlohmann::json Json() const {
    return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  }
};

// One request to 127.0.0.1:port as the test's admin; `timeout_s` bounds
// the connection and the answer each.
inline Reply Call(const std::string& method, int port, const std::string& path,
                  const std::string& body = "", double timeout_s = 2,
                  const httplib::Headers& headers = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_bearer_token_auth(kHaToken);
  const auto s = static_cast<time_t>(timeout_s);
  const auto us =
      static_cast<time_t>((timeout_s - static_cast<double>(s)) * 1e6);
  c.set_connection_timeout(s, us);
  c.set_read_timeout(s, us);
  c.set_write_timeout(s, us);
  httplib::Result r = method == "GET"
                          ? c.Get(path, headers)
                          : c.Post(path, headers, body, "application/json");
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.headers = r->headers;
  return out;
}

// The port of a Location such as "http://127.0.0.1:PORT/v1/jobs" and its
// path; port 0 when it is not one of this machine's.
inline std::pair<int, std::string> SplitLocation(const std::string& url) {
  const std::string head = "http://127.0.0.1:";
  if (url.rfind(head, 0) != 0) return {0, ""};
  const size_t slash = url.find('/', head.size());
  const std::string port = url.substr(head.size(), slash - head.size());
  return {std::atoi(port.c_str()),
          slash == std::string::npos ? "/" : url.substr(slash)};
}

// One replica's process, its stderr appended to a log; it dies with the
// test process (PR_SET_PDEATHSIG), even if the test crashes.
class ReplicaProcess {
 public:
  ReplicaProcess() = default;
  ReplicaProcess(const ReplicaProcess&) = delete;
  ReplicaProcess& operator=(const ReplicaProcess&) = delete;
  ~ReplicaProcess() { Kill(SIGKILL); }

  // Starts `tessera serve ARGS` and waits until /healthz on `port`
  // answers: "" once it does, else why not (with the log).
  std::string Start(const std::vector<std::string>& serve_args, int port,
                    const std::string& log) {
    std::vector<std::string> args = {TESSERA_BIN, "serve"};
    args.insert(args.end(), serve_args.begin(), serve_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      FILE* f = std::freopen(log.c_str(), "a", stderr);
      (void)f;
      execv(TESSERA_BIN, argv.data());
      _exit(127);
    }
    const SteadyTime start = std::chrono::steady_clock::now();
    while (SecondsSince(start) < 60) {
      if (Call("GET", port, "/healthz", "", 1).status == 200) return "";
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return "tessera serve exited (status " + std::to_string(status) +
               ") before it answered: " + ReadFile(log);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "tessera serve did not answer /healthz in 60 s: " + ReadFile(log);
  }

  // Sends `signal` and reaps it; nothing if it is not running.
  void Kill(int signal) {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);  // a stopped process does not act on SIGTERM
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }
  // Sends `signal` (SIGSTOP, SIGCONT) and leaves it be.
  void Signal(int signal) const {
    if (pid_ > 0) kill(pid_, signal);
  }
  // False once it exited (reaped here).
  bool Alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      return false;
    }
    return true;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
};

// One start of a job, as its command wrote it.
struct JobStart {
  int64_t id = 0;
  int attempt = 0;
  int64_t ppid = 0;  // the replica that started it
};

// The store, the shared config, and the replicas r1..rN (none started).
class HaCluster {
 public:
  explicit HaCluster(int replicas) : replicas_(replicas) {
    for (int i = 0; i < replicas; ++i) ports_.push_back(FreeLoopbackPort());
    if (!pg_.error().empty() || !pg_.CreateDatabase("tessera")) return;
    std::ofstream(config_)
        << "listen: 127.0.0.1:" << ports_[0] << "\n"
        << "store:\n  postgres:\n    url: " << pg_.Url("tessera")
        << "\n    password_file: " << pg_.password_file() << "\n"
        << "ha: {lease_s: " << kLeaseS << ", lease_renew_s: 0.25}\n"
        << "log_dir: " << dir_.File("logs") << "\n"
        << "kill_grace_s: 1\n"
        << "share_unisolated: true\n"  // fractions share a GPU
        << "gpu_usage: off\n"
        << "pools:\n  - {name: a, policy: priority, preemption: true}\n"
        << "nodes:\n  - {name: node0, pool: a, cpu_milli: 64000, memory: "
           "256GiB, gpus: [{kind: a100-80gb, count: 2}]}\n"
        << "users:\n"
        << "  - {name: alice, role: admin, token_sha256: "
        << Sha256Hex(kHaToken) << "}\n";
  }

  // "" when PostgreSQL runs and has the service's database.
  const std::string& error() const { return pg_.error(); }
  PostgresServer& pg() { return pg_; }
  int size() const { return static_cast<int>(replicas_.size()); }
  int port(int i) const { return ports_[i]; }
  std::string name(int i) const { return "r" + std::to_string(i + 1); }
  std::string log(int i) const { return dir_.File(name(i) + ".log"); }
  ReplicaProcess& process(int i) { return replicas_[i]; }
  // A path in the test's directory.
  std::string File(const std::string& name) const { return dir_.File(name); }

  // Starts replica i; "" once it answers.
  std::string Start(int i) {
    return replicas_[i].Start(
        {"--config", config_, "--listen",
         "127.0.0.1:" + std::to_string(ports_[i]), "--replica", name(i)},
        ports_[i], log(i));
  }
  // Starts them all, r1 first: r1 leads.
  std::string StartAll() {
    for (int i = 0; i < size(); ++i) {
      if (std::string e = Start(i); !e.empty()) return name(i) + ": " + e;
      if (i == 0 && Leader(15) != 0) return "r1 does not lead alone";
    }
    return "";
  }

  // The replica answering /readyz?role=leader with 200 (skipping
  // `except`), asked until `wait_s` passed; -1 if none.
  int Leader(double wait_s, int except = -1, double timeout_s = 0.5) {
    const SteadyTime start = std::chrono::steady_clock::now();
    do {
      for (int i = 0; i < size(); ++i) {
        if (i == except || replicas_[i].pid() <= 0) continue;
        if (Call("GET", ports_[i], "/readyz?role=leader", "", timeout_s)
                .status == 200) {
          return i;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (SecondsSince(start) < wait_s);
    return -1;
  }
  // "leader" or "follower", as /healthz of replica i says; "" if none.
  std::string Role(int i) {
    const Reply r = Call("GET", ports_[i], "/healthz", "", 1);
    if (r.status != 200) return "";
    const nlohmann::json j = r.Json();
    return j.is_object() && j.contains("role") ? j["role"].get<std::string>()
                                               : "";
  }

  // All jobs in the store, read through replica i (one query: one
  // snapshot); nullopt when it did not answer.
  std::optional<std::vector<nlohmann::json>> Jobs(int i) {
    const Reply r = Call("GET", ports_[i], "/v1/jobs?limit=100000", "", 10);
    if (r.status != 200) return std::nullopt;
    const nlohmann::json j = r.Json();
    if (!j.is_object() || !j.contains("jobs")) return std::nullopt;
    return j["jobs"].get<std::vector<nlohmann::json>>();
  }
  // Jobs not yet ended (queued, starting, running, preempted); -1 when
  // replica i did not answer.
  int Active(int i) {
    auto jobs = Jobs(i);
    if (!jobs) return -1;
    int n = 0;
    for (const nlohmann::json& j : *jobs) {
      const std::string s = j["state"].get<std::string>();
      n += s == "queued" || s == "starting" || s == "running" ||
           s == "preempted";
    }
    return n;
  }

  // "" when no GPU holds more than it has: in the leader's books (GET
  // /v1/cluster on replica `leader`) and in the store (the allocations of
  // the starting and running jobs, one snapshot).
  std::string CheckGpus(int leader) {
    const Reply r = Call("GET", ports_[leader], "/v1/cluster", "", 5);
    if (r.status != 200) return "no /v1/cluster from " + name(leader);
    nlohmann::json cluster = r.Json();  // a missing key reads as null
    for (const nlohmann::json& g : cluster["gpus"]) {
      if (g["reserved_milli"].get<int>() > 1000 ||
          g["reserved_memory_mib"].get<int64_t>() >
              g["memory_mib"].get<int64_t>()) {
        return name(leader) + ": GPU " + g["id"].get<std::string>() +
               " is overbooked: " + g.dump();
      }
    }
    auto jobs = Jobs(leader);
    if (!jobs) return "no /v1/jobs from " + name(leader);
    std::map<std::string, std::pair<int, int64_t>> held;  // milli, MiB
    std::map<std::string, int64_t> memory;
    for (const nlohmann::json& g : cluster["gpus"]) {
      memory[g["id"].get<std::string>()] = g["memory_mib"].get<int64_t>();
    }
    for (const nlohmann::json& j : *jobs) {
      const std::string s = j["state"].get<std::string>();
      if (s != "starting" && s != "running") continue;
      for (const nlohmann::json& a : j["allocation"]) {
        auto& [milli, mib] = held[a["gpu"].get<std::string>()];
        milli += a["gpu_milli"].get<int>();
        mib += a["gpu_memory_mib"].get<int64_t>();
      }
    }
    for (const auto& [gpu, use] : held) {
      if (use.first > 1000 || use.second > memory[gpu]) {
        return "the store's running jobs overbook GPU " + gpu + ": " +
               std::to_string(use.first) + " milli, " +
               std::to_string(use.second) + " MiB";
      }
    }
    return "";
  }

  // Every start the jobs recorded so far.
  std::vector<JobStart> Starts() const {
    std::ifstream in(starts_);
    std::vector<JobStart> out;
    JobStart s;
    while (in >> s.id >> s.attempt >> s.ppid) out.push_back(s);
    return out;
  }
  // "" when no (job, attempt) started twice, else which did.
  std::string CheckStartedOnce() const {
    std::map<std::pair<int64_t, int>, int> n;
    for (const JobStart& s : Starts()) ++n[{s.id, s.attempt}];
    std::string twice;
    for (const auto& [key, count] : n) {
      if (count > 1) {
        twice += " job " + std::to_string(key.first) + " attempt " +
                 std::to_string(key.second) + " (" + std::to_string(count) +
                 " times);";
      }
    }
    return twice.empty() ? "" : "started twice:" + twice;
  }
  // The jobs that ran to their end (killed ones did not): id, attempt.
  std::set<std::pair<int64_t, int>> Ends() const {
    std::ifstream in(ends_);
    std::set<std::pair<int64_t, int>> out;
    int64_t id = 0;
    int attempt = 0;
    while (in >> id >> attempt) out.insert({id, attempt});
    return out;
  }
  // A job's command: records its start, sleeps `seconds`, records its end.
  nlohmann::json Command(const std::string& seconds) const {
    return Around("sleep " + seconds);
  }
  // The same, waiting until file `go` exists rather than sleeping.
  nlohmann::json CommandUntil(const std::string& go) const {
    return Around("while [ ! -e " + go + " ]; do sleep 0.05; done");
  }

 private:
  nlohmann::json Around(const std::string& body) const {
    return {"sh", "-c",
            "echo \"$TESSERA_JOB_ID $TESSERA_ATTEMPT $PPID\" >> " + starts_ +
                "; " + body +
                " && echo \"$TESSERA_JOB_ID $TESSERA_ATTEMPT\" >> " + ends_};
  }

  PostgresServer pg_;  // first: the replicas go before it does
  TempDir dir_;
  std::string config_ = dir_.File("serve.yaml");
  std::string starts_ = dir_.File("starts.log");
  std::string ends_ = dir_.File("ends.log");
  std::vector<int> ports_;
  std::vector<ReplicaProcess> replicas_;
};

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_CLI_HA_CLUSTER_H_
