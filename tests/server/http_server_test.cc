// HttpServer: authentication, roles, input checks and status codes over a
// real Service on a loopback port. An idle launcher keeps jobs from
// running; the scheduling thread is off, so states change only on Tick().
// The client is a minimal HTTP/1.1 over a socket, so that this file needs
// none of cpp-httplib's build flags.

#include "server/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/auth.h"
#include "tests/server/http_request.h"
#include "tests/testlib/idle_launcher.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {

// The service the server fronts (service/).
using service::Service;
using service::User;

namespace {

using nlohmann::json;

constexpr int64_t kGiBInMiB = 1024;
using ::testing::HasSubstr;

std::string Submission(int milli, int64_t mib, const std::string& pool = "") {
  json j = {{"name", "t"},
            {"command", {"true"}},
            {"resources", {{"gpu_milli", milli}, {"gpu_memory_mib", mib}}}};
  if (!pool.empty()) j["pool"] = pool;
  return j.dump();
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServeConfig config;
    Topology& t = config.service.topology;
    t.pools = {"a"};
    t.nodes.push_back({"node0", "a", 64000, 256 * kGiBInMiB, {0, 1}, false});
    t.gpus.push_back({"node0/gpu0", 0, 0, "a100-80gb", 80 * kGiBInMiB});
    t.gpus.push_back({"node0/gpu1", 0, 1, "a100-80gb", 80 * kGiBInMiB});
    config.service.db_path = dir_.File("q.db");
    config.service.log_dir = dir_.File("logs");
    config.service.start_thread = false;
    config.listen_host = "127.0.0.1";
    config.listen_port = 0;
    config.max_body_bytes = 4096;
    config.service.max_upload_bytes = int64_t{1} << 20;
    config.service.model_roots = {std::string(TESSERA_SOURCE_DIR) +
                                  "/models/zoo"};
    config.users = {
        {User{"alice", "", false, ""}, server::Sha256Hex("alice-token")},
        {User{"bob", "", false, ""}, server::Sha256Hex("bob-token")},
        {User{"root", "", true, ""}, server::Sha256Hex("root-token")}};
    auto service = Service::Start(
        config.service,
        std::make_unique<testlib::IdleLauncher>(dir_.path().string()));
    ASSERT_TRUE(service) << service.error().message;
    service_ = std::move(*service);
    config_ = config;
    auto server = server::HttpServer::Start(*service_, config);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    port_ = server_->port();
    ASSERT_GT(port_, 0);
  }

  // Submits as `token`; the new job's id (0 on failure).
  int64_t Submit(const std::string& token) const {
    const Reply r =
        Http(port_, "POST", "/v1/jobs", token, Submission(250, 8192));
    EXPECT_EQ(r.status, 201) << r.body;
    return r.Json().value("id", int64_t{0});
  }

  testlib::TempDir dir_;
  server::ServeConfig config_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<server::HttpServer> server_;
  int port_ = 0;
};

TEST_F(HttpServerTest, HealthNeedsNoTokenEverythingElseDoes) {
  const Reply health = Http(port_, "GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.Json(),
            json({{"ok", true}, {"replicated", false}, {"role", "leader"}}));
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/jobs"},
           {"POST", "/v1/jobs"},
           {"GET", "/v1/jobs/1"},
           {"POST", "/v1/jobs/1/cancel"},
           {"GET", "/v1/jobs/1/logs"},
           {"GET", "/v1/cluster"},
           {"GET", "/metrics"},
           {"POST", "/v1/nodes/node0/drain"},
           {"POST", "/v1/models"}}) {
    const Reply none = Http(port_, method, path, "", "{}");
    EXPECT_EQ(none.status, 401) << method << " " << path;
    EXPECT_THAT(none.Json().value("error", ""), HasSubstr("Authorization"));
    const Reply wrong = Http(port_, method, path, "nobody-token", "{}");
    EXPECT_EQ(wrong.status, 401) << method << " " << path;
    EXPECT_EQ(wrong.Json().value("error", ""), "invalid token");
  }
}

