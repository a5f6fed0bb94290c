#ifndef TESSERA_SCHEDULER_QUEUE_TREE_H_
#define TESSERA_SCHEDULER_QUEUE_TREE_H_

// Hierarchical queues with guaranteed quota, a borrowing limit and an
// over-quota weight (docs/quotas.md): idle guarantee is lent to queues
// with work, and taken back by preempting borrowed work, youngest first,
// when its owner needs it. As Kueue's cohorts (borrowing, reclaim), KAI
// Scheduler's queues (deserved quota, over-quota weight) and Volcano's
// proportion plugin.
//
// Pure: the tree, what each queue holds, "may this job start now, and is
// it guaranteed or borrowed?", and a round's plan (which queued jobs to
// offer the queue policy, in which order, and which running jobs to
// reclaim). The service's round and the timed replay share it.
//
// A job is in one queue. What it holds is its *guaranteed* part or its
// *borrowed* part; today a job is wholly one or the other (TreeJob::
// borrowed), a job with a guaranteed and a borrowed part (an elastic job's
// extra workers) is a second TreeJob entry of the same id.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "scheduler/policy.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

// GPU capacity in the two dimensions a quota counts.
struct QueueAmount {
  int64_t gpu_milli = 0;
  int64_t gpu_memory_mib = 0;
  QueueAmount& operator+=(const QueueAmount& o) {
    gpu_milli += o.gpu_milli;
    gpu_memory_mib += o.gpu_memory_mib;
    return *this;
  }
  QueueAmount& operator-=(const QueueAmount& o) {
    gpu_milli -= o.gpu_milli;
    gpu_memory_mib -= o.gpu_memory_mib;
    return *this;
  }
  // Both dimensions <= o's.
  bool Within(const QueueAmount& o) const {
    return gpu_milli <= o.gpu_milli && gpu_memory_mib <= o.gpu_memory_mib;
  }
  bool operator==(const QueueAmount&) const = default;
};
inline constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max() / 4;

// One queue of the config (server/serve_config_queues.cc).
struct QueueSpec {
  std::string name;
  QueueAmount guaranteed;
  QueueAmount limit{kNoLimit, kNoLimit};  // the subtree's ceiling
  double weight = 1;                      // share of what is borrowed
  std::vector<QueueSpec> children;
};

// A job the tree counts: running (or starting) with its mark.
struct TreeJob {
  JobId id = 0;
  int queue = 0;
  QueueAmount amount;
  bool borrowed = false;
  bool preemptible = false;
  double started_at = 0;
};

// A queued job: its queue and what it would hold.
struct TreePending {
  JobId id = 0;
  int queue = 0;
  QueueAmount amount;
  bool preemptible = false;
};

// What GET /v1/cluster shows per queue.
struct QueueReport {
  std::string name, parent;  // parent "" for a top-level queue
  int depth = 0;
  QueueAmount guaranteed, limit;
  double weight = 1;
  QueueAmount used;      // the subtree's running jobs
  QueueAmount borrowed;  // of which borrowed (beyond its guarantees)
  QueueAmount idle;      // guarantee its own jobs do not use
  QueueAmount lent;      // of which the queues outside it borrow now
  int64_t running = 0, borrowing_jobs = 0;
};

class QueueTree {
 public:
  enum class Fit { kGuaranteed, kBorrowed, kNo };

  QueueTree() = default;
  // A synthetic root (index 0, name "") above `top`. kBadInput, naming the
  // field as the config spells it (`queues[0].children[1].guaranteed.
  // gpu_milli: ...`), for an empty or repeated name, a negative amount or
  // weight, a limit below the guarantee, or children whose guarantees
  // exceed their parent's.
  static Result<QueueTree> Make(std::vector<QueueSpec> top);

