#include "cli/queue/serve.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cli/output.h"
#include "launch/gpu_usage.h"
#include "launch/launcher.h"
#include "launch/launcher_config.h"
#include "server/http_server.h"
#include "server/serve_config.h"
#include "service/service.h"

namespace tessera::cli {
namespace {

using server::ServeConfig;

// SIGINT/SIGTERM write a byte here; the main thread waits on it. (Blocking
// the signals and sigwait()ing instead would hand the blocked mask down to
// every job the launcher forks, and the jobs would ignore `cancel`.)
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int /*signal*/) {
  const char byte = 1;
  const int saved = errno;
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

Status InstallSignalHandlers() {
  if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
    return Internal("cannot create the signal pipe");
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) {
    if (sigaction(sig, &action, nullptr) != 0) {
      return Internal("cannot install the signal handlers");
    }
  }
  return {};
}

void WaitForSignal() {
  char byte = 0;
  while (read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
}

std::string Url(const std::string& host, int port, bool tls) {
  const bool v6 = host.find(':') != std::string::npos;
  return (tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

// Measured GPU use (docs/operations.md, "Measured use"): this machine's
// NVML, when the config wants it and the jobs run here.
void OpenGpuProbe(server::ServeConfig& config) {
  service::ServiceOptions& o = config.service;
  if (!config.measure_gpu_usage) {
    o.usage_unavailable = "gpu_usage: off";
  } else if (config.launcher.kind != "local") {
    o.usage_unavailable = "the jobs run on other machines (launcher " +
                          config.launcher.kind + ")";
  } else if (auto probe = launch::OpenNvml(config.nvml_library)) {
    o.gpu_probe = std::move(*probe);
    return;
  } else {
    o.usage_unavailable = probe.error().message;
    std::cerr << "tessera: " << o.usage_unavailable << std::endl;
  }
}

// "; isolation: mps on 1 node, none on 1 (one job per GPU)".
std::string DescribeIsolation(const scheduler::Topology& t) {
  int mps = 0, none = 0;
  for (const scheduler::NodeInfo& n : t.nodes) {
    (n.isolation == scheduler::Isolation::kMps ? mps : none) += 1;
  }
  std::string out = "; isolation:";
  if (mps > 0) out += " mps on " + std::to_string(mps) + " node(s)";
  if (none > 0) {
    out += std::string(mps > 0 ? "," : "") + " none on " +
           std::to_string(none) + " node(s) (" +
           (t.share_unisolated ? "shared anyway: share_unisolated"
                               : "one job per GPU") +
           ")";
  }
  return out;
}

std::string Describe(const server::ServeConfig& config) {
  const scheduler::Topology& t = config.service.topology;
  std::string pools;
  for (const std::string& pool : t.pools) {
    const auto it = config.service.policies.find(pool);
    pools += (pools.empty() ? "" : ", ") + pool + " (" +
             (it == config.service.policies.end() ? "fifo" : it->second.name) +
             ")";
  }
  return std::to_string(t.gpus.size()) + " GPUs on " +
         std::to_string(t.nodes.size()) + " nodes; pools " + pools + "; " +
         (config.service.store.postgres_url.empty()
              ? "db " + config.service.db_path
              : "jobs in PostgreSQL, replica " + config.service.replica->name +
                    " (lease " + Fixed(config.service.replica->lease_s, 1) +
                    " s)") +
         ", logs in " + config.service.log_dir + DescribeIsolation(t) +
         (config.launcher.kind == "slurm"
              ? "; jobs run as Slurm jobs" +
                    (config.launcher.slurm.partition.empty()
                         ? std::string()
                         : " in partition " + config.launcher.slurm.partition)
              : std::string());
}

// A replica's name and advertised URL: the flags', the config's, or from
// this host's name and the port it listens on.
Status NameReplica(const ServeArgs& args, server::ServeConfig& config) {
  std::optional<service::ReplicaOptions>& r = config.service.replica;
  if (!r) {
    if (!args.replica.empty() || !args.advertise.empty()) {
      return BadInput(
          "--replica and --advertise name one of several replicas, which "
          "need 'store: {postgres: ...}' in " +
          args.config);
    }
    return {};
  }
  if (!args.replica.empty()) r->name = args.replica;
  if (!args.advertise.empty()) r->address = args.advertise;
  if (!r->name.empty() && !r->address.empty()) return {};
  if (config.listen_port == 0) {
    return BadInput(
        "a replica listens on a fixed port (not 0), or gives --replica and "
        "--advertise: the others send clients to it");
  }
  std::string host = "localhost";
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') host = name;
  const bool wildcard = config.listen_host.empty() ||
                        config.listen_host == "0.0.0.0" ||
                        config.listen_host == "::";
  const std::string where = wildcard ? host : config.listen_host;
  if (r->name.empty()) {
    r->name = host + ":" + std::to_string(config.listen_port);
  }
  if (r->address.empty()) {
    r->address = Url(where, config.listen_port, config.tls.enabled());
  }
  return {};
}

}  // namespace

int RunServe(const ServeArgs& args) {
  Result<server::ServeConfig> config = server::LoadServeConfig(args.config);
  if (!config) return ReportError(config.error());
  if (!args.db.empty()) {
    if (!config->service.store.postgres_url.empty()) {
      return ReportError(
          BadInput("--db names an SQLite file; " + args.config +
                   " keeps the jobs in PostgreSQL (store: postgres)"));
    }
    config->service.db_path = args.db;
  }
  if (!args.listen.empty()) {
    Result<server::ListenAddress> address =
        server::ParseListenAddress(args.listen);
    if (!address) return ReportError(address.error().WithContext("--listen"));
    config->listen_host = address->host;
    config->listen_port = address->port;
  }
  if (args.k8s_extender) config->k8s_extender = true;
  if (const Status s = NameReplica(args, *config); !s) {
    return ReportError(s.error());
  }
  const Status signals = InstallSignalHandlers();
  if (!signals) return ReportError(signals.error());

  // A Slurm launcher names its jobs after the service's database: the
  // replicas of one share its URL.
  const std::string& pg = config->service.store.postgres_url;
  Result<std::unique_ptr<launch::Launcher>> launcher =
      launch::MakeLauncher(config->launcher, config->service.log_dir,
                           pg.empty() ? config->service.db_path : pg);
  if (!launcher) return ReportError(launcher.error().WithContext(args.config));
  OpenGpuProbe(*config);
  Result<std::unique_ptr<service::Service>> service =
      service::Service::Start(config->service, std::move(*launcher));
  if (!service) return ReportError(service.error());
  Result<std::unique_ptr<server::HttpServer>> server =
      server::HttpServer::Start(**service, *config);
  if (!server) return ReportError(server.error());

  std::cerr << "tessera: serving on "
            << Url((*server)->host(), (*server)->port(), config->tls.enabled())
            << " (" << Describe(*config) << "); Ctrl-C stops" << std::endl;
  if (config->k8s_extender) {
    const std::string& api = config->k8s.api_server;
    std::cerr << "tessera: kube-scheduler extender at "
              << Url((*server)->host(), (*server)->port(),
                     config->tls.enabled())
              << "/k8s (filter, prioritize, bind); bind "
              << (api.empty() ? "records only (no k8s.api_server)"
                              : "binds through " + api)
              << std::endl;
    const std::string warning = server::K8sAuthWarning(*config);
    if (!warning.empty()) {
      std::cerr << "tessera: warning: " << warning << std::endl;
    }
  }
  WaitForSignal();
  std::cerr << "tessera: stopping; running jobs keep running and are "
               "re-adopted when the service restarts"
            << std::endl;
  (*server)->Stop();
  server->reset();
  service->reset();
  return 0;
}

}  // namespace tessera::cli