TEST_F(HttpServerTest, SubmitAnswers201WithTheJobOfTheTokensUser) {
  const Reply r =
      Http(port_, "POST", "/v1/jobs", "alice-token", Submission(250, 8192));
  ASSERT_EQ(r.status, 201) << r.body;
  const json job = r.Json();
  EXPECT_EQ(job["user"], "alice");
  EXPECT_EQ(job["state"], "queued");
  EXPECT_THAT(r.headers, HasSubstr("Location: /v1/jobs/" +
                                   std::to_string(job["id"].get<int64_t>())));
  const Reply got =
      Http(port_, "GET", "/v1/jobs/" + std::to_string(job["id"].get<int64_t>()),
           "bob-token");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.Json()["id"], job["id"]);
  // The job is on disk: the service lists it.
  const Reply list = Http(port_, "GET", "/v1/jobs?user=alice", "bob-token");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.Json()["jobs"].size(), 1U);
}

std::string ZooBytes(const std::string& file) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + file,
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string ModelSubmission(const json& model) {
  return json{{"name", "m"}, {"command", {"true"}}, {"model", model}}.dump();
}

// POST /v1/models stores a model; a submission names it by id.
TEST_F(HttpServerTest, UploadedModelRoundTrip) {
  const std::string bytes = ZooBytes("resnet50.onnx");
  const Reply up = Http(port_, "POST", "/v1/models", "alice-token", bytes);
  ASSERT_EQ(up.status, 201) << up.body;
  const std::string id = up.Json().value("id", "");
  EXPECT_EQ(id.size(), 64U);
  EXPECT_EQ(up.Json()["bytes"], bytes.size());
  EXPECT_GT(up.Json()["nodes"].get<int64_t>(), 100);
  const Reply job = Http(port_, "POST", "/v1/jobs", "alice-token",
                         ModelSubmission({{"upload", id}, {"batch", 8}}));
  ASSERT_EQ(job.status, 201) << job.body;
  EXPECT_EQ(job.Json()["request"]["model"]["upload"], id);
  EXPECT_GT(job.Json()["demand"]["gpu_memory_mib"].get<int64_t>(), 0);
  // Another user may use it: the id is the content's hash.
  const Reply bobs = Http(port_, "POST", "/v1/jobs", "bob-token",
                          ModelSubmission({{"upload", id}}));
  EXPECT_EQ(bobs.status, 201) << bobs.body;
}

TEST_F(HttpServerTest, BadUploadsAre4xxWithClearMessages) {
  const std::string bytes = ZooBytes("resnet50.onnx");
  struct Case {
    std::string body;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {"", 422, "the body is empty"},
      {"garbage, not an ONNX model at all", 422, "not an ONNX model"},
      {bytes.substr(0, bytes.size() / 2), 422, "the uploaded model"},
      {std::string((size_t{1} << 20) + 1, 'x'), 413, "max_upload_bytes"},
  };
  for (const Case& c : cases) {
    const Reply r = Http(port_, "POST", "/v1/models", "alice-token", c.body);
    EXPECT_EQ(r.status, c.status) << r.body;
    EXPECT_THAT(r.Json().value("error", ""), HasSubstr(c.message));
  }
  const Reply unknown =
      Http(port_, "POST", "/v1/jobs", "alice-token",
           ModelSubmission({{"upload", std::string(64, '0')}}));
  EXPECT_EQ(unknown.status, 422);
  EXPECT_THAT(unknown.Json().value("error", ""), HasSubstr("model.upload"));
  const Reply malformed = Http(port_, "POST", "/v1/jobs", "alice-token",
                               ModelSubmission({{"upload", "../x"}}));
  EXPECT_EQ(malformed.status, 400);
  EXPECT_THAT(malformed.Json().value("error", ""), HasSubstr("model.upload"));
  // Ordinary routes keep their own limit.
  const Reply big = Http(port_, "POST", "/v1/jobs", "alice-token",
                         std::string(5000, ' ') + Submission(250, 8192));
  EXPECT_EQ(big.status, 413);
  EXPECT_THAT(big.Json().value("error", ""), HasSubstr("max_body_bytes"));
}

