// QueueClient against a scripted HTTP server on loopback: what it sends
// (paths, the token, a submission in job_json's shape) and how it reports
// what comes back (refusals, server errors, no server, not JSON).
#include "client/queue_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <string>
#include <thread>

#include "service/wire/job_json.h"

namespace tessera::client {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class QueueClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/v1/jobs", [this](const httplib::Request& req,
                                    httplib::Response& res) {
      Record(req);
      res.set_content(R"({"id": 7, "state": "queued"})", "application/json");
    });
    server_.Post("/v1/models",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   Record(req);
                   std::lock_guard lock(mu_);
                   last_type_ = req.get_header_value("Content-Type");
                   res.status = 201;
                   res.set_content(R"({"id": "abc", "bytes": 3, "nodes": 1})",
                                   "application/json");
                 });
    server_.Get("/v1/jobs",
                [this](const httplib::Request& req, httplib::Response& res) {
                  Record(req);
                  res.set_content(R"({"jobs": []})", "application/json");
                });
    server_.Get(R"(/v1/jobs/(\d+)/logs)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  Record(req);
                  res.set_header("X-Next-Offset", "42");
                  res.set_header("X-Job-State", "succeeded");
                  res.set_content("hello\n", "text/plain");
                });
    server_.Get("/v1/jobs/404",
                [](const httplib::Request&, httplib::Response& res) {
                  res.status = 404;
                  res.set_content(R"({"error": "job 404: no such job"})",
                                  "application/json");
                });
    server_.Get("/v1/cluster", [](const httplib::Request&,
                                  httplib::Response& res) {
      res.status = 500;
      res.set_content(R"({"error": "the store failed"})", "application/json");
    });
    server_.Post(R"(/v1/nodes/([^/]+)/(drain|undrain))",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   Record(req);
                   res.set_content("not json", "text/plain");
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  void Record(const httplib::Request& req) {
    std::lock_guard lock(mu_);
    last_path_ = req.path;
    last_query_ = req.params;
    last_body_ = req.body;
    last_auth_ = req.get_header_value("Authorization");
  }
  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::string last_path_, last_body_, last_auth_, last_type_;
  httplib::Params last_query_;
};

TEST_F(QueueClientTest, SubmitsInTheServicesShapeWithTheToken) {
  const QueueClient client(Url() + "/", "secret");
  scheduler::JobRequest request;
  request.name = "train";
  request.command = {"python", "train.py"};
  request.resources = scheduler::Resources{0, 250, 8192, 0, 0};
  Result<json> job = client.Submit(request);
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ((*job)["id"], 7);
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_path_, "/v1/jobs");
  EXPECT_EQ(last_auth_, "Bearer secret");
  // What the service parses back is what was asked.
  Result<scheduler::JobRequest> parsed =
      service::ParseJobRequest(json::parse(last_body_));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->name, "train");
  EXPECT_EQ(parsed->resources->gpu_milli, 250);
  EXPECT_EQ(parsed->resources->gpu_memory_mib, 8192);
}

TEST_F(QueueClientTest, UploadsAModelAsOctetStream) {
  QueueClient client(Url(), "tok");
  const std::string bytes("\x08\x07\0onnx", 7);
  Result<json> up = client.UploadModel(bytes);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ((*up)["id"], "abc");
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_path_, "/v1/models");
  EXPECT_EQ(last_body_, bytes);
  EXPECT_EQ(last_type_, "application/octet-stream");
  EXPECT_EQ(last_auth_, "Bearer tok");
}

TEST_F(QueueClientTest, FiltersGoInTheQueryEncoded) {
  const QueueClient client(Url(), "");
  ASSERT_TRUE(client.Jobs({"queued", "a b", "", 5}));
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_path_, "/v1/jobs");
  EXPECT_EQ(last_query_.find("user")->second, "a b");
  EXPECT_EQ(last_query_.find("limit")->second, "5");
  EXPECT_EQ(last_query_.count("pool"), 0u);
}

TEST_F(QueueClientTest, LogsCarryTheNextOffsetAndTheJobState) {
  const QueueClient client(Url(), "");
  Result<LogChunk> chunk = client.Logs(3, /*stderr_log=*/true, 10);
  ASSERT_TRUE(chunk) << chunk.error().message;
  EXPECT_EQ(chunk->text, "hello\n");
  EXPECT_EQ(chunk->next_offset, 42);
  EXPECT_EQ(chunk->job_state, "succeeded");
  EXPECT_TRUE(IsTerminalStateName(chunk->job_state));
  EXPECT_FALSE(IsTerminalStateName("running"));
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_query_.find("stream")->second, "stderr");
  EXPECT_EQ(last_query_.find("offset")->second, "10");
}

TEST_F(QueueClientTest, RefusalsAreBadInputAndServerErrorsInternal) {
  const QueueClient client(Url(), "");
  Result<json> missing = client.Job(404);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(missing.error().message, "job 404: no such job");
  Result<json> broken = client.Cluster();
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ErrorCode::kInternal);
  EXPECT_EQ(broken.error().message, "the store failed");
  Result<json> not_json = client.Drain("node0", /*undo=*/true);
  ASSERT_FALSE(not_json);
  EXPECT_THAT(not_json.error().message, HasSubstr("not JSON"));
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_path_, "/v1/nodes/node0/undrain");
}

TEST(QueueClient, NoServiceOrABadUrlSaysSo) {
  // Nothing listens on port 1 (privileged, and no service of ours).
  Result<json> down = QueueClient("http://127.0.0.1:1", "").Cluster();
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(down.error().message, HasSubstr("cannot reach"));
  Result<json> bad = QueueClient("ftp://example", "").Cluster();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(bad.error().message, HasSubstr("--url"));
}

}  // namespace
}  // namespace tessera::client
