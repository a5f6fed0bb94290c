// The job store on PostgreSQL (store_internal.h): the same rows as the
// SQLite store's (a job as its record JSON plus the columns the service
// filters on, its events, the meta records), through libpq.
//
// Durability: every write is one transaction (BEGIN ... COMMIT) that has
// committed before the call returns; with synchronous_commit on (the
// server's default, which the store does not change) the commit is in the
// server's write-ahead log on disk when COMMIT returns. A transaction cut
// off by a lost connection was never committed: the server rolls it back.
//
// Connections: one, behind a mutex. When it is lost (the server restarted,
// the network cut), the call fails kUnavailable (the service answers 503
// and keeps what it has in memory) and the next call connects again.
//
// Schema: created by the first replica to connect, under a transaction-
// level advisory lock so that replicas starting together do not race;
// versioned in meta.schema_version like SQLite's.

#include <libpq-fe.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "service/store_internal.h"
#include "service/wire/job_json.h"

namespace tessera::service {
namespace {

using scheduler::JobStateName;

inline constexpr int kSchemaVersion = 3;
// The advisory lock the schema is created under ("tsra").
inline constexpr const char* kSchemaLock =
    "SELECT pg_advisory_xact_lock(1953723233)";
// A connection attempt gives up after this long.
inline constexpr const char* kConnectTimeoutS = "5";

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
  id BIGSERIAL PRIMARY KEY,
  "user" TEXT NOT NULL,
  pool TEXT NOT NULL,
  state TEXT NOT NULL,
  record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs("user", state);
CREATE TABLE IF NOT EXISTS events(
  seq BIGSERIAL PRIMARY KEY,
  job BIGINT NOT NULL,
  at DOUBLE PRECISION NOT NULL,
  actor TEXT NOT NULL,
  token TEXT NOT NULL,
  action TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_job ON events(job, seq);
CREATE TABLE IF NOT EXISTS idempotency(
  "user" TEXT NOT NULL,
  key TEXT NOT NULL,
  job BIGINT NOT NULL,
  PRIMARY KEY("user", key));
CREATE TABLE IF NOT EXISTS lease(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  holder TEXT NOT NULL,
  address TEXT NOT NULL,
  epoch BIGINT NOT NULL,
  since DOUBLE PRECISION NOT NULL,
  expires DOUBLE PRECISION NOT NULL);
INSERT INTO lease VALUES(1, '', '', 0, 0, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS inbox(
  seq BIGSERIAL PRIMARY KEY,
  kind TEXT NOT NULL,
  job BIGINT NOT NULL,
  actor TEXT NOT NULL,
  token TEXT NOT NULL,
  detail TEXT NOT NULL);
)sql";

// The database's clock, in Unix seconds: the lease is timed by it alone.
inline constexpr const char* kDbNow =
    "extract(epoch FROM clock_timestamp())::float8";

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

Status StatusOf(const Result<ResultPtr>& r) {
  if (r) return {};
  return r.error();
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// Whether an error's SQLSTATE says "try again": the connection failed or
// the server is stopping or starting (classes 08 and 57P: a crash, an
// administrator's stop, "the database system is starting up"), it lacks
// resources (class 53), or the transaction lost a race it may win next
// time (40001 serialization failure, 40P01 deadlock). The connection may
// still look open when the server's FATAL message arrived before it closed.
bool Transient(const char* sqlstate) {
  if (sqlstate == nullptr) return false;
  const std::string code = sqlstate;
  return code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0 ||
         code.rfind("53", 0) == 0 || code == "40001" || code == "40P01";
}

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The password file's first line; kBadInput naming the file otherwise.
Result<std::string> ReadPassword(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return BadInput("store.postgres.password_file: cannot read '" + path + "'");
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) {
    return BadInput("store.postgres.password_file: '" + path +
                    "' has an empty first line");
  }
  return line;
}

std::string Redacted(const std::string& url) {
  // postgresql://user:secret@host/db -> postgresql://user:***@host/db
  const size_t scheme = url.find("://");
  const size_t at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(StoreOptions options)
      : options_(std::move(options)), where_(Redacted(options_.postgres_url)) {}
  ~PostgresStore() override {
    if (conn_ != nullptr) PQfinish(conn_);
  }

  // Connects and creates or checks the schema.
  Status Connect() {
    if (!options_.postgres_password_file.empty()) {
      Result<std::string> p = ReadPassword(options_.postgres_password_file);
      TESSERA_RETURN_IF_ERROR(p);
      password_ = *p;
    }
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return Transaction([&]() -> Status {
      TESSERA_RETURN_IF_ERROR(Exec(kSchemaLock, {}, "cannot lock the schema"));
      TESSERA_RETURN_IF_ERROR(Exec(kSchema, {}, "cannot create the schema"));
      auto version = Exec("SELECT value FROM meta WHERE key = 'schema_version'",
                          {}, "cannot read the schema version");
      TESSERA_RETURN_IF_ERROR(version);
      if (PQntuples(version->get()) == 0) {
        return StatusOf(
            Exec("INSERT INTO meta(key, value) VALUES('schema_version', $1)",
                 {std::to_string(kSchemaVersion)},
                 "cannot write the schema version"));
      }
      const std::string found = PQgetvalue(version->get(), 0, 0);
      if (found == "2") {  // before the lease: the schema above added it
        return StatusOf(
            Exec("UPDATE meta SET value = $1 WHERE key = 'schema_version'",
                 {std::to_string(kSchemaVersion)},
                 "cannot write the schema version"));
      }
      if (found != std::to_string(kSchemaVersion)) {
        return BadInput(where_ + ": job database schema version " + found +
                        ", this tessera reads version " +
                        std::to_string(kSchemaVersion));
      }
      return {};
    });
  }

  Result<Inserted> InsertJob(const Job& job, const JobEvent* event,
                             const InsertOptions& options) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    Inserted out;
    // A follower's submission (for the leader's inbox) is not the leader's
    // write: no fence.
    auto transaction = [&](auto body) {
      return options.tell_leader ? Transaction(body) : FencedTransaction(body);
    };
    Status s = transaction([&]() -> Status {
      const std::string& key = options.idempotency_key;
      if (!key.empty()) {
        // Two replicas taking the same retried submission at once: the
        // second waits on the first's key, then finds it.
        TESSERA_RETURN_IF_ERROR(
            Exec("SELECT pg_advisory_xact_lock(hashtext($1 || '/' || $2))",
                 {job.user, key}, "cannot lock the idempotency key"));
        auto r =
            Exec("SELECT job FROM idempotency WHERE \"user\" = $1 AND key = $2",
                 {job.user, key}, "cannot read the idempotency key");
        TESSERA_RETURN_IF_ERROR(r);
        if (PQntuples(r->get()) > 0) {
          out = {std::stoll(PQgetvalue(r->get(), 0, 0)), true};
          return {};
        }
      }
      auto r = Exec(
          "INSERT INTO jobs(\"user\", pool, state, record) "
          "VALUES($1, $2, $3, '') RETURNING id",
          {job.user, job.request.pool, std::string(JobStateName(job.state))},
          "cannot insert");
      TESSERA_RETURN_IF_ERROR(r);
      out.id = std::stoll(PQgetvalue(r->get(), 0, 0));
      const std::string id = std::to_string(out.id);
      // The record holds its own id: written once the id is known.
      Job stored = job;
      stored.id = out.id;
      TESSERA_RETURN_IF_ERROR(Exec("UPDATE jobs SET record = $1 WHERE id = $2",
                                   {JobRecordJson(stored).dump(), id},
                                   "cannot insert"));
      if (!key.empty()) {
        TESSERA_RETURN_IF_ERROR(
            Exec("INSERT INTO idempotency(\"user\", key, job) "
                 "VALUES($1, $2, $3)",
                 {job.user, key, id}, "cannot store the idempotency key"));
      }
      if (options.tell_leader) {
        TESSERA_RETURN_IF_ERROR(
            Exec("INSERT INTO inbox(kind, job, actor, token, detail) "
                 "VALUES('submitted', $1, '', '', '')",
                 {id}, "cannot tell the leader"));
      }
      if (event == nullptr) return {};
      JobEvent e = *event;
      e.job = out.id;
      return WriteEvent(e);
    });
    if (!s) return s.error();
    return out;
  }

  Status Update(const Job& job, const JobEvent* event) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return FencedTransaction([&]() -> Status {
      TESSERA_RETURN_IF_ERROR(Write(job));
      return event ? WriteEvent(*event) : Status{};
    });
  }

