#ifndef TESSERA_K8S_K8S_CONFIG_H_
#define TESSERA_K8S_K8S_CONFIG_H_

// The `k8s:` section of the serve config (server/serve_config.h parses it).

#include <string>

namespace tessera::k8s {

inline constexpr int kDefaultK8sResyncS = 30;

// The Kubernetes scheduler extender's settings (`k8s:`; k8s_extender.h).
struct K8sConfig {
  // The pool whose nodes the extender offers ("" = every node, each pod
  // recorded in its node's pool).
  std::string pool;
  // Where bind POSTs the pod's Binding: http(s)://HOST[:PORT] ("" = bind
  // only records the decision; something else must bind the pod).
  std::string api_server;
  std::string token_file;  // a bearer token, read at every call; "" = none
  std::string ca_file;     // PEM CAs for https; "" = the system's
  // With api_server: every resync_s seconds the extender asks the API
  // server about its bound pods and frees the reservations of those gone
  // or ended (0: never; POST /k8s/release only).
  int resync_s = kDefaultK8sResyncS;
  // Serve /k8s/filter, /k8s/prioritize and /k8s/bind without credentials
  // on a non-loopback address too (they never need any on loopback).
  bool allow_unauthenticated = false;
};

}  // namespace tessera::k8s

#endif  // TESSERA_K8S_K8S_CONFIG_H_
