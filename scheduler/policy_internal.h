#ifndef TESSERA_SCHEDULER_POLICY_INTERNAL_H_
#define TESSERA_SCHEDULER_POLICY_INTERNAL_H_

// Shared by the queue policies (policy.cc, backfill.cc, fair_share.cc);
// nobody else includes it.
//
// Every policy plans on its own copy of the ClusterState and reserves each
// start there before it considers the next job, so a Decision's starts fit
// together. The allocation a job is started with is always the one the
// allocator returned on its last call for that job (the service's allocator
// remembers a split job's plan from that call).

#include <memory>

#include "scheduler/policy.h"

namespace tessera::scheduler::policy_internal {

// A queued job waits at most about this long under fair-share before it goes
// to the front and holds back every job behind it: ten minutes is long
// against the seconds a scheduling round takes and short against a training
// run, so fairness decides almost always and the bound rarely binds.
inline constexpr double kFairShareMaxWaitS = 600;

// backfill and fair-share skip past jobs that do not fit; each skip costs
// an allocator call (about 20 us with best-fit, 0.4 ms with fgd on the
// openb cluster), so with 10,000 queued jobs on a full cluster a round would
// take seconds. They give up after this many misses per round, as Slurm's
// backfill does (bf_max_job_test); the jobs further back wait for a later
// round. The head's reservation (backfill) and overdue jobs (fair-share)
// are exempt, so the wait bounds still hold.
inline constexpr int kMaxMissesPerRound = 100;

// Whether `job` already holds a reservation in `sim` (started this round,
// or a caller that queued a running job): never started twice.
bool Holds(const ClusterState& sim, JobId job);

// Starts `job` if the allocator places it in `sim`: reserves it there and
// appends it to `decision`. False (nothing changes) otherwise.
bool TryStart(ClusterState& sim, const QueuedJob& job,
              const Allocator& allocate, Decision& decision);

// The GPU milli an allocation takes (whole GPUs count 1000 each).
int64_t MilliOf(const Allocation& a);

std::unique_ptr<QueuePolicy> MakeBackfill();
std::unique_ptr<QueuePolicy> MakeFairShare(const PolicyConfig& config);

}  // namespace tessera::scheduler::policy_internal

#endif  // TESSERA_SCHEDULER_POLICY_INTERNAL_H_
