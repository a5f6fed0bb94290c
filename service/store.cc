// The job store on SQLite: one row per job, the job as its record JSON
// (job_json.h) plus the columns the service filters on.
//
// Durability: the database runs in WAL mode with synchronous=FULL, and
// every write is one BEGIN IMMEDIATE ... COMMIT transaction that has
// committed before the call returns. At COMMIT SQLite appends the
// transaction to the write-ahead log and fsyncs it, so a committed job
// survives kill -9 of the service (the WAL is already in the file system)
// and power loss or a kernel crash (it is on the disk). A transaction that
// had not committed is rolled back whole on the next open: a gang start or
// a batch of preemptions (UpdateAll) is all or nothing. The price is one
// fsync per submission; WAL keeps it to one sequential append, and readers
// never block the writer. (synchronous=NORMAL would survive kill -9 but
// could lose the last transactions on power loss: not what a 201 promises.)

#include "service/store_internal.h"

#include <sqlite3.h>

#include <mutex>
#include <string>
#include <utility>

#include "service/wire/job_json.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::JobStateName;

namespace {

// Bump when the schema changes; a database of another version is refused
// rather than guessed at.
inline constexpr int kSchemaVersion = 3;

// How long a write waits for another connection's lock (e.g. the sqlite3
// shell reading the file) before it fails.
inline constexpr int kBusyTimeoutMs = 5000;

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE jobs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user TEXT NOT NULL,
  pool TEXT NOT NULL,
  state TEXT NOT NULL,
  record TEXT NOT NULL);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX jobs_by_user ON jobs(user, state);
)sql";

// Version 2: the audit trail. A version-1 database gains it on open.
constexpr const char* kEventsSchema = R"sql(
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job INTEGER NOT NULL,
  at REAL NOT NULL,
  actor TEXT NOT NULL,
  token TEXT NOT NULL,
  action TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX events_by_job ON events(job, seq);
)sql";

// Version 3: idempotency keys of submissions. Earlier databases gain the
// table on open.
constexpr const char* kIdempotencySchema = R"sql(
CREATE TABLE idempotency(
  user TEXT NOT NULL,
  key TEXT NOT NULL,
  job INTEGER NOT NULL,
  PRIMARY KEY(user, key));
)sql";

// A prepared statement, finalized with its owner.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  int Prepare(sqlite3* db, const std::string& sql) {
    return sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                              &stmt_, nullptr);
  }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a statement and clears its bindings when a use ends, whatever the
// outcome, so that the next use starts clean.
class Use {
 public:
  explicit Use(const Statement& s) : stmt_(s.get()) {}
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  ~Use() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  sqlite3_stmt* operator*() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

void BindText(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()),
                    SQLITE_TRANSIENT);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p, sqlite3_column_bytes(s, i)) : std::string();
}

std::string Quoted(JobState s) {
  return "'" + std::string(JobStateName(s)) + "'";
}

}  // namespace

class SqliteStore final : public Store {
 public:
  struct Impl;
  explicit SqliteStore(std::unique_ptr<Impl> impl);
  ~SqliteStore() override;

  Result<Inserted> InsertJob(const Job& job, const JobEvent* event,
                             const InsertOptions& options) override;
  Status Update(const Job& job, const JobEvent* event) override;
  Status AddEvent(const JobEvent& event) override;
  Status PutRecord(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>> GetRecord(const std::string& key) override;
  Result<std::vector<JobEvent>> Events(JobId id) override;
  Status UpdateAll(const std::vector<Job>& jobs) override;
  Result<std::optional<Job>> Get(JobId id) override;
  Result<std::vector<Job>> LoadAll(bool active_only) override;
  Result<std::vector<Job>> List(const std::string& state,
                                const std::string& user,
                                const std::string& pool,
                                int64_t limit) override;
  Result<Lease> AcquireLease(const std::string& replica,
                             const std::string& address,
                             double lease_s) override;
  Result<Lease> ReadLease() override;
  Status ReleaseLease(const std::string& replica) override;
  void SetFence(int64_t epoch) override;
  Status Tell(const InboxItem& item, const JobEvent* event) override;
  Result<std::vector<InboxItem>> ReadInbox(int64_t limit) override;
  Status ClearInbox(int64_t seq) override;

 private:
  std::unique_ptr<Impl> impl_;
};

struct SqliteStore::Impl {
  std::string path;
  std::mutex mu;          // guards db and every statement below
  sqlite3* db = nullptr;  // one connection, used under mu
  Statement begin, commit, rollback, insert, set_record, update, get, all,
      active, list, add_event, events, idem_get, idem_put;

