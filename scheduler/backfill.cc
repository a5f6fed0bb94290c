// EASY backfilling (Lifka, "The ANL/IBM SP scheduling system", 1995): jobs
// start in submission order while they fit; the first that does not (the
// head) gets a reservation at the earliest time the running jobs' expected
// ends free enough for it (the shadow time), and a later job may jump ahead
// only if it cannot delay that reservation.

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/policy_internal.h"

namespace tessera::scheduler::policy_internal {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// A running job's expected end; one without a time limit never ends as far
// as reservations go.
double ExpectedEnd(double started_at, double time_limit_s) {
  return time_limit_s > 0 ? started_at + time_limit_s : kNever;
}

struct HeadReservation {
  double shadow_time = kNever;
  ClusterState state;  // at the shadow time, with the head reserved
};

// `sim` with the first `count` jobs in order of expected end released; moves
// both ways, re-reserving what it released, so a search over `count` needs
// one copy of the cluster state, not one per probe.
class ReleasedPrefix {
 public:
  ReleasedPrefix(ClusterState sim, std::vector<std::pair<double, JobId>> ends)
      : state_(std::move(sim)), ends_(std::move(ends)) {
    std::sort(ends_.begin(), ends_.end());
  }
  size_t size() const { return ends_.size(); }
  double EndOf(size_t count) const {
    return count == 0 ? -kNever : ends_[count - 1].first;
  }
  ClusterState& state() { return state_; }

  // False only if a job cannot be put back (never: nothing else changed).
  bool MoveTo(size_t count) {
    while (released_.size() < count) {
      const JobId id = ends_[released_.size()].second;
      const Allocation* held = state_.AllocationOf(id);  // null if listed twice
      released_.push_back(held ? std::optional(*held) : std::nullopt);
      state_.Release(id);
    }
    while (released_.size() > count) {
      const JobId id = ends_[released_.size() - 1].second;
      if (released_.back() && !state_.Reserve(id, *released_.back())) {
        return false;
      }
      released_.pop_back();
    }
    return true;
  }

 private:
  ClusterState state_;
  std::vector<std::pair<double, JobId>> ends_;
  std::vector<std::optional<Allocation>> released_;
};

// The head's reservation, or nullopt when it would not fit even with every
// running job gone (a drained node, a gang the slivers never hold): then
// there is nothing to protect. Releasing jobs in order of expected end only
// ever frees capacity, so the shortest prefix of releases that fits the head
// is found by galloping and then bisecting: O(log n) allocator calls.
std::optional<HeadReservation> ReserveHead(
    const ClusterState& sim, std::vector<std::pair<double, JobId>> ends,
    const QueuedJob& head, const Allocator& allocate) {
  ReleasedPrefix prefix(sim, std::move(ends));
  auto fits_after = [&](size_t count) {
    return prefix.MoveTo(count) && allocate(prefix.state(), head).has_value();
  };
  // The head fits after releasing `hi` jobs, not after `lo`.
  size_t lo = 0;
  size_t hi = 1;
  while (true) {
    hi = std::min(hi, prefix.size());
    if (fits_after(hi)) break;
    if (hi == prefix.size()) return std::nullopt;
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (fits_after(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  if (!prefix.MoveTo(hi)) return std::nullopt;
  HeadReservation r{prefix.EndOf(hi), std::move(prefix.state())};
  std::optional<Allocation> a = allocate(r.state, head);
  if (!a || !r.state.Reserve(head.id, *a)) return std::nullopt;
  return r;
}

class Backfill final : public QueuePolicy {
 public:
  std::string_view name() const override { return "backfill"; }

  Decision Schedule(const std::vector<QueuedJob>& queue,
                    const std::vector<RunningJob>& running,
                    const ClusterState& state, const Allocator& allocate,
                    double now) override {
    ClusterState sim = state;
    Decision decision;
    size_t i = 0;
    for (; i < queue.size(); ++i) {
      if (Holds(sim, queue[i].id)) continue;
      if (!TryStart(sim, queue[i], allocate, decision)) break;
    }
    if (i == queue.size()) return decision;
    const QueuedJob& head = queue[i];

    // Everything holding capacity: the running jobs and this round's starts.
    std::vector<std::pair<double, JobId>> ends;
    for (const RunningJob& r : running) {
      if (Holds(sim, r.id)) {
        ends.emplace_back(ExpectedEnd(r.started_at, r.time_limit_s), r.id);
      }
    }
    for (size_t k = 0; k < i; ++k) {
      ends.emplace_back(ExpectedEnd(now, queue[k].time_limit_s), queue[k].id);
    }
    std::optional<HeadReservation> reservation =
        ReserveHead(sim, std::move(ends), head, allocate);

    int misses = 0;
    for (++i; i < queue.size() && misses < kMaxMissesPerRound; ++i) {
      const QueuedJob& job = queue[i];
      if (Holds(sim, job.id)) continue;
      const bool started = reservation ? Backfill1(sim, *reservation, job,
                                                   allocate, now, decision)
                                       : TryStart(sim, job, allocate, decision);
      if (!started) ++misses;
    }
    return decision;
  }

 private:
  // Starts `job` now if that cannot delay the head: it ends by the shadow
  // time (a job without a time limit never does; nor does any job when the
  // shadow time itself is unknown), or its allocation is still free in the
  // shadow state next to the head's reservation.
  static bool Backfill1(ClusterState& sim, HeadReservation& r,
                        const QueuedJob& job, const Allocator& allocate,
                        double now, Decision& decision) {
    std::optional<Allocation> a = allocate(sim, job);
    if (!a) return false;
    const bool ends_first = job.time_limit_s > 0 &&
                            std::isfinite(r.shadow_time) &&
                            now + job.time_limit_s <= r.shadow_time;
    if (!ends_first && !r.state.Fits(*a)) {
      // The placement chosen now collides with the head: try the one the
      // shadow state would choose, if it is free now too.
      a = allocate(r.state, job);
      if (!a || !sim.Fits(*a)) return false;
    }
    if (!sim.Reserve(job.id, *a)) return false;
    if (!ends_first && !r.state.Reserve(job.id, *a)) {
      sim.Release(job.id);  // unreachable: checked by Fits above
      return false;
    }
    decision.start.emplace_back(job.id, std::move(*a));
    return true;
  }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeBackfill() {
  return std::make_unique<Backfill>();
}

}  // namespace tessera::scheduler::policy_internal
