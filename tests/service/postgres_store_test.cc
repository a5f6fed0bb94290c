// The PostgreSQL job store against a real server the test starts
// (tests/testlib/postgres_server.h): what SQLite has no counterpart for.
// A lost connection fails the call kUnavailable and the next call connects
// again; a crash of the server loses no committed job; replicas opening a
// fresh database together create its schema once; a wrong password, an
// unreadable password file and another schema version are refused by
// name, and no error shows the password. And the service itself on
// PostgreSQL: a submission survives a restart of the service.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "service/service.h"
#include "service/store_internal.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

using service::Service;
using service::ServiceOptions;
using service::Store;
using service::StoreOptions;
using service::User;

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Job Queued(const std::string& user) {
  Job job;
  job.user = user;
  job.request.pool = "a";
  job.request.command = {"true"};
  job.request.resources = Resources{0, 250, 1024, 0, 0};
  job.demand = *job.request.resources;
  return job;
}

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pg_.error(), "");
    ASSERT_TRUE(pg_.CreateDatabase("jobs")) << pg_.error();
  }
  StoreOptions Options() const {
    StoreOptions o;
    o.postgres_url = pg_.Url("jobs");
    o.postgres_password_file = pg_.password_file();
    return o;
  }
  std::unique_ptr<Store> Open() {
    auto s = Store::OpenPostgres(Options());
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }

  testlib::PostgresServer pg_;
  testlib::TempDir dir_;
};

TEST_F(PostgresStoreTest, ALostConnectionIsUnavailableThenComesBack) {
  auto store = Open();
  ASSERT_TRUE(store);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Insert(Queued("alice")));
  ASSERT_TRUE(pg_.Stop());
  auto down = store->Insert(Queued("alice"));
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(down.error().message, HasSubstr("127.0.0.1"));
  EXPECT_EQ(store->LoadAll().error().code, ErrorCode::kUnavailable);
  ASSERT_TRUE(pg_.Restart()) << pg_.error();
  auto up = store->Insert(Queued("alice"));
  ASSERT_TRUE(up) << up.error().message;
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 4u);  // the one refused was never stored
}

// An administrator ending the store's session (pg_terminate_backend:
// SQLSTATE 57P01, as a server shutting down sends) is kUnavailable, a
// retry's answer (HTTP 503), never kInternal (500); the next call connects
// again.
TEST_F(PostgresStoreTest, ATerminatedSessionIsUnavailableThenComesBack) {
  auto store = Open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->Insert(Queued("alice")));
  ASSERT_TRUE(
      pg_.Psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
               "application_name = 'tessera'",
               "jobs"))
      << pg_.error();
  auto cut = store->Insert(Queued("alice"));
  if (!cut) {
    EXPECT_EQ(cut.error().code, ErrorCode::kUnavailable) << cut.error().message;
  }
  auto again = store->Insert(Queued("alice"));
  ASSERT_TRUE(again) << again.error().message;
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), cut ? 3u : 2u);
}

TEST_F(PostgresStoreTest, AServerCrashLosesNoCommittedJob) {
  std::vector<JobId> ids;
  {
    auto store = Open();
    ASSERT_TRUE(store);
    for (int i = 0; i < 20; ++i) {
      auto id = store->Insert(Queued("u" + std::to_string(i)));
      ASSERT_TRUE(id);
      ids.push_back(*id);
    }
    ASSERT_TRUE(pg_.Stop(/*immediate=*/true));  // no checkpoint
  }
  ASSERT_TRUE(pg_.Restart()) << pg_.error();
  auto store = Open();
  ASSERT_TRUE(store);
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ((*all)[i].id, ids[i]);
}

TEST_F(PostgresStoreTest, ReplicasOpeningTogetherCreateTheSchemaOnce) {
  constexpr int kReplicas = 6;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kReplicas);
  std::vector<std::unique_ptr<Store>> stores(kReplicas);
  for (int i = 0; i < kReplicas; ++i) {
    threads.emplace_back([&, i] {
      auto s = Store::OpenPostgres(Options());
      if (s) {
        stores[i] = std::move(s).value();
      } else {
        errors[i] = s.error().message;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kReplicas; ++i) {
    ASSERT_EQ(errors[i], "") << "replica " << i;
  }
  // One database: what one writes, another reads.
  auto id = stores[0]->Insert(Queued("alice"));
  ASSERT_TRUE(id);
  auto got = stores[kReplicas - 1]->Get(*id);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->user, "alice");
}

TEST_F(PostgresStoreTest, BadCredentialsAndOtherSchemasAreRefusedByName) {
  StoreOptions o = Options();
  o.postgres_password_file = dir_.Write("wrong", "not-the-password\n");
  auto s = Store::OpenPostgres(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(s.error().message, HasSubstr("password authentication failed"));
  EXPECT_THAT(s.error().message, Not(HasSubstr("not-the-password")));

  o.postgres_password_file = dir_.File("missing");
  s = Store::OpenPostgres(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(s.error().message,
              HasSubstr("store.postgres.password_file: cannot read '" +
                        dir_.File("missing") + "'"));

  // A password in the URL is not repeated in errors.
  o = Options();
  o.postgres_password_file.clear();
  o.postgres_url =
      "postgresql://tessera:hunter2@127.0.0.1:" + std::to_string(pg_.port()) +
      "/nosuchdb";
  s = Store::OpenPostgres(o);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("tessera:***@127.0.0.1"));
  EXPECT_THAT(s.error().message, Not(HasSubstr("hunter2")));

  ASSERT_TRUE(Open());
  ASSERT_TRUE(pg_.Psql(
      "UPDATE meta SET value = '0' WHERE key = 'schema_version'", "jobs"));
  s = Store::OpenPostgres(Options());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(s.error().message, HasSubstr("job database schema version 0"));
}

TEST_F(PostgresStoreTest, TheServiceKeepsItsJobsInPostgres) {
  const User alice{"alice", "", false, ""};
  auto make = [&] {
    ServiceOptions o;
    o.topology = TwoPools();
    o.db_path = dir_.File("unused.db");
    o.store = Options();
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    auto s = Service::Start(std::move(o), std::make_unique<ScriptedLauncher>());
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  };
  JobId id = 0;
  {
    auto s = make();
    ASSERT_TRUE(s);
    auto job = s->Submit(alice, Fraction(250, 1024));
    ASSERT_TRUE(job) << job.error().message;
    id = job->id;
  }
  EXPECT_FALSE(std::ifstream(dir_.File("unused.db")).good());
  auto s = make();
  ASSERT_TRUE(s);
  auto job = s->Get(id);
  ASSERT_TRUE(job && *job);
  EXPECT_EQ((*job)->user, "alice");
  s->Tick();
  EXPECT_EQ(s->Get(id)->value().state, JobState::kRunning);
  auto events = s->Events(id);
  ASSERT_TRUE(events);
  EXPECT_EQ(events->front().action, "submitted");
}

}  // namespace
}  // namespace tessera::scheduler