  bool empty() const { return nodes_.size() <= 1; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::string& name(int q) const { return nodes_[q].spec.name; }
  // The queue's index, -1 if none ("" is the root, 0).
  int Find(std::string_view name) const;
  // A job's queue: `requested` if given (-1 if no such queue), else the
  // queue named after the user, else the team's, else the root (whose own
  // jobs are always borrowed).
  int Route(std::string_view requested, std::string_view user,
            std::string_view team) const;
  // Whether `q` is `ancestor` or below it.
  bool Within(int q, int ancestor) const;

  // Use: what the running jobs hold.
  void Clear();
  void Add(const TreeJob& j);
  void Remove(const TreeJob& j);

  // Whether a job of `amount` in `q` may start now: kGuaranteed if it fits
  // what `q`'s own jobs are guaranteed (its guarantee less its children's);
  // kBorrowed if `preemptible` (only work that can be taken back borrows)
  // and no queue from `q` up would pass its limit; else kNo.
  Fit Classify(int q, const QueueAmount& amount, bool preemptible) const;
  // The order borrowers go in (lower first): what `q` borrows beyond its
  // guarantee, over its weight (the larger of GPU milli and memory, as
  // fractions of the root's guarantee).
  double BorrowKey(int q) const;

  // The running jobs to preempt so that `job` (in guarantee) fits: the
  // borrowed, preemptible ones of other queues (not `job.queue`'s subtree),
  // youngest first, as few of that order as make `fits` true on the state
  // with them released. Empty if even all of them would not do.
  std::vector<JobId> Reclaim(
      const TreePending& job, const std::vector<TreeJob>& running,
      const ClusterState& state,
      const std::function<bool(const ClusterState&)>& fits) const;

  std::vector<QueueReport> Report() const;

 private:
  struct Node {
    QueueSpec spec;  // children moved out
    int parent = -1;
    int depth = 0;
    QueueAmount own_guarantee;  // guaranteed less the children's
    QueueAmount used, own_guaranteed_used, guaranteed_used;
    int64_t running = 0, borrowing = 0;
  };
  std::vector<Node> nodes_;
  std::map<std::string, int, std::less<>> by_name_;
};

// A round's plan under the tree. `pending` in submission order, `running`
// what runs (and starts) now with its marks. `allocate(state, id)`: where
// queued job `id` would start in `state` (the policy's allocator), or
// nullopt.
struct TreePlan {
  // The queued jobs to offer the queue policy: those in their guarantee
  // (submission order), then borrowers by BorrowKey, and how each would
  // start.
  std::vector<JobId> offer;
  std::map<JobId, QueueTree::Fit> fit;
  // Room reclaimed for owners' jobs (this round's, and `reclaimers`' of
  // earlier rounds that have not started): held for them, so that no
  // other job (in guarantee or borrowing) takes what was reclaimed.
  std::map<JobId, Allocation> held_room;
  std::map<JobId, std::string> held;  // why a job is not offered
  // Running borrowed jobs that now fit their queue's guarantee (a
  // guaranteed one ended): guaranteed from now on, oldest first.
  std::vector<JobId> promote;
  // Running jobs to preempt (youngest borrowed first), and for whom.
  std::vector<JobId> reclaim;
  std::map<JobId, JobId> reclaimed_for;
};
// What the queue policy starts among `jobs` (queued, in their guarantee,
// in submission order) on `state`: its decision, as if it ran now. The
// reclaim asks it twice (on the cluster now, and with every borrowed
// preemptible job gone) to learn which job the policy would start next if
// it had room: that job, and only it, reclaims (as the priority policy's
// preemption does for the job it would start).
using TreeTrial = std::function<Decision(const ClusterState& state,
                                         const std::vector<JobId>& jobs)>;

// `reclaimers`: queued jobs that reclaimed room in an earlier round; their
// room (where they fit now) is held for them, before any other job, and
// ScheduleWithTree starts them there first.
// `reclaiming`: victims of an earlier reclaim are still stopping (their
// grace period): nothing more is reclaimed and borrowers are not offered,
// so what the victims free goes to the owners.
// Otherwise, while no reclaimer waits, at most one job reclaims per round:
// the first job the policy would start on the cluster without the
// borrowed preemptible work (`trial`) that it does not start now, and only
// the victims that job needs (youngest first). With no `trial`, the policy
// is taken to start the jobs that fit in submission order, skipping the
// others. A job for which nothing can be reclaimed (its room is held by
// guaranteed work or by its own subtree's borrowers) is passed over for
// the next in the policy's order, then in submission order.
TreePlan PlanTreeRound(
    const QueueTree& tree, const std::vector<TreePending>& pending,
    const std::vector<TreeJob>& running, const ClusterState& state,
    const std::function<std::optional<Allocation>(const ClusterState&, JobId)>&
        allocate,
    bool reclaiming, const std::set<JobId>& reclaimers = {},
    const TreeTrial& trial = {});

// One pool's policy under the plan: the owners of held room that fits now
// started there (the reclaimed room goes to whom it was reclaimed for),
// then the offered jobs in their guarantee, then (when the first call preempts
// nothing) the borrowers on what is left, with the planned room of the jobs in
// guarantee that did not start held; a second call that would preempt is
// dropped (borrowed work preempts nobody). `queue` is the pool's queued jobs.
Decision ScheduleWithTree(QueuePolicy& policy, const TreePlan& plan,
                          const std::vector<QueuedJob>& queue,
                          std::vector<RunningJob> running,
                          const ClusterState& state, const Allocator& allocate,
                          double now);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_QUEUE_TREE_H_
