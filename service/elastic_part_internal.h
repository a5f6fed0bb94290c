#ifndef TESSERA_SERVICE_ELASTIC_PART_INTERNAL_H_
#define TESSERA_SERVICE_ELASTIC_PART_INTERNAL_H_

// The service's elastic part (docs/elastic.md): what it owes the running
// elastic jobs beyond their allocations, which live with each Job
// (Job::elastic). Decided under Service::Impl::mu, handed to the launcher
// by the round thread without it (Take):
// - notices: jobs whose allocation changed, to be signalled (SIGUSR1);
// - per-worker jobs' worker processes to start (a grow) and stop (a
//   shrink asked, a release, a reclaim), and the reclaimed workers whose
//   process has not been reaped yet (their job does not grow meanwhile:
//   a new worker could get the same id);
// - the pools where extras were asked back this round (nothing grows
//   there until the next).
// One member of Service::Impl, guarded by its `mu`. Internal to service/.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "launch/launcher.h"
#include "scheduler/job.h"

namespace tessera::service::service_internal {

using scheduler::JobId;

// Workers of a per-worker job to stop, after `grace_s`.
struct WorkerStop {
  JobId id = 0;
  std::vector<int> workers;
  double grace_s = 0;
};

// The launcher calls the elastic part owes, taken at once.
struct ElasticCalls {
  std::vector<JobId> notices;
  std::vector<launch::LaunchSpec> worker_starts;
  std::vector<WorkerStop> worker_stops;
};

class ElasticPart {
 public:
  // Job `id`'s allocation changed: it is signalled.
  void Notify(JobId id) { calls_.notices.push_back(id); }
  void StartWorkers(launch::LaunchSpec spec) {
    calls_.worker_starts.push_back(std::move(spec));
  }
  // Stops `workers` of `id`; `reclaimed`: killed, not given back, so
  // they are dying until their exits are reaped (Reaped).
  void StopWorkers(JobId id, const std::vector<int>& workers, double grace_s,
                   bool reclaimed) {
    calls_.worker_stops.push_back({id, workers, grace_s});
    if (reclaimed) dying_[id].insert(workers.begin(), workers.end());
  }
  // `workers` of `id` ended: no longer dying.
  void Reaped(JobId id, const std::vector<int>& workers) {
    auto d = dying_.find(id);
    if (d == dying_.end()) return;
    for (const int w : workers) d->second.erase(w);
    if (d->second.empty()) dying_.erase(d);
  }
  bool Dying(JobId id) const { return dying_.count(id) > 0; }

  // Extras were asked back in `pool` this round.
  void Reclaiming(const std::string& pool) { reclaiming_.insert(pool); }
  const std::set<std::string>& reclaiming() const { return reclaiming_; }
  // A round begins: no pool is being asked for extras yet.
  void BeginRound() { reclaiming_.clear(); }

  // What the launcher is owed, now; nothing is owed after.
  ElasticCalls Take() {
    ElasticCalls out;
    std::swap(out, calls_);
    return out;
  }

 private:
  ElasticCalls calls_;
  std::map<JobId, std::set<int>> dying_;
  std::set<std::string> reclaiming_;
};

}  // namespace tessera::service::service_internal

#endif  // TESSERA_SERVICE_ELASTIC_PART_INTERNAL_H_
