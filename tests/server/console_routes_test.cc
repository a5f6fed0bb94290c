// The routes the web console uses (docs/console.md, docs/http_api.md): its
// files without a token and under a content security policy, ETags and
// 304s on what it polls, /v1/whoami, /v1/queue's reasons and estimates, and
// a split job's plan pictures. A real Service on a loopback port; an idle
// launcher, and rounds only on Tick().

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "console/assets.h"
#include "tests/server/http_request.h"
#include "tests/server/one_gpu_server.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class ConsoleRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServeConfig config = OneGpuConfig(dir_, "127.0.0.1");
    Topology& t = config.service.topology;
    t.nodes[0].gpus.push_back(1);
    t.gpus.push_back({"node0/gpu1", 0, 1, "a100-80gb", 80 * 1024});
    config.service.start_thread = false;
    config.service.model_roots = {std::string(TESSERA_SOURCE_DIR) +
                                  "/models/zoo"};
    config.users.push_back(
        {User{"bob", "", false, ""}, server::Sha256Hex("bob-token")});
    config.users.push_back(
        {User{"root", "", true, ""}, server::Sha256Hex("root-token")});
    auto served = StartServed(config);
    ASSERT_TRUE(served) << served.error().message;
    served_ = std::move(*served);
    port_ = served_.server->port();
  }

  // Submits `body` as alice; the job's id.
  int64_t Submit(const json& body, const std::string& token = "alice-token") {
    const Reply r = Http(port_, "POST", "/v1/jobs", token, body.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.Json().value("id", int64_t{0});
  }
  static json Gpus(int gpus) {
    return {{"command", {"true"}}, {"resources", {{"gpus", gpus}}}};
  }
  static json Fraction(int milli, int64_t mib) {
    return {{"command", {"true"}},
            {"resources", {{"gpu_milli", milli}, {"gpu_memory_mib", mib}}}};
  }
  json Queue(const std::string& query = "") {
    const Reply r = Http(port_, "GET", "/v1/queue" + query, "alice-token");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  }

  testlib::TempDir dir_;
  Served served_;
  int port_ = 0;
};

