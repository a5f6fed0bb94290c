// Idempotency keys of submissions (Store::InsertJob's InsertOptions), on
// SQLite and on PostgreSQL (a real server the test starts: tests/testlib/
// postgres_server.h): the same user's retry with a key is the first job,
// another user's key of the same text is another; retries racing from
// threads on two stores of one database are one job. An older SQLite
// database (schema version 1 or 2, written by hand) opens as version 3 and
// takes keys; SQLite refuses what only replicas do (the lease, the inbox).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "service/store_internal.h"
#include "service/wire/job_json.h"
#include "tests/service/store_test_jobs.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::scheduler {

// The store under test (service/).
using service::InboxItem;
using service::InsertOptions;
using service::JobEvent;
using service::Store;
using service::StoreOptions;

namespace {

using testlib::QueuedJob;
using testlib::SubmittedEvent;
using testlib::Together;

using ::testing::HasSubstr;

class IdempotencyTest : public testlib::EachStoreTest {};

INSTANTIATE_TEST_SUITE_P(Databases, IdempotencyTest,
                         ::testing::Values("sqlite", "postgres"),
                         [](const auto& p) { return p.param; });

TEST_P(IdempotencyTest, TheSameUsersRetryIsOneJob) {
  auto store = Open();
  ASSERT_TRUE(store);
  const JobEvent submitted = SubmittedEvent("alice");
  auto first = store->InsertJob(QueuedJob("alice"), &submitted,
                                InsertOptions{"k1", false});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->existed);
  Job other = QueuedJob("alice");
  other.request.name = "changed";  // a retry is the first job, whatever
  auto retry = store->InsertJob(other, &submitted, InsertOptions{"k1", false});
  ASSERT_TRUE(retry) << retry.error().message;
  EXPECT_TRUE(retry->existed);
  EXPECT_EQ(retry->id, first->id);
  EXPECT_EQ(store->LoadAll()->size(), 1u);
  EXPECT_EQ(store->Get(first->id)->value().request.name, "alice-job");
  EXPECT_EQ(store->Events(first->id)->size(), 1u);  // one "submitted"
  // The key outlives the connection.
  store.reset();
  store = Open();
  ASSERT_TRUE(store);
  auto later =
      store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{"k1", false});
  ASSERT_TRUE(later);
  EXPECT_TRUE(later->existed);
  EXPECT_EQ(later->id, first->id);
}

TEST_P(IdempotencyTest, KeysAreEachUsersOwn) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto alice =
      store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{"k1", false});
  auto bob =
      store->InsertJob(QueuedJob("bob"), nullptr, InsertOptions{"k1", false});
  auto alice2 =
      store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{"k2", false});
  ASSERT_TRUE(alice && bob && alice2);
  EXPECT_FALSE(bob->existed);
  EXPECT_NE(bob->id, alice->id);
  EXPECT_EQ(store->Get(bob->id)->value().user, "bob");
  EXPECT_FALSE(alice2->existed);
  EXPECT_NE(alice2->id, alice->id);
  // No key: every submission is a job.
  auto plain1 = store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{});
  auto plain2 = store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{});
  ASSERT_TRUE(plain1 && plain2);
  EXPECT_FALSE(plain2->existed);
  EXPECT_NE(plain1->id, plain2->id);
  EXPECT_EQ(store->LoadAll()->size(), 5u);
}

// Retries racing each other, from threads on two stores of the one
// database (two replicas): one job per key, the same id for every racer,
// exactly one of them stored it.
TEST_P(IdempotencyTest, ConcurrentRetriesOfOneKeyAreOneJob) {
  std::vector<std::unique_ptr<Store>> stores;
  stores.push_back(Open());
  stores.push_back(Open());
  ASSERT_TRUE(stores[0] && stores[1]);
  constexpr int kThreads = 6, kKeys = 8;
  std::vector<std::vector<service::Inserted>> got(
      kThreads, std::vector<service::Inserted>(kKeys));
  std::vector<std::string> errors(kThreads);
  Together(kThreads, [&](int t) {
    for (int k = 0; k < kKeys; ++k) {
      const JobEvent e = SubmittedEvent("alice");
      auto r = stores[t % 2]->InsertJob(
          QueuedJob("alice"), &e,
          InsertOptions{"key-" + std::to_string(k), false});
      if (!r) {
        errors[t] = r.error().message;
        return;
      }
      got[t][k] = *r;
    }
  });
  for (int t = 0; t < kThreads; ++t) ASSERT_EQ(errors[t], "") << "thread " << t;
  std::set<JobId> ids;
  for (int k = 0; k < kKeys; ++k) {
    int stored = 0;
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(got[t][k].id, got[0][k].id) << "key " << k << " thread " << t;
      stored += got[t][k].existed ? 0 : 1;
    }
    EXPECT_EQ(stored, 1) << "key " << k;
    ids.insert(got[0][k].id);
  }
  EXPECT_EQ(ids.size(), size_t{kKeys});
  auto all = stores[1]->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), size_t{kKeys});
  for (const JobId id : ids) EXPECT_EQ(stores[0]->Events(id)->size(), 1u);
}

