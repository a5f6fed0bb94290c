// The queue policies' factory, fifo and priority (with optional preemption).
// backfill.cc and fair_share.cc hold the other two.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/policy_internal.h"

namespace tessera::scheduler {
namespace policy_internal {

bool Holds(const ClusterState& sim, JobId job) {
  return sim.AllocationOf(job) != nullptr;
}

bool TryStart(ClusterState& sim, const QueuedJob& job,
              const Allocator& allocate, Decision& decision) {
  if (Holds(sim, job.id)) return false;
  std::optional<Allocation> a = allocate(sim, job);
  if (!a || !sim.Reserve(job.id, *a)) return false;
  decision.start.emplace_back(job.id, std::move(*a));
  return true;
}

int64_t MilliOf(const Allocation& a) {
  int64_t milli = 0;
  for (const GpuShare& share : a.gpus) {
    milli += a.exclusive ? kFullGpuMilli : share.milli;
  }
  return milli;
}

}  // namespace policy_internal

std::vector<size_t> QueuePolicy::Order(
    const std::vector<QueuedJob>& queue,
    const std::vector<RunningJob>& /*running*/, const ClusterState& /*state*/,
    double /*now*/) const {
  std::vector<size_t> order(queue.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

namespace {

using policy_internal::Holds;
using policy_internal::TryStart;

// Strict FIFO: in submission order while jobs fit; the first that does not
// blocks everything behind it.
class Fifo final : public QueuePolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  Decision Schedule(const std::vector<QueuedJob>& queue,
                    const std::vector<RunningJob>& /*running*/,
                    const ClusterState& state, const Allocator& allocate,
                    double /*now*/) override {
    ClusterState sim = state;
    Decision decision;
    for (const QueuedJob& job : queue) {
      if (Holds(sim, job.id)) continue;
      if (!TryStart(sim, job, allocate, decision)) break;
    }
    return decision;
  }
};

// Higher priority first, then submission order; a blocked job blocks the
// lower ones (so its wait is bounded by running jobs ending), unless
// preemption frees room for it.
class Priority final : public QueuePolicy {
 public:
  explicit Priority(bool preemption) : preemption_(preemption) {}
  std::string_view name() const override { return "priority"; }

  Decision Schedule(const std::vector<QueuedJob>& queue,
                    const std::vector<RunningJob>& running,
                    const ClusterState& state, const Allocator& allocate,
                    double now) override {
    ClusterState sim = state;
    Decision decision;
    for (const size_t i : Order(queue, running, state, now)) {
      const QueuedJob* job = &queue[i];
      if (Holds(sim, job->id)) continue;
      if (TryStart(sim, *job, allocate, decision)) continue;
      if (!preemption_ || !Preempt(sim, *job, running, allocate, decision)) {
        break;
      }
    }
    return decision;
  }

  // Higher priority first, then submission order.
  std::vector<size_t> Order(const std::vector<QueuedJob>& queue,
                            const std::vector<RunningJob>& running,
                            const ClusterState& state,
                            double now) const override {
    std::vector<size_t> order = QueuePolicy::Order(queue, running, state, now);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return queue[a].priority > queue[b].priority;
    });
    return order;
  }

 private:
  // Frees room for `job` by preempting preemptible running jobs of strictly
  // lower priority, lowest priority first, then the most recently started
  // (it has lost the least work); drops victims it turns out not to need.
  // On success `job` is started in `sim` after the victims are released.
  static bool Preempt(ClusterState& sim, const QueuedJob& job,
                      const std::vector<RunningJob>& running,
                      const Allocator& allocate, Decision& decision) {
    std::vector<const RunningJob*> candidates;
    for (const RunningJob& r : running) {
      // Jobs preempted earlier this round no longer hold anything in sim.
      if (r.preemptible && r.priority < job.priority && Holds(sim, r.id)) {
        candidates.push_back(&r);
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const RunningJob* a, const RunningJob* b) {
                if (a->priority != b->priority) {
                  return a->priority < b->priority;
                }
                if (a->started_at != b->started_at) {
                  return a->started_at > b->started_at;
                }
                return a->id > b->id;
              });
    ClusterState trial = sim;
    std::vector<std::pair<JobId, Allocation>> victims;
    bool fits = false;
    for (const RunningJob* r : candidates) {
      victims.emplace_back(r->id, *trial.AllocationOf(r->id));
      trial.Release(r->id);
      if (allocate(trial, job)) {
        fits = true;
        break;
      }
    }
    if (!fits) return false;
    // Keep the victims the job does not need after all, latest first.
    for (size_t i = victims.size(); i-- > 0;) {
      const auto& [id, allocation] = victims[i];
      if (!trial.Reserve(id, allocation)) continue;
      if (allocate(trial, job)) {
        victims.erase(victims.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        trial.Release(id);
      }
    }
    std::optional<Allocation> a = allocate(trial, job);
    if (!a || !trial.Reserve(job.id, *a)) return false;
    for (const auto& victim : victims) decision.preempt.push_back(victim.first);
    decision.start.emplace_back(job.id, std::move(*a));
    sim = std::move(trial);
    return true;
  }

  bool preemption_;
};

}  // namespace

std::vector<std::string> PolicyNames() {
  return {"fifo", "backfill", "priority", "fair-share"};
}

Result<std::unique_ptr<QueuePolicy>> MakePolicy(const PolicyConfig& config) {
  // preemption is priority's; the other policies ignore it.
  if (config.name == "fifo") return std::unique_ptr<QueuePolicy>(new Fifo);
  if (config.name == "backfill") return policy_internal::MakeBackfill();
  if (config.name == "priority") {
    return std::unique_ptr<QueuePolicy>(new Priority(config.preemption));
  }
  if (config.name == "fair-share") {
    for (const auto& [account, weight] : config.weights) {
      if (!(weight > 0)) {
        return BadInput("weights." + account + ": must be positive, got " +
                        std::to_string(weight));
      }
    }
    return policy_internal::MakeFairShare(config);
  }
  std::string known;
  for (const std::string& n : PolicyNames()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  return BadInput("policy: unknown policy '" + config.name +
                  "' (known: " + known + ")");
}

}  // namespace tessera::scheduler
