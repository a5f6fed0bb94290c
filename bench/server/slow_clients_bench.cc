// The queue API's latency while many slow clients hold connections open:
// the real service (SQLite, no-op launcher) behind the real HTTP server on
// loopback, N "slowloris" connections that each send a request line and
// then one header line every --trickle-ms (never finishing the head; one
// that the server closes is reopened), and a measuring client that asks
// GET /healthz and POST /v1/jobs on a fresh connection each time.
// Issue 15's target: both answer in < 100 ms with 200 slow clients.
//
//   server_slow_clients_bench [--slow N] [--samples K] [--trickle-ms MS]
//                             [--seconds S] [--timeout-s T]
//
// Prints, for each route, median and p99 latency and the requests that got
// no answer within --timeout-s, without and with the slow clients. With
// them, the K samples are spread over S seconds (default 15: longer than
// the server's 10 s head timeout, so its cut-offs and the clients' reopens
// happen while it is measured).
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/served_queue.h"
#include "common/stats.h"
#include "tests/testlib/idle_launcher.h"
#include "tests/testlib/loopback_socket.h"

namespace tessera::bench {
namespace {

// N connections that never finish their request head; each sends one more
// header line every `trickle`. One the server closed is reopened.
class SlowClients {
 public:
  SlowClients(int port, int n, std::chrono::milliseconds trickle)
      : port_(port), fds_(static_cast<size_t>(n), -1) {
    for (int& fd : fds_) Open(fd);
    thread_ = std::thread([this, trickle] {
      while (!stop_) {
        for (int& fd : fds_) {
          if (fd < 0 || !testlib::SendAll(fd, "X-Slow: 1\r\n")) Open(fd);
        }
        const auto until = std::chrono::steady_clock::now() + trickle;
        while (!stop_ && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  ~SlowClients() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  int reopened() const { return reopened_; }

 private:
  void Open(int& fd) {
    if (fd >= 0) {
      close(fd);
      ++reopened_;
    }
    fd = testlib::ConnectLoopback(port_);
    if (fd >= 0 &&
        !testlib::SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n")) {
      close(fd);
      fd = -1;
    }
  }

  const int port_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<int> reopened_{0};
  std::thread thread_;
};

struct Summary {
  std::vector<double> ms;
  int failed = 0;
};

// `samples` requests of each route, each on a fresh connection, spread
// over `seconds` (0: back to back).
void Measure(int port, int samples, double seconds, int timeout_s,
             Summary& health, Summary& submit) {
  const auto start = std::chrono::steady_clock::now();
  const std::string body = BenchJob(500);
  const httplib::Headers auth = BenchAuth();
  for (int i = 0; i < samples; ++i) {
    for (bool post : {false, true}) {
      httplib::Client c("127.0.0.1", port);
      c.set_connection_timeout(timeout_s, 0);
      c.set_read_timeout(timeout_s, 0);
      c.set_write_timeout(timeout_s, 0);
      const auto t0 = std::chrono::steady_clock::now();
      auto r = post ? c.Post("/v1/jobs", auth, body, "application/json")
                    : c.Get("/healthz");
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      Summary& s = post ? submit : health;
      if (r && r->status == (post ? 201 : 200)) {
        s.ms.push_back(ms);
      } else {
        ++s.failed;
      }
    }
    std::this_thread::sleep_until(
        start +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(seconds * (i + 1) / samples)));
  }
}

void PrintRow(const char* scenario, const char* route, const Summary& s) {
  std::printf("%-22s %-14s %5zu %10.2f %10.2f %7d\n", scenario, route,
              s.ms.size(), Percentile(s.ms, 0.5), Percentile(s.ms, 0.99),
              s.failed);
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  using namespace tessera::bench;
  int slow = 200;
  int samples = 100;
  int trickle_ms = 2000;
  int timeout_s = 5;
  double seconds = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--slow") slow = std::stoi(argv[i + 1]);
    if (a == "--samples") samples = std::stoi(argv[i + 1]);
    if (a == "--trickle-ms") trickle_ms = std::stoi(argv[i + 1]);
    if (a == "--timeout-s") timeout_s = std::stoi(argv[i + 1]);
    if (a == "--seconds") seconds = std::stod(argv[i + 1]);
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tessera_slow_clients_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ServedQueueOptions options;
  options.db_path = (dir / "tessera.db").string();
  options.log_dir = (dir / "logs").string();
  int status = 0;
  {
    std::optional<ServedQueue> queue = StartServedQueue(
        options, std::make_unique<tessera::testlib::IdleLauncher>());
    if (!queue) return 1;
    const int port = queue->port();
    Summary health, submit, slow_health, slow_submit;
    Measure(port, samples, 0, timeout_s, health, submit);
    int reopened = 0;
    {
      SlowClients clients(port, slow, std::chrono::milliseconds(trickle_ms));
      // Let every slow connection be accepted and start its head.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      Measure(port, samples, seconds, timeout_s, slow_health, slow_submit);
      reopened = clients.reopened();
    }
    std::printf("%-22s %-14s %5s %10s %10s %7s\n", "scenario", "route", "n",
                "median_ms", "p99_ms", "failed");
    const std::string with = std::to_string(slow) + " slow clients";
    PrintRow("no slow clients", "GET /healthz", health);
    PrintRow("no slow clients", "POST /v1/jobs", submit);
    PrintRow(with.c_str(), "GET /healthz", slow_health);
    PrintRow(with.c_str(), "POST /v1/jobs", slow_submit);
    std::printf(
        "(trickle every %d ms; with them, samples over %.0f s; %d slow "
        "connections reopened after the server closed them; failed = no "
        "answer within %d s)\n",
        trickle_ms, seconds, reopened, timeout_s);
    status = health.failed + submit.failed + slow_health.failed +
                         slow_submit.failed ==
                     0
                 ? 0
                 : 1;
    queue->server->Stop();
  }
  std::filesystem::remove_all(dir);
  return status;
}