  Status AddEvent(const JobEvent& event) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return FencedTransaction([&] { return WriteEvent(event); });
  }

  Status PutRecord(const std::string& key, const std::string& value) override {
    if (key == "schema_version")
      return Internal("meta: schema_version is kept");
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return FencedTransaction([&] {
      return StatusOf(
          Exec("INSERT INTO meta(key, value) VALUES($1, $2) ON CONFLICT (key) "
               "DO UPDATE SET value = EXCLUDED.value",
               {key, value}, "cannot write the record '" + key + "'"));
    });
  }

  Result<std::optional<std::string>> GetRecord(
      const std::string& key) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    auto r = Exec("SELECT value FROM meta WHERE key = $1", {key},
                  "cannot read the record '" + key + "'");
    TESSERA_RETURN_IF_ERROR(r);
    if (PQntuples(r->get()) == 0) return std::optional<std::string>();
    return std::optional<std::string>(PQgetvalue(r->get(), 0, 0));
  }

  Result<std::vector<JobEvent>> Events(JobId id) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    auto r = Exec(
        "SELECT job, at, actor, token, action, detail FROM events "
        "WHERE job = $1 ORDER BY seq",
        {std::to_string(id)}, "cannot read events");
    TESSERA_RETURN_IF_ERROR(r);
    std::vector<JobEvent> out;
    for (int i = 0; i < PQntuples(r->get()); ++i) {
      JobEvent e;
      e.job = std::stoll(PQgetvalue(r->get(), i, 0));
      e.at = std::stod(PQgetvalue(r->get(), i, 1));
      e.actor = PQgetvalue(r->get(), i, 2);
      e.token = PQgetvalue(r->get(), i, 3);
      e.action = PQgetvalue(r->get(), i, 4);
      e.detail = PQgetvalue(r->get(), i, 5);
      out.push_back(std::move(e));
    }
    return out;
  }

  Status UpdateAll(const std::vector<Job>& jobs) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return FencedTransaction([&]() -> Status {
      for (const Job& job : jobs) TESSERA_RETURN_IF_ERROR(Write(job));
      return {};
    });
  }

  Result<std::optional<Job>> Get(JobId id) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    auto jobs = ReadJobs("SELECT id, record FROM jobs WHERE id = $1",
                         {std::to_string(id)});
    TESSERA_RETURN_IF_ERROR(jobs);
    if (jobs->empty()) return std::optional<Job>();
    return std::optional<Job>(std::move(jobs->front()));
  }

  Result<std::vector<Job>> LoadAll(bool active_only) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    if (!active_only)
      return ReadJobs("SELECT id, record FROM jobs ORDER BY id", {});
    return ReadJobs(
        "SELECT id, record FROM jobs WHERE state IN ($1, $2, $3, $4) "
        "ORDER BY id",
        {std::string(JobStateName(JobState::kQueued)),
         std::string(JobStateName(JobState::kRunning)),
         std::string(JobStateName(JobState::kPreempted)),
         std::string(JobStateName(JobState::kStarting))});
  }

  Result<std::vector<Job>> List(const std::string& state,
                                const std::string& user,
                                const std::string& pool,
                                int64_t limit) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return ReadJobs(
        "SELECT id, record FROM jobs WHERE ($1 = '' OR state = $1) AND "
        "($2 = '' OR \"user\" = $2) AND ($3 = '' OR pool = $3) "
        "ORDER BY id DESC LIMIT $4",
        {state, user, pool, std::to_string(limit)});
  }

  Result<Lease> AcquireLease(const std::string& replica,
                             const std::string& address,
                             double lease_s) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    // Taken when lapsed or free, renewed when held: the row as it is after
    // comes back.
    const std::string sql =
        std::string("WITH now AS (SELECT ") + kDbNow +
        " AS t) UPDATE lease SET "
        "epoch = CASE WHEN holder = $1 THEN epoch ELSE epoch + 1 END, "
        "since = CASE WHEN holder = $1 THEN since ELSE now.t END, "
        "holder = $1, address = $2, expires = now.t + $3 FROM now "
        "WHERE id = 1 AND (holder = $1 OR expires <= now.t) "
        "RETURNING holder, address, epoch, since, expires - now.t";
    auto r = Exec(sql.c_str(), {replica, address, Number(lease_s)},
                  "cannot take the lease");
    TESSERA_RETURN_IF_ERROR(r);
    if (PQntuples(r->get()) > 0) return LeaseOf(r->get());
    // Another holds it: read by a statement of its own. A statement sees
    // the rows as of its start, and an UPDATE that waited on a replica
    // taking the lease at that moment started before that one committed:
    // in the same statement the row would be the one before, naming the
    // old holder (who would then believe it still leads).
    return ReadLeaseLocked();
  }

  Result<Lease> ReadLease() override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return ReadLeaseLocked();
  }

  Status ReleaseLease(const std::string& replica) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    const std::string sql = std::string("UPDATE lease SET expires = ") +
                            kDbNow + " WHERE id = 1 AND holder = $1";
    return StatusOf(Exec(sql.c_str(), {replica}, "cannot release the lease"));
  }

  void SetFence(int64_t epoch) override {
    std::lock_guard lock(mu_);
    fence_ = epoch;
  }

  Status Tell(const InboxItem& item, const JobEvent* event) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return Transaction([&]() -> Status {
      TESSERA_RETURN_IF_ERROR(
          Exec("INSERT INTO inbox(kind, job, actor, token, detail) "
               "VALUES($1, $2, $3, $4, $5)",
               {item.kind == InboxItem::Kind::kCancel ? "cancel" : "submitted",
                std::to_string(item.job), item.actor, item.token, item.detail},
               "cannot tell the leader"));
      return event ? WriteEvent(*event) : Status{};
    });
  }

  Result<std::vector<InboxItem>> ReadInbox(int64_t limit) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    auto r = Exec(
        "SELECT seq, kind, job, actor, token, detail FROM inbox "
        "ORDER BY seq LIMIT $1",
        {std::to_string(limit)}, "cannot read the inbox");
    TESSERA_RETURN_IF_ERROR(r);
    std::vector<InboxItem> out;
    for (int i = 0; i < PQntuples(r->get()); ++i) {
      InboxItem item;
      item.seq = std::stoll(PQgetvalue(r->get(), i, 0));
      item.kind = std::string(PQgetvalue(r->get(), i, 1)) == "cancel"
                      ? InboxItem::Kind::kCancel
                      : InboxItem::Kind::kSubmitted;
      item.job = std::stoll(PQgetvalue(r->get(), i, 2));
      item.actor = PQgetvalue(r->get(), i, 3);
      item.token = PQgetvalue(r->get(), i, 4);
      item.detail = PQgetvalue(r->get(), i, 5);
      out.push_back(std::move(item));
    }
    return out;
  }

  Status ClearInbox(int64_t seq) override {
    std::lock_guard lock(mu_);
    TESSERA_RETURN_IF_ERROR(ConnectLocked());
    return FencedTransaction([&] {
      return StatusOf(Exec("DELETE FROM inbox WHERE seq <= $1",
                           {std::to_string(seq)}, "cannot clear the inbox"));
    });
  }

 private:
  // The lease row now (mu_ held).
  Result<Lease> ReadLeaseLocked() {
    const std::string sql =
        std::string("SELECT holder, address, epoch, since, expires - ") +
        kDbNow + " FROM lease WHERE id = 1";
    auto r = Exec(sql.c_str(), {}, "cannot read the lease");
    TESSERA_RETURN_IF_ERROR(r);
    return LeaseOf(r->get());
  }

  static Lease LeaseOf(PGresult* r) {
    Lease l;
    if (PQntuples(r) == 0) return l;
    l.holder = PQgetvalue(r, 0, 0);
    l.address = PQgetvalue(r, 0, 1);
    l.epoch = std::stoll(PQgetvalue(r, 0, 2));
    l.since = std::stod(PQgetvalue(r, 0, 3));
    l.remaining_s = std::stod(PQgetvalue(r, 0, 4));
    return l;
  }

  // A write transaction that first checks, under a share lock on the
  // lease row (so that no replica can take the lease until it commits),
  // that the lease's epoch is still the fence: a leader that lost its
  // lease writes nothing.
  template <typename Body>
  Status FencedTransaction(Body body) {
    return Transaction([&]() -> Status {
      if (fence_ == 0) return body();
      auto r = Exec("SELECT epoch, holder FROM lease WHERE id = 1 FOR SHARE",
                    {}, "cannot check the lease");
      TESSERA_RETURN_IF_ERROR(r);
      const int64_t epoch =
          PQntuples(r->get()) ? std::stoll(PQgetvalue(r->get(), 0, 0)) : 0;
      if (fence_ < 0) {
        return Unavailable(where_ +
                           ": this replica follows: only the leader writes "
                           "(a follower's submissions and cancels go to the "
                           "inbox)");
      }
      if (epoch != fence_) {
        return Unavailable(
            where_ + ": fenced: replica '" +
            std::string(PQntuples(r->get()) ? PQgetvalue(r->get(), 0, 1) : "") +
            "' leads now (lease epoch " + std::to_string(epoch) +
            "); this replica led at epoch " + std::to_string(fence_) +
            ", so it writes nothing");
      }
      return body();
    });
  }

  // A query's result, or the error: kUnavailable when the connection was
  // lost (the next call connects again), kInternal otherwise.
  Result<ResultPtr> Exec(const char* sql,
                         const std::vector<std::string>& params,
                         const std::string& what) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const std::string& p : params) values.push_back(p.c_str());
    ResultPtr r(params.empty()
                    ? PQexec(conn_, sql)
                    : PQexecParams(conn_, sql, static_cast<int>(params.size()),
                                   nullptr, values.data(), nullptr, nullptr, 0),
                &PQclear);
    const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    const std::string why =
        Trimmed(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
    if (PQstatus(conn_) != CONNECTION_OK) {
      return Unavailable(where_ + ": " + what + ": the connection was lost (" +
                         why + ")");
    }
    if (r && Transient(PQresultErrorField(r.get(), PG_DIAG_SQLSTATE))) {
      return Unavailable(where_ + ": " + what + ": " + why);
    }
    return Internal(where_ + ": " + what + ": " + why);
  }

  Status ConnectLocked() {
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) return {};
    if (conn_ != nullptr) PQfinish(conn_);
    std::vector<const char*> keys = {"dbname", "connect_timeout",
                                     "application_name"};
    std::vector<const char*> values = {options_.postgres_url.c_str(),
                                       kConnectTimeoutS, "tessera"};
    if (!password_.empty()) {
      keys.push_back("password");
      values.push_back(password_.c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      const std::string why =
          conn_ ? Trimmed(PQerrorMessage(conn_)) : "out of memory";
      return Unavailable(where_ + ": cannot connect to PostgreSQL: " + why);
    }
    // The server's notices ("relation already exists, skipping") are not
    // the operator's business; errors come back with each call.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    return {};
  }

  template <typename Body>
  Status Transaction(Body body) {
    TESSERA_RETURN_IF_ERROR(Exec("BEGIN", {}, "cannot begin a transaction"));
    Status s = body();
    if (s) s = StatusOf(Exec("COMMIT", {}, "cannot commit"));
    if (!s && PQstatus(conn_) == CONNECTION_OK) {
      (void)Exec("ROLLBACK", {}, "cannot roll back");
    }
    return s;
  }

  Status Write(const Job& job) {
    auto r = Exec(
        "UPDATE jobs SET \"user\" = $1, pool = $2, state = $3, record = $4 "
        "WHERE id = $5",
        {job.user, job.request.pool, std::string(JobStateName(job.state)),
         JobRecordJson(job).dump(), std::to_string(job.id)},
        "cannot update job " + std::to_string(job.id));
    TESSERA_RETURN_IF_ERROR(r);
    if (std::string(PQcmdTuples(r->get())) != "1") {
      return Internal(where_ + ": job " + std::to_string(job.id) +
                      " is not in the store");
    }
    return {};
  }

  Status WriteEvent(const JobEvent& e) {
    return StatusOf(
        Exec("INSERT INTO events(job, at, actor, token, action, detail) "
             "VALUES($1, $2, $3, $4, $5, $6)",
             {std::to_string(e.job), Number(e.at), e.actor, e.token, e.action,
              e.detail},
             "cannot add an event"));
  }

  Result<std::vector<Job>> ReadJobs(const char* sql,
                                    const std::vector<std::string>& params) {
    auto r = Exec(sql, params, "cannot read jobs");
    TESSERA_RETURN_IF_ERROR(r);
    std::vector<Job> jobs;
    for (int i = 0; i < PQntuples(r->get()); ++i) {
      auto job = JobFromRow(where_, std::stoll(PQgetvalue(r->get(), i, 0)),
                            PQgetvalue(r->get(), i, 1));
      TESSERA_RETURN_IF_ERROR(job);
      jobs.push_back(std::move(*job));
    }
    return jobs;
  }

  const StoreOptions options_;
  const std::string where_;  // the URL without its password, for errors
  std::string password_;
  std::mutex mu_;  // guards conn_ and fence_
  PGconn* conn_ = nullptr;
  int64_t fence_ = 0;  // SetFence
};

}  // namespace

Result<std::unique_ptr<Store>> Store::OpenPostgres(const StoreOptions& o) {
  auto store = std::make_unique<PostgresStore>(o);
  TESSERA_RETURN_IF_ERROR(store->Connect());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tessera::service