  // close_v2 defers the close until the statements (members, destroyed
  // after this body) are finalized.
  ~Impl() { sqlite3_close_v2(db); }

  Error SqlError(const std::string& what) const {
    return Internal(path + ": " + what + ": " + sqlite3_errmsg(db));
  }

  Status Exec(const char* sql, const std::string& what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      return SqlError(what);
    }
    return {};
  }

  // Runs a statement that returns no rows.
  Status Step(const Statement& s, const std::string& what) {
    Use u(s);
    if (sqlite3_step(*u) != SQLITE_DONE) return SqlError(what);
    return {};
  }

  Status Prepare(Statement& s, const std::string& sql) {
    if (s.Prepare(db, sql) != SQLITE_OK) {
      return SqlError("cannot prepare '" + sql + "'");
    }
    return {};
  }

  Status PrepareAll() {
    const std::string active_states =
        Quoted(JobState::kQueued) + "," + Quoted(JobState::kRunning) + "," +
        Quoted(JobState::kPreempted) + "," + Quoted(JobState::kStarting);
    const std::pair<Statement*, std::string> all_sql[] = {
        {&begin, "BEGIN IMMEDIATE"},
        {&commit, "COMMIT"},
        {&rollback, "ROLLBACK"},
        {&insert,
         "INSERT INTO jobs(user, pool, state, record) VALUES(?, ?, ?, '')"},
        {&set_record, "UPDATE jobs SET record = ? WHERE id = ?"},
        {&update,
         "UPDATE jobs SET user = ?, pool = ?, state = ?, record = ? "
         "WHERE id = ?"},
        {&get, "SELECT id, record FROM jobs WHERE id = ?"},
        {&all, "SELECT id, record FROM jobs ORDER BY id"},
        {&active, "SELECT id, record FROM jobs WHERE state IN (" +
                      active_states + ") ORDER BY id"},
        {&list,
         "SELECT id, record FROM jobs WHERE (?1 = '' OR state = ?1) AND "
         "(?2 = '' OR user = ?2) AND (?3 = '' OR pool = ?3) "
         "ORDER BY id DESC LIMIT ?4"},
        {&add_event,
         "INSERT INTO events(job, at, actor, token, action, detail) "
         "VALUES(?, ?, ?, ?, ?, ?)"},
        {&events,
         "SELECT job, at, actor, token, action, detail FROM events "
         "WHERE job = ? ORDER BY seq"},
        {&idem_get, "SELECT job FROM idempotency WHERE user = ? AND key = ?"},
        {&idem_put, "INSERT INTO idempotency(user, key, job) VALUES(?, ?, ?)"},
    };
    for (const auto& [stmt, sql] : all_sql) {
      TESSERA_RETURN_IF_ERROR(Prepare(*stmt, sql));
    }
    return {};
  }

