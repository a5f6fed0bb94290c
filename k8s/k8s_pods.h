#ifndef TESSERA_K8S_K8S_PODS_H_
#define TESSERA_K8S_K8S_PODS_H_

// The pods the Kubernetes extender places, over the service's reservations
// (Service::Reserve): a bound pod is a reservation of origin "k8s", a
// running job with no process of user "k8s:<namespace>" named
// "<namespace>/<pod>", whose environment records the pod's identity (the
// store's schema is the queue's). The requests filter and prioritize saw
// are remembered here for their bind. Thread-safe: binds are serialized.
// docs/kubernetes.md.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/k8s_pod.h"
#include "service/service.h"

namespace tessera::k8s {

// The queue service (service/) the pods' reservations are kept in.
using scheduler::Topology;
using service::NodeRoom;
using service::ReserveOutcome;
using service::Service;

// Job::origin of a bound pod's reservation.
inline constexpr const char* kK8sOrigin = "k8s";

// GPU feature discovery's node label: how NVIDIA's device plugin shares
// the node's GPUs ("none", "time-slicing" or "mps").
inline constexpr std::string_view kK8sSharingStrategyLabel =
    "nvidia.com/gpu.sharing-strategy";

class K8sPods {
 public:
  // `service` must outlive it. Pods bound before a restart are the
  // service's recovered reservations.
  explicit K8sPods(Service& service);

  // Where `pod` fits now among `nodes` (Kubernetes node names, which are
  // the config's), scored as the scorer ranks them; only nodes of `pool`
  // ("" = any) are offered. `sharing_strategy`: kK8sSharingStrategyLabel
  // by node, where the request carried Node objects; a pod asking for a
  // fraction of a GPU never fits a node of isolation mps whose label says
  // something else than mps. Remembers the pod's request for its bind.
  std::vector<K8sNodeVerdict> Evaluate(
      const K8sPod& pod, const std::vector<std::string>& nodes,
      const std::string& pool,
      const std::map<std::string, std::string>& sharing_strategy = {});
  // Reserves the pod's GPU share on `node` (the GPU the scorer picks there)
  // and records it durably as a running job. `given`: its request when the
  // caller fetched it (else the one Evaluate remembered). A pod of the same
  // namespace and name but another UID is a successor: the earlier one's
  // reservation is released. kInternal if the store fails.
  Result<K8sBindOutcome> Bind(const K8sPodRef& ref, const std::string& node,
                              const K8sPod* given, const std::string& pool);
  // Ends a bound pod's reservation (by UID, or namespace and name when the
  // UID is ""): the job becomes `end` with `reason`. nullopt if no such pod
  // holds one.
  Result<std::optional<Job>> Release(const K8sPodRef& ref, JobState end,
                                     const std::string& reason);
  // The pods that hold a reservation now.
  std::vector<K8sPodRef> BoundPods();

 private:
  struct Pending {
    K8sPod pod;
    double seen_at = 0;
  };
  void Remember(const K8sPod& pod);  // holds mu_
  // The bound pod `ref` names: by UID, or by namespace and name.
  std::optional<Job> FindBound(const K8sPodRef& ref);

  Service& service_;
  std::mutex mu_;
  std::map<std::string, Pending> pending_;  // by K8sPodRef::Key()
};

}  // namespace tessera::k8s

#endif  // TESSERA_K8S_K8S_PODS_H_
