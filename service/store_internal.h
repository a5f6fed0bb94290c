#ifndef TESSERA_SERVICE_STORE_INTERNAL_H_
#define TESSERA_SERVICE_STORE_INTERNAL_H_

// The durable job store: SQLite in WAL mode, one row per job (the job as
// JSON plus indexed columns). Every write is one transaction, committed
// before the call returns (synchronous=FULL: a committed job survives
// kill -9 and power loss). Thread-safe (one connection behind a mutex).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduler/job.h"
#include "service/service.h"

namespace tessera::service {

class Store {
 public:
  // Opens or creates the database at `path` (":memory:" for tests).
  // kBadInput naming the path when it cannot be opened or is not a tessera
  // database.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Assigns the next id, stores `job` with it and returns it; `event`
  // (its job set to the new id) is stored in the same transaction.
  Result<JobId> Insert(const Job& job, const JobEvent* event = nullptr);
  // Replaces the stored job with the same id (kInternal if there is none),
  // with `event` in the same transaction.
  Status Update(const Job& job, const JobEvent* event = nullptr);
  // An event without a change to a job (a cancel asked of a running job,
  // a node drained).
  Status AddEvent(const JobEvent& event);
  // A record of the service's own beside the jobs (the meta table): what
  // sizing learned (measure/learned_part_internal.h). Get: nullopt when
  // never written.
  Status PutRecord(const std::string& key, const std::string& value);
  Result<std::optional<std::string>> GetRecord(const std::string& key);
  // Job `id`'s events, oldest first.
  Result<std::vector<JobEvent>> Events(JobId id);
  // Several updates in one transaction (a gang start, preemptions).
  Status UpdateAll(const std::vector<Job>& jobs);
  Result<std::optional<Job>> Get(JobId id);
  // Every job, by id; with `active_only` just queued, running and preempted.
  Result<std::vector<Job>> LoadAll(bool active_only = false);
  // The newest `limit` jobs, newest first, of `state`, `user` and `pool`
  // ("" = any): one indexed query, whatever the number of jobs stored.
  Result<std::vector<Job>> List(const std::string& state,
                                const std::string& user,
                                const std::string& pool, int64_t limit);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::service

#endif  // TESSERA_SERVICE_STORE_INTERNAL_H_