// Paths outside the model roots: 422 at once, one message whether the file
// exists or not.
TEST_F(HttpServerTest, ModelPathsOutsideTheRootsAreRefusedAlike) {
  std::string first;
  for (const std::string& path :
       {std::string("/dev/zero"), std::string("/etc/passwd"),
        std::string("/etc/no-such-file"), dir_.File("missing.onnx")}) {
    const Reply r = Http(port_, "POST", "/v1/jobs", "alice-token",
                         ModelSubmission({{"path", path}}));
    EXPECT_EQ(r.status, 422) << path;
    if (first.empty()) first = r.body;
    EXPECT_EQ(r.body, first) << path;
  }
  EXPECT_THAT(first, HasSubstr("model.path"));
  const Reply ok =
      Http(port_, "POST", "/v1/jobs", "alice-token",
           ModelSubmission({{"path", std::string(TESSERA_SOURCE_DIR) +
                                         "/models/zoo/resnet50.onnx"}}));
  EXPECT_EQ(ok.status, 201) << ok.body;
}

TEST_F(HttpServerTest, BadSubmissionsAreRejectedAndChangeNothing) {
  struct Case {
    std::string body;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {"{not json", 400, "malformed JSON"},
      {R"({"command": ["true"], "resources": {"gpu_milli": 1001,
           "gpu_memory_mib": 10}})",
       400, "gpu_milli"},
      {R"({"command": ["true"], "colour": 1,
           "resources": {"gpu_milli": 1, "gpu_memory_mib": 10}})",
       400, "colour"},
      {Submission(100, 100, "nosuchpool"), 422, "nosuchpool"},
      {Submission(100, 200 * kGiBInMiB), 422, ""},  // no GPU could ever hold it
      {std::string(5000, ' '), 413, "max_body_bytes"},
  };
  for (const Case& c : cases) {
    const Reply r = Http(port_, "POST", "/v1/jobs", "alice-token", c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 80) << "\n" << r.body;
    EXPECT_THAT(r.Json().value("error", ""), HasSubstr(c.message))
        << c.body.substr(0, 80);
  }
  const Reply list = Http(port_, "GET", "/v1/jobs", "alice-token");
  EXPECT_EQ(list.Json()["jobs"].size(), 0U);
}

TEST_F(HttpServerTest, ListFiltersAndRejectsBadQueries) {
  Submit("alice-token");
  Submit("bob-token");
  Submit("bob-token");
  EXPECT_EQ(Http(port_, "GET", "/v1/jobs", "alice-token").Json()["jobs"].size(),
            3U);
  EXPECT_EQ(Http(port_, "GET", "/v1/jobs?user=bob&limit=1", "alice-token")
                .Json()["jobs"]
                .size(),
            1U);
  EXPECT_EQ(Http(port_, "GET", "/v1/jobs?state=running", "alice-token")
                .Json()["jobs"]
                .size(),
            0U);
  for (const char* query :
       {"?state=sleeping", "?limit=0", "?limit=x", "?colour=red"}) {
    const Reply r =
        Http(port_, "GET", std::string("/v1/jobs") + query, "alice-token");
    EXPECT_EQ(r.status, 400) << query;
  }
}

TEST_F(HttpServerTest, UnknownJobsAndRoutesAre404) {
  EXPECT_EQ(Http(port_, "GET", "/v1/jobs/999", "alice-token").status, 404);
  EXPECT_EQ(Http(port_, "GET", "/v1/jobs/abc", "alice-token").status, 404);
  EXPECT_EQ(Http(port_, "POST", "/v1/jobs/999/cancel", "alice-token").status,
            404);
  const Reply route = Http(port_, "GET", "/v2/nothing", "alice-token");
  EXPECT_EQ(route.status, 404);
  EXPECT_THAT(route.Json().value("error", ""), HasSubstr("/v2/nothing"));
}

