#ifndef TESSERA_CLI_QUEUE_SERVE_H_
#define TESSERA_CLI_QUEUE_SERVE_H_

#include <string>

namespace tessera::cli {

struct ServeArgs {
  std::string config;  // --config: the service's YAML (examples/serve.yaml)
  std::string db;      // --db: overrides the config's `db`
  std::string listen;  // --listen HOST:PORT: overrides the config's `listen`
  bool k8s_extender = false;  // --k8s-extender: serve /k8s/... too
  std::string replica;        // --replica NAME: overrides ha.replica
  std::string advertise;      // --advertise URL: overrides ha.advertise
};

// `tessera serve`: runs the queue service and its HTTP API until SIGINT or
// SIGTERM, then stops cleanly (running jobs keep running; a restart
// re-adopts them). Returns the exit code.
int RunServe(const ServeArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_QUEUE_SERVE_H_
