#ifndef TESSERA_K8S_K8S_POD_H_
#define TESSERA_K8S_K8S_POD_H_

// Kubernetes pods as tessera sees them: the resource names a pod asks
// tessera for, the annotations that record tessera's decision, resource
// quantities ("250", "500m", "1Gi"), and a v1 Pod's JSON (as kube-scheduler
// sends it to an extender) turned into the resources it needs. Plain
// functions, thread-safe. docs/kubernetes.md.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "scheduler/job.h"

namespace tessera::k8s {

// What a job is, from scheduler/: k8s/ maps pods onto jobs.
using scheduler::Allocation;
using scheduler::GpuShare;
using scheduler::Job;
using scheduler::JobId;
using scheduler::JobState;
using scheduler::kFullGpuMilli;
using scheduler::Resources;

// Extended resources (container resources.limits or .requests), summed
// over a pod's containers: a fraction of one GPU in milli-GPU (1..1000) and
// MiB of its memory, as gpushare (aliyun.com/gpu-mem) and HAMi/Volcano
// (volcano.sh/gpu-memory) ask; or whole GPUs under the device plugin's name.
inline constexpr std::string_view kK8sGpuMilli = "tessera.io/gpu-milli";
inline constexpr std::string_view kK8sGpuMemoryMib =
    "tessera.io/gpu-memory-mib";
inline constexpr std::string_view kK8sWholeGpus = "nvidia.com/gpu";

// Annotations a bound pod gets (through the Binding, which the API server
// merges into the pod), for a device plugin or the pod's own environment
// (the downward API). GPU indices are the node's, as CUDA_VISIBLE_DEVICES
// counts them; the MPS values are what the local launcher sets.
inline constexpr std::string_view kK8sJobIdAnnotation = "tessera.io/job-id";
inline constexpr std::string_view kK8sNodeAnnotation = "tessera.io/node";
inline constexpr std::string_view kK8sGpuIndexAnnotation =
    "tessera.io/gpu-index";
inline constexpr std::string_view kK8sGpuMilliAnnotation =
    "tessera.io/gpu-milli";
inline constexpr std::string_view kK8sGpuMemoryAnnotation =
    "tessera.io/gpu-memory-mib";
inline constexpr std::string_view kK8sMpsThreadsAnnotation =
    "tessera.io/cuda-mps-active-thread-percentage";
inline constexpr std::string_view kK8sMpsMemoryAnnotation =
    "tessera.io/cuda-mps-pinned-device-mem-limit";
// When tessera reserved the GPU (Unix nanoseconds) and whether a device
// plugin has handed it over ("false" until one sets it), as gpushare's
// ALIYUN_COM_GPU_MEM_ASSUME_TIME and ALIYUN_COM_GPU_MEM_ASSIGNED.
inline constexpr std::string_view kK8sAssumeTimeAnnotation =
    "tessera.io/assume-time";
inline constexpr std::string_view kK8sAssignedAnnotation =
    "tessera.io/assigned";

// kube-scheduler's MaxExtenderPriority: an extender scores nodes 0..10.
inline constexpr int kK8sMaxPriority = 10;

// The value of a resource quantity ("250", "1.5", "500m", "1Gi", "2e3")
// times 10^decimal_scale, rounded up as Kubernetes rounds (MilliValue is
// scale 3, Value scale 0); `exact` says whether no rounding was needed.
struct QuantityValue {
  int64_t value = 0;
  bool exact = true;
};
// kBadInput for text that is not a quantity, a negative one, or one whose
// scaled value passes 2^62.
Result<QuantityValue> ParseQuantity(std::string_view text, int decimal_scale);

// A pod by its identity; the UID tells a pod from a later one of the same
// name.
struct K8sPodRef {
  std::string name, ns, uid;
  // The key tessera files it under: the UID, or "ns/name" without one.
  std::string Key() const { return uid.empty() ? ns + "/" + name : uid; }
};

struct K8sPod {
  K8sPodRef ref;
  // The pod's effective request (Kubernetes' rule: the containers' sum or
  // the largest init container, whichever is larger, plus the overhead):
  // GPUs from the extended resources above, cpu_milli from `cpu`,
  // memory_mib from `memory` (requests, else limits).
  Resources demand;
  // Whether it asks for a GPU resource tessera manages.
  bool managed = false;
};

// Reads a v1 Pod (metadata.name, .namespace, .uid; spec.containers,
// .initContainers, .overhead; resources.limits and .requests). `label`
// names it in errors, which are kBadInput naming the field, e.g.
// "Pod.spec.containers[0].resources.limits.tessera.io/gpu-milli: '1500' is
// more than a whole GPU (1000)". Fields it does not read are ignored.
Result<K8sPod> ParseK8sPod(const nlohmann::json& pod, const std::string& label);

// What the service answers about one node for a pod (K8sPods::Evaluate).
struct K8sNodeVerdict {
  std::string node;
  bool fits = false;
  // When it does not fit: false if it never could there (not a node of the
  // config or of the extender's pool, too small, drained), so that
  // kube-scheduler's preemption skips it.
  bool resolvable = true;
  std::string reason;  // why it does not fit
  int score = 0;       // 0..kK8sMaxPriority; 0 where it does not fit
};

// What K8sPods::Bind did; `job` is the pod's record (a running job of user
// "k8s:<namespace>", named "<namespace>/<pod>").
struct K8sBindOutcome {
  enum class Kind {
    kBound,         // reserved now
    kAlreadyBound,  // the same pod on the same node before: nothing changed
    kNotManaged,    // the pod asks for no GPU resource of tessera's
    kUnknownPod,    // not seen by filter or prioritize, and not given
    kUnknownNode,   // not a node of the config
    kRefused,       // no room now, another pool, bound elsewhere
  };
  Kind kind = Kind::kRefused;
  std::string message;  // for kRefused, kUnknownPod, kUnknownNode
  Job job;
  std::map<std::string, std::string> annotations;  // k8s_pod.h's names
};

// "250 milli and 8192 MiB of one GPU, 4000 CPU milli, 16384 MiB memory".
std::string DescribeK8sDemand(const Resources& demand);

}  // namespace tessera::k8s

#endif  // TESSERA_K8S_K8S_POD_H_
