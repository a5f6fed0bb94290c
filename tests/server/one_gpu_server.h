#ifndef TESSERA_TESTS_SERVER_ONE_GPU_SERVER_H_
#define TESSERA_TESTS_SERVER_ONE_GPU_SERVER_H_

// The server tests' small cluster: one A100 in pool "a", the database and
// logs in a test's temporary directory, user alice; and starting the
// service (with a launcher that starts nothing) and the HTTP server on it.

#include <memory>
#include <string>
#include <utility>

#include "server/auth.h"
#include "server/http_server.h"
#include "tests/testlib/idle_launcher.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::scheduler {

// The service the server fronts (service/).
using service::Service;
using service::User;

// Listening on an ephemeral port of `host`.
inline server::ServeConfig OneGpuConfig(const testlib::TempDir& dir,
                                        const std::string& host) {
  server::ServeConfig config;
  Topology& t = config.service.topology;
  t.pools = {"a"};
  t.nodes.push_back({"node0", "a", 64000, 256 * 1024, {0}, false});
  t.gpus.push_back({"node0/gpu0", 0, 0, "a100-80gb", 80 * 1024});
  config.service.db_path = dir.File("q.db");
  config.service.log_dir = dir.File("logs");
  config.listen_host = host;
  config.listen_port = 0;
  config.users = {
      {User{"alice", "", false, ""}, server::Sha256Hex("alice-token")}};
  return config;
}

struct Served {
  std::unique_ptr<Service> service;
  std::unique_ptr<server::HttpServer> server;
};

// The service, then the server on `config`; the error of whichever failed.
inline Result<Served> StartServed(const server::ServeConfig& config) {
  Served s;
  auto service =
      Service::Start(config.service, std::make_unique<testlib::IdleLauncher>());
  if (!service) return service.error();
  s.service = std::move(*service);
  auto server = server::HttpServer::Start(*s.service, config);
  if (!server) return server.error();
  s.server = std::move(*server);
  return s;
}

}  // namespace tessera::scheduler

#endif  // TESSERA_TESTS_SERVER_ONE_GPU_SERVER_H_
