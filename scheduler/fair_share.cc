// Fair share on dominant GPU share: the waiting job of the account (team, or
// user when the job has no team) with the least running GPU milli per unit
// of weight goes first; ties by submission. Shares are recomputed after
// every start, so each start goes to whoever is furthest below their share.
// The share's denominator (the pool's capacity) is the same for every
// account, so the order uses milli / weight directly.
//
// Jobs that do not fit are skipped, so small jobs keep the pool busy while a
// big one waits; a job that has waited kFairShareMaxWaitS goes to the front
// instead and, if it does not fit, holds back everything behind it until
// running jobs end and it does: that bounds every wait.

#include <map>
#include <string>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/policy_internal.h"

namespace tessera::scheduler::policy_internal {
namespace {

template <typename J>
const std::string& AccountOf(const J& job) {
  return job.team.empty() ? job.user : job.team;
}

class FairShare final : public QueuePolicy {
 public:
  explicit FairShare(std::map<std::string, double> weights)
      : weights_(std::move(weights)) {}
  std::string_view name() const override { return "fair-share"; }

  Decision Schedule(const std::vector<QueuedJob>& queue,
                    const std::vector<RunningJob>& running,
                    const ClusterState& state, const Allocator& allocate,
                    double now) override {
    ClusterState sim = state;
    Decision decision;
    std::map<std::string, int64_t> milli;  // running GPU milli per account
    for (const RunningJob& r : running) {
      if (const Allocation* a = sim.AllocationOf(r.id)) {
        milli[AccountOf(r)] += MilliOf(*a);
      }
    }
    // Overdue jobs first, oldest first; one that does not fit stops the
    // round so that nothing takes the capacity it is waiting for.
    for (const QueuedJob& job : queue) {
      if (now - job.submitted_at <= kFairShareMaxWaitS || Holds(sim, job.id)) {
        continue;
      }
      if (!TryStart(sim, job, allocate, decision)) return decision;
      milli[AccountOf(job)] += MilliOf(decision.start.back().second);
    }
    // Each account's waiting jobs in submission order, and a cursor.
    Waiting waiting;
    for (const QueuedJob& job : queue) {
      if (!Holds(sim, job.id)) waiting[AccountOf(job)].push_back(&job);
    }
    std::map<std::string, size_t> next;
    int misses = 0;
    while (misses < kMaxMissesPerRound) {
      const std::string* account = nullptr;
      const QueuedJob* job = NextTurn(waiting, next, milli, &account);
      if (!job) break;
      if (TryStart(sim, *job, allocate, decision)) {
        milli[*account] += MilliOf(decision.start.back().second);
      } else {
        ++misses;
      }
    }
    return decision;
  }

  // Schedule's order as if every job started: the overdue jobs, oldest
  // first, then turn by turn the account with the smallest weighted share
  // (its running jobs' GPUs, plus those it would start before), each
  // account's jobs in submission order.
  std::vector<size_t> Order(const std::vector<QueuedJob>& queue,
                            const std::vector<RunningJob>& running,
                            const ClusterState& state,
                            double now) const override {
    std::map<std::string, int64_t> milli;
    for (const RunningJob& r : running) {
      if (const Allocation* a = state.AllocationOf(r.id)) {
        milli[AccountOf(r)] += MilliOf(*a);
      }
    }
    std::vector<size_t> order;
    Waiting waiting;
    for (size_t i = 0; i < queue.size(); ++i) {
      const QueuedJob& job = queue[i];
      if (now - job.submitted_at > kFairShareMaxWaitS) {
        order.push_back(i);
        milli[AccountOf(job)] += DemandMilli(job.demand);
      } else {
        waiting[AccountOf(job)].push_back(&job);
      }
    }
    std::map<std::string, size_t> next;
    const std::string* account = nullptr;
    while (const QueuedJob* job = NextTurn(waiting, next, milli, &account)) {
      order.push_back(static_cast<size_t>(job - queue.data()));
      milli[*account] += DemandMilli(job->demand);
    }
    return order;
  }

 private:
  // Each account's waiting jobs, in submission order.
  using Waiting = std::map<std::string, std::vector<const QueuedJob*>>;

  // The job whose turn it is: the next of the account with the smallest
  // weighted share (`milli` over its weight) among those with jobs left,
  // on a tie the one whose next job was submitted first. Moves that
  // account's cursor (`next`) on and names it in `account`; null when no
  // account has jobs left.
  const QueuedJob* NextTurn(const Waiting& waiting,
                            std::map<std::string, size_t>& next,
                            std::map<std::string, int64_t>& milli,
                            const std::string** account) const {
    const std::string* best = nullptr;
    const QueuedJob* best_job = nullptr;
    double best_share = 0;
    for (const auto& [name, jobs] : waiting) {
      if (next[name] >= jobs.size()) continue;
      const double share = static_cast<double>(milli[name]) / Weight(name);
      const QueuedJob* job = jobs[next[name]];
      if (!best || share < best_share ||
          (share == best_share && job->submitted_at < best_job->submitted_at)) {
        best = &name;
        best_job = job;
        best_share = share;
      }
    }
    if (!best) return nullptr;
    ++next[*best];
    *account = best;
    return best_job;
  }

  // What a job asks of GPU compute, in milli-GPUs.
  static int64_t DemandMilli(const Resources& d) {
    return d.gpus > 0 ? int64_t{d.gpus} * kFullGpuMilli : d.gpu_milli;
  }

  double Weight(const std::string& account) const {
    auto it = weights_.find(account);
    return it == weights_.end() ? 1.0 : it->second;
  }

  std::map<std::string, double> weights_;
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeFairShare(const PolicyConfig& config) {
  return std::make_unique<FairShare>(config.weights);
}

}  // namespace tessera::scheduler::policy_internal
