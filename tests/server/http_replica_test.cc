// The HTTP layer of replicas (docs/operations.md, "High availability"):
// two Services, replicas of one PostgreSQL database the test starts, each
// behind its own HttpServer on a fixed loopback port that it advertises.
// Every answer says which replica gave it and in what role (a follower's
// how old its view is); a follower sends what only the leader does to the
// leader (307 + Location); /readyz is ready on both, ?role=leader on the
// leader alone; Idempotency-Key makes a retried submission one job on any
// replica. A service without replicas says nothing of them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/auth.h"
#include "server/http_server.h"
#include "tests/server/http_request.h"
#include "tests/server/one_gpu_server.h"
#include "tests/testlib/loopback_socket.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::scheduler {

namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Submission() {
  return json({{"name", "t"},
               {"command", {"true"}},
               {"resources", {{"gpu_milli", 250}, {"gpu_memory_mib", 1024}}}})
      .dump();
}

std::string KeyHeader(const std::string& key) {
  return "Idempotency-Key: " + key + "\r\n";
}

class HttpReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pg_.error(), "");
    ASSERT_TRUE(pg_.CreateDatabase("jobs")) << pg_.error();
    // r1 starts first: it leads.
    for (const std::string name : {"r1", "r2"}) {
      auto served = Start(name);
      ASSERT_TRUE(served) << served.error().message;
      replicas_.push_back(std::move(served).value());
    }
    ASSERT_TRUE(replicas_[0].service->Replica().leader);
    ASSERT_FALSE(replicas_[1].service->Replica().leader);
  }

  Result<Served> Start(const std::string& name) {
    server::ServeConfig config = OneGpuConfig(dir_, "127.0.0.1");
    config.service.db_path = dir_.File(name + "-unused.db");
    config.service.store.postgres_url = pg_.Url("jobs");
    config.service.store.postgres_password_file = pg_.password_file();
    config.listen_port = testlib::FreeLoopbackPort();
    config.service.replica.emplace();
    config.service.replica->name = name;
    config.service.replica->address =
        "http://127.0.0.1:" + std::to_string(config.listen_port);
    config.service.replica->lease_s = 1;
    config.service.replica->lease_renew_s = 0.1;
    config.users.push_back(
        {User{"root", "", true, ""}, server::Sha256Hex("root-token")});
    return StartServed(config);
  }
  int LeaderPort() const { return replicas_[0].server->port(); }
  int FollowerPort() const { return replicas_[1].server->port(); }
  std::string LeaderUrl() const {
    return "http://127.0.0.1:" + std::to_string(LeaderPort());
  }

  testlib::PostgresServer pg_;
  testlib::TempDir dir_;
  std::vector<Served> replicas_;
};

TEST_F(HttpReplicaTest, EveryAnswerNamesTheReplicaAndItsRole) {
  for (const auto& [path, token] :
       std::vector<std::pair<std::string, std::string>>{
           {"/healthz", ""},
           {"/v1/jobs", "alice-token"},
           {"/v1/cluster", "alice-token"},
           {"/v1/jobs", ""},  // a 401 too
           {"/v1/nowhere", "alice-token"}}) {
    SCOPED_TRACE(path + " " + token);
    const Reply lead = Http(LeaderPort(), "GET", path, token);
    ASSERT_NE(lead.status, 0);
    EXPECT_EQ(lead.Header("X-Tessera-Replica"), "r1");
    EXPECT_EQ(lead.Header("X-Tessera-Role"), "leader");
    EXPECT_THAT(lead.headers, Not(HasSubstr("X-Tessera-View-Age")));
    const Reply follow = Http(FollowerPort(), "GET", path, token);
    ASSERT_NE(follow.status, 0);
    EXPECT_EQ(follow.status, lead.status);
    EXPECT_EQ(follow.Header("X-Tessera-Replica"), "r2");
    EXPECT_EQ(follow.Header("X-Tessera-Role"), "follower");
    const std::string age = follow.Header("X-Tessera-View-Age");
    ASSERT_FALSE(age.empty());
    EXPECT_GE(std::stod(age), 0);
    EXPECT_LT(std::stod(age), 5);
  }
  const json health = Http(FollowerPort(), "GET", "/healthz").Json();
  EXPECT_EQ(health["ok"], true);
  EXPECT_EQ(health["replicated"], true);
  EXPECT_EQ(health["role"], "follower");
  EXPECT_EQ(health["name"], "r2");
  EXPECT_EQ(health["leader"]["name"], "r1");
  EXPECT_EQ(health["leader"]["address"], LeaderUrl());
  const json cluster =
      Http(FollowerPort(), "GET", "/v1/cluster", "alice-token").Json();
  EXPECT_EQ(cluster["replica"]["leader"]["name"], "r1");
}

