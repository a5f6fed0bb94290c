// K8sPods: the extender's pod bookkeeping over the service's reservations.
// The service holds the truth (what is reserved, on disk); this file keeps
// only the requests seen by filter and prioritize, and maps pods to jobs.

#include "k8s/k8s_pods.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "scheduler/mps.h"

namespace tessera::k8s {

using scheduler::MpsLimits;
using scheduler::MpsLimitsFor;

namespace {

// The pod requests filter and prioritize saw, kept for their bind (which
// names the pod only): enough for every pod kube-scheduler has in flight,
// bounded so that pods never bound cannot grow it without end.
constexpr size_t kMaxPendingPods = 10000;
// A remembered request older than this is dropped first when the bound is
// reached: kube-scheduler binds within seconds of filtering.
constexpr double kPendingPodTtlS = 600;

// A bound pod's job: its user and the environment keys that identify it.
constexpr std::string_view kUserPrefix = "k8s:";
constexpr const char* kUidEnv = "TESSERA_K8S_POD_UID";
constexpr const char* kNameEnv = "TESSERA_K8S_POD_NAME";
constexpr const char* kNamespaceEnv = "TESSERA_K8S_POD_NAMESPACE";

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

K8sPodRef RefOf(const Job& job) {
  auto get = [&](const char* key) {
    auto it = job.request.env.find(key);
    return it == job.request.env.end() ? std::string() : it->second;
  };
  return {get(kNameEnv), get(kNamespaceEnv), get(kUidEnv)};
}

std::string Str(std::string_view s) { return std::string(s); }

// The annotations that record `job`'s reservation for a device plugin or
// the pod itself.
std::map<std::string, std::string> Annotations(const Topology& t,
                                               const Job& job) {
  const Allocation& a = job.allocation;
  std::string index;
  std::string milli;
  std::string memory;
  std::vector<int> millis;
  std::vector<int64_t> memories;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuShare& s = a.gpus[i];
    const std::string sep = i ? "," : "";
    index += sep + std::to_string(t.gpus[s.gpu].index);
    milli += sep + std::to_string(s.milli);
    memory += sep + std::to_string(s.memory_mib);
    millis.push_back(s.milli);
    memories.push_back(s.memory_mib);
  }
  std::map<std::string, std::string> out = {
      {Str(kK8sJobIdAnnotation), std::to_string(job.id)},
      {Str(kK8sNodeAnnotation), t.nodes[a.node].name},
      {Str(kK8sGpuIndexAnnotation), index},
      {Str(kK8sGpuMilliAnnotation), milli},
      {Str(kK8sGpuMemoryAnnotation), memory},
      {Str(kK8sAssumeTimeAnnotation), std::to_string(static_cast<int64_t>(
                                          std::llround(job.started_at * 1e9)))},
      {Str(kK8sAssignedAnnotation), "false"}};
  if (!a.exclusive && !a.gpus.empty()) {
    const MpsLimits mps = MpsLimitsFor(millis, memories);
    out[Str(kK8sMpsThreadsAnnotation)] = mps.active_thread_percentage;
    out[Str(kK8sMpsMemoryAnnotation)] = mps.pinned_device_mem_limit;
  }
  return out;
}

// What the service's answer for one node means for `pod` (node unset).
K8sNodeVerdict VerdictOf(const NodeRoom& f, const K8sPod& pod,
                         const std::string& pool) {
  K8sNodeVerdict v;
  v.resolvable = false;
  using Verdict = NodeRoom::Verdict;
  switch (f.verdict) {
    case Verdict::kUnknownNode:
      v.reason = "not a node of tessera's configuration";
      break;
    case Verdict::kOtherPool:
      v.reason = "in pool '" + f.node_pool + "'; the extender offers pool '" +
                 pool + "' only";
      break;
    case Verdict::kNeverFits:
      v.reason = "could never hold the pod's " + DescribeK8sDemand(pod.demand);
      break;
    case Verdict::kDrained:
      v.reason = "drained in tessera";
      break;
    case Verdict::kNoRoomNow:
      v.resolvable = true;
      v.reason = f.reason;
      break;
    case Verdict::kFits:
      v.resolvable = true;
      v.fits = true;
      break;
  }
  return v;
}

// Why `node` cannot hold `pod`'s fraction of a GPU isolated: the config
// says isolation mps, but GPU feature discovery's label says the device
// plugin shares its GPUs otherwise (docs/kubernetes.md, "Isolation"). ""
// when it can, when the pod asks for no gpu-milli share (1000 is a share
// too), or when no label says.
std::string UnisolatedReason(
    const Topology& t, const K8sPod& pod, const std::string& node,
    const std::map<std::string, std::string>& sharing_strategy) {
  if (pod.demand.gpu_milli <= 0) return "";  // whole GPUs, or none
  const auto label = sharing_strategy.find(node);
  if (label == sharing_strategy.end() || label->second == "mps") return "";
  const int n = t.FindNode(node);
  if (n < 0 ||
      t.nodes[static_cast<size_t>(n)].isolation != scheduler::Isolation::kMps) {
    return "";
  }
  return "isolation: mps in tessera's config, but its label " +
         Str(kK8sSharingStrategyLabel) + " is '" + label->second +
         "', so NVIDIA's device plugin does not keep the pods sharing a GPU "
         "apart with MPS: set the device plugin's sharing.mps for the node, "
         "or declare it isolation: none in the config";
}

}  // namespace

