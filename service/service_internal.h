#ifndef TESSERA_SERVICE_SERVICE_INTERNAL_H_
#define TESSERA_SERVICE_SERVICE_INTERNAL_H_

// The service's state and its steps, shared by the files that implement the
// Service: service.cc (the API), service_rounds.cc (scheduling rounds and
// recovery), service_launch_env.cc (what a job starts with) and
// service_reservations.cc (reservations for outside systems); nobody else
// includes it. One mutex (`mu`) guards every member below it, and every
// step is called with it held.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/model_jobs.h"
#include "service/metrics_internal.h"
#include "service/service.h"
#include "service/store_internal.h"

namespace tessera::scheduler {

// Seconds the service waits after a launcher could not reach its engine
// before it starts jobs again: long enough not to hammer a controller that
// is down, short against a job's wait.
inline constexpr double kLaunchRetryS = 5;

namespace service_internal {

inline double WallClock() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The GPU kind a pool's model jobs are sized for: its first GPU's.
inline std::string PoolKind(const Topology& t, const std::string& pool) {
  for (const NodeInfo& n : t.nodes) {
    if (n.pool == pool && !n.gpus.empty()) return t.gpus[n.gpus[0]].kind;
  }
  return "";
}

}  // namespace service_internal

struct Service::Impl {
  ServiceOptions options;
  ClusterState state;
  std::unique_ptr<Store> store;
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<GpuScorer> scorer;
  AdmissionCache admission_cache;  // the scorer's scores, by node stamp
  std::map<std::string, std::unique_ptr<QueuePolicy>> policies;

  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  bool dirty = true;  // something changed: run a round
  std::thread thread;

  std::vector<Job> queue;        // queued or preempted, by id
  std::map<JobId, Job> running;  // running (incl. stopping)
  std::set<JobId> cancel_requested, preempt_requested;
  std::unordered_map<JobId, SizedModel> models;  // model jobs' graphs
  std::unordered_map<JobId, nlohmann::json> pending_plans;
  // After a transient launcher error nothing starts until then.
  double launch_retry_at = 0;
  Metrics metrics;
  // Reservations for outside systems (Job::origin set): running, but
  // kept out of `running`, so the launcher never sees them.
  std::map<JobId, Job> reserved;

  // Ends the reservation at `it` (the caller holds `mu`); wakes the queue,
  // which may start what it held back (service_reservations.cc).
  Result<Job> EndReserved(std::map<JobId, Job>::iterator it, JobState end,
                          const std::string& reason);

  // Which model files jobs may name (Start fills it from `options`).
  ModelFiles model_files;
  // Uploads are loaded one at a time (UploadModel): bounds their memory.
  std::mutex upload_mu;

  explicit Impl(ServiceOptions o)
      : options(std::move(o)), state(options.topology) {}

  double Now() const {
    return options.clock ? options.clock() : service_internal::WallClock();
  }

  // Canonicalizes the model roots into `model_files` (service_models.cc).
  Status SetUpModelFiles();

  // The sized model of a model job, loading it again after a restart.
  const SizedModel* ModelOf(const Job& job);

  std::optional<Allocation> Allocate(const ClusterState& s, const Job& job);

  // The environment a job starts with (docs/scheduler.md, "Launching").
  std::map<std::string, std::string> LaunchEnv(const Job& job);

  void Persist(const Job& job);

  // Ends a running job (its process exited).
  void Finish(const Exited& e);

  // What `a` holds on each node, for the launcher: the node that holds the
  // CPU and memory first.
  std::vector<LaunchPart> LaunchParts(const Allocation& a) const;

  // Back to the queue, in id order.
  void Requeue(Job job);

  // Starts `job` (removed from the queue by the caller) on `allocation`.
  void Launch(Job job, const Allocation& allocation);

  void Round();

  void Loop();

  // After a restart: live jobs are re-adopted, the others are lost.
  Status Recover();
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SERVICE_SERVICE_INTERNAL_H_