TEST_F(HttpReplicaTest, AFollowerSendsLeaderOnlyRoutesToTheLeader) {
  struct Case {
    std::string method, path, token, body;
    std::string location;  // after the leader's address
  };
  const std::string upload(64, 'a');
  const std::vector<Case> cases = {
      {"POST", "/v1/nodes/node0/drain", "root-token", "",
       "/v1/nodes/node0/drain"},
      {"POST", "/v1/nodes/node0/undrain", "root-token", "",
       "/v1/nodes/node0/undrain"},
      {"POST", "/v1/models", "alice-token", "not a model", "/v1/models"},
      {"GET", "/v1/jobs/7/allocation?after=2&wait_s=1", "alice-token", "",
       "/v1/jobs/7/allocation?after=2&wait_s=1"},
      {"POST", "/v1/jobs", "alice-token",
       json({{"name", "m"},
             {"command", {"true"}},
             {"model", {{"upload", upload}}}})
           .dump(),
       "/v1/jobs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path);
    const Reply r = Http(FollowerPort(), c.method, c.path, c.token, c.body);
    EXPECT_EQ(r.status, 307) << r.body;
    EXPECT_EQ(r.Header("Location"), LeaderUrl() + c.location);
    EXPECT_EQ(r.Header("X-Tessera-Role"), "follower");
    const json body = r.Json();
    EXPECT_EQ(body.value("leader", ""), LeaderUrl());
    EXPECT_THAT(body.value("error", ""), HasSubstr("r1"));
  }
  // The leader serves them: the drain is done there, and every replica
  // sees it.
  const Reply drained =
      Http(LeaderPort(), "POST", "/v1/nodes/node0/drain", "root-token");
  EXPECT_EQ(drained.status, 200) << drained.body;
  EXPECT_EQ(Http(LeaderPort(), "POST", "/v1/nodes/node0/undrain", "root-token")
                .status,
            200);
  // What a follower does itself is not sent anywhere.
  const Reply submitted =
      Http(FollowerPort(), "POST", "/v1/jobs", "alice-token", Submission());
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  EXPECT_EQ(submitted.Header("Location").rfind("/v1/jobs/", 0), 0u);
  const int64_t id = submitted.Json().value("id", int64_t{0});
  const Reply got = Http(FollowerPort(), "GET",
                         "/v1/jobs/" + std::to_string(id), "alice-token");
  EXPECT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Http(FollowerPort(), "POST",
                 "/v1/jobs/" + std::to_string(id) + "/cancel", "alice-token")
                .status,
            200);
}

TEST_F(HttpReplicaTest, BothAreReadyButOnlyTheLeaderAsLeader) {
  const Reply lead = Http(LeaderPort(), "GET", "/readyz");
  EXPECT_EQ(lead.status, 200) << lead.body;
  EXPECT_EQ(lead.Json()["ready"], true);
  EXPECT_EQ(lead.Json()["role"], "leader");
  const Reply follow = Http(FollowerPort(), "GET", "/readyz");
  EXPECT_EQ(follow.status, 200) << follow.body;
  EXPECT_EQ(follow.Json()["ready"], true);
  EXPECT_EQ(follow.Json()["role"], "follower");

  const Reply lead_only = Http(LeaderPort(), "GET", "/readyz?role=leader");
  EXPECT_EQ(lead_only.status, 200) << lead_only.body;
  EXPECT_EQ(lead_only.Json()["ready"], true);
  const Reply not_leader = Http(FollowerPort(), "GET", "/readyz?role=leader");
  EXPECT_EQ(not_leader.status, 503) << not_leader.body;
  EXPECT_EQ(not_leader.Json()["ready"], false);
  EXPECT_THAT(not_leader.Json().value("reason", ""), HasSubstr("r2 follows"));
  EXPECT_EQ(not_leader.Header("X-Tessera-Role"), "follower");
}

