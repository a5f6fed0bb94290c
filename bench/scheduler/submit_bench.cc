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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/served_queue.h"
#include "tests/testlib/idle_launcher.h"

int main(int argc, char** argv) {
  using namespace tessera::bench;
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
  ServedQueueOptions options;
  options.db_path = db;
  options.log_dir =
      (std::filesystem::temp_directory_path() / "tessera_submit_bench_logs")
          .string();
  std::optional<ServedQueue> queue = StartServedQueue(
      options, std::make_unique<tessera::testlib::IdleLauncher>());
  if (!queue) return 1;
  const int port = queue->port();
  const std::string blocker = nlohmann::json{
      {"command", {"sleep", "1"}},
      {"resources",
       {{"gpus", 1}}}}.dump();
  const std::string body = BenchJob(500);
  const httplib::Headers auth = BenchAuth();
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
  queue->server->Stop();
  return failed.load() == 0 ? 0 : 1;
}