  // Creates the schema in a fresh database, or checks that an existing one
  // is ours and of this version.
  Status CheckSchema() {
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) !=
        SQLITE_OK) {
      return BadInput(path + ": not a tessera job database (" +
                      sqlite3_errmsg(db) + ")");
    }
    Status s = CheckSchemaInTransaction();
    sqlite3_exec(db, s ? "COMMIT" : "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }

  Status CheckSchemaInTransaction() {
    Statement tables;
    TESSERA_RETURN_IF_ERROR(
        Prepare(tables,
                "SELECT COUNT(*), SUM(name = 'meta') FROM sqlite_master "
                "WHERE type = 'table'"));
    Use t(tables);
    if (sqlite3_step(*t) != SQLITE_ROW) {
      return BadInput(path + ": not a tessera job database (" +
                      sqlite3_errmsg(db) + ")");
    }
    const int64_t n = sqlite3_column_int64(*t, 0);
    const int64_t has_meta = sqlite3_column_int64(*t, 1);
    if (n == 0) {
      TESSERA_RETURN_IF_ERROR(Exec(kSchema, "cannot create the schema"));
      TESSERA_RETURN_IF_ERROR(
          Exec(kEventsSchema, "cannot create the events table"));
      TESSERA_RETURN_IF_ERROR(
          Exec(kIdempotencySchema, "cannot create the idempotency table"));
      const std::string version =
          "INSERT INTO meta(key, value) VALUES('schema_version', '" +
          std::to_string(kSchemaVersion) + "')";
      return Exec(version.c_str(), "cannot write the schema version");
    }
    if (has_meta == 0) {
      return BadInput(path +
                      ": an SQLite database, but not a tessera job database "
                      "(no meta table)");
    }
    Statement version;
    TESSERA_RETURN_IF_ERROR(Prepare(
        version, "SELECT value FROM meta WHERE key = 'schema_version'"));
    Use v(version);
    const std::string found =
        sqlite3_step(*v) == SQLITE_ROW ? ColumnText(*v, 0) : "none";
    sqlite3_reset(*v);
    if (found == "1" || found == "2") {  // an older tessera's: upgrade
      if (found == "1") {                // before the audit trail
        TESSERA_RETURN_IF_ERROR(
            Exec(kEventsSchema, "cannot add the events table"));
      }
      TESSERA_RETURN_IF_ERROR(
          Exec(kIdempotencySchema, "cannot add the idempotency table"));
      return Exec("UPDATE meta SET value = '3' WHERE key = 'schema_version'",
                  "cannot write the schema version");
    }
    if (found != std::to_string(kSchemaVersion)) {
      return BadInput(path + ": job database schema version " + found +
                      ", this tessera reads version " +
                      std::to_string(kSchemaVersion));
    }
    return {};
  }

  // Runs `body` in one write transaction; rolls back if it fails.
  template <typename Body>
  Status Transaction(Body body) {
    TESSERA_RETURN_IF_ERROR(Step(begin, "cannot begin a transaction"));
    Status s = body();
    if (s) s = Step(commit, "cannot commit");
    if (!s) (void)Step(rollback, "cannot roll back");
    return s;
  }

  Status Write(const Job& job) {
    Use u(update);
    BindText(*u, 1, job.user);
    BindText(*u, 2, job.request.pool);
    BindText(*u, 3, std::string(JobStateName(job.state)));
    BindText(*u, 4, JobRecordJson(job).dump());
    sqlite3_bind_int64(*u, 5, job.id);
    if (sqlite3_step(*u) != SQLITE_DONE) {
      return SqlError("cannot update job " + std::to_string(job.id));
    }
    if (sqlite3_changes(db) != 1) {
      return Internal(path + ": job " + std::to_string(job.id) +
                      " is not in the store");
    }
    return {};
  }

  Status WriteEvent(const JobEvent& e) {
    Use u(add_event);
    sqlite3_bind_int64(*u, 1, e.job);
    sqlite3_bind_double(*u, 2, e.at);
    BindText(*u, 3, e.actor);
    BindText(*u, 4, e.token);
    BindText(*u, 5, e.action);
    BindText(*u, 6, e.detail);
    if (sqlite3_step(*u) != SQLITE_DONE) return SqlError("cannot add an event");
    return {};
  }

  Result<Job> ReadRow(sqlite3_stmt* s) const {
    return JobFromRow(path, sqlite3_column_int64(s, 0), ColumnText(s, 1));
  }

  Result<std::vector<Job>> ReadAll(const Statement& stmt) {
    Use u(stmt);
    std::vector<Job> jobs;
    int rc;
    while ((rc = sqlite3_step(*u)) == SQLITE_ROW) {
      auto job = ReadRow(*u);
      if (!job) return job.error();
      jobs.push_back(std::move(*job));
    }
    if (rc != SQLITE_DONE) return SqlError("cannot read jobs");
    return jobs;
  }
};

Result<Job> JobFromRow(const std::string& where, int64_t id,
                       const std::string& record) {
  const nlohmann::json j = nlohmann::json::parse(record, nullptr, false);
  if (j.is_discarded()) {
    return Internal(where + ": job " + std::to_string(id) +
                    ": record is not JSON");
  }
  auto job = ParseJobRecord(j);
  if (!job) {
    return job.error().WithContext(where + ": job " + std::to_string(id));
  }
  job->id = id;  // the row's id is the truth
  return job;
}