K8sPods::K8sPods(Service& service) : service_(service) {}

void K8sPods::Remember(const K8sPod& pod) {
  const double now = Now();
  const std::string key = pod.ref.Key();
  if (!pending_.contains(key) && pending_.size() >= kMaxPendingPods) {
    std::erase_if(pending_, [&](const auto& p) {
      return now - p.second.seen_at > kPendingPodTtlS;
    });
    if (pending_.size() >= kMaxPendingPods) {
      auto oldest = std::min_element(
          pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
            return a.second.seen_at < b.second.seen_at;
          });
      pending_.erase(oldest);
    }
  }
  pending_[key] = {pod, now};
}

std::optional<Job> K8sPods::FindBound(const K8sPodRef& ref) {
  for (Job& job : service_.Reservations(kK8sOrigin)) {
    const K8sPodRef r = RefOf(job);
    if (ref.uid.empty() ? r.ns == ref.ns && r.name == ref.name
                        : r.uid == ref.uid) {
      return std::move(job);
    }
  }
  return std::nullopt;
}

std::vector<K8sNodeVerdict> K8sPods::Evaluate(
    const K8sPod& pod, const std::vector<std::string>& nodes,
    const std::string& pool,
    const std::map<std::string, std::string>& sharing_strategy) {
  {
    std::lock_guard lock(mu_);
    Remember(pod);
  }
  std::vector<K8sNodeVerdict> out(nodes.size());
  if (!pod.managed) {
    // Not tessera's to place: every node passes, none is preferred.
    for (size_t i = 0; i < nodes.size(); ++i) {
      out[i].node = nodes[i];
      out[i].fits = true;
    }
    return out;
  }
  const std::vector<NodeRoom> fits =
      service_.EvaluateNodes(pod.demand, nodes, pool, "the pod");
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (size_t i = 0; i < nodes.size(); ++i) {
    out[i] = VerdictOf(fits[i], pod, pool);
    out[i].node = nodes[i];
    if (out[i].fits || out[i].resolvable) {
      if (std::string why = UnisolatedReason(service_.topology(), pod, nodes[i],
                                             sharing_strategy);
          !why.empty()) {
        out[i] = {nodes[i], false, false, std::move(why), 0};
        continue;
      }
    }
    if (!out[i].fits) continue;
    lo = std::min(lo, fits[i].score);
    hi = std::max(hi, fits[i].score);
  }
  // The scorer's order on 1..10 (0: does not fit), the best node at 10.
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!out[i].fits) continue;
    const double x = hi > lo ? (fits[i].score - lo) / (hi - lo) : 1.0;
    out[i].score = 1 + static_cast<int>(std::lround(x * (kK8sMaxPriority - 1)));
  }
  return out;
}

