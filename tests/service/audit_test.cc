// The audit trail: every state change of a job is stored with who made it
// (a user and the name of their token, or the scheduler) in the same
// transaction as the change, and an older database gains the table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "service/service.h"
#include "service/store_internal.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

// The service under test (service/).
using service::JobEvent;
using service::Service;
using service::ServiceOptions;
using service::Store;
using service::User;

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Actions(const std::vector<JobEvent>& events) {
  std::vector<std::string> out;
  for (const JobEvent& e : events) out.push_back(e.actor + ": " + e.action);
  return out;
}

TEST(Audit, EveryChangeRecordsWhoMadeIt) {
  testlib::TempDir dir;
  ServiceOptions o;
  o.topology = TwoPools();
  o.db_path = dir.File("q.db");
  o.log_dir = dir.File("logs");
  o.start_thread = false;
  double now = 1000;
  o.clock = [&] { return now; };
  auto launcher = std::make_unique<ScriptedLauncher>();
  ScriptedLauncher* l = launcher.get();
  auto s = Service::Start(std::move(o), std::move(launcher));
  ASSERT_TRUE(s) << s.error().message;
  const User alice{"alice", "ml", false, "laptop"};
  const User root{"root", "", true, ""};
  JobRequest r;
  r.pool = "a";
  r.command = {"true"};
  r.resources = Resources{0, 300, 1024, 0, 0};
  auto job = (*s)->Submit(alice, r);
  ASSERT_TRUE(job);
  (*s)->Tick();
  ASSERT_TRUE((*s)->Cancel(job->id, "cancelled by root", &root));
  (*s)->Tick();
  auto events = (*s)->Events(job->id);
  ASSERT_TRUE(events);
  EXPECT_THAT(Actions(*events),
              ElementsAre("alice: submitted", "scheduler: starting",
                          "scheduler: running", "root: cancel requested",
                          "scheduler: cancelled"));
  EXPECT_EQ((*events)[0].token, "laptop");
  EXPECT_EQ((*events)[0].at, 1000);
  EXPECT_THAT((*events)[1].detail, HasSubstr("node0"));
  EXPECT_EQ((*events)[3].detail, "cancelled by root");
  // A queued job cancelled at once, and a drained node.
  ASSERT_TRUE((*s)->SetDrained("node0", true, &root).ok());
  auto queued = (*s)->Submit(alice, r);
  ASSERT_TRUE(queued);
  ASSERT_TRUE((*s)->Cancel(queued->id, "no longer needed", &alice));
  EXPECT_THAT(Actions(*(*s)->Events(queued->id)),
              ElementsAre("alice: submitted", "alice: cancelled"));
  EXPECT_TRUE((*s)->Events(9999)->empty());
  EXPECT_EQ(l->StartCount(), 1u);
}

// A database written before the audit trail (schema version 1) opens, and
// gains the events table.
TEST(Audit, AVersionOneDatabaseGainsTheTable) {
  testlib::TempDir dir;
  const std::string path = dir.File("old.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* v1 =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT "
        "NOT NULL, pool TEXT NOT NULL, state TEXT NOT NULL, record TEXT NOT "
        "NULL);"
        "INSERT INTO meta VALUES('schema_version', '1');";
    ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store) << store.error().message;
  JobEvent e;
  e.job = 7;
  e.actor = "root";
  e.action = "drained";
  ASSERT_TRUE((*store)->AddEvent(e).ok());
  auto events = (*store)->Events(7);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].action, "drained");
}

}  // namespace
}  // namespace tessera::scheduler