Result<JobId> Store::Insert(const Job& job, const JobEvent* event) {
  auto r = InsertJob(job, event, InsertOptions{});
  if (!r) return r.error();
  return r->id;
}

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteStore::~SqliteStore() = default;

Result<std::unique_ptr<Store>> Store::Open(const StoreOptions& o,
                                           const std::string& sqlite_path) {
  return o.postgres_url.empty() ? Open(sqlite_path) : OpenPostgres(o);
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  auto impl = std::make_unique<SqliteStore::Impl>();
  impl->path = path;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                    SQLITE_OPEN_NOMUTEX;  // Impl::mu serializes
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr) != SQLITE_OK) {
    return BadInput(path + ": cannot open the job database: " +
                    (impl->db ? sqlite3_errmsg(impl->db) : "out of memory"));
  }
  sqlite3_busy_timeout(impl->db, kBusyTimeoutMs);
  // journal_mode is the first statement to read the file: a file that is
  // not SQLite fails here.
  if (sqlite3_exec(impl->db, "PRAGMA journal_mode=WAL", nullptr, nullptr,
                   nullptr) != SQLITE_OK) {
    return BadInput(path + ": not a tessera job database (" +
                    sqlite3_errmsg(impl->db) + ")");
  }
  TESSERA_RETURN_IF_ERROR(
      impl->Exec("PRAGMA synchronous=FULL", "cannot set synchronous=FULL"));
  TESSERA_RETURN_IF_ERROR(impl->CheckSchema());
  TESSERA_RETURN_IF_ERROR(impl->PrepareAll());
  return std::unique_ptr<Store>(new SqliteStore(std::move(impl)));
}

Result<Inserted> SqliteStore::InsertJob(const Job& job, const JobEvent* event,
                                        const InsertOptions& options) {
  if (options.tell_leader) {
    return Internal(impl_->path + ": one machine has no leader to tell");
  }
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  JobId id = 0;
  bool existed = false;
  Status s = m.Transaction([&]() -> Status {
    if (!options.idempotency_key.empty()) {
      Use u(m.idem_get);
      BindText(*u, 1, job.user);
      BindText(*u, 2, options.idempotency_key);
      const int rc = sqlite3_step(*u);
      if (rc == SQLITE_ROW) {
        id = sqlite3_column_int64(*u, 0);
        existed = true;
        return {};
      }
      if (rc != SQLITE_DONE) return m.SqlError("cannot read the key");
    }
    {
      Use u(m.insert);
      BindText(*u, 1, job.user);
      BindText(*u, 2, job.request.pool);
      BindText(*u, 3, std::string(JobStateName(job.state)));
      if (sqlite3_step(*u) != SQLITE_DONE) return m.SqlError("cannot insert");
    }
    id = sqlite3_last_insert_rowid(m.db);
    // The record holds its own id: a second statement in the same
    // transaction, once the id is known.
    Job stored = job;
    stored.id = id;
    {
      Use u(m.set_record);
      BindText(*u, 1, JobRecordJson(stored).dump());
      sqlite3_bind_int64(*u, 2, id);
      if (sqlite3_step(*u) != SQLITE_DONE) return m.SqlError("cannot insert");
    }
    if (!options.idempotency_key.empty()) {
      Use u(m.idem_put);
      BindText(*u, 1, job.user);
      BindText(*u, 2, options.idempotency_key);
      sqlite3_bind_int64(*u, 3, id);
      if (sqlite3_step(*u) != SQLITE_DONE) return m.SqlError("cannot insert");
    }
    if (event) {
      JobEvent e = *event;
      e.job = id;
      return m.WriteEvent(e);
    }
    return {};
  });
  if (!s) return s.error();
  return Inserted{id, existed};
}

