#ifndef TESSERA_SERVICE_QUOTA_BOOK_INTERNAL_H_
#define TESSERA_SERVICE_QUOTA_BOOK_INTERNAL_H_

// The service's quotas per user and per team (service.h, Quota; docs/
// quotas.md) as one part: what each holds, whether a submission or a start
// stays within them, the submission rates' token buckets, and why queued
// jobs wait. The book is a member of Service::Impl guarded by its `mu`; the
// free functions below are pure, and a round calls them on its snapshot
// without the lock. Internal to service/.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "service/job_table_internal.h"
#include "service/service.h"

namespace tessera::service::service_internal {

using scheduler::Allocation;
using scheduler::Topology;

// What a user or team holds (or one job would add).
struct QuotaUse {
  int64_t queued = 0, running = 0, gpu_milli = 0, gpu_memory_mib = 0;
};

// A submission rate's bucket: `tokens` at time `at` (0: never used).
struct TokenBucket {
  double tokens = 0, at = 0;
};

// The quota of `user`: its own entry's fields, the default's for the rest.
Quota UserQuota(const Quotas& quotas, const std::string& user);
// The quota of `team`, or null if it has none.
const Quota* TeamQuota(const Quotas& quotas, const std::string& team);
// One running job holding `a`.
QuotaUse HeldBy(const Allocation& a);
// What a queued job would hold once started (before it is placed):
// scheduler::QueuedAmount, as the queue tree counts it.
QuotaUse EstimateHeld(const Job& job, const Topology& t);
// Why holding `plus` more than `now` breaks `q` ("" if it does not).
std::string OverQuota(const Quota& q, const QuotaUse& now, const QuotaUse& plus,
                      const std::string& who);

// What each user and team holds, as a round counts it against the quotas.
struct Holdings {
  std::map<std::string, QuotaUse> users, teams;
  void Add(const Job& j, const QuotaUse& u);
  // Why `plus` more for `j`'s user or team breaks a quota ("" if not).
  std::string Over(const Quotas& q, const Job& j, const QuotaUse& plus);
};

class QuotaBook {
 public:
  QuotaBook(const Quotas& quotas, int64_t max_queued_per_user)
      : quotas_(quotas), max_queued_per_user_(max_queued_per_user) {}

  // Whether `user` may submit at `now` beside the jobs `queue` holds:
  // rates first (kRateLimited with the wait; every attempt counts,
  // accepted or not), then the queued-job limits (kBadInput).
  Status Admit(const User& user, const std::vector<Job>& queue, double now);
  // What the running and starting jobs of `jobs` hold, by user and team.
  static Holdings Held(const JobTable& jobs);

  // Why queued jobs wait for a quota or the queue tree: the round's plan
  // says, its commit adds the starts it refused.
  void SetWaits(std::map<JobId, std::string> waits) {
    waits_ = std::move(waits);
  }
  void Wait(JobId id, std::string why) { waits_[id] = std::move(why); }
  const std::string* WaitOf(JobId id) const {
    auto it = waits_.find(id);
    return it == waits_.end() ? nullptr : &it->second;
  }
  const std::map<JobId, std::string>& waits() const { return waits_; }

  // Every user's and team's use and quota ("users", "teams"), for
  // GET /v1/cluster.
  nlohmann::json Json(const JobTable& jobs) const;

 private:
  Quotas quotas_;
  int64_t max_queued_per_user_ = 0;
  std::map<std::string, TokenBucket> user_buckets_, team_buckets_;
  std::map<JobId, std::string> waits_;
};

}  // namespace tessera::service::service_internal

#endif  // TESSERA_SERVICE_QUOTA_BOOK_INTERNAL_H_
