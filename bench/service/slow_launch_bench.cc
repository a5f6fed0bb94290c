// The API's latency while the cluster engine is slow: every start takes
// --launch-s seconds (a busy Slurm controller: sbatch hanging 8 s), and
// meanwhile clients call every kind of route over HTTP for --seconds.
// Issue target: p99 < 50 ms on every route during a hung launch.
//
//   service_slow_launch_bench [--launch-s 8] [--seconds 20] [--clients 4]
//
// Jobs are submitted as the bench goes, so the round thread is always in a
// start; the service, store and HTTP server are the real ones, the launcher
// a stand-in whose Start sleeps (what it starts is not the point here).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/served_queue.h"
#include "launch/launcher.h"

namespace tessera::scheduler {
namespace {

class SlowLauncher : public launch::Launcher {
 public:
  explicit SlowLauncher(double seconds) : seconds_(seconds) {}
  Result<launch::Launched> Start(const launch::LaunchSpec& spec) override {
    starts_++;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
    return launch::Launched{100000 + spec.id, 1};
  }
  void Stop(JobId, double) override {}
  std::vector<launch::Exited> Poll() override { return {}; }
  bool Adopt(JobId, int64_t, int64_t) override { return false; }
  std::string LogPath(JobId, bool) const override { return "/dev/null"; }
  int starts() const { return starts_; }

 private:
  const double seconds_;
  std::atomic<int> starts_{0};
};

}  // namespace
}  // namespace tessera::scheduler

int main(int argc, char** argv) {
  using namespace tessera::scheduler;
  using namespace tessera::bench;
  double launch_s = 8, seconds = 20;
  int clients = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--launch-s") launch_s = std::stod(argv[i + 1]);
    if (a == "--seconds") seconds = std::stod(argv[i + 1]);
    if (a == "--clients") clients = std::stoi(argv[i + 1]);
  }
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("tessera_slow_launch_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  ServedQueueOptions options;
  options.node =
      "cpu_milli: 640000, memory: 2TiB, gpus: [{kind: a100-80gb, count: 8}]";
  options.role = "admin";
  options.db_path = (tmp / "q.db").string();
  options.log_dir = (tmp / "logs").string();
  auto launcher_owned = std::make_unique<SlowLauncher>(launch_s);
  SlowLauncher* launcher = launcher_owned.get();
  std::optional<ServedQueue> queue =
      StartServedQueue(options, std::move(launcher_owned));
  if (!queue) return 1;
  const int port = queue->port();
  const httplib::Headers auth = BenchAuth();
  const std::string job = BenchJob(100);
  // A start is under way before the clients begin.
  {
    httplib::Client c("127.0.0.1", port);
    c.Post("/v1/jobs", auth, job, "application/json");
  }
  while (launcher->starts() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> failed{0};
  std::mutex mu;
  std::map<std::string, std::vector<double>> latencies;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      std::map<std::string, std::vector<double>> mine;
      int64_t last = 1;
      for (int i = 0; !stop; ++i) {
        const int route = (i + t) % 6;
        const auto s = std::chrono::steady_clock::now();
        std::string name;
        const auto call = [&]() -> httplib::Result {
          switch (route) {
            case 0:
              name = "POST /v1/jobs";
              return c.Post("/v1/jobs", auth, job, "application/json");
            case 1:
              name = "GET /v1/cluster";
              return c.Get("/v1/cluster", auth);
            case 2:
              name = "GET /v1/jobs/{id}";
              return c.Get("/v1/jobs/" + std::to_string(last), auth);
            case 3:
              name = "GET /v1/jobs";
              return c.Get("/v1/jobs?limit=50", auth);
            case 4:
              name = "POST /v1/jobs/{id}/cancel";
              return c.Post("/v1/jobs/" + std::to_string(last) + "/cancel",
                            auth, "{}", "application/json");
            default:
              name = "GET /healthz";
              return c.Get("/healthz");
          }
        };
        httplib::Result r = call();
        if (route == 0 && r && r->status == 201) {
          last = nlohmann::json::parse(r->body)["id"].get<int64_t>();
        }
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - s)
                              .count();
        if (!r || r->status >= 500) ++failed;
        mine[name].push_back(ms);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      std::lock_guard lock(mu);
      for (auto& [k, v] : mine) {
        latencies[k].insert(latencies[k].end(), v.begin(), v.end());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  std::printf("starts of %.1f s each: %d begun in %.1f s; %d clients\n",
              launch_s, launcher->starts(), seconds, clients);
  std::printf("%-28s %8s %10s %10s %10s\n", "route", "calls", "p50 ms",
              "p99 ms", "max ms");
  double worst_p99 = 0;
  for (auto& [name, v] : latencies) {
    std::sort(v.begin(), v.end());
    const auto at = [&](double q) {
      return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
    };
    worst_p99 = std::max(worst_p99, at(0.99));
    std::printf("%-28s %8zu %10.2f %10.2f %10.2f\n", name.c_str(), v.size(),
                at(0.5), at(0.99), v.back());
  }
  std::printf("worst p99 %.2f ms (target < 50 ms); %lld failed calls\n",
              worst_p99, static_cast<long long>(failed.load()));
  queue->server->Stop();
  queue.reset();
  std::filesystem::remove_all(tmp);
  return failed.load() == 0 ? 0 : 1;
}