// One machine has no replicas: no lease, no inbox, nothing to fence.
Result<Lease> SqliteStore::AcquireLease(const std::string&, const std::string&,
                                        double) {
  return Internal(impl_->path + ": replicas need store: postgres");
}
Result<Lease> SqliteStore::ReadLease() { return Lease{}; }
Status SqliteStore::ReleaseLease(const std::string&) { return {}; }
void SqliteStore::SetFence(int64_t) {}
Status SqliteStore::Tell(const InboxItem&, const JobEvent*) {
  return Internal(impl_->path + ": one machine has no leader to tell");
}
Result<std::vector<InboxItem>> SqliteStore::ReadInbox(int64_t) {
  return std::vector<InboxItem>();
}
Status SqliteStore::ClearInbox(int64_t) { return {}; }

Status SqliteStore::Update(const Job& job, const JobEvent* event) {
  std::lock_guard lock(impl_->mu);
  return impl_->Transaction([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(impl_->Write(job));
    return event ? impl_->WriteEvent(*event) : Status{};
  });
}

Status SqliteStore::AddEvent(const JobEvent& event) {
  std::lock_guard lock(impl_->mu);
  return impl_->Transaction([&] { return impl_->WriteEvent(event); });
}

Status SqliteStore::PutRecord(const std::string& key,
                              const std::string& value) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (key == "schema_version") return Internal("meta: schema_version is kept");
  Statement put;
  TESSERA_RETURN_IF_ERROR(
      m.Prepare(put, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)"));
  Use u(put);
  sqlite3_bind_text(*u, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(*u, 2, value.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(*u) != SQLITE_DONE) {
    return m.SqlError("cannot write the record '" + key + "'");
  }
  return {};
}

Result<std::optional<std::string>> SqliteStore::GetRecord(
    const std::string& key) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  Statement get;
  TESSERA_RETURN_IF_ERROR(
      m.Prepare(get, "SELECT value FROM meta WHERE key = ?1"));
  Use u(get);
  sqlite3_bind_text(*u, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(*u);
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  if (rc != SQLITE_ROW) {
    return m.SqlError("cannot read the record '" + key + "'");
  }
  return std::optional<std::string>(ColumnText(*u, 0));
}

Result<std::vector<JobEvent>> SqliteStore::Events(JobId id) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  Use u(m.events);
  sqlite3_bind_int64(*u, 1, id);
  std::vector<JobEvent> out;
  int rc;
  while ((rc = sqlite3_step(*u)) == SQLITE_ROW) {
    JobEvent e;
    e.job = sqlite3_column_int64(*u, 0);
    e.at = sqlite3_column_double(*u, 1);
    e.actor = ColumnText(*u, 2);
    e.token = ColumnText(*u, 3);
    e.action = ColumnText(*u, 4);
    e.detail = ColumnText(*u, 5);
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return m.SqlError("cannot read events");
  return out;
}

Status SqliteStore::UpdateAll(const std::vector<Job>& jobs) {
  std::lock_guard lock(impl_->mu);
  return impl_->Transaction([&]() -> Status {
    for (const Job& job : jobs) TESSERA_RETURN_IF_ERROR(impl_->Write(job));
    return {};
  });
}

Result<std::optional<Job>> SqliteStore::Get(JobId id) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  Use u(m.get);
  sqlite3_bind_int64(*u, 1, id);
  const int rc = sqlite3_step(*u);
  if (rc == SQLITE_DONE) return std::optional<Job>();
  if (rc != SQLITE_ROW)
    return m.SqlError("cannot read job " + std::to_string(id));
  auto job = m.ReadRow(*u);
  if (!job) return job.error();
  return std::optional<Job>(std::move(*job));
}

Result<std::vector<Job>> SqliteStore::LoadAll(bool active_only) {
  std::lock_guard lock(impl_->mu);
  return impl_->ReadAll(active_only ? impl_->active : impl_->all);
}

Result<std::vector<Job>> SqliteStore::List(const std::string& state,
                                           const std::string& user,
                                           const std::string& pool,
                                           int64_t limit) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  {
    // Bound here; ReadAll's own Use resets the statement when done.
    sqlite3_stmt* s = m.list.get();
    BindText(s, 1, state);
    BindText(s, 2, user);
    BindText(s, 3, pool);
    sqlite3_bind_int64(s, 4, limit);
  }
  return m.ReadAll(m.list);
}

}  // namespace tessera::service
