#ifndef TESSERA_SERVICE_STORE_INTERNAL_H_
#define TESSERA_SERVICE_STORE_INTERNAL_H_

// The durable job store: one row per job (the job as JSON plus indexed
// columns), its events, and the service's own records.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduler/job.h"
#include "service/service.h"

namespace tessera::service {

// The durable job store, an interface over two databases:
// - SQLite in WAL mode (Open): every write is one transaction, committed
//   before the call returns (synchronous=FULL: a committed job survives
//   kill -9 and power loss). One connection behind a mutex.
// - PostgreSQL (OpenPostgres, service/store/postgres_store.cc): the same
//   rows and the same transactions; a commit is durable when it returns
//   (synchronous_commit on). One connection behind a mutex, opened again
//   when it was lost: meanwhile every call fails kUnavailable.
// Thread-safe; the same behaviour and tests for both (tests/service/
// store_test.cc).
// A stored row back as a job: `record` is its record JSON (job_json.h);
// the row's `id` is the truth. Errors name `where` (the database) and the
// job.
Result<Job> JobFromRow(const std::string& where, int64_t id,
                       const std::string& record);

// What Store::InsertJob does beside storing the job.
struct InsertOptions {
  // A retried submission's key (the HTTP Idempotency-Key header): when the
  // same user stored a job with the same key before, nothing is inserted
  // and that job's id comes back (Inserted::existed).
  std::string idempotency_key;
  // A follower's submission (docs/operations.md, "High availability"): a
  // note in the inbox, in the same transaction, for the leader's next
  // round.
  bool tell_leader = false;
};
struct Inserted {
  JobId id = 0;
  bool existed = false;  // an earlier submission with the same key
};

// Who leads the replicas that share a PostgreSQL store: one row, taken by
// one replica at a time, renewed while it lives (docs/operations.md, "High
// availability"). Times are the database's clock, so that replicas on
// machines whose clocks disagree still agree on who leads.
struct Lease {
  std::string holder;      // the replica's name; "" = nobody ever took it
  std::string address;     // where it answers (its advertised URL)
  int64_t epoch = 0;       // +1 at every change of holder: the fencing token
  double since = 0;        // when the holder took it (Unix seconds)
  double remaining_s = 0;  // until it lapses unless renewed (<= 0: lapsed)
};

// A request a follower stored for the leader (Store::Tell).
struct InboxItem {
  enum class Kind { kSubmitted, kCancel };
  int64_t seq = 0;  // the inbox's order (set by the store)
  Kind kind = Kind::kSubmitted;
  JobId job = 0;
  std::string actor, token;  // who asked (a cancel's user)
  std::string detail;        // a cancel's reason
};

class Store {
 public:
  // Opens or creates the SQLite database at `path` (":memory:" for tests).
  // kBadInput naming the path when it cannot be opened or is not a tessera
  // database.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  // Connects to PostgreSQL and creates or checks the schema (one replica
  // at a time: an advisory lock). kUnavailable when the server cannot be
  // reached, kBadInput for a database of another schema version or an
  // unreadable password file.
  static Result<std::unique_ptr<Store>> OpenPostgres(const StoreOptions& o);
  // `o`'s database, or SQLite at `sqlite_path`.
  static Result<std::unique_ptr<Store>> Open(const StoreOptions& o,
                                             const std::string& sqlite_path);
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Assigns the next id, stores `job` with it and returns it; `event`
  // (its job set to the new id) is stored in the same transaction.
  Result<JobId> Insert(const Job& job, const JobEvent* event = nullptr);
  // The same, with an idempotency key and the leader told (`options`).
  virtual Result<Inserted> InsertJob(const Job& job, const JobEvent* event,
                                     const InsertOptions& options) = 0;
  // Replaces the stored job with the same id (kInternal if there is none),
  // with `event` in the same transaction.
  virtual Status Update(const Job& job, const JobEvent* event = nullptr) = 0;
  // An event without a change to a job (a cancel asked of a running job,
  // a node drained).
  virtual Status AddEvent(const JobEvent& event) = 0;
  // A record of the service's own beside the jobs (the meta table): what
  // sizing learned (measure/learned_part_internal.h). Get: nullopt when
  // never written.
  virtual Status PutRecord(const std::string& key,
                           const std::string& value) = 0;
  virtual Result<std::optional<std::string>> GetRecord(
      const std::string& key) = 0;
  // Job `id`'s events, oldest first.
  virtual Result<std::vector<JobEvent>> Events(JobId id) = 0;
  // Several updates in one transaction (a gang start, preemptions).
  virtual Status UpdateAll(const std::vector<Job>& jobs) = 0;
  virtual Result<std::optional<Job>> Get(JobId id) = 0;
  // Every job, by id; with `active_only` just queued, running and
  // preempted.
  virtual Result<std::vector<Job>> LoadAll(bool active_only = false) = 0;
  // The newest `limit` jobs, newest first, of `state`, `user` and `pool`
  // ("" = any): one indexed query, whatever the number of jobs stored.
  virtual Result<std::vector<Job>> List(const std::string& state,
                                        const std::string& user,
                                        const std::string& pool,
                                        int64_t limit) = 0;

  // Replicas (PostgreSQL only; SQLite's store answers kInternal: one
  // machine has no replicas).
  // Takes the lease for `replica` (answering at `address`) when nobody
  // holds it or it has lapsed (the epoch goes up by one), renews it for
  // `lease_s` seconds when `replica` holds it (the epoch stays); returns
  // the lease as it is after, whoever holds it.
  virtual Result<Lease> AcquireLease(const std::string& replica,
                                     const std::string& address,
                                     double lease_s) = 0;
  // The lease now, without changing it.
  virtual Result<Lease> ReadLease() = 0;
  // `replica` lets go at once (a clean stop): the next replica need not
  // wait for the lease to lapse. Nothing if another holds it.
  virtual Status ReleaseLease(const std::string& replica) = 0;
  // From now on every write of this store is refused, kUnavailable naming
  // the replica that leads, unless the lease's epoch is still `epoch`
  // (0: no check, one service alone; -1: every write but a follower's
  // submissions and Tell, a follower's store). The check and the write are one
  // transaction, so a write can never land after another replica took
  // the lease.
  virtual void SetFence(int64_t epoch) = 0;
  // A follower's request for the leader, with `event` in the same
  // transaction.
  virtual Status Tell(const InboxItem& item, const JobEvent* event) = 0;
  // The oldest `limit` requests not yet cleared, oldest first.
  virtual Result<std::vector<InboxItem>> ReadInbox(int64_t limit) = 0;
  // The leader acted on the requests up to `seq`: they go.
  virtual Status ClearInbox(int64_t seq) = 0;

 protected:
  Store() = default;
};

}  // namespace tessera::service

#endif  // TESSERA_SERVICE_STORE_INTERNAL_H_
