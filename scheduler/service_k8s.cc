// The Kubernetes scheduler extender's decisions inside the Service: the
// same cluster state, scorer and store as the queue, under the same mutex.
// A bound pod is a running job with no process (user "k8s:<namespace>"),
// kept out of the queue's `running`: the launcher never sees it, it ends
// by K8sRelease. docs/kubernetes.md.

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "scheduler/service_internal.h"

namespace tessera::scheduler {
namespace {

// The pod requests filter and prioritize saw, kept for their bind (which
// names the pod only): enough for every pod kube-scheduler has in flight,
// bounded so that pods never bound cannot grow it without end.
constexpr size_t kMaxPendingPods = 10000;
// A remembered request older than this is dropped first when the bound is
// reached: kube-scheduler binds within seconds of filtering.
constexpr double kPendingPodTtlS = 600;

// A bound pod's job: its user and the environment keys that identify it
// (JobRequest fields reused, so the store's schema is unchanged).
constexpr std::string_view kUserPrefix = "k8s:";
constexpr const char* kUidEnv = "TESSERA_K8S_POD_UID";
constexpr const char* kNameEnv = "TESSERA_K8S_POD_NAME";
constexpr const char* kNamespaceEnv = "TESSERA_K8S_POD_NAMESPACE";

bool IsK8sJob(const Job& job) {
  return job.user.rfind(kUserPrefix, 0) == 0 &&
         job.request.env.count(kUidEnv) > 0;
}

K8sPodRef RefOf(const Job& job) {
  auto get = [&](const char* key) {
    auto it = job.request.env.find(key);
    return it == job.request.env.end() ? std::string() : it->second;
  };
  return {get(kNameEnv), get(kNamespaceEnv), get(kUidEnv)};
}

std::string Str(std::string_view s) { return std::string(s); }

// The annotations that record `a` for a device plugin or the pod itself.
std::map<std::string, std::string> Annotations(const Topology& t,
                                               const Job& job,
                                               double reserved_at) {
  const Allocation& a = job.allocation;
  std::string index, milli, memory, limits;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuShare& s = a.gpus[i];
    const std::string sep = i ? "," : "";
    index += sep + std::to_string(t.gpus[s.gpu].index);
    milli += sep + std::to_string(s.milli);
    memory += sep + std::to_string(s.memory_mib);
    limits +=
        sep + std::to_string(i) + "=" + std::to_string(s.memory_mib) + "M";
  }
  std::map<std::string, std::string> out = {
      {Str(kK8sJobIdAnnotation), std::to_string(job.id)},
      {Str(kK8sNodeAnnotation), t.nodes[a.node].name},
      {Str(kK8sGpuIndexAnnotation), index},
      {Str(kK8sGpuMilliAnnotation), milli},
      {Str(kK8sGpuMemoryAnnotation), memory},
      {Str(kK8sAssumeTimeAnnotation),
       std::to_string(static_cast<int64_t>(std::llround(reserved_at * 1e9)))},
      {Str(kK8sAssignedAnnotation), "false"}};
  if (!a.exclusive && !a.gpus.empty()) {
    // As the local launcher sets them (service_internal.h, LaunchEnv).
    out[Str(kK8sMpsThreadsAnnotation)] =
        std::to_string(std::max(1, (a.gpus[0].milli + 9) / 10));
    out[Str(kK8sMpsMemoryAnnotation)] = limits;
  }
  return out;
}

// Why `demand` does not fit `node` now (it could when empty).
std::string WhyNot(const ClusterState& s, int node, const Resources& d) {
  const Topology& t = s.topology();
  const NodeInfo& info = t.nodes[node];
  if (s.free_cpu_milli(node) < d.cpu_milli) {
    return "only " + std::to_string(s.free_cpu_milli(node)) +
           " CPU milli free, the pod asks " + std::to_string(d.cpu_milli);
  }
  if (s.free_memory_mib_on_node(node) < d.memory_mib) {
    return "only " + std::to_string(s.free_memory_mib_on_node(node)) +
           " MiB memory free, the pod asks " + std::to_string(d.memory_mib);
  }
  if (d.gpus > 0) {
    int free = 0;
    for (const int g : info.gpus) {
      free += s.holders_on(g) == 0 && s.reserved_milli(g) == 0 &&
              s.reserved_memory_mib(g) == 0;
    }
    return "only " + std::to_string(free) + " of its " +
           std::to_string(info.gpus.size()) +
           " GPUs are free, the pod asks for " + std::to_string(d.gpus);
  }
  int best = -1;
  for (const int g : info.gpus) {
    if (s.exclusive(g)) continue;
    if (best < 0 || s.free_milli(g) > s.free_milli(best)) best = g;
  }
  std::string text = "no GPU has " + std::to_string(d.gpu_milli) +
                     " milli and " + std::to_string(d.gpu_memory_mib) +
                     " MiB free";
  if (best >= 0) {
    text += " (the most: " + t.gpus[best].id + " with " +
            std::to_string(s.free_milli(best)) + " milli and " +
            std::to_string(s.free_memory_mib(best)) + " MiB)";
  }
  return text;
}

}  // namespace