// SQLite has no replicas: no lease to take, no leader to tell.
TEST(SqliteReplicas, AreRefusedByName) {
  testlib::TempDir dir;
  auto s = Store::Open(dir.File("jobs.db"));
  ASSERT_TRUE(s);
  Store& store = **s;
  auto lease = store.AcquireLease("r1", "http://r1", 10);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kInternal);
  EXPECT_THAT(lease.error().message, HasSubstr("postgres"));
  EXPECT_FALSE(
      store.Tell({0, InboxItem::Kind::kCancel, 1, "a", "", ""}, nullptr));
  EXPECT_FALSE(store.InsertJob(QueuedJob("alice"), nullptr,
                               InsertOptions{"", /*tell_leader=*/true}));
  EXPECT_TRUE(store.LoadAll()->empty());
}

// An older tessera's SQLite database, written by hand with the sqlite3 C
// API: version 1 (jobs) or 2 (jobs and events), one job in it.
void WriteOldDatabase(const std::string& path, int version) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string sql = R"sql(
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
  if (version >= 2) {
    sql += R"sql(
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job INTEGER NOT NULL,
  at REAL NOT NULL,
  actor TEXT NOT NULL,
  token TEXT NOT NULL,
  action TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX events_by_job ON events(job, seq);
INSERT INTO events(job, at, actor, token, action, detail)
  VALUES(1, 1000, 'alice', '', 'submitted', 'pool a');
)sql";
  }
  sql += "INSERT INTO meta(key, value) VALUES('schema_version', '" +
         std::to_string(version) + "');";
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "");
  Job job = QueuedJob("alice");
  job.id = 1;
  sqlite3_stmt* insert = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO jobs(id, user, pool, state, "
                               "record) VALUES(1, 'alice', 'a', 'queued', ?)",
                               -1, &insert, nullptr),
            SQLITE_OK);
  const std::string record = service::JobRecordJson(job).dump();
  sqlite3_bind_text(insert, 1, record.c_str(), -1, SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(insert), SQLITE_DONE);
  sqlite3_finalize(insert);
  sqlite3_close(db);
}

class SqliteUpgradeTest : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(Versions, SqliteUpgradeTest, ::testing::Values(1, 2),
                         [](const auto& p) {
                           return "version" + std::to_string(p.param);
                         });

TEST_P(SqliteUpgradeTest, AnOlderDatabaseBecomesVersionThreeAndTakesKeys) {
  testlib::TempDir dir;
  const std::string path = dir.File("old.db");
  WriteOldDatabase(path, GetParam());
  if (HasFatalFailure()) return;
  auto opened = Store::Open(path);
  ASSERT_TRUE(opened) << opened.error().message;
  std::unique_ptr<Store> store = std::move(opened).value();
  EXPECT_EQ(store->GetRecord("schema_version")->value(), "3");
  // What it held is still there.
  auto old = store->Get(1);
  ASSERT_TRUE(old && *old) << (old ? "missing" : old.error().message);
  EXPECT_EQ((*old)->user, "alice");
  EXPECT_EQ(store->Events(1)->size(), GetParam() >= 2 ? 1u : 0u);
  // Keys work, and new ids follow the old ones.
  auto first =
      store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{"k", false});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->id, 2);
  EXPECT_FALSE(first->existed);
  auto retry =
      store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{"k", false});
  ASSERT_TRUE(retry);
  EXPECT_TRUE(retry->existed);
  EXPECT_EQ(retry->id, 2);
  ASSERT_TRUE(store->AddEvent({2, 1001, "alice", "", "noted", ""}));
  // Opened again: version 3 as it is, the key kept.
  store.reset();
  opened = Store::Open(path);
  ASSERT_TRUE(opened) << opened.error().message;
  store = std::move(opened).value();
  EXPECT_EQ(store->GetRecord("schema_version")->value(), "3");
  auto later =
      store->InsertJob(QueuedJob("alice"), nullptr, InsertOptions{"k", false});
  ASSERT_TRUE(later);
  EXPECT_TRUE(later->existed);
  EXPECT_EQ(later->id, 2);
  EXPECT_EQ(store->LoadAll()->size(), 2u);
}

}  // namespace
}  // namespace tessera::scheduler
