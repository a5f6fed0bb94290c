#ifndef TESSERA_K8S_K8S_EXTENDER_H_
#define TESSERA_K8S_K8S_EXTENDER_H_

// The kube-scheduler extender protocol (k8s.io/kube-scheduler/extender/v1)
// over the Service: POST /k8s/filter, /k8s/prioritize and /k8s/bind with the
// upstream JSON shapes (the Go structs carry no JSON tags, so the keys are
// the field names: ExtenderArgs{Pod, Nodes, NodeNames},
// ExtenderFilterResult{Nodes, NodeNames, FailedNodes,
// FailedAndUnresolvableNodes, Error}, [{Host, Score}],
// ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node} -> {Error}),
// and tessera's POST /k8s/release; Resync frees the reservations of pods
// the API server says are gone or ended. Each handler takes a request body and
// returns the status and JSON to answer; none throws. Thread-safe.
// docs/kubernetes.md.

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "k8s/k8s_api.h"
#include "k8s/k8s_config.h"
#include "k8s/k8s_pod.h"
#include "k8s/k8s_pods.h"
#include "service/service.h"

namespace tessera::http {
class Router;
struct Request;
struct Response;
}  // namespace tessera::http

namespace tessera::k8s {

// An answer: 200 with the protocol's result (its Error set when tessera
// refuses a valid request), 400 malformed (naming the field), 404 an
// unknown node or pod, 500 the store failed. 4xx and 5xx bodies are
// {"Error": "...", "error": "..."}: kube-scheduler reads only 200 answers.
struct K8sReply {
  int status = 200;
  nlohmann::json body;
};

// ExtenderArgs: the pod and the candidate nodes, given as a NodeList
// (Nodes, nodeCacheCapable false) or by name (NodeNames, true).
struct K8sExtenderArgs {
  K8sPod pod;
  std::vector<std::string> nodes;  // the candidates' names, in order
  nlohmann::json node_list;        // Nodes as sent; null when absent
  bool has_node_names = false;
  // The Node objects' kK8sSharingStrategyLabel, by name (those that carry
  // it; none with NodeNames only).
  std::map<std::string, std::string> sharing_strategy;
};
// kBadInput naming the field: not an object, no Pod, wrong types, a bad
// quantity, neither Nodes nor NodeNames. Keys match as Go's encoding/json
// matches them: the exact field name, else any case.
Result<K8sExtenderArgs> ParseExtenderArgs(const nlohmann::json& body);

// ExtenderBindingArgs (and /k8s/release's {PodName, PodNamespace, PodUID}).
// Names must be Kubernetes object names (they go into API paths).
struct K8sBindingArgs {
  K8sPodRef pod;
  std::string node;
};
Result<K8sBindingArgs> ParseBindingArgs(const nlohmann::json& body,
                                        bool node_required);

// The v1 Binding bind POSTs to /api/v1/namespaces/NS/pods/NAME/binding.
nlohmann::json BindingJson(
    const K8sPodRef& pod, const std::string& node,
    const std::map<std::string, std::string>& annotations);

class K8sExtender {
 public:
  // `api`: where bind posts Bindings and fetches pods it has not seen;
  // nullptr: bind only records the decision. `service` must outlive it.
  K8sExtender(Service& service, K8sConfig config,
              std::unique_ptr<K8sApiClient> api);
  ~K8sExtender();  // stops the resync thread
  K8sExtender(const K8sExtender&) = delete;
  K8sExtender& operator=(const K8sExtender&) = delete;

  // ExtenderArgs -> ExtenderFilterResult: the nodes with room for the pod
  // now; the others in FailedNodes, or FailedAndUnresolvableNodes where it
  // never could fit (preemption would not help).
  K8sReply Filter(std::string_view body);
  // ExtenderArgs -> HostPriorityList: every candidate scored 0..10 in the
  // scorer's order (0 where the pod does not fit).
  K8sReply Prioritize(std::string_view body);
  // ExtenderBindingArgs -> ExtenderBindingResult: reserves the pod's GPU
  // share on Node, records it, and with an API server binds the pod there
  // with the decision in its annotations. The same pod bound again to the
  // same node is answered as the first time.
  K8sReply Bind(std::string_view body);
  // {PodName, PodNamespace, PodUID} -> {Error}: frees a bound pod's
  // reservation (the pod ended or was deleted); 404 if it holds none.
  K8sReply Release(std::string_view body);

  // With an API server: asks it about every bound pod and frees the
  // reservations of those deleted (404), replaced (another UID) or ended
  // (phase Succeeded or Failed; the job ends succeeded or failed alike).
  // A pod the API server does not answer for keeps its reservation, and
  // the round stops at the first transport error. Returns how many it
  // freed; 0 without an API server.
  int Resync();
  // Runs Resync every `interval_s` seconds on a thread of its own until
  // the extender is destroyed; nothing without an API server or when
  // interval_s <= 0. Call once.
  void StartResync(int interval_s);

 private:
  // Binds through the API server; "" or why it failed.
  std::string PostBinding(const K8sPodRef& pod, const std::string& node,
                          const std::map<std::string, std::string>& notes,
                          bool retry);
  // The pod from the API server, for a bind whose filter tessera missed.
  Result<K8sPod> FetchPod(const K8sPodRef& ref);

  K8sPods pods_;
  const K8sConfig config_;
  const std::unique_ptr<K8sApiClient> api_;
  std::mutex resync_mu_;
  std::condition_variable resync_wake_;
  bool stopping_ = false;  // under resync_mu_
  std::thread resync_;
};

// An extender with an API client when config.api_server is set, resyncing
// every config.resync_s seconds.
Result<std::unique_ptr<K8sExtender>> MakeK8sExtender(Service& service,
                                                     const K8sConfig& config);

// Decides whether a request may call a route; when not, it answers (401 or
// 403) itself and returns false.
using K8sGate = std::function<bool(const http::Request&, http::Response&)>;
// Registers POST /k8s/filter, /k8s/prioritize and /k8s/bind, which
// `may_schedule` guards (kube-scheduler's credentials), and POST
// /k8s/release, which `may_release` guards.
void RegisterK8sRoutes(http::Router& router, K8sExtender& extender,
                       const K8sGate& may_schedule, K8sGate may_release);

}  // namespace tessera::k8s

#endif  // TESSERA_K8S_K8S_EXTENDER_H_
