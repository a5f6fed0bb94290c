#ifndef TESSERA_K8S_K8S_API_H_
#define TESSERA_K8S_K8S_API_H_

// The Kubernetes API server, as far as the extender's bind needs it: one
// request at a time with the configured bearer token and CAs. An interface,
// so that tests put a fake in its place. Thread-safe.

#include <memory>
#include <string>

#include "common/result.h"
#include "k8s/k8s_config.h"

namespace tessera::k8s {

// Seconds the extender waits for the API server: kube-scheduler gives an
// extender's call 5 s by default (DefaultExtenderTimeout) and bind spends
// some of it on its own work.
inline constexpr int kK8sApiTimeoutS = 3;

struct K8sApiReply {
  int status = 0;  // the HTTP status
  std::string body;
};

class K8sApiClient {
 public:
  virtual ~K8sApiClient() = default;
  // `method` (GET or POST) `path` with a JSON `body` (POST). Any HTTP
  // answer is a reply; kUnavailable when the API server cannot be reached,
  // kInternal when the token cannot be read.
  virtual Result<K8sApiReply> Send(const std::string& method,
                                   const std::string& path,
                                   const std::string& body) = 0;
};

// A client of config.api_server (http or https) that sends the token in
// config.token_file (re-read at every call: service account tokens
// rotate) and checks https certificates against config.ca_file. kBadInput
// naming the key when a file cannot be read.
Result<std::unique_ptr<K8sApiClient>> MakeK8sApiClient(const K8sConfig& config);

}  // namespace tessera::k8s

#endif  // TESSERA_K8S_K8S_API_H_
