// Store: jobs go in with increasing ids, come back whole with their events,
// survive closing and reopening the database, on SQLite and on PostgreSQL;
// a file that is not a tessera database is refused by name.
#include "service/store_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <set>
#include <thread>

#include "service/wire/job_json.h"
#include "tests/service/store_test_jobs.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::Store;

namespace {

using ::testing::HasSubstr;

Job MakeJob(const std::string& user, JobState state, int milli = 250) {
  Job job;
  job.user = user;
  job.state = state;
  job.request.name = user + "-job";
  job.request.pool = "a";
  job.request.command = {"python", "train.py"};
  job.request.env = {{"FOO", "bar"}};
  job.request.resources = Resources{0, milli, 4096, 1000, 2048};
  job.demand = *job.request.resources;
  job.submitted_at = 1000.5;
  return job;
}

std::unique_ptr<Store> OpenOrDie(const std::string& path) {
  auto s = Store::Open(path);
  EXPECT_TRUE(s) << s.error().message;
  return s ? std::move(s).value() : nullptr;
}

// The tests every store passes, on SQLite (a file) and on PostgreSQL (a
// real server the test starts: tests/testlib/postgres_server.h).
class StoreTest : public testlib::EachStoreTest {};

INSTANTIATE_TEST_SUITE_P(Databases, StoreTest,
                         ::testing::Values("sqlite", "postgres"),
                         [](const auto& p) { return p.param; });

TEST_P(StoreTest, EventsAndRecordsAreKept) {
  auto store = Open();
  ASSERT_TRUE(store);
  service::JobEvent submitted{0,        1000.25,     "alice",
                              "laptop", "submitted", "pool a"};
  auto id = store->Insert(MakeJob("alice", JobState::kQueued), &submitted);
  ASSERT_TRUE(id);
  Job job = store->Get(*id)->value();
  job.state = JobState::kCancelled;
  const service::JobEvent cancelled{*id, 1001.5,      "bob",
                                    "",  "cancelled", "it's 'quoted' \"text\""};
  ASSERT_TRUE(store->Update(job, &cancelled));
  ASSERT_TRUE(store->AddEvent({0, 1002, "root", "", "drained", "node0"}));
  auto events = store->Events(*id);
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].job, *id);
  EXPECT_EQ((*events)[0].at, 1000.25);
  EXPECT_EQ((*events)[0].token, "laptop");
  EXPECT_EQ((*events)[1].detail, cancelled.detail);
  EXPECT_EQ(store->Events(0)->size(), 1u);
  // The service's own records.
  EXPECT_FALSE(store->GetRecord("learned")->has_value());
  ASSERT_TRUE(store->PutRecord("learned", "{\"a\": 1}"));
  ASSERT_TRUE(store->PutRecord("learned", "{\"a\": 2}"));
  EXPECT_EQ(store->GetRecord("learned")->value(), "{\"a\": 2}");
  EXPECT_FALSE(store->PutRecord("schema_version", "9"));
  store.reset();
  store = Open();
  EXPECT_EQ(store->GetRecord("learned")->value(), "{\"a\": 2}");
  EXPECT_EQ(store->List("cancelled", "alice", "a", 10)->size(), 1u);
  EXPECT_EQ(store->List("", "bob", "", 10)->size(), 0u);
}

TEST_P(StoreTest, InsertAssignsIncreasingIdsAndGetReturnsTheJob) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto a = store->Insert(MakeJob("alice", JobState::kQueued));
  auto b = store->Insert(MakeJob("bob", JobState::kQueued));
  ASSERT_TRUE(a && b);
  EXPECT_GT(*a, 0);
  EXPECT_GT(*b, *a);

  auto got = store->Get(*b);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(*got);
  EXPECT_EQ((*got)->id, *b);  // the record holds its id
  EXPECT_EQ((*got)->user, "bob");
  EXPECT_EQ((*got)->request.command,
            (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ((*got)->request.env.at("FOO"), "bar");
  EXPECT_EQ((*got)->demand, (Resources{0, 250, 4096, 1000, 2048}));
  EXPECT_EQ((*got)->submitted_at, 1000.5);

  auto missing = store->Get(*b + 100);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
}

TEST_P(StoreTest, UpdateReplacesTheJob) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto id = store->Insert(MakeJob("alice", JobState::kQueued));
  ASSERT_TRUE(id);
  Job job = store->Get(*id)->value();  // NOLINT: checked by Insert
  job.state = JobState::kRunning;
  job.allocation.node = 0;
  job.allocation.gpus = {{1, 250, 4096}};
  job.pid = 4321;
  job.pid_start = 99;
  job.plan = {{"parts", 2}};
  ASSERT_TRUE(store->Update(job));
  auto got = store->Get(*id);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->state, JobState::kRunning);
  EXPECT_EQ((*got)->allocation.gpus, job.allocation.gpus);
  EXPECT_EQ((*got)->pid, 4321);
  EXPECT_EQ((*got)->pid_start, 99);
  EXPECT_EQ((*got)->plan, job.plan);
}

