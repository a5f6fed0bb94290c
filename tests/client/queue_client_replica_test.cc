// QueueClient among replicas (docs/operations.md, "High availability"),
// against small HTTP servers on loopback: a follower's 307 followed once
// to the leader with the method, body, token and idempotency key; a second
// redirect or a strange Location not followed; a submission tried again,
// with the same Idempotency-Key, while no service answers or it answers
// 503, waiting its Retry-After, and for no longer than asked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/queue_client.h"
#include "tests/testlib/loopback_socket.h"

namespace tessera::client {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// What a server saw of one request.
struct Seen {
  std::string method, path, query_from, body, type, auth, key;
};

// An HTTP server on a loopback port for one test, recording each request
// before `routes` answers it.
class Server {
 public:
  using Handler =
      std::function<void(const httplib::Request&, int nth, httplib::Response&)>;
  // `port` 0: any free one.
  explicit Server(Handler handler, int port = 0)
      : handler_(std::move(handler)) {
    const auto record = [this](const httplib::Request& req,
                               httplib::Response& res) {
      int nth = 0;
      {
        std::lock_guard lock(mu_);
        seen_.push_back({req.method, req.path, req.get_param_value("from"),
                         req.body, req.get_header_value("Content-Type"),
                         req.get_header_value("Authorization"),
                         req.get_header_value("Idempotency-Key")});
        nth = static_cast<int>(seen_.size());
      }
      handler_(req, nth, res);
    };
    server_.Get(".*", record);
    server_.Post(".*", record);
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else if (server_.bind_to_port("127.0.0.1", port)) {
      port_ = port;
    }
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~Server() {
    server_.stop();
    thread_.join();
  }

  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  Handler handler_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

void Json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

// A follower's answer to what only the leader does.
Server::Handler RedirectTo(const std::string* leader) {
  return [leader](const httplib::Request& req, int, httplib::Response& res) {
    res.set_header("Location", *leader + req.path + "?from=r1");
    Json(res, 307, {{"error", "replica r1 follows"}, {"leader", *leader}});
  };
}

scheduler::JobRequest ARequest() {
  scheduler::JobRequest request;
  request.name = "train";
  request.command = {"python", "train.py"};
  request.resources = scheduler::Resources{1, 0, 0, 0, 0};
  return request;
}

TEST(QueueClientReplicas, FollowsAFollowersRedirectToTheLeader) {
  Server leader([](const httplib::Request& req, int, httplib::Response& res) {
    if (req.path == "/v1/models") {
      Json(res, 201, {{"id", "abc"}, {"bytes", 3}, {"nodes", 1}});
    } else if (req.path == "/v1/jobs") {
      Json(res, 201, {{"id", 7}, {"state", "queued"}});
    } else {
      Json(res, 200, {{"node", "node0"}, {"drained", true}});
    }
  });
  const std::string leader_url = leader.Url();
  Server follower(RedirectTo(&leader_url));
  const QueueClient client(follower.Url(), "tok");

  const std::string bytes("\x08\x07\0onnx", 7);
  Result<json> up = client.UploadModel(bytes);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ((*up)["id"], "abc");
  Result<json> job = client.Submit(ARequest(), {"k-123", 0, nullptr});
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ((*job)["id"], 7);
  Result<json> drained = client.Drain("node0", /*undo=*/false);
  ASSERT_TRUE(drained) << drained.error().message;

  // The same method, body, type, token and key, at the Location (its
  // query too).
  const std::vector<Seen> seen = leader.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/models");
  EXPECT_EQ(seen[0].query_from, "r1");
  EXPECT_EQ(seen[0].body, bytes);
  EXPECT_EQ(seen[0].type, "application/octet-stream");
  EXPECT_EQ(seen[0].auth, "Bearer tok");
  EXPECT_EQ(seen[0].key, "");
  EXPECT_EQ(seen[1].path, "/v1/jobs");
  EXPECT_EQ(seen[1].type, "application/json");
  EXPECT_EQ(seen[1].key, "k-123");
  EXPECT_EQ(json::parse(seen[1].body)["name"], "train");
  EXPECT_EQ(seen[2].path, "/v1/nodes/node0/drain");
  EXPECT_EQ(seen[2].auth, "Bearer tok");
  const std::vector<Seen> asked = follower.seen();
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[1].key, "k-123");
}

TEST(QueueClientReplicas, FollowsOneRedirectOnly) {
  std::string to_a, to_b;
  Server a(RedirectTo(&to_b));
  Server b(RedirectTo(&to_a));
  to_a = a.Url();
  to_b = b.Url();
  Result<json> job = QueueClient(a.Url(), "").Job(3);
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(job.error().message, HasSubstr("do not agree"));
  EXPECT_EQ(a.seen().size(), 1u);
  EXPECT_EQ(b.seen().size(), 1u);
}

TEST(QueueClientReplicas, ALeaderThatDoesNotAnswerIsUnavailable) {
  // The leader just died; the follower does not know yet.
  const std::string dead =
      "http://127.0.0.1:" + std::to_string(testlib::FreeLoopbackPort());
  Server follower(RedirectTo(&dead));
  Result<json> drained = QueueClient(follower.Url(), "").Drain("n", false);
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(drained.error().message,
              HasSubstr("cannot reach the leading replica at " + dead));
  EXPECT_THAT(drained.error().message,
              HasSubstr("where the replica at " + follower.Url()));
}

TEST(QueueClientReplicas, FollowsOnlyHttpLocations) {
  std::string location = "ftp://127.0.0.1/v1/jobs/3";
  Server s([&location](const httplib::Request&, int, httplib::Response& res) {
    if (!location.empty()) res.set_header("Location", location);
    Json(res, 307, {{"error", "elsewhere"}});
  });
  const QueueClient client(s.Url(), "");
  Result<json> job = client.Job(3);
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code, ErrorCode::kInternal);
  EXPECT_THAT(job.error().message, HasSubstr("not an http(s) URL"));
  location.clear();  // no Location at all
  job = client.Job(3);
  ASSERT_FALSE(job);
  EXPECT_THAT(job.error().message, HasSubstr("not an http(s) URL"));
  EXPECT_EQ(s.seen().size(), 2u);
}

TEST(QueueClientReplicas, SubmitTriesAgainWithTheSameKeyAfter503s) {
  // No leader for a moment: 503, first without, then with Retry-After.
  Server s([](const httplib::Request&, int nth, httplib::Response& res) {
    if (nth == 1) return Json(res, 503, {{"error", "no replica leads"}});
    if (nth == 2) {
      res.set_header("Retry-After", "1");
      return Json(res, 503, {{"error", "no replica leads yet"}});
    }
    Json(res, 201, {{"id", 9}, {"state", "queued"}});
  });
  const std::string key = NewIdempotencyKey();
  std::vector<double> waits;
  std::vector<std::string> whys;
  RetryOptions retry{key, 10, [&](const Error& why, double wait_s) {
                       EXPECT_EQ(why.code, ErrorCode::kUnavailable);
                       whys.push_back(why.message);
                       waits.push_back(wait_s);
                     }};
  const auto start = std::chrono::steady_clock::now();
  Result<json> job = QueueClient(s.Url(), "").Submit(ARequest(), retry);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ((*job)["id"], 9);
  EXPECT_THAT(whys, ElementsAre("no replica leads", "no replica leads yet"));
  EXPECT_THAT(waits, ElementsAre(0.25, 1.0));  // backoff, then Retry-After
  EXPECT_GE(took, 1.2);
  const std::vector<Seen> seen = s.seen();
  ASSERT_EQ(seen.size(), 3u);
  for (const Seen& try_ : seen) {
    EXPECT_EQ(try_.key, key);
    EXPECT_EQ(try_.body, seen[0].body);
  }
}

TEST(QueueClientReplicas, SubmitTriesAgainUntilAServiceAnswers) {
  // Nothing listens on the port until the service comes up, 0.6 s in.
  const int port = testlib::FreeLoopbackPort();
  std::atomic<bool> up{false};
  std::unique_ptr<Server> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    late = std::make_unique<Server>(
        [](const httplib::Request&, int, httplib::Response& res) {
          Json(res, 201, {{"id", 1}});
        },
        port);
    up = true;
  });
  int retries = 0;
  RetryOptions retry{"key-1", 10, [&](const Error& why, double) {
                       EXPECT_THAT(why.message, HasSubstr("cannot reach"));
                       ++retries;
                     }};
  Result<json> job = QueueClient("http://127.0.0.1:" + std::to_string(port), "")
                         .Submit(ARequest(), retry);
  starter.join();
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_GE(retries, 1);
  ASSERT_TRUE(up);
  ASSERT_EQ(late->seen().size(), 1u);
  EXPECT_EQ(late->seen()[0].key, "key-1");
}

