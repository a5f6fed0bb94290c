#ifndef TESSERA_SCHEDULER_POLICY_H_
#define TESSERA_SCHEDULER_POLICY_H_

// Queue policies, one per pool: which queued jobs start now (and which
// running ones to preempt). Pure functions of the queue, the running jobs
// and the cluster state, so that the service and the trace replay share
// them.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/topology.h"

namespace tessera::scheduler {

struct QueuedJob {
  JobId id = 0;
  std::string user;
  std::string team;  // "" = the user is their own team
  int priority = 0;
  bool preemptible = false;
  double submitted_at = 0;
  double time_limit_s = 0;  // 0 = unknown
  Resources demand;
};

struct RunningJob {
  JobId id = 0;
  std::string user;
  std::string team;
  int priority = 0;
  bool preemptible = false;
  double started_at = 0;
  double time_limit_s = 0;  // 0 = unknown (runs "forever" for backfill)
};

// Finds an allocation for a queued job in a given state, or nullopt: the
// scorer's FindAllocation for explicit requests, and for a model job that
// fits no single GPU the placer's split as a gang. Set by the caller.
using Allocator = std::function<std::optional<Allocation>(
    const ClusterState& state, const QueuedJob& job)>;

struct Decision {
  std::vector<std::pair<JobId, Allocation>> start;  // in this order
  std::vector<JobId> preempt;  // running jobs to stop first (their
                               // resources are free for `start`)
};

struct PolicyConfig {
  std::string name = "fifo";  // fifo, backfill, priority, fair-share
  bool preemption = false;    // priority: may preempt preemptible jobs
  // fair-share: weight per user or team (absent: 1).
  std::map<std::string, double> weights;
};

class QueuePolicy {
 public:
  virtual ~QueuePolicy() = default;
  virtual std::string_view name() const = 0;
  // `queue` is in submission order. `state` is the cluster now; the policy
  // must not return starts that do not fit together (after preemptions).
  virtual Decision Schedule(const std::vector<QueuedJob>& queue,
                            const std::vector<RunningJob>& running,
                            const ClusterState& state,
                            const Allocator& allocate, double now) = 0;
  // The order the policy considers `queue` in (indices into it), as if
  // every job fitted: what views show as a job's position (GET /v1/queue),
  // so that none guesses it from the policy's name. Submission order
  // unless the policy reorders.
  virtual std::vector<size_t> Order(const std::vector<QueuedJob>& queue,
                                    const std::vector<RunningJob>& running,
                                    const ClusterState& state,
                                    double now) const;
};

// kBadInput naming the known policies for an unknown name.
Result<std::unique_ptr<QueuePolicy>> MakePolicy(const PolicyConfig& config);
std::vector<std::string> PolicyNames();

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_POLICY_H_