TEST_P(StoreTest, UpdateOfAnUnknownJobFailsAndChangesNothing) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto id = store->Insert(MakeJob("alice", JobState::kQueued));
  ASSERT_TRUE(id);
  Job ghost = MakeJob("alice", JobState::kRunning);
  ghost.id = *id + 1;
  Status s = store->Update(ghost);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kInternal);
  EXPECT_THAT(s.error().message, HasSubstr("not in the store"));

  // UpdateAll is one transaction: the known job is not changed either.
  Job known = store->Get(*id)->value();
  known.state = JobState::kRunning;
  ASSERT_FALSE(store->UpdateAll({known, ghost}));
  EXPECT_EQ(store->Get(*id)->value().state, JobState::kQueued);
  ASSERT_TRUE(store->UpdateAll({known}));
  EXPECT_EQ(store->Get(*id)->value().state, JobState::kRunning);
}

TEST_P(StoreTest, LoadsAllOrTheActiveJobsInIdOrder) {
  auto store = Open();
  ASSERT_TRUE(store);
  const JobState states[] = {JobState::kQueued,    JobState::kRunning,
                             JobState::kSucceeded, JobState::kFailed,
                             JobState::kCancelled, JobState::kPreempted};
  for (JobState s : states) {
    ASSERT_TRUE(store->Insert(MakeJob("alice", s)));
  }
  auto all = store->LoadAll();
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 6u);
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].state, states[i]);
    if (i > 0) {
      EXPECT_GT((*all)[i].id, (*all)[i - 1].id);
    }
  }
  auto active = store->LoadAll(/*active_only=*/true);
  ASSERT_TRUE(active);
  ASSERT_EQ(active->size(), 3u);
  EXPECT_EQ((*active)[0].state, JobState::kQueued);
  EXPECT_EQ((*active)[1].state, JobState::kRunning);
  EXPECT_EQ((*active)[2].state, JobState::kPreempted);
}

TEST_P(StoreTest, ReopenedFileHasEverythingAndIdsKeepIncreasing) {
  JobId last = 0;
  {
    auto store = Open();
    ASSERT_TRUE(store);
    for (int i = 0; i < 5; ++i) {
      auto id = store->Insert(MakeJob("alice", JobState::kQueued, 100 + i));
      ASSERT_TRUE(id);
      last = *id;
    }
    Job j = store->Get(last)->value();
    j.state = JobState::kSucceeded;
    j.exit_code = 0;
    ASSERT_TRUE(store->Update(j));
  }
  auto store = Open();
  ASSERT_TRUE(store);
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ((*all)[i].request.resources->gpu_milli, 100 + i);
  }
  EXPECT_EQ(all->back().state, JobState::kSucceeded);
  EXPECT_EQ(all->back().exit_code, 0);
  EXPECT_EQ(store->LoadAll(true)->size(), 4u);
  auto next = store->Insert(MakeJob("alice", JobState::kQueued));
  ASSERT_TRUE(next);
  EXPECT_GT(*next, last);
}

TEST_P(StoreTest, ConcurrentInsertsGetDistinctIds) {
  auto store = Open();
  ASSERT_TRUE(store);
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::vector<JobId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto id =
            store->Insert(MakeJob("u" + std::to_string(t), JobState::kQueued));
        if (id) ids[t].push_back(*id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<JobId> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(ids[t].size(), size_t{kEach});
    EXPECT_TRUE(std::is_sorted(ids[t].begin(), ids[t].end()));
    all.insert(ids[t].begin(), ids[t].end());
    EXPECT_EQ(store->List("", "u" + std::to_string(t), "", 1000)->size(),
              size_t{kEach});
  }
  EXPECT_EQ(all.size(), size_t{kThreads * kEach});
  EXPECT_EQ(store->LoadAll()->size(), size_t{kThreads * kEach});
}

TEST(Store, RefusesAFileThatIsNotSqlite) {
  testlib::TempDir dir;
  const std::string path =
      dir.Write("notes.db", std::string(4096, 'x') + "not a database\n");
  auto s = Store::Open(path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(s.error().message, HasSubstr(path));
  EXPECT_THAT(s.error().message, HasSubstr("not a tessera job database"));
}

TEST(Store, RefusesAnotherSqliteDatabaseOrSchemaVersion) {
  testlib::TempDir dir;
  const std::string other = dir.File("other.db");
  const std::string older = dir.File("older.db");
  ASSERT_TRUE(OpenOrDie(older));
  for (const auto& [path, sql] :
       {std::pair{other, "CREATE TABLE t(x)"},
        std::pair{
            older,
            "UPDATE meta SET value = '0' WHERE key = 'schema_version'"}}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = Store::Open(other);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(s.error().message, HasSubstr(other + ": an SQLite database, "
                                                   "but not a tessera"));
  s = Store::Open(older);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(s.error().message, HasSubstr(older + ": job database schema "
                                                   "version 0"));
}

TEST(Store, FileIsInWalModeWithTheJobsTable) {
  testlib::TempDir dir;
  const std::string path = dir.File("jobs.db");
  auto store = OpenOrDie(path);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->Insert(MakeJob("alice", JobState::kQueued)));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string mode;
  int64_t rows = -1;
  sqlite3_exec(
      db, "PRAGMA journal_mode",
      [](void* out, int, char** v, char**) {
        *static_cast<std::string*>(out) = v[0];
        return 0;
      },
      &mode, nullptr);
  sqlite3_exec(
      db, "SELECT COUNT(*) FROM jobs WHERE user = 'alice' AND state = 'queued'",
      [](void* out, int, char** v, char**) {
        *static_cast<int64_t*>(out) = std::stoll(v[0]);
        return 0;
      },
      &rows, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(mode, "wal");
  EXPECT_EQ(rows, 1);
}

}  // namespace
}  // namespace tessera::scheduler