struct K8sState {
  struct Pending {
    K8sPod pod;
    double seen_at = 0;
  };
  std::map<std::string, Pending> pending;  // by K8sPodRef::Key()
  std::map<std::string, Job> bound;        // by K8sPodRef::Key()

  void Remember(const K8sPod& pod, double now) {
    const std::string key = pod.ref.Key();
    if (!pending.count(key) && pending.size() >= kMaxPendingPods) {
      std::erase_if(pending, [&](const auto& p) {
        return now - p.second.seen_at > kPendingPodTtlS;
      });
      if (pending.size() >= kMaxPendingPods) {
        auto oldest = std::min_element(
            pending.begin(), pending.end(), [](const auto& a, const auto& b) {
              return a.second.seen_at < b.second.seen_at;
            });
        pending.erase(oldest);
      }
    }
    pending[key] = {pod, now};
  }

  // The bound pod `ref` names: by UID, or by namespace and name.
  std::map<std::string, Job>::iterator Find(const K8sPodRef& ref) {
    if (!ref.uid.empty()) return bound.find(ref.uid);
    return std::find_if(bound.begin(), bound.end(), [&](const auto& b) {
      const K8sPodRef r = RefOf(b.second);
      return r.ns == ref.ns && r.name == ref.name;
    });
  }
};

void K8sStateDeleter::operator()(K8sState* state) const { delete state; }

namespace {

using K8sStatePtr = std::unique_ptr<K8sState, K8sStateDeleter>;

K8sState& Made(K8sStatePtr& k8s) {
  if (!k8s) k8s.reset(new K8sState());
  return *k8s;
}

// Ends the reservation of the bound pod at `it` (the caller holds `mu` and
// wakes the queue, which may start what the pod held back).
Result<Job> EndBoundPod(K8sState& k8s, std::map<std::string, Job>::iterator it,
                        ClusterState& state, Store& store, double now,
                        JobState end, const std::string& reason) {
  Job job = std::move(it->second);
  k8s.bound.erase(it);
  state.Release(job.id);
  job.state = end;
  job.reason = reason;
  job.allocation = {};
  job.finished_at = now;
  TESSERA_RETURN_IF_ERROR(store.Update(job));
  return job;
}

}  // namespace

bool Service::Impl::RecoverK8sPod(Job& job) {
  if (!IsK8sJob(job)) return false;
  if (!state.Fits(job.allocation) ||
      !state.Reserve(job.id, job.allocation).ok()) {
    return false;  // the cluster changed under it: lost, as any other job
  }
  Made(k8s).bound[RefOf(job).Key()] = std::move(job);
  return true;
}

std::optional<Result<Job>> Service::Impl::CancelK8sPod(
    JobId id, const std::string& reason) {
  if (!k8s) return std::nullopt;
  auto it = std::find_if(k8s->bound.begin(), k8s->bound.end(),
                         [&](const auto& b) { return b.second.id == id; });
  if (it == k8s->bound.end()) return std::nullopt;
  Result<Job> job =
      EndBoundPod(*k8s, it, state, *store, Now(), JobState::kCancelled, reason);
  dirty = true;
  wake.notify_all();
  return job;
}

std::vector<K8sNodeVerdict> Service::K8sEvaluate(
    const K8sPod& pod, const std::vector<std::string>& nodes,
    const std::string& pool) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  const Topology& t = m.state.topology();
  std::vector<K8sNodeVerdict> out(nodes.size());
  Made(m.k8s).Remember(pod, m.Now());
  if (!pod.managed) {
    // Not tessera's to place: every node passes, none is preferred.
    for (size_t i = 0; i < nodes.size(); ++i) {
      out[i].node = nodes[i];
      out[i].fits = true;
    }
    return out;
  }
  const PlacementRequest request{pod.demand, {}};
  std::vector<double> scores(nodes.size(),
                             -std::numeric_limits<double>::infinity());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (size_t i = 0; i < nodes.size(); ++i) {
    K8sNodeVerdict& v = out[i];
    v.node = nodes[i];
    const int n = t.FindNode(nodes[i]);
    if (n < 0) {
      v.resolvable = false;
      v.reason = "not a node of tessera's configuration";
      continue;
    }
    if (!pool.empty() && t.nodes[n].pool != pool) {
      v.resolvable = false;
      v.reason = "in pool '" + t.nodes[n].pool +
                 "'; the extender offers pool '" + pool + "' only";
      continue;
    }
    if (!CouldEverFitOnNode(t, n, request)) {
      v.resolvable = false;
      v.reason = "could never hold the pod's " + DescribeK8sDemand(pod.demand);
      continue;
    }
    if (t.nodes[n].drained) {
      v.resolvable = false;
      v.reason = "drained in tessera";
      continue;
    }
    const std::optional<ScoredAllocation> fit =
        FitOnNode(m.state, n, request, *m.scorer);
    if (!fit) {
      v.reason = WhyNot(m.state, n, pod.demand);
      continue;
    }
    v.fits = true;
    scores[i] = fit->score;
    lo = std::min(lo, fit->score);
    hi = std::max(hi, fit->score);
  }
  // The scorer's order on 1..10 (0: does not fit), the best node at 10.
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!out[i].fits) continue;
    const double x = hi > lo ? (scores[i] - lo) / (hi - lo) : 1.0;
    out[i].score = 1 + static_cast<int>(std::lround(x * (kK8sMaxPriority - 1)));
  }
  return out;
}

