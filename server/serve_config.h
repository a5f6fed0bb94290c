#ifndef TESSERA_SERVER_SERVE_CONFIG_H_
#define TESSERA_SERVER_SERVE_CONFIG_H_

// The queue service's configuration file (`tessera serve --config FILE`):
// where it listens, its database and logs, the pools with their policies,
// the nodes and GPUs it owns, and the users with their hashed tokens.
// examples/serve.yaml is a commented example of every key.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "http/transport.h"
#include "k8s/k8s_config.h"
#include "launch/launcher_config.h"
#include "service/service.h"

namespace tessera::server {

// The service a config sets up (service/, scheduler/).
using scheduler::PolicyConfig;
using scheduler::QueueSpec;
using scheduler::Topology;
using service::Quota;
using service::Quotas;
using service::Service;
using service::ServiceOptions;
using service::User;

// A user who may call the API: who they are, and the SHA-256 of their
// bearer token (64 lowercase hex digits; the token itself is never stored).
struct UserEntry {
  User user;
  std::string token_sha256;
  // Role k8s-scheduler: a user who may also call the scheduler extender's
  // /k8s/filter, prioritize and bind (admins may too).
  bool k8s_scheduler = false;
};

inline constexpr std::string_view kDefaultListenHost = "127.0.0.1";
inline constexpr int kDefaultListenPort = 8471;
// A submission is a few KiB; 1 MiB leaves room for long commands and
// environments while keeping a hostile client from tying up memory.
inline constexpr int64_t kDefaultMaxBodyBytes = int64_t{1} << 20;

struct ServeConfig {
  ServiceOptions service;
  launch::LauncherConfig launcher;
  // Serve the kube-scheduler extender endpoints (/k8s/filter, /k8s/prioritize,
  // /k8s/bind) beside the queue API (`k8s_extender: true`, or
  // `tessera serve --k8s-extender`).
  bool k8s_extender = false;
  k8s::K8sConfig k8s;
  std::string listen_host = std::string(kDefaultListenHost);
  int listen_port = kDefaultListenPort;  // 0: any free port
  std::vector<UserEntry> users;
  int64_t max_body_bytes = kDefaultMaxBodyBytes;
  // `limits:` on connections (http/transport.h has the defaults' reasons).
  int header_timeout_s = http::kDefaultHeaderTimeoutS;
  int body_timeout_s = http::kDefaultBodyTimeoutS;
  int max_connections_per_client = http::kDefaultMaxConnectionsPerClient;
  int max_connections = http::kDefaultMaxConnections;
  // `tls:` HTTPS with these PEM files; client_ca_file also lets clients
  // authenticate to the extender with a certificate. Empty: plain HTTP.
  http::TlsOptions tls;
  // `gpu_usage:` measured GPU use (docs/operations.md, "Measured use"):
  // the NVML library `tessera serve` loads (off: none is loaded). The
  // interval and the node are ServiceOptions'.
  bool measure_gpu_usage = true;
  std::string nvml_library = "libnvidia-ml.so.1";
};

// Parses a configuration. `source` names it in error messages (a path).
// Errors are kBadInput and read "SOURCE:LINE: FIELD: what is wrong": an
// unknown key (with a suggestion), an unknown pool, policy, scorer or GPU
// kind, a duplicate node or user name, a bad role, a token_sha256 that is
// not 64 hex digits, a malformed size or address.
Result<ServeConfig> ParseServeConfig(std::string_view yaml_text,
                                     std::string_view source);
// Reads and parses the file at `path`.
Result<ServeConfig> LoadServeConfig(const std::string& path);

// "HOST:PORT" ("[::1]:8471" for IPv6); the error names the text.
struct ListenAddress {
  std::string host;
  int port = 0;
};
Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_SERVE_CONFIG_H_
