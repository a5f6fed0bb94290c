#ifndef TESSERA_SCHEDULER_SERVICE_H_
#define TESSERA_SCHEDULER_SERVICE_H_

// The queue service's core: takes submissions (durably), runs the pools'
// policies, reserves GPUs, launches and reaps jobs, recovers after a
// restart. Thread-safe; the HTTP layer (http_server.h) and tests call it.
// Authorization is the caller's: it passes the user and checks roles.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/job.h"
#include "scheduler/k8s_pod.h"
#include "scheduler/launcher.h"
#include "scheduler/policy.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

struct User {
  std::string name;
  std::string team;  // "" = none
  bool admin = false;
};

struct ServiceOptions {
  Topology topology;
  std::map<std::string, PolicyConfig> policies;  // per pool; absent: fifo
  std::string scorer = "tessera";                // admission.h
  std::string db_path = "tessera.db";
  std::string log_dir = "tessera-logs";
  double kill_grace_s = 10;
  int64_t max_queued_per_user = 1000;
  // Model jobs: reserved memory = the estimator's peak x (1 + headroom).
  double model_headroom = 0.10;
  // Seconds since the Unix epoch; tests substitute a virtual clock.
  std::function<double()> clock;
  // Scheduling rounds run on submissions, exits and this often.
  double tick_s = 0.2;
  bool start_thread = true;  // false: the caller drives Tick()
};

struct JobFilter {
  std::optional<JobState> state;
  std::string user, pool;  // "" = any
  int64_t limit = 1000;
};

class Service {
 public:
  // Opens the store, recovers (re-adopts live jobs, fails lost ones,
  // re-reserves), and starts the scheduling thread. kBadInput for a bad
  // configuration or database.
  static Result<std::unique_ptr<Service>> Start(
      ServiceOptions options, std::unique_ptr<Launcher> launcher);
  ~Service();  // stops the thread; running jobs keep running
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Validates, sizes (model jobs), stores and queues; the job is on disk
  // when this returns. kBadInput naming the field (unknown pool, a request
  // no GPU of the pool could ever hold, a model that does not load, the
  // user's queue full).
  Result<Job> Submit(const User& user, JobRequest request);
  Result<std::vector<Job>> List(const JobFilter& filter);
  Result<std::optional<Job>> Get(JobId id);
  // Queued: cancelled at once. Running: stopped (SIGTERM, then SIGKILL);
  // the job is `cancelled` when its process exits. Terminal: unchanged.
  Result<Job> Cancel(JobId id, const std::string& reason);
  // A drained node admits nothing new; its running jobs continue.
  Status SetDrained(const std::string& node, bool drained);

  // GET /v1/cluster.
  nlohmann::json ClusterJson();
  // GET /metrics: Prometheus text format.
  std::string MetricsText();
  const Topology& topology() const;
  std::string LogPath(JobId id, bool stderr_log) const;

  // One scheduling round: reap exits, run every pool's policy, launch.
  void Tick();
  // The invariants of the cluster state ("" when they hold).
  std::string CheckInvariants();

  // Kubernetes scheduler extender (k8s_extender.h, service_k8s.cc) -------
  // Where `pod` fits now among `nodes` (Kubernetes node names, which are
  // the config's), scored as the scorer ranks them; only nodes of `pool`
  // ("" = any) are offered. Remembers the pod's request for its bind.
  std::vector<K8sNodeVerdict> K8sEvaluate(const K8sPod& pod,
                                          const std::vector<std::string>& nodes,
                                          const std::string& pool);
  // Reserves the pod's GPU share on `node` (the GPU the scorer picks there)
  // and records it durably as a running job. `pod`: its request when the
  // caller fetched it (else the one K8sEvaluate remembered). A pod of the
  // same namespace and name but another UID is a successor: the earlier
  // one's reservation is released. kInternal if the store fails.
  Result<K8sBindOutcome> K8sBind(const K8sPodRef& ref, const std::string& node,
                                 const K8sPod* pod, const std::string& pool);
  // Ends a bound pod's reservation (by UID, or namespace and name when the
  // UID is ""): the job becomes `end` with `reason`. nullopt if no such pod
  // holds one.
  Result<std::optional<Job>> K8sRelease(const K8sPodRef& ref, JobState end,
                                        const std::string& reason);
  // The pods that hold a reservation now.
  std::vector<K8sPodRef> K8sBoundPods();

 private:
  struct Impl;
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_SERVICE_H_