Result<K8sBindOutcome> Service::K8sBind(const K8sPodRef& ref,
                                        const std::string& node,
                                        const K8sPod* given,
                                        const std::string& pool) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  K8sState& k8s = Made(m.k8s);
  const Topology& t = m.state.topology();
  using Kind = K8sBindOutcome::Kind;
  K8sBindOutcome out;
  const std::string pod_name = ref.ns + "/" + ref.name;
  if (auto b = k8s.Find(ref); b != k8s.bound.end()) {
    out.job = b->second;
    if (t.nodes[out.job.allocation.node].name != node) {
      out.kind = Kind::kRefused;
      out.message = "pod " + pod_name + " is already bound to node '" +
                    t.nodes[out.job.allocation.node].name + "' (tessera job " +
                    std::to_string(out.job.id) + ")";
      return out;
    }
    out.kind = Kind::kAlreadyBound;
    out.annotations = Annotations(t, out.job, out.job.started_at);
    return out;
  }
  if (given != nullptr) k8s.Remember(*given, m.Now());
  const auto p = k8s.pending.find(ref.Key());
  if (given == nullptr && p == k8s.pending.end()) {
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
  const int n = t.FindNode(node);
  if (n < 0) {
    out.kind = Kind::kUnknownNode;
    out.message =
        "Node: '" + node + "' is not a node of tessera's configuration";
    return out;
  }
  out.kind = Kind::kRefused;
  if (!pool.empty() && t.nodes[n].pool != pool) {
    out.message = "node '" + node + "' is in pool '" + t.nodes[n].pool +
                  "'; the extender offers pool '" + pool + "' only";
    return out;
  }
  // Names are unique in a namespace at any moment: a new UID under the
  // same name means the earlier pod's object is gone.
  const K8sPodRef by_name{ref.name, ref.ns, ""};
  if (auto old = k8s.Find(by_name); old != k8s.bound.end()) {
    TESSERA_RETURN_IF_ERROR(
        EndBoundPod(k8s, old, m.state, *m.store, m.Now(), JobState::kCancelled,
                    "released: a new pod of the same name (uid " + ref.uid +
                        ") was bound"));
  }
  const std::optional<ScoredAllocation> fit =
      FitOnNode(m.state, n, PlacementRequest{pod.demand, {}}, *m.scorer);
  if (!fit) {
    out.message = "node '" + node + "' has no room for pod " + pod_name +
                  " now: " +
                  (t.nodes[n].drained ? std::string("drained in tessera")
                                      : WhyNot(m.state, n, pod.demand));
    return out;
  }
  Job job;
  job.user = std::string(kUserPrefix) + ref.ns;
  job.request.name = pod_name;
  job.request.pool = t.nodes[n].pool;
  job.request.resources = pod.demand;
  job.request.env = {
      {kUidEnv, ref.uid}, {kNameEnv, ref.name}, {kNamespaceEnv, ref.ns}};
  job.demand = pod.demand;
  job.state = JobState::kRunning;
  job.submitted_at = job.started_at = m.Now();
  job.allocation = fit->allocation;
  auto id = m.store->Insert(job);  // on disk before kube-scheduler hears
  if (!id) return id.error();
  job.id = *id;
  TESSERA_RETURN_IF_ERROR(m.state.Reserve(job.id, job.allocation));
  k8s.pending.erase(ref.Key());
  out.kind = Kind::kBound;
  out.message.clear();
  out.annotations = Annotations(t, job, job.started_at);
  out.job = job;
  k8s.bound[ref.Key()] = std::move(job);
  return out;
}

Result<std::optional<Job>> Service::K8sRelease(const K8sPodRef& ref,
                                               JobState end,
                                               const std::string& reason) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  K8sState& k8s = Made(m.k8s);
  auto it = k8s.Find(ref);
  if (it == k8s.bound.end()) return std::optional<Job>();
  Result<Job> job =
      EndBoundPod(k8s, it, m.state, *m.store, m.Now(), end, reason);
  m.dirty = true;
  m.wake.notify_all();
  TESSERA_RETURN_IF_ERROR(job);
  return std::optional<Job>(std::move(*job));
}

std::vector<K8sPodRef> Service::K8sBoundPods() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  std::vector<K8sPodRef> out;
  if (!m.k8s) return out;
  for (const auto& [key, job] : m.k8s->bound) out.push_back(RefOf(job));
  return out;
}

}  // namespace tessera::scheduler