TEST_F(HttpServerTest, UsersCancelOnlyTheirOwnJobsAdminsAny) {
  const int64_t a = Submit("alice-token");
  const int64_t b = Submit("alice-token");
  const std::string cancel_a = "/v1/jobs/" + std::to_string(a) + "/cancel";
  const Reply denied = Http(port_, "POST", cancel_a, "bob-token");
  EXPECT_EQ(denied.status, 403);
  EXPECT_THAT(denied.Json().value("error", ""), HasSubstr("alice"));
  const Reply own = Http(port_, "POST", cancel_a, "alice-token");
  EXPECT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(own.Json()["state"], "cancelled");
  const Reply admin = Http(
      port_, "POST", "/v1/jobs/" + std::to_string(b) + "/cancel", "root-token");
  EXPECT_EQ(admin.status, 200) << admin.body;
  EXPECT_EQ(admin.Json()["state"], "cancelled");
}

// POST /v1/jobs/{id}/progress: the owner (or an admin) of a running job;
// a body of {"steps": N}; steps never go back.
// Elastic jobs' routes (docs/elastic.md): the allocation's long-poll and
// the release, with their errors.
TEST_F(HttpServerTest, ElasticAllocationAndRelease) {
  const Reply sub = Http(
      port_, "POST", "/v1/jobs", "alice-token",
      R"({"command": ["true"], "resources": {"gpus": {"min": 1, "max": 2}}})");
  ASSERT_EQ(sub.status, 201) << sub.body;
  const int64_t e = sub.Json()["id"];
  const int64_t plain = Submit("alice-token");
  const std::string path = "/v1/jobs/" + std::to_string(e);
  EXPECT_EQ(
      Http(
          port_, "POST", "/v1/jobs", "alice-token",
          R"({"command": ["true"], "resources": {"gpus": {"min": 0, "max": 2}}})")
          .Json()
          .value("error", ""),
      "resources.gpus.min: must be at least 1 (got 0)");
  service_->Tick();  // both start; the elastic job with one GPU
  service_->Tick();  // the fraction holds the other: nothing to grow into
  Reply a = Http(port_, "GET", path + "/allocation", "alice-token");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Json()["workers"].size(), 1u);
  const int64_t v = a.Json()["version"];
  // Unchanged: answered when the (short) wait is over.
  a = Http(port_, "GET",
           path + "/allocation?after=" + std::to_string(v) + "&wait_s=0",
           "alice-token");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.Json()["version"], v);
  for (const char* bad : {"?wait_s=31", "?after=-2", "?after=x", "?since=1"}) {
    EXPECT_EQ(
        Http(port_, "GET", path + "/allocation" + bad, "alice-token").status,
        400)
        << bad;
  }
  EXPECT_EQ(
      Http(port_, "GET", "/v1/jobs/" + std::to_string(plain) + "/allocation",
           "alice-token")
          .status,
      409);
  EXPECT_EQ(Http(port_, "GET", "/v1/jobs/999/allocation", "alice-token").status,
            404);
  // The release: the owner (or an admin), extras only.
  EXPECT_EQ(
      Http(port_, "POST", path + "/release", "bob-token", R"({"workers": [1]})")
          .status,
      403);
  for (const char* bad : {"", "[]", R"({"workers": 1})", R"({"workers": [-1]})",
                          R"({"workers": [1], "x": 1})"}) {
    EXPECT_EQ(Http(port_, "POST", path + "/release", "alice-token", bad).status,
              400)
        << bad;
  }
  const Reply guaranteed = Http(port_, "POST", path + "/release", "alice-token",
                                R"({"workers": [0]})");
  EXPECT_EQ(guaranteed.status, 400);
  EXPECT_THAT(guaranteed.Json().value("error", ""),
              HasSubstr("worker 0 is guaranteed"));
  EXPECT_EQ(service_->CheckInvariants(), "");
}