TEST_F(HttpReplicaTest, AnIdempotencyKeyMakesRetriesOneJob) {
  const Reply too_long = Http(LeaderPort(), "POST", "/v1/jobs", "alice-token",
                              Submission(), KeyHeader(std::string(256, 'k')));
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_THAT(too_long.Json().value("error", ""), HasSubstr("Idempotency-Key"));
  EXPECT_EQ(Http(FollowerPort(), "POST", "/v1/jobs", "alice-token",
                 Submission(), KeyHeader(std::string(256, 'k')))
                .status,
            400);
  EXPECT_EQ(Http(LeaderPort(), "GET", "/v1/jobs", "alice-token")
                .Json()["jobs"]
                .size(),
            0u);
  const Reply longest = Http(LeaderPort(), "POST", "/v1/jobs", "alice-token",
                             Submission(), KeyHeader(std::string(255, 'k')));
  EXPECT_EQ(longest.status, 201) << longest.body;

  const Reply first = Http(LeaderPort(), "POST", "/v1/jobs", "alice-token",
                           Submission(), KeyHeader("retry-7"));
  ASSERT_EQ(first.status, 201) << first.body;
  const int64_t id = first.Json().value("id", int64_t{0});
  ASSERT_GT(id, 0);
  for (const int port : {LeaderPort(), FollowerPort(), FollowerPort()}) {
    const Reply again = Http(port, "POST", "/v1/jobs", "alice-token",
                             Submission(), KeyHeader("retry-7"));
    EXPECT_EQ(again.status, 201) << again.body;
    EXPECT_EQ(again.Json().value("id", int64_t{0}), id);
    EXPECT_EQ(again.Header("Location"), "/v1/jobs/" + std::to_string(id));
  }
  // Another user's key of the same text is another job.
  const Reply roots = Http(FollowerPort(), "POST", "/v1/jobs", "root-token",
                           Submission(), KeyHeader("retry-7"));
  ASSERT_EQ(roots.status, 201) << roots.body;
  EXPECT_NE(roots.Json().value("id", int64_t{0}), id);
}

// One service alone (SQLite): ready, leading, and silent about replicas.
TEST(HttpNoReplicas, ReadyWithoutRoleHeaders) {
  testlib::TempDir dir;
  auto served = StartServed(OneGpuConfig(dir, "127.0.0.1"));
  ASSERT_TRUE(served) << served.error().message;
  const int port = served->server->port();
  for (const std::string path : {"/readyz", "/readyz?role=leader"}) {
    const Reply r = Http(port, "GET", path);
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
    EXPECT_EQ(r.Json()["ready"], true);
    EXPECT_EQ(r.Json()["replicated"], false);
    EXPECT_THAT(r.headers, Not(HasSubstr("X-Tessera-Role")));
    EXPECT_THAT(r.headers, Not(HasSubstr("X-Tessera-Replica")));
  }
  const Reply drained =
      Http(port, "POST", "/v1/nodes/node0/drain", "alice-token");
  EXPECT_NE(drained.status, 307);
  EXPECT_THAT(drained.headers, Not(HasSubstr("X-Tessera-Role")));
  // Idempotency keys work on SQLite too.
  const Reply a = Http(port, "POST", "/v1/jobs", "alice-token", Submission(),
                       KeyHeader("once"));
  const Reply b = Http(port, "POST", "/v1/jobs", "alice-token", Submission(),
                       KeyHeader("once"));
  ASSERT_EQ(a.status, 201) << a.body;
  ASSERT_EQ(b.status, 201) << b.body;
  EXPECT_EQ(a.Json()["id"], b.Json()["id"]);
}

}  // namespace
}  // namespace tessera::scheduler