TEST_F(ConsoleRoutesTest, TheConsoleIsServedWithoutATokenUnderAPolicy) {
  const Reply index = Http(port_, "GET", "/");
  ASSERT_EQ(index.status, 200);
  EXPECT_THAT(index.Header("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(index.body, HasSubstr("<script"));
  const std::string policy = index.Header("Content-Security-Policy");
  EXPECT_THAT(policy, HasSubstr("script-src 'self'"));
  EXPECT_THAT(policy, HasSubstr("connect-src 'self'"));
  EXPECT_THAT(policy, HasSubstr("frame-ancestors 'none'"));
  EXPECT_EQ(index.Header("X-Content-Type-Options"), "nosniff");
  // Every embedded file, byte for byte, with its type.
  ASSERT_FALSE(console::Assets().empty());
  for (const console::Asset& a : console::Assets()) {
    const Reply r = Http(port_, "GET", "/console/" + std::string(a.name));
    EXPECT_EQ(r.status, 200) << a.name;
    EXPECT_EQ(r.body, a.body) << a.name;
    EXPECT_EQ(r.Header("Content-Type"), a.content_type) << a.name;
  }
  EXPECT_NE(console::FindAsset("index.html"), nullptr);
  EXPECT_NE(console::FindAsset("console.js"), nullptr);
  for (const char* path : {"/console/nope.js", "/console/../q.db",
                           "/console/%2e%2e%2fq.db", "/console/"}) {
    const Reply r = Http(port_, "GET", path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_THAT(r.body, Not(HasSubstr("SQLite"))) << path;
  }
}

TEST_F(ConsoleRoutesTest, PolledAnswersCarryETagsAndUnchangedOnesAre304) {
  const Reply js = Http(port_, "GET", "/console/console.js");
  const std::string tag = js.Header("ETag");
  ASSERT_FALSE(tag.empty());
  const Reply again = Http(port_, "GET", "/console/console.js", "", "",
                           "If-None-Match: " + tag + "\r\n");
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  const Reply cluster = Http(port_, "GET", "/v1/cluster", "alice-token");
  const std::string cluster_tag = cluster.Header("ETag");
  ASSERT_FALSE(cluster_tag.empty());
  EXPECT_EQ(Http(port_, "GET", "/v1/cluster", "alice-token", "",
                 "If-None-Match: W/\"x\", " + cluster_tag + "\r\n")
                .status,
            304);
  // A change makes a new answer and a new tag.
  Submit(Fraction(250, 8192));
  served_.service->Tick();
  const Reply changed = Http(port_, "GET", "/v1/cluster", "alice-token", "",
                             "If-None-Match: " + cluster_tag + "\r\n");
  EXPECT_EQ(changed.status, 200);
  EXPECT_NE(changed.Header("ETag"), cluster_tag);
  EXPECT_EQ(changed.Json()["gpus"][0]["reserved_milli"], 250);
  // Without a token: 401, never a 304 that would confirm a tag.
  EXPECT_EQ(Http(port_, "GET", "/v1/cluster", "", "",
                 "If-None-Match: " + cluster_tag + "\r\n")
                .status,
            401);
}

TEST_F(ConsoleRoutesTest, WhoAmISaysWhoTheTokenIs) {
  const json alice = Http(port_, "GET", "/v1/whoami", "alice-token").Json();
  EXPECT_EQ(alice["user"], "alice");
  EXPECT_EQ(alice["admin"], false);
  EXPECT_EQ(Http(port_, "GET", "/v1/whoami", "root-token").Json()["admin"],
            true);
  EXPECT_EQ(Http(port_, "GET", "/v1/whoami", "nobody").status, 401);
  EXPECT_EQ(Http(port_, "GET", "/v1/whoami").status, 401);
}

TEST_F(ConsoleRoutesTest, TheQueueSaysWhyEachJobWaitsAndWhenItCouldStart) {
  // Before a round: the first fits and starts next; the second fits too
  // but is behind it.
  const int64_t a = Submit(Gpus(1));
  const int64_t b = Submit(Gpus(1));
  json q = Queue();
  ASSERT_EQ(q["pools"].size(), 1U);
  json queued = q["pools"][0]["queued"];
  ASSERT_EQ(queued.size(), 2U);
  EXPECT_EQ(queued[0]["id"], a);
  EXPECT_EQ(queued[0]["position"], 1);
  EXPECT_EQ(queued[0]["why_code"], "next_round");
  EXPECT_FALSE(queued[0]["estimated_start"].is_null());
  EXPECT_EQ(queued[1]["why_code"], "behind");
  EXPECT_THAT(queued[1]["why"].get<std::string>(),
              HasSubstr("job " + std::to_string(a)));
  served_.service->Tick();
  // Both GPUs held, with no time limits: a third waits for room, with no
  // estimate, and says which node is closest and what it lacks.
  const int64_t c = Submit(Gpus(1), "bob-token");
  q = Queue();
  queued = q["pools"][0]["queued"];
  ASSERT_EQ(queued.size(), 1U);
  EXPECT_EQ(queued[0]["id"], c);
  EXPECT_EQ(queued[0]["user"], "bob");
  EXPECT_EQ(queued[0]["why_code"], "no_room");
  EXPECT_THAT(queued[0]["why"].get<std::string>(),
              HasSubstr("only 0 of its 2 GPUs are free"));
  EXPECT_TRUE(queued[0]["estimated_start"].is_null());
  EXPECT_THAT(queued[0]["estimate"].get<std::string>(),
              HasSubstr("no time limit"));
  EXPECT_GE(queued[0]["waiting_s"].get<double>(), 0.0);
  ASSERT_EQ(q["pools"][0]["running"].size(), 2U);
  EXPECT_EQ(q["pools"][0]["running"][0]["id"], a);
  // c takes a GPU when a and b leave, a job with a time limit the other;
  // the next one's estimate is that limit.
  for (const int64_t id : {a, b}) {
    ASSERT_EQ(Http(port_, "POST", "/v1/jobs/" + std::to_string(id) + "/cancel",
                   "alice-token")
                  .status,
              200);
  }
  served_.service->Tick();
  json limited = Gpus(1);
  limited["time_limit_s"] = 600;
  Submit(limited);
  served_.service->Tick();
  const int64_t d = Submit(Gpus(1));
  q = Queue();
  queued = q["pools"][0]["queued"];
  ASSERT_EQ(queued.size(), 1U) << q.dump();
  EXPECT_EQ(queued[0]["id"], d);
  EXPECT_FALSE(queued[0]["estimated_start"].is_null()) << queued[0].dump();
  EXPECT_THAT(queued[0]["estimate"].get<std::string>(),
              HasSubstr("frees in 10.0 min"));
  // Drained: every node that could hold it is.
  ASSERT_EQ(Http(port_, "POST", "/v1/nodes/node0/drain", "root-token").status,
            200);
  EXPECT_EQ(Queue()["pools"][0]["queued"][0]["why_code"], "drained");
  // Filters and bad queries.
  EXPECT_EQ(Queue("?pool=a")["pools"].size(), 1U);
  EXPECT_EQ(Http(port_, "GET", "/v1/queue?pool=zz", "alice-token").status, 404);
  EXPECT_EQ(Http(port_, "GET", "/v1/queue?poll=a", "alice-token").status, 400);
}

// A model job split over two slivers: its plan pictures are drawn when it
// starts; a job that was not split has none.
TEST_F(ConsoleRoutesTest, ASplitJobsPlanPicturesAreServed) {
  const int64_t taken = 80 * 1024 - 700;  // GPT-2 (~0.9 GiB) fits no GPU
  const int64_t a = Submit(Fraction(500, taken));
  Submit(Fraction(500, taken));
  served_.service->Tick();
  const int64_t split = Submit({{"name", "gpt2"},
                                {"command", {"true"}},
                                {"model",
                                 {{"path", std::string(TESSERA_SOURCE_DIR) +
                                               "/models/zoo/gpt2.onnx"}}}});
  served_.service->Tick();
  const json job =
      Http(port_, "GET", "/v1/jobs/" + std::to_string(split), "alice-token")
          .Json();
  ASSERT_EQ(job["allocation"].size(), 2U) << job.dump();
  for (const char* which : {"timeline", "graph"}) {
    const Reply r =
        Http(port_, "GET",
             "/v1/jobs/" + std::to_string(split) + "/plan/" + which + ".html",
             "bob-token");  // anyone may read
    ASSERT_EQ(r.status, 200) << which << ": " << r.body;
    EXPECT_THAT(r.Header("Content-Type"), HasSubstr("text/html"));
    EXPECT_THAT(r.body, HasSubstr("<svg"));
    EXPECT_THAT(r.body, Not(HasSubstr("<script")));
  }
  const Reply none = Http(
      port_, "GET", "/v1/jobs/" + std::to_string(a) + "/plan/timeline.html",
      "alice-token");
  EXPECT_EQ(none.status, 404);
  EXPECT_THAT(none.Json().value("error", ""), HasSubstr("was not split"));
  EXPECT_EQ(
      Http(port_, "GET", "/v1/jobs/999/plan/graph.html", "alice-token").status,
      404);
  EXPECT_EQ(Http(port_, "GET",
                 "/v1/jobs/" + std::to_string(split) + "/plan/graph.html")
                .status,
            401);
}

}  // namespace
}  // namespace tessera::scheduler
