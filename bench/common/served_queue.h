#ifndef TESSERA_BENCH_COMMON_SERVED_QUEUE_H_
#define TESSERA_BENCH_COMMON_SERVED_QUEUE_H_

// The real queue service (its SQLite store, a launcher of the bench's
// choosing) behind the real HTTP server on 127.0.0.1 at a free port, for
// the benchmarks that time the API: one fifo pool "a" of one node, and
// one user "bench" whose bearer token is kBenchToken.

#include <httplib.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "launch/launcher.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "server/serve_config.h"
#include "service/service.h"

namespace tessera::bench {

inline constexpr const char* kBenchToken = "bench-token";

struct ServedQueueOptions {
  // The node's resources: serve.yaml's `nodes:` entry less name and pool.
  std::string node =
      "cpu_milli: 64000, memory: 256GiB, gpus: [{kind: a100-80gb, count: 1}]";
  std::string role = "user";  // the bench user's
  std::string db_path;
  std::string log_dir;
};

struct ServedQueue {
  std::unique_ptr<service::Service> service;
  // After the service, so that it is destroyed (and stopped) first.
  std::unique_ptr<server::HttpServer> server;

  int port() const { return server->port(); }
};

// Starts the service and the server; on failure prints why on stderr and
// returns nullopt. Each bench user may queue 10^8 jobs.
inline std::optional<ServedQueue> StartServedQueue(
    const ServedQueueOptions& options,
    std::unique_ptr<launch::Launcher> launcher) {
  const std::string yaml =
      "listen: 127.0.0.1:0\n"
      "pools:\n  - {name: a, policy: fifo}\n"
      "nodes:\n  - {name: node0, pool: a, " +
      options.node +
      "}\n"
      "limits: {max_queued_per_user: 100000000}\n"
      "users:\n  - {name: bench, role: " +
      options.role +
      ", token_sha256: "
      "0000000000000000000000000000000000000000000000000000000000000000}\n";
  auto config = server::ParseServeConfig(yaml, "bench");
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message.c_str());
    return std::nullopt;
  }
  // The token's hash, computed by the server's own code path.
  config->users[0].token_sha256 = server::Sha256Hex(kBenchToken);
  config->service.db_path = options.db_path;
  config->service.log_dir = options.log_dir;
  ServedQueue queue;
  auto service = service::Service::Start(config->service, std::move(launcher));
  if (!service) {
    std::fprintf(stderr, "%s\n", service.error().message.c_str());
    return std::nullopt;
  }
  queue.service = std::move(*service);
  auto server = server::HttpServer::Start(*queue.service, *config);
  if (!server) {
    std::fprintf(stderr, "%s\n", server.error().message.c_str());
    return std::nullopt;
  }
  queue.server = std::move(*server);
  return queue;
}

// The bench user's Authorization header.
inline httplib::Headers BenchAuth() {
  return {{"Authorization", std::string("Bearer ") + kBenchToken}};
}

// A submission's body: `true`, on `gpu_milli` of a GPU and 1 GiB of its
// memory.
inline std::string BenchJob(int gpu_milli) {
  return nlohmann::json{
      {"name", "bench"},
      {"command", {"true"}},
      {"resources", {{"gpu_milli", gpu_milli}, {"gpu_memory_mib", 1024}}}}
      .dump();
}

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_COMMON_SERVED_QUEUE_H_