Result<K8sBindOutcome> K8sPods::Bind(const K8sPodRef& ref,
                                     const std::string& node,
                                     const K8sPod* given,
                                     const std::string& pool) {
  std::lock_guard lock(mu_);  // one bind at a time: the checks below hold
  const Topology& t = service_.topology();
  using Kind = K8sBindOutcome::Kind;
  K8sBindOutcome out;
  const std::string pod_name = ref.ns + "/" + ref.name;
  if (std::optional<Job> bound = FindBound(ref)) {
    out.job = std::move(*bound);
    const std::string& at = t.nodes[out.job.allocation.node].name;
    if (at != node) {
      out.kind = Kind::kRefused;
      out.message = "pod " + pod_name + " is already bound to node '" + at +
                    "' (tessera job " + std::to_string(out.job.id) + ")";
      return out;
    }
    out.kind = Kind::kAlreadyBound;
    out.annotations = Annotations(t, out.job);
    return out;
  }
  if (given != nullptr) Remember(*given);
  const auto p = pending_.find(ref.Key());
  if (given == nullptr && p == pending_.end()) {
    out.kind = Kind::kUnknownPod;
    out.message = "pod " + pod_name + " (uid " + ref.uid +
                  ") was not seen by filter or prioritize since tessera "
                  "started";
    return out;
  }
  const K8sPod pod = given != nullptr ? *given : p->second.pod;
  if (!pod.managed) {
    out.kind = Kind::kNotManaged;
    return out;
  }
  const NodeRoom where =
      service_.EvaluateNodes(pod.demand, {node}, pool, "the pod").front();
  if (where.verdict == NodeRoom::Verdict::kUnknownNode) {
    out.kind = Kind::kUnknownNode;
    out.message =
        "Node: '" + node + "' is not a node of tessera's configuration";
    return out;
  }
  out.kind = Kind::kRefused;
  if (where.verdict == NodeRoom::Verdict::kOtherPool) {
    out.message = "node '" + node + "' is in pool '" + where.node_pool +
                  "'; the extender offers pool '" + pool + "' only";
    return out;
  }
  // Names are unique in a namespace at any moment: a new UID under the
  // same name means the earlier pod's object is gone.
  if (std::optional<Job> old = FindBound(K8sPodRef{ref.name, ref.ns, ""})) {
    TESSERA_RETURN_IF_ERROR(
        service_.EndReservation(old->id, JobState::kCancelled,
                                "released: a new pod of the same name (uid " +
                                    ref.uid + ") was bound"));
  }
  Job job;
  job.origin = kK8sOrigin;
  job.user = std::string(kUserPrefix) + ref.ns;
  job.request.name = pod_name;
  job.request.resources = pod.demand;
  job.request.env = {
      {kUidEnv, ref.uid}, {kNameEnv, ref.name}, {kNamespaceEnv, ref.ns}};
  job.demand = pod.demand;
  Result<ReserveOutcome> reserved =
      service_.Reserve(std::move(job), node, pool, "the pod");
  TESSERA_RETURN_IF_ERROR(reserved);
  if (reserved->kind != ReserveOutcome::Kind::kReserved) {
    out.message = "node '" + node + "' has no room for pod " + pod_name +
                  " now: " + reserved->reason;
    return out;
  }
  pending_.erase(ref.Key());
  out.kind = Kind::kBound;
  out.job = std::move(reserved->job);
  out.annotations = Annotations(t, out.job);
  return out;
}

Result<std::optional<Job>> K8sPods::Release(const K8sPodRef& ref, JobState end,
                                            const std::string& reason) {
  std::lock_guard lock(mu_);
  std::optional<Job> bound = FindBound(ref);
  if (!bound) return std::optional<Job>();
  return service_.EndReservation(bound->id, end, reason);
}

std::vector<K8sPodRef> K8sPods::BoundPods() {
  std::vector<K8sPodRef> out;
  for (const Job& job : service_.Reservations(kK8sOrigin)) {
    out.push_back(RefOf(job));
  }
  return out;
}

}  // namespace tessera::k8s
