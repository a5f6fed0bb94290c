// Durable submissions per second over HTTP: the real service (SQLite in WAL
// mode, synchronous=FULL: one fsync per accepted job) behind the real HTTP
// server on loopback, C concurrent clients posting jobs for S seconds.
// Issue target: >= 1,000/s on this 2-core machine.
//
//   scheduler_submit_bench [--clients C] [--seconds S] [--db PATH]
//
// The jobs queue behind one that holds the only GPU, so the launcher (a
// no-op here: the bench measures admission, not process start) never runs
// them. Prints the rate and the latency percentiles of the 201 answers.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/auth.h"
#include "server/http_server.h"
#include "server/serve_config.h"
#include "tests/testlib/idle_launcher.h"

namespace tessera::scheduler {
namespace {

constexpr const char* kToken = "bench-token";

}  // namespace
}  // namespace tessera::scheduler

int main(int argc, char** argv) {
  using namespace tessera::scheduler;
  int clients = 8;
  double seconds = 5;
  std::string db =
      (std::filesystem::temp_directory_path() / "tessera_submit_bench.db")
          .string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--clients") clients = std::stoi(argv[i + 1]);
    if (a == "--seconds") seconds = std::stod(argv[i + 1]);
    if (a == "--db") db = argv[i + 1];
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(db + suffix);
  }
  const std::string yaml = std::string(
      "listen: 127.0.0.1:0\n"
      "pools:\n  - {name: a, policy: fifo}\n"
      "nodes:\n  - {name: node0, pool: a, cpu_milli: 64000, memory: 256GiB, "
      "gpus: [{kind: a100-80gb, count: 1}]}\n"
      "limits: {max_queued_per_user: 100000000}\n"
      "users:\n  - {name: bench, role: user, token_sha256: "
      "0000000000000000000000000000000000000000000000000000000000000000}\n");
  auto config = ParseServeConfig(yaml, "bench");
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message.c_str());
    return 1;
  }
  // The token's hash, computed by the server's own code path.
  config->users[0].token_sha256 = Sha256Hex(kToken);
  config->service.db_path = db;
  config->service.log_dir =
      (std::filesystem::temp_directory_path() / "tessera_submit_bench_logs")
          .string();
  auto service = Service::Start(
      config->service, std::make_unique<tessera::testlib::IdleLauncher>());
  if (!service) {
    std::fprintf(stderr, "%s\n", service.error().message.c_str());
    return 1;
  }
  auto server = HttpServer::Start(**service, *config);
  if (!server) {
    std::fprintf(stderr, "%s\n", server.error().message.c_str());
    return 1;
  }
  const int port = (*server)->port();
  const std::string blocker = nlohmann::json{
      {"command", {"sleep", "1"}},
      {"resources",
       {{"gpus", 1}}}}.dump();
  const std::string body =
      nlohmann::json{
          {"name", "bench"},
          {"command", {"true"}},
          {"resources", {{"gpu_milli", 500}, {"gpu_memory_mib", 1024}}}}
          .dump();
  const httplib::Headers auth = {
      {"Authorization", std::string("Bearer ") + kToken}};
  {
    httplib::Client c("127.0.0.1", port);
    c.Post("/v1/jobs", auth, blocker, "application/json");
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ok{0}, failed{0};
  std::mutex mu;
  std::vector<double> latencies;
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      std::vector<double> mine;
      while (!stop) {
        const auto s = std::chrono::steady_clock::now();
        auto r = c.Post("/v1/jobs", auth, body, "application/json");
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - s)
                              .count();
        if (r && r->status == 201) {
          ++ok;
          mine.push_back(ms);
        } else {
          ++failed;
        }
      }
      std::lock_guard lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::sort(latencies.begin(), latencies.end());
  const auto at = [&](double q) {
    return latencies.empty()
               ? 0.0
               : latencies[std::min(latencies.size() - 1,
                                    static_cast<size_t>(q * latencies.size()))];
  };
  std::printf(
      "%d clients, %.1f s: %lld durable submissions (%lld failed), %.0f/s; "
      "latency p50 %.2f ms, p99 %.2f ms\n",
      clients, elapsed, static_cast<long long>(ok.load()),
      static_cast<long long>(failed.load()),
      static_cast<double>(ok.load()) / elapsed, at(0.5), at(0.99));
  (*server)->Stop();
  return failed.load() == 0 ? 0 : 1;
}