TEST(QueueClientReplicas, SubmitGivesUpAfterTheTimeGiven) {
  Server s([](const httplib::Request&, int, httplib::Response& res) {
    res.set_header("Retry-After", "1");
    Json(res, 503, {{"error", "no replica leads"}});
  });
  Result<json> job =
      QueueClient(s.Url(), "").Submit(ARequest(), {"k", 1.5, nullptr});
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(job.error().message,
              HasSubstr("no replica leads (tried 2 times over 1 s)"));
  EXPECT_EQ(s.seen().size(), 2u);
}

TEST(QueueClientReplicas, OneTryWithoutRetriesOrForARefusal) {
  Server s([](const httplib::Request& req, int, httplib::Response& res) {
    if (req.path == "/v1/jobs") {
      return Json(res, 503, {{"error", "no replica leads"}});
    }
    Json(res, 400, {{"error", "model: no such upload"}});
  });
  const QueueClient client(s.Url(), "");
  Result<json> job = client.Submit(ARequest());
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(job.error().retry_after_s, 0);
  Result<json> refused = client.UploadModel("x", {"k", 10, nullptr});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kBadInput);
  const std::vector<Seen> seen = s.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].key, "");  // no key unless asked
}

TEST(QueueClientReplicas, IdempotencyKeysAreRandom128BitHex) {
  const std::string a = NewIdempotencyKey();
  const std::string b = NewIdempotencyKey();
  EXPECT_THAT(a, MatchesRegex("[0-9a-f]{32}"));
  EXPECT_THAT(b, MatchesRegex("[0-9a-f]{32}"));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace tessera::client