// The long-poll's cap (docs/elastic.md, "The job's side"): at most half
// the worker threads (4 of 8) wait at once; a fifth is answered at once,
// unchanged, with Retry-After: 1; once they are done, a poll waits again.
TEST_F(HttpServerTest, AllocationLongPollsAreCapped) {
  using Steady = std::chrono::steady_clock;
  const Reply sub = Http(
      port_, "POST", "/v1/jobs", "alice-token",
      R"({"command": ["true"], "resources": {"gpus": {"min": 1, "max": 1}}})");
  ASSERT_EQ(sub.status, 201) << sub.body;
  const std::string path =
      "/v1/jobs/" + std::to_string(sub.Json()["id"].get<int64_t>());
  service_->Tick();  // it runs; at max, so nothing changes from here on
  const Reply now = Http(port_, "GET", path + "/allocation", "alice-token");
  ASSERT_EQ(now.status, 200) << now.body;
  const std::string poll = path + "/allocation?after=" +
                           std::to_string(now.Json()["version"].get<int64_t>());
  struct Answer {
    Reply reply;
    double seconds = 0;
  };
  auto timed = [&](const std::string& query) {
    const auto t0 = Steady::now();
    Answer a{Http(port_, "GET", query, "alice-token"), 0};
    a.seconds = std::chrono::duration<double>(Steady::now() - t0).count();
    return a;
  };
  std::vector<Answer> waited(4);
  std::vector<std::thread> pollers;
  for (Answer& a : waited) {
    pollers.emplace_back([&, out = &a] { *out = timed(poll + "&wait_s=3"); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // all wait
  const Answer fifth = timed(poll + "&wait_s=3");
  for (std::thread& t : pollers) t.join();
  EXPECT_EQ(fifth.reply.status, 200) << fifth.reply.body;
  EXPECT_EQ(fifth.reply.Json()["version"], now.Json()["version"]);
  EXPECT_THAT(fifth.reply.headers, HasSubstr("Retry-After: 1"));
  EXPECT_LT(fifth.seconds, 1.5);
  for (const Answer& a : waited) {
    EXPECT_EQ(a.reply.status, 200) << a.reply.body;
    EXPECT_EQ(a.reply.Json()["version"], now.Json()["version"]);
    EXPECT_THAT(a.reply.headers, ::testing::Not(HasSubstr("Retry-After")));
    EXPECT_GE(a.seconds, 2.5);  // waited its wait_s
  }
  // The waiters are done: the next poll may wait again.
  const Answer again = timed(poll + "&wait_s=1");
  EXPECT_EQ(again.reply.status, 200);
  EXPECT_THAT(again.reply.headers, ::testing::Not(HasSubstr("Retry-After")));
  EXPECT_GE(again.seconds, 0.8);
}

TEST_F(HttpServerTest, ProgressIsReportedForARunningJobByItsOwner) {
  const int64_t a = Submit("alice-token");
  const Reply big = Http(port_, "POST", "/v1/jobs", "alice-token",
                         Submission(1000, 80 * kGiBInMiB));
  ASSERT_EQ(big.status, 201) << big.body;
  service_->Tick();  // a runs on one GPU, big on the other
  const Reply queued = Http(port_, "POST", "/v1/jobs", "alice-token",
                            Submission(1000, 80 * kGiBInMiB));
  ASSERT_EQ(queued.status, 201);
  service_->Tick();
  const std::string path = "/v1/jobs/" + std::to_string(a) + "/progress";
  EXPECT_EQ(Http(port_, "POST", path, "bob-token", R"({"steps": 1})").status,
            403);
  for (const char* bad :
       {"", "[]", R"({"steps": -1})", R"({"steps": 1.5})", R"({"steps": "3"})",
        R"({"steps": 1, "x": 2})", R"({"step": 1})"}) {
    const Reply r = Http(port_, "POST", path, "alice-token", bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_FALSE(r.Json().value("error", "").empty()) << bad;
  }
  const Reply ok = Http(port_, "POST", path, "alice-token", R"({"steps": 5})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.Json()["steps"], 5);
  EXPECT_EQ(ok.Json()["sharing_with"], 0);
  const Reply admin =
      Http(port_, "POST", path, "root-token", R"({"steps": 7})");
  EXPECT_EQ(admin.status, 200) << admin.body;
  const Reply back =
      Http(port_, "POST", path, "alice-token", R"({"steps": 2})");
  EXPECT_EQ(back.status, 400);
  EXPECT_THAT(back.Json().value("error", ""), HasSubstr("went back"));
  const int64_t waiting = queued.Json().value("id", int64_t{0});
  const Reply not_running =
      Http(port_, "POST", "/v1/jobs/" + std::to_string(waiting) + "/progress",
           "alice-token", R"({"steps": 1})");
  EXPECT_EQ(not_running.status, 409) << not_running.body;
  EXPECT_THAT(not_running.Json().value("error", ""), HasSubstr("queued"));
  EXPECT_EQ(Http(port_, "POST", "/v1/jobs/999/progress", "alice-token",
                 R"({"steps": 1})")
                .status,
            404);
  // A job that asks by resources has no split-or-wait decision.
  const Reply job =
      Http(port_, "GET", "/v1/jobs/" + std::to_string(a), "alice-token");
  ASSERT_EQ(job.status, 200);
  EXPECT_TRUE(job.Json().contains("decision"));
  EXPECT_TRUE(job.Json()["decision"].is_null());
}

TEST_F(HttpServerTest, LogsAreServedFromAnOffset) {
  const int64_t id = Submit("alice-token");
  std::ofstream(dir_.File(std::to_string(id) + ".out")) << "hello\nworld\n";
  std::ofstream(dir_.File(std::to_string(id) + ".err")) << "oops\n";
  const std::string base = "/v1/jobs/" + std::to_string(id) + "/logs";
  const Reply all = Http(port_, "GET", base, "alice-token");
  EXPECT_EQ(all.status, 200);
  EXPECT_EQ(all.body, "hello\nworld\n");
  EXPECT_THAT(all.headers, HasSubstr("X-Next-Offset: 12"));
  EXPECT_EQ(Http(port_, "GET", base + "?offset=6", "alice-token").body,
            "world\n");
  EXPECT_EQ(Http(port_, "GET", base + "?offset=99", "alice-token").body, "");
  EXPECT_EQ(Http(port_, "GET", base + "?stream=stderr", "alice-token").body,
            "oops\n");
  EXPECT_EQ(Http(port_, "GET", base + "?stream=both", "alice-token").status,
            400);
  EXPECT_EQ(Http(port_, "GET", base + "?offset=-1", "alice-token").status, 400);
}

TEST_F(HttpServerTest, ClusterAndMetrics) {
  Submit("alice-token");
  const Reply cluster = Http(port_, "GET", "/v1/cluster", "alice-token");
  ASSERT_EQ(cluster.status, 200);
  EXPECT_EQ(cluster.Json()["gpus"].size(), 2U);
  EXPECT_EQ(cluster.Json()["gpus"][1]["id"], "node0/gpu1");
  const Reply metrics = Http(port_, "GET", "/metrics", "alice-token");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.headers, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_FALSE(metrics.body.empty());
}

TEST_F(HttpServerTest, OnlyAdminsDrainNodes) {
  EXPECT_EQ(Http(port_, "POST", "/v1/nodes/node0/drain", "alice-token").status,
            403);
  const Reply drained =
      Http(port_, "POST", "/v1/nodes/node0/drain", "root-token");
  EXPECT_EQ(drained.status, 200) << drained.body;
  EXPECT_EQ(drained.Json()["drained"], true);
  EXPECT_EQ(Http(port_, "GET", "/v1/cluster", "root-token")
                .Json()["gpus"][0]["drained"],
            true);
  EXPECT_EQ(Http(port_, "POST", "/v1/nodes/node0/undrain", "root-token").status,
            200);
  EXPECT_EQ(Http(port_, "POST", "/v1/nodes/node9/drain", "root-token").status,
            404);
}

TEST_F(HttpServerTest, APortInUseIsAnError) {
  server::ServeConfig taken = config_;
  taken.listen_port = port_;
  auto second = server::HttpServer::Start(*service_, taken);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(second.error().message,
              HasSubstr("127.0.0.1:" + std::to_string(port_)));
}

TEST_F(HttpServerTest, StopIsIdempotentAndFreesThePort) {
  server_->Stop();
  server_->Stop();
  EXPECT_EQ(Http(port_, "GET", "/healthz").status, 0);  // refused
}

}  // namespace
}  // namespace tessera::scheduler
